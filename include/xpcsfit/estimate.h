/* estimate.h — the result of a fit whatever the method (adr/0044): names, units, values
 * with their uncertainties (sd, covariance) or a posterior's draws and summaries, the
 * per-angle scaling, the model grid the values belong to, the method and its route, and
 * the quality. NLSQ and CMC each convert their result into one (xf_estimate_from_nlsq in
 * nlsq/, xf_estimate_from_cmc in cmc/); the surfaces, plots and result files read it, so
 * nothing past the method rebuilds the geometry from the config or dresses one method's
 * result as another's. */
#ifndef XPCSFIT_ESTIMATE_H
#define XPCSFIT_ESTIMATE_H

#include "xpcsfit/error.h"
#include "xpcsfit/model.h"
#include "xpcsfit/params.h"
#include "xpcsfit/quality.h"

/* The method that made an estimate */
typedef enum xf_method {
	XF_METHOD_NLSQ = 0,
	XF_METHOD_CMC,
} xf_method;

/* "nlsq", "cmc": the method's name in the files, and its folder's */
const char *xf_method_name(xf_method m);

/* How the posterior was reached (cmc.md; adr/0045), as results name it
 * (xf_posterior_route_name): NONE before a route ended (a run that failed first). */
typedef enum xf_posterior_route {
	XF_POSTERIOR_ROUTE_NONE = 0,
	XF_POSTERIOR_ROUTE_IMPORTANCE, /* "importance": the NLSQ approximation importance-sampled
					* and checked against the exact posterior */
	XF_POSTERIOR_ROUTE_NUTS,       /* "nuts": exact NUTS on every point (asked for, or the
					* importance check failed: route_note says why) */
	XF_POSTERIOR_ROUTE_CMC	       /* "cmc": K > 1 shards, checked by the self-check */
} xf_posterior_route;

/* "importance", "nuts", "cmc"; "" for NONE */
const char *xf_posterior_route_name(xf_posterior_route route);

/* A posterior route's record (estimate/estimate.c, adr/0120): what the result files ask
 * of the way a posterior was reached, rather than which way it was, so a new route is a
 * row here and its sampler. */
typedef struct xf_route_record {
	xf_posterior_route route;
	const char *name; /* results' route: "importance", "nuts", "cmc" ("" for NONE) */
	/* results.h5's /cmc posterior: what the draws are ("exact_nuts", ...) */
	const char *posterior;
	/* … instead, when the self-check's importance weights corrected the combined draws
	 * (NULL: the route's draws are never corrected) */
	const char *posterior_corrected;
	/* 1: published from the importance check's weighted points: that check (the
	 * appendix's approx) is the posterior's, σ has a weighted mean and sd, and the draws
	 * are a systematic resample of the points (one chain, no sampler settings) */
	int from_importance_points;
} xf_route_record;

/* The record of route (NONE's for a value that is no route) */
const xf_route_record *xf_route_record_of(xf_posterior_route route);

/* An estimate's words as the result files, plots and logs write them (static strings),
 * set once where the estimate is made (xf_estimate_seal, adr/0125): a writer prints them
 * without going back down to the model's, the quality's or the routes' tables. */
typedef struct xf_estimate_words {
	const char *method;	      /* "nlsq", "cmc" */
	const char *mode;	      /* the model's name: "static", "laminar_flow", ... */
	const char *scaling;	      /* the per-angle mode used: "shared", "individual", ... */
	const char *status;	      /* "converged", "failed", ... */
	const char *quality;	      /* the overall grade: "good", "marginal", ... */
	const xf_route_record *route; /* the posterior's route (NONE's record for NLSQ) */
} xf_estimate_words;

/* wall time of one stage of the method ("load", "fit", "sampling", "combination", ...) */
typedef struct xf_estimate_stage {
	char name[32];
	double seconds;
} xf_estimate_stage;

#define XF_ESTIMATE_MAX_STAGES 16

typedef struct xf_estimate {
	xf_method method;
	xf_posterior_route route; /* CMC's (NONE for NLSQ) */
	xf_model_grid grid;	  /* the geometry the values belong to (mode, shear model, N, dt, q,
			     * gap): what the surfaces and plots evaluate the model on */
	xf_scaling_mode scaling_mode; /* the per-angle mode used */
	/* every parameter in canonical order: the mode's physical ones, then the scaling
	 * coefficients */
	int n_params, n_phys;
	char **names;
	const char **units; /* static strings, as the files write them ("1" for the scaling
			     * coefficients, which are dimensionless) */
	double *values;	    /* point estimate, or the posterior mean */
	double *sd;	    /* standard error, or the posterior sd; NaN for fixed parameters */
	double *covariance; /* n_params² row-major, or NULL */
	int cov_rank;	    /* NLSQ: the rank of JᵀJ behind the covariance (0: not known) */
	int *is_fixed;
	/* a posterior's draws (n_draws 0: a point estimate) and its summaries */
	int n_draws;
	const double *draws;	    /* [n_draws][n_params], borrowed from the result */
	double *median, *q05, *q95; /* [n_params], or NULL for a point estimate */
	/* the sd as a posterior's summary tables write it: a fixed parameter's 0 where there
	 * are draws to say so (they did not vary), else sd; NULL for a point estimate */
	double *sd_table;
	/* per angle (the data's order) */
	int n_phi;
	double *phi_deg, *contrast, *contrast_sd, *offset, *offset_sd;
	/* q of each angle slot's ring (Å⁻¹, [n_phi]) when the angles come from several q
	 * rings (a joint fit, adr/0068); NULL: every angle is at grid.q */
	double *slot_q;
	/* the verdict */
	xf_fit_status status;
	xf_quality quality;
	xf_estimate_words words; /* the above in words (xf_estimate_seal) */
	int n_stages;
	xf_estimate_stage stages[XF_ESTIMATE_MAX_STAGES];
} xf_estimate;

/* Allocate e's arrays for n_params parameters and n_phi angles (summaries: median, q05,
 * q95 too), zeroed; names empty strings. Returns 0 or XF_ERR_NOMEM (e freed). */
int xf_estimate_alloc(xf_estimate *e, int n_params, int n_phi, int summaries, xf_error *err);
/* Once e is whole (method, route, grid, scaling, status, quality, n_phys set), its words
 * and its scaling coefficients' units ("1", where e has units); every maker of an
 * estimate ends with it, a reader that fills one by hand (plot_dir.c) too. */
void xf_estimate_seal(xf_estimate *e);
/* Frees what e owns (not the draws) and zeroes it; a zeroed e is fine. */
void xf_estimate_free(xf_estimate *e);
/* Record one stage's wall time (past XF_ESTIMATE_MAX_STAGES: dropped). */
void xf_estimate_add_stage(xf_estimate *e, const char *name, double seconds);
/* Copy slot_q ([e->n_phi] Å⁻¹, one q ring's per angle slot) into e (NULL: one ring, no
 * copy). Returns 0 or XF_ERR_NOMEM. */
int xf_estimate_set_slot_q(xf_estimate *e, const double *slot_q, xf_error *err);
/* The model grid of angle slot a: e->grid at the slot's ring q (adr/0068), so one model
 * (xf_model_c2_*) draws every ring of a joint fit. */
xf_model_grid xf_estimate_grid_at(const xf_estimate *e, int a);
/* The 7 model values of theta (the model reads 7 whatever the mode; zeros past n_phys). */
void xf_estimate_theta(const xf_estimate *e, double theta[XF_N_PHYS]);

#endif
