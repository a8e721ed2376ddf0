/* appendix.h — what a method says of itself beyond its estimate (estimate.h; issue 35):
 * the result files' method-specific parts read it beside the estimate, so io/, plot/ and
 * outputs/ need no method's result type. NLSQ's: the fit's goodness, how the optimiser
 * stopped and how the optimum was searched for. */
#ifndef XPCSFIT_APPENDIX_H
#define XPCSFIT_APPENDIX_H

#include <stddef.h>
#include "xpcsfit/params.h"

/* How the optimum was searched for (docs/nlsq.md "Finding the optimum"). */
typedef struct xf_nlsq_search {
	int n_candidates;	    /* starts screened */
	int n_replaced;		    /* flat starts moved before screening */
	int n_effective;	    /* screened starts that moved and converged */
	int n_basins;		    /* distinct end points among them */
	int n_refined;		    /* candidates refined on all the data */
	int n_bound_restarts;	    /* rounds of restarts from inside the bounds (adr/0046) */
	int n_bound_improved;	    /* of them, rounds that found a lower chi2 */
	int n_phi0_profiles;	    /* chi2 profiles along phi0 of the end point (adr/0053) */
	int n_phi0_tried;	    /* other phi0 basins refitted from the profile */
	int n_phi0_improved;	    /* of them, refits that found a lower chi2 */
	int round_passes[2];	    /* passes of screening rounds 1 and 2 */
	size_t round_points[2];	    /* points of their subsamples of frame pairs */
	double pass_equivalents;    /* all passes counted in whole-data passes */
	char chosen[48];	    /* the start the result came from: "estimate", "config", ... */
	double estimate[XF_N_PHYS]; /* the data-driven start estimate */
} xf_nlsq_search;

/* How the fit's σ was had (the files' "sigma_rule": xf_sigma_rule_name) */
typedef enum xf_sigma_rule {
	XF_SIGMA_UNSET = 0,	    /* "": no fit ran */
	XF_SIGMA_GIVEN,		    /* "given": the data's own uncertainties */
	XF_SIGMA_RESIDUAL_VARIANCE, /* "residual_variance": χ²/(n − p) scales the covariance */
} xf_sigma_rule;

const char *xf_sigma_rule_name(xf_sigma_rule r);

typedef struct xf_nlsq_appendix {
	double chi_squared;	    /* Σ r² with r = (data − model)/σ (the loss's cost) */
	double reduced_chi_squared; /* χ²/(n − p) */
	double residual_sd;	    /* sqrt(reduced χ²) when σ is not given, else NaN */
	size_t n_points;
	int n_free;
	int iterations;
	const char *stop_reason; /* xf_stop_reason_name() */
	xf_nlsq_search search;
	xf_sigma_rule sigma_rule;
	double sigma; /* σ used (1 when not given) */
	int n_at_bounds;
	char *const *at_bounds; /* names of parameters stuck at a bound */
	int n_starts_run;	/* multi-start: starts run (1 without) */
	/* wall time by phase (s): only for parameters.json and run.log */
	double time_load_s, time_fit_s, time_total_s;
	const char *device_asked;    /* --device gpu|auto; "" or NULL: the CPU, the default */
	const char *device_decision; /* where the passes ran and why (run.log's line) */
} xf_nlsq_appendix;

#endif
