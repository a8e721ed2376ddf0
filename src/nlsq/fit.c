/* fit.c — the NLSQ driver (nlsq.md): the problem (from the request, adr/0043) and its
 * passes, the start estimate, the search for the optimum, the convergence checks and the
 * result record. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/policy.h"
#include "nlsq/covariance.h"
#include "nlsq/nlsq_internal.h"
#include "util/profile.h"
#include "xpcsfit/dist.h"
#include "xpcsfit/rng.h"

#define XF_AT_BOUND_TOL 1e-9 /* fraction of the bound width that counts as "at a bound" */
/* Screening on a subsample pays only when it is clearly smaller than the data. */
#define XF_SCREEN_MIN_FRACTION 0.5
/* Round 1 of the screening only weeds out hopeless starts (χ² differing by orders of
 * magnitude): a subsample this many times smaller than round 2's, or than the data when
 * they are small, does it (measured on the start table: no start lost, adr/0007). */
#define XF_COARSE_DIVISOR      8
#define XF_COARSE_DATA_DIVISOR 16
#define XF_COARSE_MIN_POINTS   2048

static int count_free(const xf_problem *pr)
{
	int n = 0;
	for (int k = 0; k < pr->n_full; k++)
		n += !pr->fixed[k];
	return n;
}

static const char *const stop_names[] = {
	[XF_STOP_XTOL] = "xtol",
	[XF_STOP_GTOL] = "gtol",
	[XF_STOP_FTOL] = "ftol",
	[XF_STOP_MAX_ITERATIONS] = "max_iterations",
	[XF_STOP_STALLED] = "stalled",
	[XF_STOP_SINGULAR] = "singular",
	[XF_STOP_NON_FINITE] = "non_finite",
	[XF_STOP_INTERRUPTED] = "interrupted",
	[XF_STOP_WORSE] = "worse_than_another_start",
	[XF_STOP_RIDGE] = "ridge",
};

const char *xf_stop_reason_name(xf_stop_reason r)
{
	return (unsigned)r < sizeof stop_names / sizeof stop_names[0] ? stop_names[r] : "unknown";
}

/* The fourier series can leave the bounds between the coefficients' bounds: say so. */
static void warn_fourier_outside(const xf_problem *pr, const xf_nlsq_result *res)
{
	const xf_bound *cb = &pr->angle_bounds[0], *ob = &pr->angle_bounds[1];
	for (int p = 0; p < pr->n_phi; p++)
		if (res->contrast[p] < cb->lower || res->contrast[p] > cb->upper ||
		    res->offset[p] < ob->lower || res->offset[p] > ob->upper)
			xf_warn("fourier scaling at phi %.2f deg lies outside the bounds: "
				"contrast %.4g, offset %.4g",
				res->phi_deg[p], res->contrast[p], res->offset[p]);
}

