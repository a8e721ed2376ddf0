/* beyond.c — the exact posterior's mass beyond the draws (beyond.h, adr/0087).
 *
 * For each sampled physical parameter k and each side, in the sampler's u-space (where a
 * bound is at infinity): the slice u_k = v has the Laplace mass
 *     ℓ(v) = max over the rest of log p(u) − ½·log|H_rest|,
 * H the Gauss–Newton curvature of −log p (the data's JᵀJ/σ², each prior's and the logit's
 * curvature; σ's own). Its scale is set where the draws are dense: at their 95 % quantile
 * q the draws' density of u_k is 0.04/(q₉₇ − q₉₃), so log Z = ℓ(q) − log density. From the
 * draws' extreme outward, slices at growing steps; between two slices ℓ is taken linear
 * (the exact integral of an exponential), and the walk stops once ℓ falls 12 below the
 * extreme's or a slice holds less than 1e-6. The same integral from q to the extreme,
 * against the draws' 5 %, says how good the Laplace mass is there (calib). */
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmc/beyond.h"
#include "cmc/slice.h"
#include "util/clock.h"

#define XF_BEYOND_STEPS_MAX 24	 /* slices per side beyond the extreme */
#define XF_BEYOND_GROWTH    1.5	 /* each step 1.5 × the last */
#define XF_BEYOND_DROP	    12.0 /* a slice this far below the extreme's: the tail has ended */
#define XF_BEYOND_SLICE_MIN 1e-6 /* ... or one holding less than this (and falling) */
#define XF_BEYOND_CALIB_MIN 0.2	 /* calibration outside [0.2, 5]: the side is not judged */
#define XF_BEYOND_U_MAX	    30.0 /* |u| beyond: within e^−30 of a bound */

typedef struct side_out {
	double mass, var, edge_x, reach_x, calib;
} side_out;

/* log of ∫₀ʰ exp(a + (b − a)·t/h) dt */
static double log_segment(double a, double b, double h)
{
	double m = fmax(a, b), dlt = fabs(b - a);
	if (dlt < 1e-9)
		return m + log(h);
	return m + log(h) + log(-expm1(-dlt)) - log(dlt);
}

/* the draw (its d coordinates) whose u_k is nearest v */
static void nearest_draw(const xf_slice *p, const double *u_draws, int n, int stride,
			 double log_sigma, int k, double v, double *u)
{
	int best = 0;
	for (int i = 1; i < n; i++)
		if (fabs(u_draws[(size_t)i * stride + k] - v) <
		    fabs(u_draws[(size_t)best * stride + k] - v))
			best = i;
	memcpy(u, u_draws + (size_t)best * stride, sizeof(double) * (size_t)p->nt);
	u[p->nt] = stride > p->nt ? u_draws[(size_t)best * stride + p->nt] : log_sigma;
}

/* One side (+1 above, −1 below) of parameter m: the mass beyond the draws' extreme and its
 * contribution to the variance of x about mean_x. 0, or −1 when the probe cannot say
 * (out->mass NaN). */
