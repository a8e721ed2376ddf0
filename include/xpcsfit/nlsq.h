/* nlsq.h — the bounded least-squares point estimate (spec/nlsq.md). */
#ifndef XPCSFIT_NLSQ_H
#define XPCSFIT_NLSQ_H

#include <stddef.h>
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"

typedef struct xf_nlsq_result {
	xf_mode mode;
	xf_scaling_mode scaling_mode; /* per-angle mode actually used */
	/* All parameters in canonical order: the mode's physical parameters, then the
	 * scaling coefficients (names like "contrast", "offset" for auto, "contrast_003"
	 * for individual, "contrast_c0", "contrast_cos1", "contrast_sin1" for fourier). */
	int n_params;
	char **names;
	double *values;
	double *uncertainties; /* NaN for fixed parameters */
	int *is_fixed;
	double *covariance; /* n_params × n_params row-major; NaN rows/cols for fixed */
	int n_phys;	    /* 3 or 7: first n_phys entries are physical */
	/* per angle (dataset order) */
	int n_phi;
	double *phi_deg;
	double *contrast, *contrast_unc;
	double *offset, *offset_unc;
	/* fit quality */
	double chi_squared;	    /* Σ r² with r = (data − model)/σ */
	double reduced_chi_squared; /* χ²/(n − p) */
	double residual_sd;	    /* sqrt(reduced χ²) when σ is not given, else NaN */
	size_t n_points;
	int n_free;
	int iterations;
	int cov_rank;		 /* rank of JᵀJ used for the covariance */
	const char *status;	 /* "converged" | "max_iterations" | "failed" */
	const char *stop_reason; /* xtol gtol ftol max_iterations singular non_finite */
	const char *sigma_rule;	 /* "given" | "residual_variance" */
	double sigma;		 /* σ used (1 when not given) */
	int n_at_bounds;
	char **at_bounds; /* names of parameters stuck at a bound */
	int n_starts_run; /* multi-start: starts run (1 without) */
	/* wall time by phase (s): only for parameters.json and run.log */
	double time_load_s, time_fit_s, time_total_s;
} xf_nlsq_result;

typedef struct xf_nlsq_progress {
	int iteration;
	double chi_squared;
	double lambda;
	const char *phase; /* "hierarchical", "full", "start 3/10" */
} xf_nlsq_progress;

typedef void (*xf_nlsq_progress_fn)(const xf_nlsq_progress *p, void *ctx);

/* Fit cfg's model to ds with n_threads virtual devices (≥ 1). Returns 0 when a result
 * was produced (status may still be "failed": the caller writes it and exits 1), or an
 * error code when nothing could be fitted. */
int xf_nlsq_fit(const xf_config *cfg, const xf_dataset *ds, int n_threads,
		xf_nlsq_progress_fn progress, void *progress_ctx, xf_nlsq_result *res,
		xf_error *err);
void xf_nlsq_result_free(xf_nlsq_result *res);

#endif