static int fill_result(const xf_fit_ctx *ctx, const xf_fit_point *best, xf_nlsq_result *res)
{
	const xf_problem *pr = ctx->pr;
	const double *x = best->x;
	int nf = pr->n_full;
	memset(res, 0, sizeof *res);
	res->mode = pr->mode;
	res->scaling_mode = pr->scaling->mode;
	res->n_params = nf;
	res->n_phys = pr->n_phys;
	res->n_phi = pr->n_phi;
	res->names = calloc((size_t)nf, sizeof(char *));
	res->values = malloc(sizeof(double) * nf);
	res->uncertainties = malloc(sizeof(double) * nf);
	res->is_fixed = malloc(sizeof(int) * nf);
	res->covariance = malloc(sizeof(double) * (size_t)nf * nf);
	res->at_bounds = calloc((size_t)nf, sizeof(char *));
	size_t na = (size_t)pr->n_phi;
	res->phi_deg = malloc(sizeof(double) * na);
	res->contrast = malloc(sizeof(double) * na);
	res->contrast_unc = malloc(sizeof(double) * na);
	res->offset = malloc(sizeof(double) * na);
	res->offset_unc = malloc(sizeof(double) * na);
	int *free_mask = malloc(sizeof(int) * (size_t)nf);
	double *weak_dir = malloc(sizeof(double) * (size_t)nf);
	if (!weak_dir || !res->names || !res->values || !res->uncertainties || !res->is_fixed ||
	    !res->covariance || !res->at_bounds || !res->phi_deg || !res->contrast ||
	    !res->contrast_unc || !res->offset || !res->offset_unc || !free_mask) {
		free(free_mask);
		free(weak_dir);
		return -1;
	}
	int n_free = 0, rc = -1;
	for (int k = 0; k < nf; k++) {
		res->names[k] = strdup(pr->names[k]);
		if (!res->names[k])
			goto done;
		res->values[k] = x[k];
		res->is_fixed[k] = pr->fixed[k];
		free_mask[k] = !pr->fixed[k];
		n_free += free_mask[k];
	}
	res->n_points = pr->ds->n_points;
	res->n_free = n_free;
	res->chi_squared = best->chi2;
	res->search = ctx->search;
	double dof = (double)res->n_points - n_free;
	res->reduced_chi_squared = dof > 0 ? best->chi2 / dof : NAN;
	res->sigma = pr->sigma;
	res->sigma_rule = pr->has_sigma ? XF_SIGMA_GIVEN : XF_SIGMA_RESIDUAL_VARIANCE;
	res->residual_sd = pr->has_sigma ? NAN : sqrt(res->reduced_chi_squared);
	res->iterations = ctx->full_iterations;
	res->stop_reason = xf_stop_reason_name(best->stop);
	/* σ unknown: scale (JᵀJ)⁻¹ by the residual variance s² = χ²/(n − p) */
	double factor = pr->has_sigma ? 1.0 : res->reduced_chi_squared;
	if (xf_fit_zero_noise(pr, res->residual_sd))
		factor = NAN;		/* no noise level: every uncertainty unknown, none "±0" */
	xf_profile_phase("covariance"); /* and the quality checks: until the fit returns */
	if (xf_covariance(best->jtj, nf, free_mask, factor, res->covariance, &res->cov_rank,
			  weak_dir))
		goto done;
	int deficient = res->cov_rank < n_free;
	for (int k = 0; k < nf; k++) {
		double v = res->covariance[k * nf + k];
		/* the pseudo-inverse drops the undetermined direction: a small number there
		 * would claim a precision the data do not have */
		int undetermined = deficient && fabs(weak_dir[k]) >= XF_WEAK_COMPONENT;
		res->uncertainties[k] = free_mask[k] && v >= 0.0 && !undetermined ? sqrt(v) : NAN;
		double tol = XF_AT_BOUND_TOL * (pr->upper[k] - pr->lower[k]);
		if (free_mask[k] && (x[k] <= pr->lower[k] + tol || x[k] >= pr->upper[k] - tol)) {
			res->at_bounds[res->n_at_bounds] = strdup(pr->names[k]);
			if (!res->at_bounds[res->n_at_bounds++])
				goto done;
		}
	}
	xf_fit_quality(ctx, best, res->covariance, res->cov_rank, weak_dir, res);
	/* per-angle values and their uncertainties through the basis */
	xf_problem_scaling(pr, x, res->contrast, res->offset);
	int nb = pr->n_basis, c0 = pr->n_phys, o0 = pr->n_phys + nb;
	for (int p = 0; p < pr->n_phi; p++) {
		const double *row = pr->basis + (size_t)p * nb;
		double vc = 0.0, vo = 0.0;
		for (int k = 0; k < nb; k++)
			for (int l = 0; l < nb; l++) {
				vc += row[k] * row[l] * res->covariance[(c0 + k) * nf + c0 + l];
				vo += row[k] * row[l] * res->covariance[(o0 + k) * nf + o0 + l];
			}
		res->phi_deg[p] = pr->ds->phi_deg[p];
		res->contrast_unc[p] = nb > 0 && vc >= 0.0 ? sqrt(vc) : NAN;
		res->offset_unc[p] = nb > 0 && vo >= 0.0 ? sqrt(vo) : NAN;
	}
	if (pr->scaling->mode == XF_SCALING_FOURIER)
		warn_fourier_outside(pr, res);
	rc = 0;
done:
	free(free_mask);
	free(weak_dir);
	return rc;
}

