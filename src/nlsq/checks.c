/* checks.c — what stands behind "converged" (docs/nlsq.md "Status and quality"): the
 * solver stopped on a tolerance, the point is a local optimum on the noise scale (one
 * more Gauss-Newton step would move it by less than XF_CONVERGED_SE standard errors),
 * every free parameter is informed by the data, and no screened start ended in a better
 * basin. The quality grade collects every reason a scientist should know about. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/covariance.h"
#include "nlsq/nlsq_internal.h"
#include "nlsq/ridge.h"
#include "util/key_names.h"

#define XF_QUALITY_FEW_STARTS 3	   /* fewer converged screened starts: marginal */
#define XF_SAME_BASIN_NOISE   0.1  /* closer than this: the same end point */
#define XF_SIGMA_CHI2_LOW     0.5  /* reduced χ² with a given σ outside [low, high]: */
#define XF_SIGMA_CHI2_HIGH    2.0  /* σ or the model does not describe the data */
#define XF_AT_BOUND_TOL	      1e-9 /* fraction of the bound width: "at a bound" */

/* The Gauss-Newton step of the bounded problem: parameters on a bound with the descent
 * pointing out, and those whose step would cross their bound, are held; the step over
 * the rest is recomputed until the held set stops changing (an active-set estimate). */
static double gauss_newton_step(const xf_problem *pr, const double *x, const double *jtj,
				const double *b, double chi2, double *step_out)
{
	int n = pr->n_full, n_free = 0;
	int *mask = calloc((size_t)n, sizeof(int));
	double *c = malloc(sizeof(double) * (size_t)n * n);
	double d2 = NAN;
	if (!mask || !c) {
		xf_note_no_memory();
		goto done;
	}
	for (int k = 0; k < n; k++) {
		double tol = XF_AT_BOUND_TOL * pr->scale[k];
		int held = (x[k] <= pr->lower[k] + tol && b[k] <= 0.0) ||
			   (x[k] >= pr->upper[k] - tol && b[k] >= 0.0);
		mask[k] = !pr->fixed[k] && !held;
		n_free += !pr->fixed[k];
	}
	for (int round = 0; round <= n; round++) {
		int rank, changed = 0;
		if (step_out)
			memset(step_out, 0, sizeof(double) * (size_t)n);
		if (xf_covariance(jtj, n, mask, 1.0, c, &rank, NULL))
			goto done;
		d2 = 0.0;
		for (int k = 0; k < n; k++) {
			if (!mask[k])
				continue;
			double step = 0.0;
			for (int l = 0; l < n; l++)
				if (mask[l])
					step += c[(size_t)k * n + l] * b[l];
			d2 += b[k] * step;
			if (step_out)
				step_out[k] = step;
			if (x[k] + step < pr->lower[k] || x[k] + step > pr->upper[k]) {
				mask[k] = 0;
				changed = 1;
			}
		}
		if (!changed)
			break;
	}
done:
	free(mask);
	free(c);
	double s2 = chi2 / fmax(1.0, (double)pr->n_points - n_free);
	return s2 > 0.0 && d2 >= 0.0 ? sqrt(d2 / s2) : (d2 == 0.0 ? 0.0 : NAN);
}

double xf_fit_distance_se(const xf_problem *pr, const double *x, const double *jtj, const double *b,
			  double chi2)
{
	return gauss_newton_step(pr, x, jtj, b, chi2, NULL);
}

/* The distance to the local optimum, measured where the quadratic model cannot be
 * trusted. On an ill-conditioned problem the Gauss-Newton step has a floor set by the
 * rounding of the gradient b in the weakest directions of JᵀJ (bᵀ(JᵀJ)⁻¹b amplifies it by
 * the condition number): on one laminar file with per-angle scaling the same end point
 * read 0.244 standard errors with one BLAS's kernels and < 0.1 with another's, and no
 * solver step could move it (issue 33). A point that far from a real optimum lowers χ²
 * along that step by about d² noise units (d²·(2t − t²) at a fraction t of it). So when
 * the model says more than XF_CONVERGED_SE, χ² is evaluated at XF_CHECK_FRACTIONS
 * fractions of the step (one sweep over the data), and the largest drop found, in noise
 * units, gives the distance: sqrt(drop). A real distance keeps its size; a floor of
 * rounding finds no drop. The smaller of the two readings is returned. */
