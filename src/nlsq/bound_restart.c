/* bound_restart.c — a point on a bound must earn "converged" (adr/0046, docs/nlsq.md
 * "Parameters on a bound").
 *
 * The bounded LM stops where the descent points out of the box for every parameter on a
 * bound (the KKT sign, which checks.c's distance test already holds it to). That is a
 * bounded local minimum, not the optimum: a corner such as D0 on its lower and α on its
 * upper bound (D0·t^α negligible, D_offset carrying D) is one, with χ² far above the
 * interior optimum, and every screened start can end there. No local test tells the
 * two apart, so such a point is tested by moving: the parameters on a bound are moved
 * back inside by fixed fractions of their range, each moved point is fitted on the
 * screening subsample, and the best of them, when it beats the bound point there, is
 * refined on all the data and kept when its χ² is lower. A better point still on a
 * bound is tested again (XF_BOUND_ROUNDS); when the rounds run out while χ² still drops,
 * the point is marked (xf_fit_point.bound_drop) and the fit is not converged. Nothing
 * runs when no free parameter sits on a bound. Deterministic: fixed fractions, fixed
 * order, the seeded subsample of the search. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/nlsq_internal.h"

#define XF_BOUND_AT_TOL 1e-9 /* fraction of the bound width: "at a bound" (as checks.c) */
#define XF_BOUND_ROUNDS 3    /* a better point on a bound again is tested at most this often */
/* fractions of the range (of its logarithm for positive bounds spanning more than two
 * decades, as the Latin hypercube) by which a parameter on a bound is moved inside */
static const double inward_fraction[] = { 0.1, 0.3, 0.5 };
#define XF_N_INWARD		   (int)(sizeof inward_fraction / sizeof inward_fraction[0])
#define XF_BOUND_SCREEN_ITERATIONS 40 /* as round 2 of the screening */
#define XF_BOUND_SCREEN_STALL	   6
#define XF_BOUND_REFINE_STALL	   10
#define XF_BOUND_GAIN_NOISE	   1.0	 /* a lower χ² counts beyond this many noise units */
#define XF_BOUND_LOG_SPACED	   100.0 /* upper/lower beyond which a range is logarithmic */

/* −1 on the lower bound, +1 on the upper, 0 inside (or fixed, or a zero-width range). */
static int bound_side(const xf_problem *pr, const double *x, int k)
{
	double width = pr->upper[k] - pr->lower[k], tol = XF_BOUND_AT_TOL * width;
	if (pr->fixed[k] || !(width > 0.0))
		return 0;
	return x[k] <= pr->lower[k] + tol ? -1 : x[k] >= pr->upper[k] - tol ? 1 : 0;
}

static int count_at_bounds(const xf_problem *pr, const double *x)
{
	int n = 0;
	for (int k = 0; k < pr->n_full; k++)
		n += bound_side(pr, x, k) != 0;
	return n;
}

/* The value a fraction f of the range inside the bound on `side`. */
static double moved_inside(const xf_problem *pr, int k, int side, double f)
{
	double lo = pr->lower[k], hi = pr->upper[k];
	if (lo > 0.0 && hi / lo > XF_BOUND_LOG_SPACED) {
		double step = f * (log(hi) - log(lo));
		return side < 0 ? exp(log(lo) + step) : exp(log(hi) - step);
	}
	return side < 0 ? lo + f * (hi - lo) : hi - f * (hi - lo);
}

/* The restarts of one round from best: each moved point fitted on the screening
 * subsample; the lowest end goes to `trial`. Returns its subsample χ² minus the bound
 * point's in noise units of the subsample (negative: better), or NAN when none ran. */
static double screen_restarts(xf_fit_ctx *ctx, const xf_fit_point *best, const int *mask,
			      xf_fit_point *trial, xf_fit_point *work)
{
	const xf_problem *pr = ctx->pr;
	int nf = pr->n_full;
	xf_lik_out here = { 0.0, work->jtj, work->b, 0.0 };
	if (xf_fit_pass(ctx, XF_ROLE_SCREEN, best->x, &here) || !isfinite(here.chi2))
		return NAN;
	trial->chi2 = INFINITY;
	for (int r = 0; r < XF_N_INWARD && !xf_interrupted(); r++) {
		memcpy(work->x, best->x, sizeof(double) * (size_t)nf);
		for (int k = 0; k < nf; k++) {
			int side = bound_side(pr, best->x, k);
			if (side)
				work->x[k] = moved_inside(pr, k, side, inward_fraction[r]);
		}
		xf_fit_run run = { .role = XF_ROLE_SCREEN,
				   .free_mask = mask,
				   .max_iterations = XF_BOUND_SCREEN_ITERATIONS,
				   .ftol = fmin(ctx->opt->ftol, 1e-8),
				   .stall_window = XF_BOUND_SCREEN_STALL,
				   .phase = "bound restart" };
		if (xf_fit_lm(ctx, &run, work) == 0 && work->chi2 < trial->chi2)
			xf_fit_point_copy(trial, work, nf);
	}
	if (!isfinite(trial->chi2))
		return NAN;
	return (trial->chi2 - here.chi2) / xf_fit_noise_s2(ctx, XF_ROLE_SCREEN, here.chi2);
}