/* The polish: a point the solver called converged but that is not yet within
 * XF_CONVERGED_SE of its local optimum (the relative tolerances are loose for very large
 * data), or a stalled one, gets one more run on all the data with a tighter ftol. */
static int polish(xf_fit_ctx *ctx, xf_fit_point *best)
{
	int budget = ctx->opt->max_iterations - ctx->full_iterations;
	/* a ridge (adr/0047) has no point to polish towards */
	if (budget < 1 || best->stop == XF_STOP_INTERRUPTED || best->stop == XF_STOP_NON_FINITE ||
	    best->stop == XF_STOP_RIDGE)
		return 0;
	double d = xf_fit_distance_se(ctx->pr, best->x, best->jtj, best->b, best->chi2);
	int converged = xf_stop_on_tolerance(best->stop);
	if (converged && d <= XF_CONVERGED_SE)
		return 0;
	xf_info("nlsq: polishing (%s, %.3g standard errors from the local optimum)",
		xf_stop_reason_name(best->stop), d);
	int *mask = malloc(sizeof(int) * (size_t)ctx->pr->n_full);
	if (!mask)
		return -1;
	for (int k = 0; k < ctx->pr->n_full; k++)
		mask[k] = !ctx->pr->fixed[k];
	double competitor = best->competitor_chi2;
	xf_fit_run run = { .role = XF_ROLE_FULL,
			   .free_mask = mask,
			   .max_iterations = budget,
			   .ftol = ctx->opt->ftol * 1e-3,
			   /* no stall stop: the search's (χ² down by < 10⁻⁵ of itself while λ
			    * grows) is 1.8 noise units on 180 000 points, 115 on 11.5 M, and
			    * next to the optimum of a curved valley it ended paths still
			    * closing in (adr/0054); ftol, xtol, the ridge watcher, λ's ceiling
			    * and the budget end the polish */
			   .stall_window = 0,
			   .lambda0 = 1e-6,
			   .phase = "polish" };
	int rc = xf_fit_lm(ctx, &run, best);
	best->competitor_chi2 = competitor;
	free(mask);
	return rc;
}

/* The tests of the end point: a laminar one must not sit in a wrong flow-angle basin
 * (adr/0053), one on a bound must earn "converged" (adr/0046) and one on a ridge must
 * earn "ridge" (ridge_restart.c); a better point found any way is polished in turn.
 * Each test marks the point it ran on (basin_drop, bound_drop, ridge_drop) and its
 * reason is the status's: a later stage that moves the point (the
 * polish after a restart, the bound test after the φ0 one) would leave the mark of a
 * point that is no longer the result (issue 33 item 9: "failed … could not get off the
 * bound" on an interior point at the best χ²). So the tests run again on the moved
 * point, until a round moves nothing: every mark then describes the final point. A
 * point still moving after XF_SETTLE_ROUNDS keeps no stale mark and is not converged
 * (ctx->unsettled). Returns −1 when out of memory. */
static int settle(xf_fit_ctx *ctx, xf_fit_point *best)
{
	for (int round = 0; round < XF_SETTLE_ROUNDS; round++) {
		int turned = xf_fit_phi0_profile(ctx, best);
		if (turned < 0 || (turned && polish(ctx, best)))
			return -1;
		int moved = xf_fit_bound_restart(ctx, best);
		if (moved < 0 || (moved && polish(ctx, best)))
			return -1;
		int shifted = xf_fit_ridge_restart(ctx, best);
		if (shifted < 0 || (shifted && polish(ctx, best)))
			return -1;
		if (!turned && !moved && !shifted)
			return 0;
		xf_info("nlsq: the end point moved (%s): its tests run again",
			shifted ? "ridge restart"
			: moved ? "bound restart"
				: "phi0 basin");
	}
	best->bound_drop = best->basin_drop = best->ridge_drop = 0.0;
	ctx->unsettled = 1;
	return 0;
}