#define XF_CHECK_FRACTIONS 4
double xf_fit_distance_measured(const xf_fit_ctx *ctx, const xf_fit_point *p)
{
	const xf_problem *pr = ctx->pr;
	int n = pr->n_full;
	double *step = malloc(sizeof(double) * (size_t)n);
	double *pts = malloc(sizeof(double) * (size_t)n * XF_CHECK_FRACTIONS);
	double chi2[XF_CHECK_FRACTIONS];
	double d = NAN;
	if (!step || !pts) {
		xf_note_no_memory();
		goto done;
	}
	d = gauss_newton_step(pr, p->x, p->jtj, p->b, p->chi2, step);
	if (!(d > XF_CONVERGED_SE) || !isfinite(d) || !ctx->lik[XF_ROLE_FULL])
		goto done;
	double t = 1.0;
	for (int i = 0; i < XF_CHECK_FRACTIONS; i++, t *= 0.5)
		for (int k = 0; k < n; k++)
			pts[(size_t)i * n + k] =
				fmin(pr->upper[k], fmax(pr->lower[k], p->x[k] + t * step[k]));
	if (xf_lik_eval_values(ctx->lik[XF_ROLE_FULL], XF_CHECK_FRACTIONS, pts, chi2)) {
		xf_note_no_memory();
		goto done;
	}
	int n_free = 0;
	for (int k = 0; k < n; k++)
		n_free += !pr->fixed[k];
	double s2 = p->chi2 / fmax(1.0, (double)pr->n_points - n_free);
	double drop = 0.0;
	for (int i = 0; i < XF_CHECK_FRACTIONS; i++)
		if (isfinite(chi2[i]))
			drop = fmax(drop, (p->chi2 - chi2[i]) / s2);
	double measured = sqrt(drop);
	if (measured < d) {
		xf_info("nlsq: the Gauss-Newton step reads %.3g standard errors, but chi2 falls by "
			"only %.3g noise units along it: %.3g standard errors from the optimum",
			d, drop, measured);
		d = measured;
	}
done:
	free(step);
	free(pts);
	return d;
}

int xf_fit_ended_converged(const xf_problem *pr, const xf_fit_point *p)
{
	if (xf_stop_on_tolerance(p->stop))
		return 1;
	return p->stop == XF_STOP_STALLED && isfinite(p->chi2) &&
	       xf_fit_distance_se(pr, p->x, p->jtj, p->b, p->chi2) <= XF_CONVERGED_SE;
}

/* Every free parameter moves χ² and is pinned down within its bounds. */
static int check_informed(const xf_problem *pr, const xf_fit_point *best, const double *unc,
			  int cov_rank, const double *weak_dir, int n_free, xf_quality *q)
{
	int ok = 1;
	for (int k = 0; k < pr->n_full; k++) {
		if (pr->fixed[k])
			continue;
		double h = best->jtj[(size_t)k * pr->n_full + k],
		       width = pr->upper[k] - pr->lower[k];
		if (!(h > 0.0)) {
			xf_quality_add_reason(
				q,
				"not informed by the data: %s does not change the model (fix "
				"it)",
				pr->names[k]);
			ok = 0;
		} else if (!(unc[k] <= width)) {
			xf_quality_add_reason(
				q,
				"not informed by the data: %s (uncertainty %.3g exceeds its "
				"bound width %.3g; fix it or narrow its bounds)",
				pr->names[k], unc[k], width);
			ok = 0;
		}
	}
	if (cov_rank < n_free) {
		char names[160] = "";
		for (int k = 0; k < pr->n_full; k++)
			if (fabs(weak_dir[k]) >= XF_WEAK_COMPONENT &&
			    strlen(names) + strlen(pr->names[k]) + 3 < sizeof names) {
				if (names[0])
					strcat(names, ", ");
				strcat(names, pr->names[k]);
			}
		xf_quality_add_reason(
			q,
			"rank deficient (JtJ rank %d of %d): the data cannot tell %s apart; "
			"their uncertainties are not given (fix one, or narrow its bounds)",
			cov_rank, n_free, names);
		ok = 0;
	}
	return ok;
}

