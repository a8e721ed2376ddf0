/* nlsq_internal.h — the pieces of the NLSQ fit (docs/nlsq.md): the start estimate, the
 * search for the optimum (screened starts, refinement), the convergence checks. */
#ifndef XPCSFIT_NLSQ_INTERNAL_H
#define XPCSFIT_NLSQ_INTERNAL_H

#include "nlsq/lm.h"
#include "xpcsfit/options.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/nlsq.h"

/* Physical start values (canonical order, 7 entries) estimated from the data; fixed
 * parameters keep their values, everything is clipped into the bounds. mean_g1sq
 * receives the mean normalised c2 of the data (the correlation they show, for the flat
 * test of a start). 0, or −1 on allocation failure. */
int xf_nlsq_estimate_start(const xf_problem *pr, double *theta, double *mean_g1sq);

/* 1: the model's start is estimated from the data and its rates spread over decades
 * (the built-in models, whose parameters the estimator and the search know); 0: a model
 * given by its point function (adr/0116), which starts from the request and is searched
 * over its bounds (adr/0123). */
static inline int xf_nlsq_model_estimated(const xf_problem *pr)
{
	return pr->model->g1 == NULL;
}

/* Which pass a run uses: round 1 of the screening (a small subsample), round 2 (a
 * larger one) or all the data. */
typedef enum xf_fit_role {
	XF_ROLE_COARSE = 0,
	XF_ROLE_SCREEN,
	XF_ROLE_FULL,
	XF_ROLE_COUNT
} xf_fit_role;

/* Shared state of one fit: the problem, the passes over all the data and over the
 * screening subsample, and the counts that go into the result. */
typedef struct xf_fit_ctx {
	const xf_problem *pr;
	const xf_nlsq_options *opt;
	const xf_request *req; /* the request pr was built from (held_scaling.c) */
	xf_pool *pool;	       /* the virtual devices of the passes */
	/* the passes by role (xf_fit_role): round 1 and round 2 of the screening on nested
	 * subsamples of pairs, and all the data; a subsample is the full evaluator when the
	 * data are small */
	xf_lik *lik[XF_ROLE_COUNT];
	int passes[XF_ROLE_COUNT];
	xf_nlsq_progress_fn progress;
	void *progress_ctx;
	int full_iterations;   /* trial steps on all the data */
	double data_mean_g1sq; /* mean normalised c2 of the data */
	/* 1: the end point's tests still moved it in their last round (fit.c settle) */
	int unsettled;
	xf_nlsq_search search;
	char device_decision[512]; /* --device's line for parameters.json ("": the CPU) */
} xf_fit_ctx;

#define XF_SETTLE_ROUNDS 3 /* rounds of the end point's tests at most (fit.c settle) */

/* Where a search or a path ended: the point, its χ² on all the data, the solver's stop
 * reason, and JᵀJ/b there. */
typedef struct xf_fit_point {
	double *x, *jtj, *b; /* n_full, n_full², n_full */
	double chi2;
	xf_stop_reason stop;
	double competitor_chi2; /* best χ² of another refined basin (NAN: none) */
	/* χ² drop (noise units) that restarts from inside the bounds found off this point on
	 * a bound and the fit could not reach (0: none; adr/0046): not an optimum */
	double bound_drop;
	/* χ² drop (noise units of the subsample) that a refit from another flow-angle basin
	 * found and all the data could not reach (0: none; phi0_profile.c, adr/0053), and
	 * that basin's φ0 */
	double basin_drop, basin_phi0;
	/* χ² drop (noise units of the subsample) that restarts along a ridge found and all
	 * the data could not reach (0: none; ridge_restart.c): not an optimum, no ridge */
	double ridge_drop;
} xf_fit_point;

int xf_fit_point_alloc(xf_fit_point *p, int n_full);
void xf_fit_point_free(xf_fit_point *p);
void xf_fit_point_copy(xf_fit_point *dst, const xf_fit_point *src, int n_full);

/* Route the evaluator of all the data to the GPU when the options ask (device.c,
 * docs/gpu.md): decided once per fit. 0, or the error code (--device gpu without one). */
