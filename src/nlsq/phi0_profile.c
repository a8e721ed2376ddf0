/* phi0_profile.c — a converged laminar fit must not sit in a wrong flow-angle basin
 * (adr/0053, docs/nlsq.md "Other flow-angle basins").
 *
 * φ0 enters the laminar model only through cos(φ − φ0) inside sinc², an even function:
 * turning φ0 to its mirror swaps the shear decorrelation between angles, and the other
 * parameters (D0, α, the per-angle scaling) can half make up for it. χ² is multimodal in
 * φ0, the modes far apart in χ² but each a clean interior minimum: no local test tells a
 * wrong one, and a search whose starts all drift into it calls it converged with quality
 * good. So the end point is profiled along φ0: on a fixed grid over φ0's bounds, with the
 * other physical parameters held and the per-angle scaling re-solved (the model is
 * linear in it), on the small subsample of screening round 1; the lowest other local
 * minima of that profile near the end point's χ² are refitted from there (round 2's
 * subsample, then all the data) and a lower χ² wins.
 * When the subsample shows a lower basin that all the data cannot reach, the point keeps
 * xf_fit_point.basin_drop and is not converged. Static fits, a fixed φ0 and end points
 * that are not converged anyway run nothing. Deterministic: fixed grid and order, the
 * seeded subsamples of the search, no wall clock. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/nlsq_internal.h"

#define XF_PHI0_STEP_DEG	  2.5 /* grid spacing at most (φ0's default bounds: 9 points) */
#define XF_PHI0_MAX_GRID	  73 /* wider bounds: a coarser grid (180° at 2.5°; χ²'s period) */
#define XF_PHI0_TRIES		  2  /* other profile minima refitted at most */
#define XF_PHI0_SCREEN_ITERATIONS 40 /* as round 2 of the screening */
#define XF_PHI0_SCREEN_STALL	  6
#define XF_PHI0_REFINE_STALL	  10
#define XF_PHI0_GAIN_NOISE	  1.0 /* a lower χ² counts beyond this many noise units */
/* A profile minimum is refitted when its χ² (the other parameters held) lies below the
 * end point's plus this fraction of it: from a mirror end point the optimum's φ0 showed
 * 0.44 of its χ² (the refit ended at 0.32); from the optimum the mirror showed 2.8 and
 * costs no refit (adr/0053). */
#define XF_PHI0_NEAR_FRACTION 0.5

/* The grid: n points spaced evenly from lower to upper, no wider than the step (up to
 * XF_PHI0_MAX_GRID points). */
static int grid_size(const xf_problem *pr)
{
	double range = pr->upper[XF_P_PHI0] - pr->lower[XF_P_PHI0];
	int n = (int)ceil(range / XF_PHI0_STEP_DEG - 1e-9) + 1;
	return n < 2 ? 2 : n > XF_PHI0_MAX_GRID ? XF_PHI0_MAX_GRID : n;
}

static double grid_phi0(const xf_problem *pr, int i, int n)
{
	double lo = pr->lower[XF_P_PHI0], hi = pr->upper[XF_P_PHI0];
	return i == n - 1 ? hi : lo + (hi - lo) * i / (n - 1);
}

/* x with φ0 = phi0 and the per-angle scaling re-solved for it (the model is linear in
 * the scaling: one Gauss-Newton step on its block) on the small subsample of screening
 * round 1 (the basins differ by a large fraction of χ²: it tells them apart); its χ²
 * there (INFINITY when not finite). */
static double profile_point(xf_fit_ctx *ctx, const double *from, double phi0, double *x,
			    xf_fit_point *work)
{
	int nf = ctx->pr->n_full;
	memcpy(x, from, sizeof(double) * (size_t)nf);
	x[XF_P_PHI0] = phi0;
	xf_lik_out out = { 0.0, work->jtj, work->b, 0.0 };
	if (xf_fit_pass(ctx, XF_ROLE_COARSE, x, &out) || !isfinite(out.chi2))
		return INFINITY;
	xf_fit_profile_scaling(ctx->pr, x, work->jtj, work->b);
	xf_lik_out chi = { 0.0, NULL, NULL, 0.0 };
	if (xf_fit_pass(ctx, XF_ROLE_COARSE, x, &chi) || !isfinite(chi.chi2))
		return INFINITY;
	return chi.chi2;
}