/* One round: 1 when best was replaced by a lower point, 0 when the bound held, −1 when
 * χ² drops off the bound on the subsample but the fit could not get there (best marked). */
static int bound_round(xf_fit_ctx *ctx, xf_fit_point *best, const int *mask, xf_fit_point *trial,
		       xf_fit_point *work)
{
	int nf = ctx->pr->n_full;
	double gain = screen_restarts(ctx, best, mask, trial, work);
	if (!(gain < -XF_BOUND_GAIN_NOISE))
		return 0;
	double s2 = xf_fit_noise_s2(ctx, XF_ROLE_FULL, best->chi2);
	int refined = xf_fit_refine_on_all(ctx, mask, XF_BOUND_REFINE_STALL, "bound refine", trial);
	if (refined && trial->chi2 < best->chi2 - XF_BOUND_GAIN_NOISE * s2) {
		xf_info("nlsq: a restart from inside the bounds lowered chi2 from %.10g to "
			"%.10g (%.3g noise units): the point on the bound was not the optimum",
			best->chi2, trial->chi2, (best->chi2 - trial->chi2) / s2);
		double previous = best->chi2;
		xf_fit_point_copy(best, trial, nf);
		best->competitor_chi2 = previous;
		best->bound_drop = 0.0;
		ctx->search.n_bound_improved++;
		/* the start it came from, cut to the field (run.log has it whole) */
		char was[sizeof ctx->search.chosen];
		memcpy(was, ctx->search.chosen, sizeof was);
		snprintf(ctx->search.chosen, sizeof ctx->search.chosen, "bound restart from %.28s",
			 was);
		return 1;
	}
	/* all the data, fitted to a tolerance from the restart, end no lower: the bound
	 * point holds (the subsample's gain was its sampling noise) */
	if (refined && xf_fit_ended_converged(ctx->pr, trial))
		return 0;
	/* the subsample says χ² drops inside, all the data could not follow (budget) */
	best->bound_drop = -gain;
	return -1;
}

int xf_fit_bound_restart(xf_fit_ctx *ctx, xf_fit_point *best)
{
	const xf_problem *pr = ctx->pr;
	int nf = pr->n_full, rc = 0;
	best->bound_drop = 0.0;
	/* only a point that would be called converged is tested: a stalled or budget-spent
	 * one is not converged already */
	if (count_at_bounds(pr, best->x) == 0 || !xf_fit_ended_converged(pr, best) ||
	    !isfinite(best->chi2))
		return 0; /* the usual case: nothing to test, nothing spent */
	int *mask = malloc(sizeof(int) * (size_t)nf);
	xf_fit_point trial = { 0 }, work = { 0 };
	if (!mask || xf_fit_point_alloc(&trial, nf) || xf_fit_point_alloc(&work, nf)) {
		rc = -1;
		goto done;
	}
	for (int k = 0; k < nf; k++)
		mask[k] = !pr->fixed[k];
	xf_info("nlsq: %d free parameters on a bound: testing restarts from inside the bounds",
		count_at_bounds(pr, best->x));
	int round = 0, verdict = 1, replaced = 0;
	for (; round < XF_BOUND_ROUNDS && verdict == 1 && count_at_bounds(pr, best->x) > 0;
	     round++) {
		verdict = bound_round(ctx, best, mask, &trial, &work);
		replaced |= verdict == 1;
		ctx->search.n_bound_restarts++;
	}
	/* the rounds ran out while every round still found a lower χ² off the bound */
	if (verdict == 1 && round == XF_BOUND_ROUNDS && count_at_bounds(pr, best->x) > 0) {
		double gain = screen_restarts(ctx, best, mask, &trial, &work);
		best->bound_drop = gain < -XF_BOUND_GAIN_NOISE ? -gain : 0.0;
	}
	rc = replaced;
done:
	free(mask);
	xf_fit_point_free(&trial);
	xf_fit_point_free(&work);
	return rc;
}