int xf_nlsq_route_device(xf_lik *lik, const xf_problem *pr, const xf_nlsq_options *o, int n_threads,
			 char *decision, size_t decision_len, xf_error *err);

/* One pass of a role at x, counted in ctx. */
int xf_fit_pass(xf_fit_ctx *ctx, xf_fit_role role, const double *x, xf_lik_out *out);

/* One LM run: which pass, what is varied, its budget and tolerances. */
typedef struct xf_fit_run {
	xf_fit_role role;
	const int *free_mask;
	int max_iterations;
	double ftol;
	int stall_window;
	double lambda0; /* 0: the solver's default */
	/* optional watcher that stops the run (xf_lm_setup.watch) */
	int (*watch)(void *watch_ctx, const double *x, double chi2, double gn_reduction);
	void *watch_ctx;
	const char *phase;
} xf_fit_run;

/* One LM run from p->x (in/out); counts passes into ctx. Returns 0, or −1 when the
 * start is not finite. */
int xf_fit_lm(xf_fit_ctx *ctx, const xf_fit_run *run, xf_fit_point *p);

/* The noise scale of a role's χ²: χ²/(n − p) on that role's points. */
double xf_fit_noise_s2(const xf_fit_ctx *ctx, xf_fit_role role, double chi2);

/* A subsample end point (trial, in/out) refined on all the data with the iteration budget
 * left (bound restarts, φ0 basins). 1 when trial then holds a fit on all the data (the
 * run ended, or the subsample is all the data), 0 when the budget was spent or the start
 * is not finite. */
int xf_fit_refine_on_all(xf_fit_ctx *ctx, const int *mask, int stall_window, const char *phase,
			 xf_fit_point *trial);

/* The default search (docs/nlsq.md "Finding the optimum"): candidates from the config,
 * the estimate, a spread over decades of D0 and γ̇0 and the optional Latin hypercube;
 * flat starts moved; screened on the subsample; the best basins refined on all the data.
 * best receives the winner. Returns 0, or an XF_EXIT code with err set. */
int xf_fit_search(xf_fit_ctx *ctx, const double *estimate, xf_fit_point *best, xf_error *err);

/* One path from the config's start (start_search off): direct, or (laminar flow with
 * anti_degeneracy.hierarchical) the physical parameters first with the scaling held,
 * then everything, with the direct path as fallback when that ends badly. */
int xf_fit_single_path(xf_fit_ctx *ctx, const double *start, xf_fit_point *best, xf_error *err);

/* A point the solver calls converged with free parameters on a bound must earn it
 * (bound_restart.c, adr/0046): restarts from inside the bounds, a better point kept in
 * best; best->bound_drop set when χ² drops off the bound but the fit cannot get there.
 * Nothing runs (no pass) when no free parameter sits on a bound. 1 when best was
 * replaced, 0 when not, −1 out of memory. */
int xf_fit_bound_restart(xf_fit_ctx *ctx, xf_fit_point *best);

/* A point whose JᵀJ shows a ridge must earn "ridge" (ridge_restart.c, issue 33 item 9):
 * restarts with the parameters not identified there moved, a better point kept in best;
 * best->ridge_drop set when χ² drops but the fit cannot get there. 1 when best was
 * replaced, 0 when not, −1 when out of memory. */
int xf_fit_ridge_restart(xf_fit_ctx *ctx, xf_fit_point *best);

/* A laminar end point that would be called converged must not sit in a wrong basin of
 * φ0 (phi0_profile.c, adr/0053): χ² profiled along φ0 on a fixed grid on the screening
 * subsample, the lowest other minima refitted, a lower point kept in best;
 * best->basin_drop set when a lower basin shows on the subsample and all the data cannot
 * reach it. Nothing runs (no pass) for static fits, a fixed φ0 or an end point not
 * stopped on a tolerance. 1 when best was replaced, 0 when not, −1 out of memory. */
int xf_fit_phi0_profile(xf_fit_ctx *ctx, xf_fit_point *best);