/* The grid's local minima (no lower neighbour) other than the end point's own basin
 * (the grid points next to its φ0) with χ² below `near`, lowest first, at most
 * XF_PHI0_TRIES; their number returned. */
static int other_minima(const double *prof, int n, int own_lo, int own_hi, double near, int *pick)
{
	int m = 0;
	for (int i = 0; i < n; i++) {
		if (i >= own_lo && i <= own_hi)
			continue;
		if (!(prof[i] < near) || (i > 0 && prof[i - 1] < prof[i]) ||
		    (i < n - 1 && prof[i + 1] < prof[i]))
			continue;
		int at = m < XF_PHI0_TRIES ? m++ : XF_PHI0_TRIES;
		if (at == XF_PHI0_TRIES && !(prof[i] < prof[pick[XF_PHI0_TRIES - 1]]))
			continue;
		if (at == XF_PHI0_TRIES)
			at = XF_PHI0_TRIES - 1;
		pick[at] = i;
		for (; at > 0 && prof[pick[at]] < prof[pick[at - 1]]; at--) {
			int t = pick[at];
			pick[at] = pick[at - 1];
			pick[at - 1] = t;
		}
	}
	return m;
}

/* Refit from trial->x on the subsample, then (when it beats the end point there) on all
 * the data. Returns the subsample gain in noise units (negative: lower), NAN when the
 * run failed; *refined 1 when trial holds a fit on all the data (the refinement ran, or
 * the subsample is all the data), 0 when the budget was spent before it. */
static double refit(xf_fit_ctx *ctx, const int *mask, double here_sub, xf_fit_point *trial,
		    int *refined)
{
	*refined = 0;
	xf_fit_run run = { .role = XF_ROLE_SCREEN,
			   .free_mask = mask,
			   .max_iterations = XF_PHI0_SCREEN_ITERATIONS,
			   .ftol = fmin(ctx->opt->ftol, 1e-8),
			   .stall_window = XF_PHI0_SCREEN_STALL,
			   .phase = "phi0 basin" };
	if (xf_fit_lm(ctx, &run, trial) || !isfinite(trial->chi2))
		return NAN;
	double gain = (trial->chi2 - here_sub) / xf_fit_noise_s2(ctx, XF_ROLE_SCREEN, here_sub);
	if (!(gain < -XF_PHI0_GAIN_NOISE))
		return gain;
	*refined = xf_fit_refine_on_all(ctx, mask, XF_PHI0_REFINE_STALL, "phi0 refine", trial);
	return gain;
}

static void take(xf_fit_ctx *ctx, xf_fit_point *best, const xf_fit_point *trial, double from)
{
	double s2 = xf_fit_noise_s2(ctx, XF_ROLE_FULL, best->chi2), previous = best->chi2;
	xf_info("nlsq: a refit from the flow-angle basin at phi0 %.4g lowered chi2 from %.10g "
		"to %.10g (%.3g noise units): phi0 %.6g was a wrong basin",
		from, best->chi2, trial->chi2, (best->chi2 - trial->chi2) / s2, best->x[XF_P_PHI0]);
	xf_fit_point_copy(best, trial, ctx->pr->n_full);
	best->competitor_chi2 = previous;
	best->basin_drop = 0.0;
	ctx->search.n_phi0_improved++;
	char was[sizeof ctx->search.chosen];
	memcpy(was, ctx->search.chosen, sizeof was);
	snprintf(ctx->search.chosen, sizeof ctx->search.chosen, "phi0 basin from %.30s", was);
}