/* The evaluators of the three roles: all pairs, and two subsamples (streams
 * XF_RNG_SCREEN_COARSE and XF_RNG_SCREEN, keyed by the multi-start seed) of about
 * screen_points points for round 2 and the smaller of screen_points / XF_COARSE_DIVISOR
 * and n / XF_COARSE_DATA_DIVISOR (at least XF_COARSE_MIN_POINTS) for round 1. A
 * subsample that would hold more than XF_SCREEN_MIN_FRACTION of the data is the data
 * itself. */
static int make_evaluators(xf_fit_ctx *ctx, xf_pool *pool, xf_pairset sets[XF_ROLE_COUNT],
			   xf_error *err)
{
	const xf_problem *pr = ctx->pr;
	const xf_nlsq_options *o = ctx->opt;
	size_t all = xf_fitted_pairs((size_t)pr->ds->n_frames);
	size_t coarse = pr->n_points / XF_COARSE_DATA_DIVISOR;
	if (coarse < XF_COARSE_MIN_POINTS)
		coarse = XF_COARSE_MIN_POINTS;
	if (coarse > (size_t)o->screen_points / XF_COARSE_DIVISOR)
		coarse = (size_t)o->screen_points / XF_COARSE_DIVISOR;
	const size_t points[2] = { coarse, (size_t)o->screen_points };
	const uint32_t streams[2] = { XF_RNG_SCREEN_COARSE, XF_RNG_SCREEN };
	xf_pairset_all(&sets[XF_ROLE_FULL], pr->ds->n_frames);
	if (!(ctx->lik[XF_ROLE_FULL] = xf_lik_create(pr, &sets[XF_ROLE_FULL], pool, err)))
		return err->code;
	xf_lik_set_loss(ctx->lik[XF_ROLE_FULL], o->loss, o->f_scale);
	/* every evaluator of NLSQ is spread over the ranks of an MPI run (adr/0021) */
	if (xf_lik_distribute(ctx->lik[XF_ROLE_FULL]))
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the rank exchange");
	if (xf_nlsq_route_device(ctx->lik[XF_ROLE_FULL], pr, o, xf_pool_threads(pool),
				 ctx->device_decision, sizeof ctx->device_decision, err))
		return err->code;
	for (int r = XF_ROLE_COARSE; r <= XF_ROLE_SCREEN; r++) {
		size_t target = points[r] / (size_t)pr->n_phi + 1;
		if ((double)target > XF_SCREEN_MIN_FRACTION * (double)all)
			target = all;
		if (xf_pairset_sample(&sets[r], pr->ds->n_frames, target, o->multi_start_seed,
				      streams[r]))
			return xf_fail(err, XF_ERR_NOMEM, "out of memory for the screening pairs");
		/* an (improbable) empty sample falls back to all the data */
		int sampled = sets[r].pair_i && sets[r].n_pairs > 0;
		ctx->lik[r] =
			sampled ? xf_lik_create(pr, &sets[r], pool, err) : ctx->lik[XF_ROLE_FULL];
		if (!ctx->lik[r])
			return err->code;
		xf_lik_set_loss(ctx->lik[r], o->loss, o->f_scale);
		if (xf_lik_distribute(ctx->lik[r]))
			return xf_fail(err, XF_ERR_NOMEM, "out of memory for the rank exchange");
		ctx->search.round_points[r] = xf_lik_points(ctx->lik[r]);
	}
	return 0;
}

static void free_evaluators(xf_fit_ctx *ctx, xf_pairset sets[XF_ROLE_COUNT])
{
	for (int r = 0; r < XF_ROLE_COUNT; r++) {
		if (r == XF_ROLE_FULL || ctx->lik[r] != ctx->lik[XF_ROLE_FULL])
			xf_lik_destroy(ctx->lik[r]);
		xf_pairset_free(&sets[r]);
	}
}

