/* ridge_restart.c — a ridge must earn "ridge" (issue 33 item 9, adr/0074; adr/0047).
 *
 * "Ridge, a set of equally good fits" is a claim about the valley the fit ended in: the
 * parameters the data do not identify one by one can move along it at no cost. A local
 * valley far above the optimum makes the same local picture (a single path stopped
 * 1 750 noise units above the best χ² of 84 fits with "fix: --fix alpha=-1.1726 --fix
 * D_offset=0"), and its --fix hint then leads to a worse fit. So, as a point on a bound
 * must earn "converged" (bound_restart.c), a point whose JᵀJ shows a ridge is tested by
 * moving: the parameters not identified there are set to the data's start estimate and
 * to fixed fractions of their range, each moved point is fitted on the screening
 * subsample, and the best, when it beats the ridge point there, is refined on all the
 * data and kept when its χ² is lower. When χ² drops on the subsample but all the data
 * cannot follow (budget), the point is marked (xf_fit_point.ridge_drop): not at an
 * optimum, no ridge. Nothing runs when JᵀJ shows no ridge. Deterministic. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/nlsq_internal.h"
#include "nlsq/ridge.h"

/* fractions of the range (of its logarithm for positive bounds spanning more than two
 * decades) at which a parameter the data do not identify is restarted */
static const double ridge_fraction[] = { 0.1, 0.5, 0.9 };
#define XF_N_RIDGE_FRACTIONS	   (int)(sizeof ridge_fraction / sizeof ridge_fraction[0])
#define XF_RIDGE_SCREEN_ITERATIONS 40 /* as the bound restarts */
#define XF_RIDGE_SCREEN_STALL	   6
#define XF_RIDGE_REFINE_STALL	   10
#define XF_RIDGE_GAIN_NOISE	   1.0	 /* a lower χ² counts beyond this many noise units */
#define XF_RIDGE_LOG_SPACED	   100.0 /* upper/lower beyond which a range is logarithmic */

static double at_fraction(const xf_problem *pr, int k, double f)
{
	double lo = pr->lower[k], hi = pr->upper[k];
	if (lo > 0.0 && hi / lo > XF_RIDGE_LOG_SPACED)
		return exp(log(lo) + f * (log(hi) - log(lo)));
	return lo + f * (hi - lo);
}

/* The parameters the data do not identify one by one at best (move[k] = 1); their
 * number, 0 when JᵀJ shows no ridge, −1 when out of memory. */
static int unidentified(const xf_fit_ctx *ctx, const xf_fit_point *best, const int *mask, int *move)
{
	const xf_problem *pr = ctx->pr;
	xf_identified id;
	double well_se;
	if (xf_ridge_identify(pr, mask, best->x, best->jtj, best->b, best->chi2,
			      xf_fit_noise_s2(ctx, XF_ROLE_FULL, best->chi2), &id, &well_se))
		return -1;
	int n = 0;
	for (int k = 0; k < pr->n_full; k++) {
		move[k] = 0;
		for (int j = 0; id.n_combos > 0 && j < id.n_not_identified; j++)
			move[k] |= !pr->fixed[k] && !strcmp(id.not_identified[j], pr->names[k]);
		n += move[k];
	}
	return n;
}

/* The restarts on the subsample; the lowest end goes to trial. Its χ² minus the ridge
 * point's in noise units of the subsample (negative: better), NAN when none ran. */
