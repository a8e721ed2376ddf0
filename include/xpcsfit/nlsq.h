/* nlsq.h — the bounded least-squares point estimate (spec/nlsq.md). */
#ifndef XPCSFIT_NLSQ_H
#define XPCSFIT_NLSQ_H

#include <stddef.h>
#include "xpcsfit/options.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/appendix.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/quality.h"
#include "xpcsfit/request.h"

/* Why the optimiser stopped (spec/nlsq.md). */
typedef enum xf_stop_reason {
	XF_STOP_XTOL = 0,	/* the scaled step fell below xtol */
	XF_STOP_GTOL,		/* the scaled projected gradient fell below gtol·χ² */
	XF_STOP_FTOL,		/* an accepted step lowered χ² by less than ftol·χ² */
	XF_STOP_MAX_ITERATIONS, /* the iteration budget ran out */
	XF_STOP_STALLED,	/* damping grew by orders of magnitude while χ² barely moved */
	XF_STOP_SINGULAR,	/* the damped normal equations could not be solved */
	XF_STOP_NON_FINITE,	/* the model is not finite */
	XF_STOP_INTERRUPTED,	/* SIGINT/SIGTERM */
	XF_STOP_WORSE,		/* a search path that cannot beat a better end point */
	XF_STOP_RIDGE,		/* crawling along an ill-determined direction (adr/0047) */
} xf_stop_reason;

const char *xf_stop_reason_name(xf_stop_reason r);

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
	int cov_rank; /* rank of JᵀJ used for the covariance */
	/* converged | max_iterations | ridge (on a valley of equally good fits: only the
	 * combinations in quality.identified are pinned down, adr/0047) | failed */
	xf_fit_status status;
	const char *stop_reason; /* xf_stop_reason_name() */
	xf_quality quality;
	xf_nlsq_search search;
	xf_sigma_rule sigma_rule;
	double sigma; /* σ used (1 when not given) */
	int n_at_bounds;
	char **at_bounds; /* names of parameters stuck at a bound */
	int n_starts_run; /* multi-start: starts run (1 without) */
	/* wall time by phase (s): only for parameters.json and run.log */
	double time_load_s, time_fit_s, time_total_s;
	/* --device's decision for the passes over all the data (adr/0130): the choice asked
	 * ("" for cpu, the default: nothing decided) and run.log's line */
	char device_asked[8];
	char device_decision[512];
} xf_nlsq_result;

typedef struct xf_nlsq_progress {
	int iteration;
	double chi_squared;
	double lambda;
	const char *phase; /* "screen 3/24", "refine 1", ... */
	int screening;	   /* 1: a short run on the screening subsample (many of them) */
} xf_nlsq_progress;

typedef void (*xf_nlsq_progress_fn)(const xf_nlsq_progress *p, void *ctx);

/* The refusals of xf_nlsq_fit that come before any fitting (the problem of req on ds:
 * per_angle_scaling counts, the data against the bounds), without fitting: run before a
 * result folder is claimed, so that such a refusal leaves a finished result untouched
 * (adr/0071). 0, or the code of xf_nlsq_fit's refusal with err set. */
int xf_nlsq_check(const xf_request *req, const xf_dataset *ds, xf_error *err);

/* Fit the problem that req asks for to ds with the method options opt on n_threads
 * virtual devices (≥ 1). Returns 0 when a result was produced (status may still be
 * "failed": the caller writes it and exits 1), or an error code when nothing could be
 * fitted. The request is built by the command line (src/cli/request_build.c). */
int xf_nlsq_fit(const xf_request *req, const xf_nlsq_options *opt, const xf_dataset *ds,
		int n_threads, xf_nlsq_progress_fn progress, void *progress_ctx,
		xf_nlsq_result *res, xf_error *err);
void xf_nlsq_result_free(xf_nlsq_result *res);

/* res as the method-neutral estimate (route "nlsq") on grid, the geometry it was fitted
 * on (its mode is res's). e owns copies; free it with xf_estimate_free. */
int xf_estimate_from_nlsq(const xf_nlsq_result *res, const xf_model_grid *grid, xf_estimate *e,
			  xf_error *err);
/* What the result files say of the fit beyond its estimate: *a borrows res's strings and
 * lists (valid while res is). */
void xf_nlsq_appendix_of(const xf_nlsq_result *res, xf_nlsq_appendix *a);

#endif