static void log_estimate(const xf_problem *pr, const double *estimate)
{
	if (!xf_nlsq_model_estimated(pr)) {
		for (int k = 0; k < pr->n_phys; k++)
			xf_info("nlsq: start from the request (no estimator for model %s): %s %.4g",
				pr->model->name, pr->names[k], estimate[k]);
		return;
	}
	xf_info("nlsq: start estimated from the data: D0 %.4g, alpha %.4g, D_offset %.4g",
		estimate[XF_P_D0], estimate[XF_P_ALPHA], estimate[XF_P_D_OFFSET]);
	if (pr->model->shear)
		xf_info("nlsq: estimated shear: gamma_dot_t0 %.4g, beta %.4g, "
			"gamma_dot_t_offset %.4g, phi0 %.4g",
			estimate[XF_P_GAMMA_DOT_T0], estimate[XF_P_BETA],
			estimate[XF_P_GAMMA_DOT_T_OFFSET], estimate[XF_P_PHI0]);
}

/* The search (default) or one path from the config's start, the estimate filling in
 * the values it does not give; then the polish. */
static int find_optimum(xf_fit_ctx *ctx, xf_fit_point *best, xf_error *err)
{
	const xf_problem *pr = ctx->pr;
	const double *estimate = ctx->search.estimate;
	int rc;
	if (ctx->opt->start_search) {
		rc = xf_fit_search(ctx, estimate, best, err);
	} else {
		double *start = malloc(sizeof(double) * (size_t)pr->n_full);
		if (!start)
			return xf_fail(err, XF_ERR_NOMEM, "out of memory");
		memcpy(start, pr->start, sizeof(double) * (size_t)pr->n_full);
		for (int k = 0; k < pr->n_phys; k++)
			if (!pr->value_given[k])
				start[k] = estimate[k];
		rc = xf_fit_single_path(ctx, start, best, err);
		free(start);
	}
	/* the polish, then the tests of the end point */
	if (rc == 0 && (polish(ctx, best) || settle(ctx, best)))
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory");
	if (rc == 0 && xf_interrupted())
		rc = xf_fail(err, XF_ERR_INTERRUPTED, "interrupted: no result written");
	return rc;
}

/* Pass counts of the search in whole-data passes. */
static void count_passes(xf_fit_ctx *ctx)
{
	double full = (double)xf_lik_points(ctx->lik[XF_ROLE_FULL]);
	ctx->search.pass_equivalents = 0.0;
	for (int r = 0; r < XF_ROLE_COUNT; r++) {
		ctx->search.pass_equivalents +=
			ctx->passes[r] * (double)xf_lik_points(ctx->lik[r]) / full;
		if (r < XF_ROLE_FULL)
			ctx->search.round_passes[r] = ctx->passes[r];
	}
}

int xf_nlsq_check(const xf_request *req, const xf_dataset *ds, xf_error *err)
{
	xf_problem pr;
	xf_request c = *req;
	/* the fit says it when fourier falls back to individual: not said twice */
	if (c.per_angle_mode == XF_SCALING_FOURIER && ds->n_phi < 2 * c.fourier_order + 1)
		c.per_angle_mode = XF_SCALING_INDIVIDUAL;
	int rc = xf_problem_build(&pr, &c, ds, err);
	if (rc)
		return rc;
	rc = xf_fit_check_data(&pr, err);
	xf_problem_free(&pr);
	return rc;
}

