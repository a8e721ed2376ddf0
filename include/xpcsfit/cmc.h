/* cmc.h — the consensus Monte Carlo posterior (spec/cmc.md, docs/cmc.md): NUTS on shards
 * of frame pairs with tempered priors, warm-started from an NLSQ result, combined into
 * one posterior in the sampler's space; diagnostics per shard. Takes the NLSQ problem
 * request and its own options (adr/0043), never the config. */
#ifndef XPCSFIT_CMC_H
#define XPCSFIT_CMC_H

#include <stddef.h>
#include <stdint.h>
#include "xpcsfit/options.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/cmc_appendix.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/quality.h"
#include "xpcsfit/request.h"

typedef struct xf_cmc_result {
	xf_mode mode;
	xf_scaling_mode scaling_mode; /* per-angle mode sampled */
	int n_params, n_phys;
	char **names;	       /* [n_params] canonical order, as NLSQ's */
	int *is_fixed;	       /* [n_params] 1: not sampled (fixed by the config) */
	double *lower, *upper; /* [n_params] bounds of the sampler's logit transform, which
				* map the stored u-space draws to physical values */
	int n_theta;	       /* sampled parameters */
	int *theta;	       /* [n_theta] their index */
	/* the combined posterior (physical parameters; fixed ones constant) */
	int n_draws;
	double *draws;				/* [n_draws][n_params] */
	double *mean, *sd, *median, *q05, *q95; /* [n_params] reported summaries */
	double *cov;				/* [n_params²] */
	double *gp_mean, *gp_cov;		/* Gaussian product of the kept shards (u-space) */
	/* per angle: posterior mean and sd of contrast and offset */
	int n_phi;
	double *phi_deg, *contrast, *contrast_sd, *offset, *offset_sd;
	/* shards */
	long n_shards, n_kept;
	xf_cmc_shard *shards;
	int n_chains, n_warmup, n_samples;
	double target_accept;		 /* the one used: the config's, or the mode's default */
	double temper;			 /* 1/K */
	xf_combination_rule combination; /* the combination rule used */
	xf_fit_status status;		 /* converged | failed */
	xf_quality quality;
	xf_cmc_check check;
	xf_cmc_sensitivity sensitivity;
	xf_cmc_prior_vs_nlsq prior_vs_nlsq; /* before sampling (prior_vs_nlsq.c) */
	xf_cmc_beyond beyond;		    /* mass beyond the draws (beyond.c) */
	uint64_t seed;
	long grad_evals;
	char shard_dir[4096];	  /* where every shard's draws are kept */
	xf_posterior_route route; /* how the posterior was reached */
	char route_note[192];
	xf_cmc_check approx;		   /* the importance route's check (approx.done: it ran) */
	double sigma_mean, sigma_sd;	   /* importance route: σ's posterior (NaN otherwise) */
	double time_approx_s, time_nuts_s; /* the route's stages (0: not run) */
	double time_sampling_s, time_combine_s, time_total_s;
	xf_cmc_device_record device; /* where the passes over all the data ran (adr/0130) */
} xf_cmc_result;

/* What a posterior run is doing, for its progress line */
typedef enum xf_cmc_stage {
	XF_CMC_STAGE_NUTS = 0,
	XF_CMC_STAGE_IMPORTANCE,
} xf_cmc_stage;

typedef struct xf_cmc_progress {
	long shards_done, shards_total;
	/* NUTS transitions (warmup and sampling, every chain) of this run's shards: done,
	 * and all of them; resumed shards count in neither */
	long iterations_done, iterations_total;
	long divergences; /* after warmup, so far */
	double elapsed_s, eta_s;
	/* NUTS (the fields above), or the importance route's check (iterations are the
	 * points of its current batch) */
	xf_cmc_stage stage;
	/* what the stage is doing (adr/0080): the importance route's round (1, 2, ...);
	 * one shard's NUTS: phase "warmup" or "sampling" and, when its chains run in turn,
	 * the chain running (1-based; 0: the chains run side by side) of n_chains */
	int round;
	const char *phase;
	int chain, n_chains;
} xf_cmc_progress;