static int walk(xf_slice *p, int m, int side, const double *u_draws, int n, int stride,
		double log_sigma, const double *sorted, double mean_x, side_out *o)
{
	const xf_problem *pr = p->t.pr;
	int d = p->d, j = p->t.theta[m];
	double *ua = malloc(sizeof(double) * (size_t)d), *ue = malloc(sizeof(double) * (size_t)d);
	double *uc = malloc(sizeof(double) * (size_t)d);
	double cum_v[XF_BEYOND_STEPS_MAX + 1], cum_m[XF_BEYOND_STEPS_MAX + 1];
	int rc = -1, steps = 0;
	o->mass = o->var = o->reach_x = o->calib = NAN;
	if (!ua || !ue || !uc)
		goto done;
	double pa = side > 0 ? 0.95 : 0.05;
	double qa = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)n, pa);
	double q1 = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)n, pa - 0.02);
	double q2 = gsl_stats_quantile_from_sorted_data(sorted, 1, (size_t)n, pa + 0.02);
	double e = side > 0 ? sorted[n - 1] : sorted[0];
	o->edge_x = xf_slice_u_to_x(pr, j, e);
	if (!(q2 > q1) || !(side * (e - qa) > 0.0))
		goto done;
	/* each calibration slice at a draw's own u_k, from that draw: on a thin curved ridge
	 * a draw moved to another u_k lies far off it, where Newton steps crawl */
	double ell_a, ell_e;
	nearest_draw(p, u_draws, n, stride, log_sigma, m, qa, ua);
	nearest_draw(p, u_draws, n, stride, log_sigma, m, e, ue);
	double va = ua[m];
	if (!(side * (e - va) > 0.0) || xf_slice_max(p, m, ua, &ell_a) ||
	    xf_slice_max(p, m, ue, &ell_e))
		goto done;
	double log_z = ell_a - log(0.04 / (q2 - q1));
	/* the draws hold ~5 % between q and their extreme; a probe whose Laplace masses
	 * disagree with the draws this much says nothing about the mass beyond them */
	o->calib = exp(log_segment(ell_a - log_z, ell_e - log_z, fabs(e - va))) / 0.05;
	if (!(o->calib > XF_BEYOND_CALIB_MIN && o->calib < 1.0 / XF_BEYOND_CALIB_MIN))
		goto done;
	double h0 = 0.5 * fabs(e - va), v_prev = e, ell_prev = ell_e, mass = 0.0, var = 0.0;
	memcpy(uc, ue, sizeof(double) * (size_t)d);
	for (int s = 0; s < XF_BEYOND_STEPS_MAX; s++) {
		double h = h0 * pow(XF_BEYOND_GROWTH, s), v = v_prev + side * h, ell;
		if (fabs(v) > XF_BEYOND_U_MAX)
			break;
		int sr = xf_slice_next(p, m, ua, ue, v, uc, &ell);
		if (sr < 0)
			break;
		double seg = exp(log_segment(ell_prev - log_z, ell - log_z, h));
		double dx = xf_slice_u_to_x(pr, j, v_prev + 0.5 * side * h) - mean_x;
		mass += seg;
		var += seg * dx * dx;
		cum_v[steps] = xf_slice_u_to_x(pr, j, v);
		cum_m[steps++] = mass;
		int falling = ell < ell_prev;
		memcpy(ua, ue, sizeof(double) * (size_t)d);
		memcpy(ue, uc, sizeof(double) * (size_t)d);
		v_prev = v;
		ell_prev = ell;
		/* a slice short of its maximum counts (its mass too low) and ends the walk */
		if (sr || (falling && (ell < ell_e - XF_BEYOND_DROP || seg < XF_BEYOND_SLICE_MIN)))
			break;
	}
	o->mass = mass;
	o->var = var;
	o->reach_x = o->edge_x;
	for (int s = 0; s < steps; s++)
		if (cum_m[s] >= 0.9 * mass) {
			o->reach_x = cum_v[s];
			break;
		}
	rc = 0;
done:
	free(ua);
	free(ue);
	free(uc);
	return rc;
}

static int tail_alloc(xf_cmc_beyond *t, int nf)
{
	size_t z = sizeof(double) * (size_t)nf;
	t->mass = malloc(z);
	t->sd_ratio = malloc(z);
	t->edge = malloc(z);
	t->reach = malloc(z);
	t->calib = malloc(z);
	t->flagged = calloc((size_t)nf, sizeof(int));
	t->sides = calloc((size_t)nf, sizeof(int));
	if (!t->mass || !t->sd_ratio || !t->edge || !t->reach || !t->calib || !t->flagged ||
	    !t->sides)
		return -1;
	for (int k = 0; k < nf; k++)
		t->mass[k] = t->sd_ratio[k] = t->edge[k] = t->reach[k] = t->calib[k] = NAN;
	return 0;
}