int xf_nlsq_fit(const xf_request *req, const xf_nlsq_options *opt, const xf_dataset *ds,
		int n_threads, xf_nlsq_progress_fn progress, void *progress_ctx,
		xf_nlsq_result *res, xf_error *err)
{
	xf_problem pr;
	xf_pairset sets[XF_ROLE_COUNT];
	xf_fit_point best = { 0 };
	xf_fit_ctx ctx;
	memset(&ctx, 0, sizeof ctx);
	memset(sets, 0, sizeof sets);
	memset(res, 0, sizeof *res);
	/* an MPI run agrees once on the set-up, on every path (xpcsfit/dist.h) */
	int rc = xf_problem_build(&pr, req, ds, err);
	if (rc)
		return xf_dist_agree(rc, err);
	if ((rc = xf_fit_check_data(&pr, err))) {
		xf_problem_free(&pr);
		return xf_dist_agree(rc, err);
	}
	xf_blas_single_thread();
	if ((rc = xf_blas_reserve(err))) { /* a limited address space (adr/0072) */
		xf_problem_free(&pr);
		return xf_dist_agree(rc, err);
	}
	xf_pool *pool = xf_pool_create(n_threads);
	ctx.pr = &pr;
	ctx.opt = opt;
	ctx.req = req;
	ctx.pool = pool;
	ctx.progress = progress;
	ctx.progress_ctx = progress_ctx;
	if (!pool)
		rc = xf_fail(err, XF_ERR_NOMEM,
			     "cannot start %d worker threads (out of memory or the thread limit)",
			     n_threads);
	else
		rc = make_evaluators(&ctx, pool, sets, err);
	if (rc == 0 && (xf_fit_point_alloc(&best, pr.n_full) ||
			xf_nlsq_estimate_start(&pr, ctx.search.estimate, &ctx.data_mean_g1sq)))
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for %d parameters", pr.n_full);
	/* an MPI run: every rank set up, or every rank stops here (the passes that follow
	 * are collective) */
	if ((rc = xf_dist_agree(rc, err)))
		goto done;
	xf_info("nlsq: %s, %d angles, %d frames, %zu points, per-angle scaling %s, %d of %d "
		"parameters free",
		xf_mode_name(pr.mode), ds->n_phi, ds->n_frames, ds->n_points, pr.scaling->name,
		count_free(&pr), pr.n_full);
	log_estimate(&pr, ctx.search.estimate);
	if ((rc = find_optimum(&ctx, &best, err)))
		goto done;
	count_passes(&ctx);
	/* an allocation failed on a path with a fallback: the answer may differ from the
	 * one with memory, so there is none (tests/faults/) */
	if (xf_no_memory()) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory during the fit: no result written");
		goto done;
	}
	if (fill_result(&ctx, &best, res) || xf_no_memory()) {
		xf_nlsq_result_free(res);
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory writing the result");
		goto done;
	}
	res->n_starts_run = ctx.search.n_candidates;
	if (ctx.device_decision[0]) { /* --device gpu|auto decided (adr/0130) */
		snprintf(res->device_asked, sizeof res->device_asked, "%s",
			 xf_device_name((xf_device_choice)opt->device));
		snprintf(res->device_decision, sizeof res->device_decision, "%s",
			 ctx.device_decision);
	}
	xf_info("nlsq: %s (%s), quality %s; %d iterations on all the data, screening passes "
		"%d on %zu and %d on %zu points (%.1f whole-data passes in all)",
		xf_fit_status_name(res->status), res->stop_reason,
		xf_quality_level_name(res->quality.overall), ctx.full_iterations,
		ctx.passes[XF_ROLE_COARSE], ctx.search.round_points[0], ctx.passes[XF_ROLE_SCREEN],
		ctx.search.round_points[1], ctx.search.pass_equivalents);
	for (int k = 0; k < res->quality.n_reasons; k++)
		xf_info("nlsq quality: %s", res->quality.reasons[k]);
	if (xf_dist_get()) {
		xf_dist_stats st;
		xf_dist_stats_get(&st);
		xf_info("nlsq: %d MPI ranks, %ld slot exchanges, rank %d sent %.0f bytes, "
			"computed its blocks for %.3f s, exchanged for %.3f s",
			xf_dist_ranks(), st.exchanges, xf_dist_rank(), st.bytes_sent, st.compute_s,
			st.exchange_s);
	}
done:
	xf_fit_point_free(&best);
	free_evaluators(&ctx, sets);
	xf_pool_destroy(pool);
	xf_problem_free(&pr);
	return rc;
}

void xf_nlsq_result_free(xf_nlsq_result *res)
{
	if (res->names)
		for (int k = 0; k < res->n_params; k++)
			free(res->names[k]);
	if (res->at_bounds)
		for (int k = 0; k < res->n_at_bounds; k++)
			free(res->at_bounds[k]);
	free(res->names);
	free(res->values);
	free(res->uncertainties);
	free(res->is_fixed);
	free(res->covariance);
	free(res->at_bounds);
	free(res->phi_deg);
	free(res->contrast);
	free(res->contrast_unc);
	free(res->offset);
	free(res->offset_unc);
	memset(res, 0, sizeof *res);
}