typedef void (*xf_cmc_progress_fn)(const xf_cmc_progress *p, void *ctx);

/* The refusals of xf_cmc_run that come before any sampling: the shard count against the
 * data's frame pairs and, with nlsq (NULL: not yet known), the posterior's problem (its
 * per_angle_scaling counts). Run before a result folder is claimed, so that such a
 * refusal leaves a finished result untouched (adr/0071). 0, or the code with err set. */
int xf_cmc_check_layout(const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
			const xf_estimate *nlsq, xf_error *err);

/* Run CMC on ds warm-started from nlsq, the NLSQ fit's estimate (xf_estimate_from_nlsq, or
 * a folder read back by xf_results_read_nlsq; it must fit the same data and mode), with the
 * method options o; req is the NLSQ fit's problem request, from which the posterior's is
 * derived (xf_request_for_posterior, o->per_angle_mode): shards
 * sampled on n_threads virtual devices, each finished shard saved at once in shard_dir
 * (created), reused when resume is set and its inputs match. Returns 0 when a result was
 * produced (its status may be failed: the caller writes it and exits 1), or an error code
 * (XF_ERR_INTERRUPTED when interrupted: finished shards stay in shard_dir). */
int xf_cmc_run(const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
	       const xf_estimate *nlsq, int n_threads, const char *shard_dir, int resume,
	       xf_cmc_progress_fn progress, void *progress_ctx, xf_cmc_result *res, xf_error *err);
void xf_cmc_result_free(xf_cmc_result *res);

/* One line saying how the posterior was reached (res->route) and, for the importance
 * route, the numbers of its check; for the console, run.log and the report. */
void xf_cmc_route_describe(const xf_cmc_result *res, char *buf, size_t size);

/* res as the method-neutral estimate on grid (the geometry it was sampled on): the
 * posterior mean and sd, summaries, covariance; the draws are borrowed from res, which
 * must outlive e. Free e with xf_estimate_free. */
int xf_estimate_from_cmc(const xf_cmc_result *res, const xf_model_grid *grid, xf_estimate *e,
			 xf_error *err);

/* res's appendix (cmc_appendix.h): its records borrowed (res must outlive a), the
 * published chains' diagnostics and the route's sentence computed, the shard store's
 * loaders. Returns 0, or XF_ERR_NOMEM with err set (a then holds nothing). Free a with
 * xf_cmc_appendix_free. */
int xf_cmc_appendix_of(const xf_cmc_result *res, xf_cmc_appendix *a, xf_error *err);
void xf_cmc_appendix_free(xf_cmc_appendix *a);

/* One point of the sampler's space (n_theta logits, then log sigma) in physical units:
 * x[m] the sampled parameter theta[m] within its bounds, x[n_theta] sigma. x may be u. */
void xf_cmc_result_to_physical(const xf_cmc_result *res, const double *u, double *x);
/* The logit transform's inverse on [lower, upper], never outside the box. */
double xf_cmc_u_to_x(double lower, double upper, double u);
/* 1 when x lies within 1e-3 of the width of [lower, upper] from a bound: there du/dx is so
 * large that a variance in u no longer says how well x is known (adr/0083) */
int xf_cmc_near_bound(double lower, double upper, double x);

/* The draws of shard `id` of a result, read back from its shard store: [chains][draws]
 * [n_theta + 1] in the sampler's space (σ last as log σ). Returns 0, or an error code. */
int xf_cmc_shard_draws(const xf_cmc_result *res, long id, double **draws, int *n_chains,
		       int *n_draws, int *dim, xf_error *err);

/* 0, or -1 when out of memory (d then holds nothing to free) */
int xf_cmc_posterior_diagnostics(const xf_cmc_result *res, xf_cmc_posterior_diag *d);

int xf_cmc_shard_stats_load(const xf_cmc_result *res, long id, xf_cmc_shard_stats *st,
			    xf_error *err);

#endif