int xf_cmc_beyond_probe(const cmc_run *r, const double *u_draws, int n, int stride, double sigma,
			xf_cmc_result *res, xf_error *err)
{
	const double t0 = xf_monotonic_s();
	const xf_problem *pr = &r->pr;
	xf_cmc_beyond *tl = &res->beyond;
	int nt = r->n_theta, rc = 0;
	xf_slice p;
	memset(&p, 0, sizeof p);
	double *sorted = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
	if (!sorted || tail_alloc(tl, pr->n_full)) {
		rc = xf_fail(err, XF_ERR_NOMEM,
			     "out of memory for the posterior's probe beyond the draws");
		goto done;
	}
	if (n < 100)
		goto done;
	if ((rc = xf_slice_open(&p, r, err)))
		goto done;
	for (int m = 0; m < nt; m++) {
		int j = r->theta[m];
		if (j >= pr->n_phys) /* the scaling: its draws are exact given θ */
			continue;
		double s1 = 0.0, s2 = 0.0;
		for (int i = 0; i < n; i++) {
			double v = u_draws[(size_t)i * stride + m], x = xf_slice_u_to_x(pr, j, v);
			sorted[i] = v;
			s1 += x;
			s2 += x * x;
		}
		double mean_x = s1 / n, var_x = fmax(s2 / n - mean_x * mean_x, 0.0);
		gsl_sort(sorted, 1, (size_t)n);
		side_out up, lo;
		int ru = walk(&p, m, +1, u_draws, n, stride, log(sigma), sorted, mean_x, &up);
		int rl = walk(&p, m, -1, u_draws, n, stride, log(sigma), sorted, mean_x, &lo);
		if (ru && rl)
			continue;
		double mu = ru ? 0.0 : up.mass, ml = rl ? 0.0 : lo.mass;
		const side_out *big = !ru && (rl || mu >= ml) ? &up : &lo;
		tl->mass[j] = mu + ml;
		tl->sd_ratio[j] =
			var_x > 0.0
				? sqrt((var_x + (ru ? 0.0 : up.var) + (rl ? 0.0 : lo.var)) / var_x)
				: NAN;
		tl->edge[j] = big->edge_x;
		tl->reach[j] = big->reach_x;
		tl->calib[j] = big->calib;
		tl->sides[j] = !ru + !rl;
		tl->flagged[j] =
			tl->mass[j] > XF_BEYOND_MASS || tl->sd_ratio[j] > XF_BEYOND_SD_RATIO;
		tl->n_flagged += tl->flagged[j];
	}
	tl->done = 1;
	tl->passes = p.passes;
	tl->wall_s = xf_monotonic_s() - t0;
	xf_info("cmc: beyond the draws: %d parameters with posterior mass the draws missed (%ld "
		"passes, %.1f s)",
		tl->n_flagged, p.passes, tl->wall_s);
done:
	xf_slice_close(&p);
	free(sorted);
	return rc;
}

void xf_cmc_beyond_reason(const xf_cmc_result *res, int k, char *buf, size_t size)
{
	const xf_cmc_beyond *t = &res->beyond;
	int above = t->reach[k] > t->edge[k];
	snprintf(buf, size,
		 "the exact posterior of %s reaches beyond the draws: ~%.2g %% of its mass %s "
		 "%s = %.4g (to ~%.4g), which would make its sd ~%.2g× the draws' %.4g; the "
		 "sampler did not go there: the sd and the %s quantile are understated",
		 res->names[k], 100.0 * t->mass[k], above ? "above" : "below", res->names[k],
		 t->edge[k], t->reach[k], t->sd_ratio[k], res->sd[k], above ? "95 %" : "5 %");
}

void xf_cmc_beyond_free(xf_cmc_beyond *t)
{
	free(t->mass);
	free(t->sd_ratio);
	free(t->edge);
	free(t->reach);
	free(t->calib);
	free(t->flagged);
	free(t->sides);
	memset(t, 0, sizeof *t);
}