/* Profile, then refit the other minima; best replaced by a lower one. 1 replaced, 0 not. */
static int profile_and_refit(xf_fit_ctx *ctx, xf_fit_point *best, const int *mask, double *prof,
			     xf_fit_point *trial, xf_fit_point *work)
{
	const xf_problem *pr = ctx->pr;
	int n = grid_size(pr), pick[XF_PHI0_TRIES];
	xf_lik_out here = { 0.0, NULL, NULL, 0.0 }, coarse = here;
	if (xf_fit_pass(ctx, XF_ROLE_COARSE, best->x, &coarse) || !isfinite(coarse.chi2))
		return 0;
	int own_lo = n, own_hi = -1;
	double step = (pr->upper[XF_P_PHI0] - pr->lower[XF_P_PHI0]) / (n - 1);
	for (int i = 0; i < n; i++) {
		double g = grid_phi0(pr, i, n);
		prof[i] = profile_point(ctx, best->x, g, trial->x, work);
		if (fabs(g - best->x[XF_P_PHI0]) < step) {
			own_lo = i < own_lo ? i : own_lo;
			own_hi = i;
		}
	}
	double near = coarse.chi2 * (1.0 + XF_PHI0_NEAR_FRACTION);
	int m = other_minima(prof, n, own_lo, own_hi, near, pick);
	ctx->search.n_phi0_profiles++;
	if (m > 0 && (xf_fit_pass(ctx, XF_ROLE_SCREEN, best->x, &here) || !isfinite(here.chi2)))
		return 0;
	for (int t = 0; t < m && !xf_interrupted(); t++) {
		double g = grid_phi0(pr, pick[t], n);
		profile_point(ctx, best->x, g, trial->x, work);
		int refined;
		ctx->search.n_phi0_tried++;
		double gain = refit(ctx, mask, here.chi2, trial, &refined);
		xf_info("nlsq: phi0 profile minimum at %.4g (chi2 %.3g times the end point's "
			"with the other parameters held): refitted, %.4g noise units from it",
			g, prof[pick[t]] / coarse.chi2, gain);
		if (!(gain < -XF_PHI0_GAIN_NOISE))
			continue;
		double s2 = xf_fit_noise_s2(ctx, XF_ROLE_FULL, best->chi2);
		if (refined && trial->chi2 < best->chi2 - XF_PHI0_GAIN_NOISE * s2) {
			take(ctx, best, trial, g);
			return 1;
		}
		/* all the data, fitted to a tolerance from there, end no lower: the end point
		 * holds; otherwise the subsample's lower basin could not be reached */
		if (!(refined && xf_fit_ended_converged(ctx->pr, trial)) &&
		    -gain > best->basin_drop) {
			best->basin_drop = -gain;
			best->basin_phi0 = trial->x[XF_P_PHI0];
		}
	}
	return 0;
}

int xf_fit_phi0_profile(xf_fit_ctx *ctx, xf_fit_point *best)
{
	const xf_problem *pr = ctx->pr;
	int nf = pr->n_full, rc = 0;
	best->basin_drop = 0.0;
	/* only a laminar end point that would be called converged, with φ0 free */
	if (!ctx->opt->phi0_profile || !pr->model->shear || pr->fixed[XF_P_PHI0] ||
	    !xf_fit_ended_converged(pr, best) || !isfinite(best->chi2) ||
	    !(pr->upper[XF_P_PHI0] > pr->lower[XF_P_PHI0]))
		return 0;
	int *mask = malloc(sizeof(int) * (size_t)nf);
	double *prof = malloc(sizeof(double) * XF_PHI0_MAX_GRID);
	xf_fit_point trial = { 0 }, work = { 0 };
	if (!mask || !prof || xf_fit_point_alloc(&trial, nf) || xf_fit_point_alloc(&work, nf)) {
		rc = -1;
		goto done;
	}
	for (int k = 0; k < nf; k++)
		mask[k] = !pr->fixed[k];
	rc = profile_and_refit(ctx, best, mask, prof, &trial, &work);
done:
	free(mask);
	free(prof);
	xf_fit_point_free(&trial);
	xf_fit_point_free(&work);
	return rc;
}