static double screen(xf_fit_ctx *ctx, const xf_fit_point *best, const int *mask, const int *move,
		     xf_fit_point *trial, xf_fit_point *work)
{
	const xf_problem *pr = ctx->pr;
	int nf = pr->n_full;
	xf_lik_out here = { 0.0, work->jtj, work->b, 0.0 };
	if (xf_fit_pass(ctx, XF_ROLE_SCREEN, best->x, &here) || !isfinite(here.chi2))
		return NAN;
	trial->chi2 = INFINITY;
	for (int r = -1; r < XF_N_RIDGE_FRACTIONS && !xf_interrupted(); r++) {
		memcpy(work->x, best->x, sizeof(double) * (size_t)nf);
		for (int k = 0; k < nf; k++) {
			if (!move[k])
				continue;
			/* r = −1: the data's start estimate (physical parameters only) */
			double v = r < 0 ? (k < pr->n_phys ? ctx->search.estimate[k] : best->x[k])
					 : at_fraction(pr, k, ridge_fraction[r]);
			work->x[k] = fmin(fmax(v, pr->lower[k]), pr->upper[k]);
		}
		xf_fit_run run = { .role = XF_ROLE_SCREEN,
				   .free_mask = mask,
				   .max_iterations = XF_RIDGE_SCREEN_ITERATIONS,
				   .ftol = fmin(ctx->opt->ftol, 1e-8),
				   .stall_window = XF_RIDGE_SCREEN_STALL,
				   .phase = "ridge restart" };
		if (xf_fit_lm(ctx, &run, work) == 0 && work->chi2 < trial->chi2)
			xf_fit_point_copy(trial, work, nf);
	}
	if (!isfinite(trial->chi2))
		return NAN;
	return (trial->chi2 - here.chi2) / xf_fit_noise_s2(ctx, XF_ROLE_SCREEN, here.chi2);
}

int xf_fit_ridge_restart(xf_fit_ctx *ctx, xf_fit_point *best)
{
	const xf_problem *pr = ctx->pr;
	int nf = pr->n_full, rc = 0;
	best->ridge_drop = 0.0;
	if (!isfinite(best->chi2) || best->stop == XF_STOP_NON_FINITE ||
	    best->stop == XF_STOP_INTERRUPTED)
		return 0;
	int *mask = malloc(sizeof(int) * (size_t)nf), *move = malloc(sizeof(int) * (size_t)nf);
	xf_fit_point trial = { 0 }, work = { 0 };
	if (!mask || !move || xf_fit_point_alloc(&trial, nf) || xf_fit_point_alloc(&work, nf)) {
		rc = -1;
		goto done;
	}
	for (int k = 0; k < nf; k++)
		mask[k] = !pr->fixed[k];
	int n_move = unidentified(ctx, best, mask, move);
	if (n_move <= 0) { /* the usual case: no ridge, nothing to test, nothing spent */
		rc = n_move < 0 ? -1 : 0;
		goto done;
	}
	xf_info("nlsq: %d free parameters not identified one by one: testing restarts along "
		"the ridge",
		n_move);
	double gain = screen(ctx, best, mask, move, &trial, &work);
	if (!(gain < -XF_RIDGE_GAIN_NOISE))
		goto done; /* the valley holds: no restart ends lower */
	double s2 = xf_fit_noise_s2(ctx, XF_ROLE_FULL, best->chi2);
	int refined =
		xf_fit_refine_on_all(ctx, mask, XF_RIDGE_REFINE_STALL, "ridge refine", &trial);
	if (refined && trial.chi2 < best->chi2 - XF_RIDGE_GAIN_NOISE * s2) {
		xf_info("nlsq: a restart along the ridge lowered chi2 from %.10g to %.10g (%.3g "
			"noise units): the valley was not the optimum",
			best->chi2, trial.chi2, (best->chi2 - trial.chi2) / s2);
		double previous = best->chi2;
		xf_fit_point_copy(best, &trial, nf);
		best->competitor_chi2 = previous;
		best->ridge_drop = 0.0;
		char was[sizeof ctx->search.chosen];
		memcpy(was, ctx->search.chosen, sizeof was);
		snprintf(ctx->search.chosen, sizeof ctx->search.chosen, "ridge restart from %.28s",
			 was);
		rc = 1;
		goto done;
	}
	/* all the data, fitted to a tolerance from the restart, end no lower: the valley
	 * holds; otherwise the subsample's lower point could not be reached (budget) */
	if (!(refined && xf_fit_ended_converged(pr, &trial)))
		best->ridge_drop = -gain;
done:
	free(mask);
	free(move);
	xf_fit_point_free(&trial);
	xf_fit_point_free(&work);
	return rc;
}