void xf_fit_quality(const xf_fit_ctx *ctx, const xf_fit_point *best, const double *cov,
		    int cov_rank, const double *weak_dir, xf_nlsq_result *res)
{
	const xf_problem *pr = ctx->pr;
	xf_quality *q = &res->quality;
	int n = pr->n_full;
	memset(q, 0, sizeof *q);
	double s2 = best->chi2 / fmax(1.0, (double)pr->n_points - res->n_free);
	q->distance_se = xf_fit_distance_measured(ctx, best);
	double *unc = malloc(sizeof(double) * (size_t)n);
	if (!unc)
		xf_note_no_memory();
	if (unc)
		for (int k = 0; k < n; k++) {
			double v = cov[(size_t)k * n + k];
			unc[k] = v >= 0.0 ? sqrt(v) : NAN;
		}
	int zero_noise = xf_fit_zero_noise(pr, res->residual_sd);
	if (zero_noise)
		xf_quality_add_reason(
			q,
			"the residuals vanish (residual sd %.3g): noise-free data leave the "
			"noise level unknown, so no uncertainty is given (set " XF_KEY_NLSQ_SIGMA
			")",
			res->residual_sd);
	q->all_informed = unc && (zero_noise || check_informed(pr, best, unc, cov_rank, weak_dir,
							       res->n_free, q));
	free(unc);
	q->best_of_starts = ctx->opt->start_search;
	int at_optimum = q->distance_se <= XF_CONVERGED_SE;
	/* a stall at the optimum on the noise scale ended converged (xf_fit_ended_converged) */
	int ended =
		xf_stop_on_tolerance(best->stop) || (best->stop == XF_STOP_STALLED && at_optimum);
	int off_bound_lower = best->bound_drop > 0.0;	/* bound_restart.c, adr/0046 */
	int other_basin_lower = best->basin_drop > 0.0; /* phi0_profile.c, adr/0053 */
	/* a valley of equally good fits (adr/0047): sets the status "ridge" and says what
	 * is identified; a point with a lower χ² elsewhere is no valley floor */
	int ridge_lower = best->ridge_drop > 0.0; /* ridge_restart.c */
	/* a ridge only where restarts along it end no lower (issue 33 item 9) */
	int ridge = !off_bound_lower && !other_basin_lower && !ridge_lower &&
		    xf_ridge_judge(ctx, best, res);
	if (ended && at_optimum && q->all_informed && !off_bound_lower && !other_basin_lower &&
	    !ridge_lower && !ridge && !ctx->unsettled)
		res->status = XF_STATUS_CONVERGED;
	else if (best->stop == XF_STOP_MAX_ITERATIONS && !ridge)
		res->status = XF_STATUS_MAX_ITERATIONS;
	else if (!ridge)
		res->status = XF_STATUS_FAILED;
	if (!ended && !ridge)
		xf_quality_add_reason(q, "the optimiser stopped: %s",
				      xf_stop_reason_name(best->stop));
	if (!at_optimum && !ridge)
		xf_quality_add_reason(
			q,
			"not at a local optimum: one more Gauss-Newton step would move the "
			"parameters by %.3g standard errors",
			q->distance_se);
	if (off_bound_lower)
		xf_quality_add_reason(
			q,
			"not at an optimum: restarts from inside the bounds lower chi2 by %.3g "
			"noise units, and the fit could not get off the bound (widen "
			"max_iterations, or start inside)",
			best->bound_drop);
	if (other_basin_lower)
		xf_quality_add_reason(
			q,
			"not at an optimum: a refit from the flow-angle basin at phi0 %.4g lowers "
			"chi2 by %.3g noise units on the screening subsample, and the fit could "
			"not get there (widen max_iterations, or start phi0 there)",
			best->basin_phi0, best->basin_drop);
	if (ridge_lower)
		xf_quality_add_reason(
			q,
			"not at an optimum: restarts with the parameters the data do not identify "
			"here moved lower chi2 by %.3g noise units on the screening subsample, and "
			"the fit could not get there (no ridge; widen max_iterations)",
			best->ridge_drop);
	if (ctx->unsettled)
		xf_quality_add_reason(
			q,
			"not shown to be an optimum: the tests of the end point (flow-angle "
			"basins, restarts from inside the bounds and along a ridge) still found "
			"lower points after %d rounds (widen max_iterations)",
			XF_SETTLE_ROUNDS);
	for (int k = 0; k < res->n_at_bounds; k++)
		xf_quality_add_reason(q, "at a bound: %s", res->at_bounds[k]);
	if (!ctx->opt->start_search)
		xf_quality_add_reason(q, "single start: other minima were not searched "
					 "(" XF_KEY_START_SEARCH ": false)");
	else if (ctx->search.n_effective < XF_QUALITY_FEW_STARTS)
		xf_quality_add_reason(q,
				      "few effective starts: %d of %d screened starts got anywhere",
				      ctx->search.n_effective, ctx->search.n_candidates);
	double gap = (best->competitor_chi2 - best->chi2) / s2;
	if (gap > XF_SAME_BASIN_NOISE && gap <= XF_AMBIGUOUS_NOISE)
		xf_quality_add_reason(
			q,
			"another minimum fits almost as well: chi2 higher by only %.3g "
			"noise units",
			gap);
	if (pr->has_sigma && (res->reduced_chi_squared > XF_SIGMA_CHI2_HIGH ||
			      res->reduced_chi_squared < XF_SIGMA_CHI2_LOW))
		xf_quality_add_reason(
			q,
			"reduced chi2 %.3g with the given sigma: sigma or the model does not "
			"describe the data",
			res->reduced_chi_squared);
	/* what holding the per-angle scaling costs (adr/0048): may lower a converged grade */
	xf_quality_level held = xf_fit_held_scaling(ctx, best, res);
	if (res->status != XF_STATUS_CONVERGED)
		q->overall = XF_QUALITY_POOR;
	else
		q->overall = q->n_reasons ? XF_QUALITY_MARGINAL : XF_QUALITY_GOOD;
	if (held > q->overall)
		q->overall = held;
}