/* The per-angle scaling of x re-solved with the physics held: one Gauss-Newton step on
 * its block of JᵀJ (jtj, b at x), clipped into the bounds (the model is linear in it). */
void xf_fit_profile_scaling(const xf_problem *pr, double *x, const double *jtj, const double *b);

/* Decades a flat start is moved towards slower rates before it is dropped. */
#define XF_FLAT_MOVES 6

/* A fit that found χ² not finite at x: fails with one line naming the cause (adr/0020):
 * the parameter, or the angle and frames (t1, t2 as stored rows) where the model, the
 * data or a residual overflowed. `when` completes "χ² is not finite ..." ("at every
 * start", "at the start values"). Returns XF_ERR_DATA. */
int xf_fit_fail_non_finite(const xf_fit_ctx *ctx, const double *x, const char *when, xf_error *err);
/* 1 when χ² over all the data is not finite at x (one point-by-point walk). */
int xf_fit_non_finite_at(const xf_fit_ctx *ctx, const double *x);

/* Before the search (adr/0020): every angle's fitted points must vary (a constant map,
 * all zeros included, informs nothing) and their mean must lie where offset + contrast·g1²
 * can reach within the bounds. Returns 0, or XF_ERR_DATA with one line naming the angle. */
int xf_fit_check_data(const xf_problem *pr, xf_error *err);

/* σ unknown and the residuals vanish to rounding (noise-free data, an interpolating
 * model): the residual variance that scales the covariance is no noise level, and
 * uncertainties from it would read "±0". Such a fit reports none (adr/0020). */
#define XF_ZERO_NOISE_REL 1e-10
int xf_fit_zero_noise(const xf_problem *pr, double residual_sd);

/* The documented convergence checks at best, the status and the quality; cov, cov_rank
 * and weak_dir come from xf_covariance at best. */
#define XF_CONVERGED_SE 0.1
/* Another refined basin within this many noise units (χ²/s²) of the best makes the
 * result ambiguous (quality marginal); refinement races stop beyond it. */
#define XF_AMBIGUOUS_NOISE 25.0
double xf_fit_distance_se(const xf_problem *pr, const double *x, const double *jtj, const double *b,
			  double chi2);
/* xf_fit_distance_se, checked by χ² along the step where it exceeds XF_CONVERGED_SE
 * (checks.c): the smaller of the model's reading and the measured one. */
double xf_fit_distance_measured(const xf_fit_ctx *ctx, const xf_fit_point *p);
/* The solver stopped on xtol, gtol or ftol. */
static inline int xf_stop_on_tolerance(xf_stop_reason r)
{
	return r == XF_STOP_XTOL || r == XF_STOP_GTOL || r == XF_STOP_FTOL;
}
/* An end point that counts as converged for the checks that follow (bound restarts, the
 * φ0 profile, the status): stopped on a tolerance, or stalled where one more Gauss-Newton
 * step would move it by at most XF_CONVERGED_SE standard errors. At the optimum every
 * trial step is rejected, so the damping grows while χ² cannot fall: on a curved
 * valley's floor that stall, not ftol, is how the solver ends (issue 24). */
int xf_fit_ended_converged(const xf_problem *pr, const xf_fit_point *p);
void xf_fit_quality(const xf_fit_ctx *ctx, const xf_fit_point *best, const double *cov,
		    int cov_rank, const double *weak_dir, xf_nlsq_result *res);
/* What held per-angle scaling (`constant`) costs at best (adr/0048, held_scaling.c): one
 * pass with each angle's contrast and offset free at best's physical parameters; a χ²
 * gain beyond chance adds a reason. Returns the grade it allows: good (nothing held, or
 * no cost), marginal, or poor (χ² halves with the scaling freed). */
xf_quality_level xf_fit_held_scaling(const xf_fit_ctx *ctx, const xf_fit_point *best,
				     xf_nlsq_result *res);
/* Parameters with at least this component in the least determined direction of a
 * rank-deficient JᵀJ are the ones the data cannot tell apart. */
#define XF_WEAK_COMPONENT 0.2

#endif
