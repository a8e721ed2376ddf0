/* degenerate.c — the fit's own guards for inputs that pass the loader but leave nothing
 * to fit (adr/0020-degenerate-fits.md): χ² that is not finite is explained by the data
 * location or parameter that made it so, never by a generic "check the config". */
#include <assert.h>
#include <math.h>
#include <stdio.h>

#include "nlsq/nlsq_internal.h"

int xf_fit_non_finite_at(const xf_fit_ctx *ctx, const double *x)
{
	xf_non_finite w;
	if (xf_problem_find_non_finite(ctx->pr, x, &w))
		return 0; /* no memory to look: the caller's own message stands */
	return w.kind != XF_NON_FINITE_NONE || !isfinite(w.chi2);
}

int xf_fit_fail_non_finite(const xf_fit_ctx *ctx, const double *x, const char *when, xf_error *err)
{
	const xf_problem *pr = ctx->pr;
	const xf_dataset *ds = pr->ds;
	const char *file = ds->path ? ds->path : "data";
	xf_non_finite w;
	if (xf_problem_find_non_finite(pr, x, &w))
		return xf_fail(err, XF_ERR_NOMEM,
			       "out of memory during the fit: no result written");
	long t1 = ds->first_frame + w.i, t2 = ds->first_frame + w.j;
	double phi = w.angle >= 0 ? ds->phi_deg[w.angle] : NAN;
	switch (w.kind) {
	case XF_NON_FINITE_PARAMETER:
		return xf_fail(err, XF_ERR_DATA,
			       "χ² is not finite %s: the start value of %s is %g (the estimate "
			       "from the data failed: do the maps decay and vary at all?), in %s",
			       when, pr->names[w.param], x[w.param], file);
	case XF_NON_FINITE_MODEL:
		return xf_fail(err, XF_ERR_DATA,
			       "χ² is not finite %s: the model overflows at φ = %g°, frames t1 = "
			       "%ld, t2 = %ld (c2 = %g with %s = %g, dt = %g s, q = %g 1/Å; check "
			       "the frame time and q), in %s",
			       when, phi, t1, t2, w.model, pr->names[0], x[0], pr->grid.dt_s,
			       pr->grid.q, file);
	case XF_NON_FINITE_DATA:
		return xf_fail(err, XF_ERR_DATA,
			       "χ² is not finite %s: the stored c2 at φ = %g°, frames t1 = %ld, "
			       "t2 = %ld is %g, in %s",
			       when, phi, t1, t2, w.data, file);
	case XF_NON_FINITE_RESIDUAL:
		if (w.angle < 0)
			return xf_fail(err, XF_ERR_DATA,
				       "χ² is not finite %s: σ = %g is so small that 1/σ² "
				       "overflows (set a realistic noise level), in %s",
				       when, pr->sigma, file);
		return xf_fail(err, XF_ERR_DATA,
			       "χ² overflows %s at φ = %g°, frames t1 = %ld, t2 = %ld: stored c2 "
			       "%.6g against the model's %.6g with σ = %g (an outlier in the "
			       "data, or σ too small), in %s",
			       when, phi, t1, t2, w.data, w.model, pr->sigma, file);
	case XF_NON_FINITE_NONE: break;
	}
	if (isfinite(w.chi2) && !xf_nlsq_model_estimated(pr)) /* adr/0123: no rates to slow */
		return xf_fail(
			err, XF_ERR_DATA,
			"no information to fit %s: model %s is flat at every start over the "
			"bounds of %s%s (every correlation decayed within a frame, or none "
			"over the whole window, or no contrast; dt = %g s, q = %g 1/Å: check "
			"the frame time, q and the bounds), in %s",
			when, pr->model->name, pr->names[0], pr->n_phys > 1 ? " and the rest" : "",
			pr->grid.dt_s, pr->grid.q, file);
	if (isfinite(w.chi2))
		return xf_fail(err, XF_ERR_DATA,
			       "no information to fit %s: the model is flat there (every "
			       "correlation decayed within a frame, or none over the whole window, "
			       "or no contrast), even moved %d decades to slower rates; the data "
			       "cannot inform D0 (D0 = %g, dt = %g s, q = %g 1/Å: check the frame "
			       "time, q and the bounds), in %s",
			       when, XF_FLAT_MOVES, x[XF_P_D0], pr->grid.dt_s, pr->grid.q, file);
	return xf_fail(err, XF_ERR_DATA,
		       "χ² is not finite %s although each of its %zu terms is: their sum "
		       "overflows (stored values of order 1e150 or more, or σ = %g too small), "
		       "in %s",
		       when, pr->n_points, pr->sigma, file);
}

/* Range and mean of the fitted points (1 ≤ i < j ≤ N−1) of angle a: from the held
 * triangle, or for a band (adr/0027) what its loader found in the whole map. */
static void angle_range(const xf_dataset *ds, int a, double *lo, double *hi, double *mean)
{
	if (ds->stats) {
		*lo = ds->stats[a].lo;
		*hi = ds->stats[a].hi;
		*mean = ds->stats[a].mean;
		return;
	}
	xf_map_range(ds->c2[a], (size_t)ds->n_frames, lo, hi, mean);
}

int xf_fit_check_data(const xf_problem *pr, xf_error *err)
{
	const xf_dataset *ds = pr->ds;
	const char *file = ds->path ? ds->path : "data";
	const xf_bound *cb = &pr->angle_bounds[0], *ob = &pr->angle_bounds[1];
	/* c2 = offset + contrast·g1², g1² in [0, 1]: what the bounds let the model reach */
	double reach_lo = ob->lower + fmin(0.0, cb->lower);
	double reach_hi = ob->upper + fmax(0.0, cb->upper);
	for (int a = 0; a < ds->n_phi; a++) {
		double lo, hi, mean;
		angle_range(ds, a, &lo, &hi, &mean);
		if (!(hi > lo))
			return xf_fail(
				err, XF_ERR_DATA,
				"no information to fit: every fitted point of the map at "
				"φ = %g° is %g (a constant map has no correlation to fit; "
				"check the file, or leave the angle out with phi_filtering), "
				"in %s",
				ds->phi_deg[a], lo, file);
		/* every point out of reach (one outlier is χ²'s business, not the bounds') */
		if (hi < reach_lo || lo > reach_hi)
			return xf_fail(
				err, XF_ERR_DATA,
				"the bounds exclude the data: every fitted point of the map "
				"at φ = %g° lies in [%g, %g] (mean %g), but offset in [%g, "
				"%g] and contrast in [%g, %g] reach only [%g, %g] (widen the "
				"offset or contrast bounds), in %s",
				ds->phi_deg[a], lo, hi, mean, ob->lower, ob->upper, cb->lower,
				cb->upper, reach_lo, reach_hi, file);
	}
	return 0;
}

/* Mean |c2| over the fitted points of every angle: the scale the residuals compare to. */
static double data_scale(const xf_dataset *ds)
{
	double s = ds->abs_sum;
	size_t count = ds->abs_count;
	if (!ds->band) {
		s = 0.0;
		count = 0;
		for (int a = 0; a < ds->n_phi; a++)
			xf_map_abs_sum(ds->c2[a], (size_t)ds->n_frames, &s, &count);
	}
	return count ? s / (double)count : 0.0;
}

int xf_fit_zero_noise(const xf_problem *pr, double residual_sd)
{
	return !pr->has_sigma && !(residual_sd > XF_ZERO_NOISE_REL * data_scale(pr->ds));
}
