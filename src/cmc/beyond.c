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

#define XF_BEYOND_NEWTON_MAX 12	  /* Newton steps per slice */
#define XF_BEYOND_STEPS_MAX  24	  /* slices per side beyond the extreme */
#define XF_BEYOND_GROWTH     1.5  /* each step 1.5 × the last */
#define XF_BEYOND_DROP	     12.0 /* a slice this far below the extreme's: the tail has ended */
#define XF_BEYOND_SLICE_MIN  1e-6 /* ... or one holding less than this (and falling) */
#define XF_BEYOND_CALIB_MIN  0.2  /* calibration outside [0.2, 5]: the side is not judged */
#define XF_BEYOND_U_MAX	     30.0 /* |u| beyond: within e^−30 of a bound */

typedef struct probe {
	xf_cmc_target t;
	int nt, d;
	double *g, *b, *jtj, *h, *delta, *trial;
	long passes;
} probe;

typedef struct side_out {
	double mass, var, edge_x, reach_x, calib;
} side_out;

static double sigmoid(double u)
{
	return 1.0 / (1.0 + exp(-u));
}

static double u_to_x(const xf_problem *pr, int j, double u)
{
	return pr->lower[j] + (pr->upper[j] - pr->lower[j]) * sigmoid(u);
}

static int logp(probe *p, const double *u, double *lp, double *g)
{
	p->passes++;
	return xf_cmc_target_logp(&p->t, u, lp, g);
}

/* H over every coordinate but k, row-major (d − 1)²: the Gauss–Newton curvature of
 * −log p at u. For a logit coordinate at a maximum the prior's slope times d²x/du² equals
 * (1 − 2f)², which stays positive elsewhere; σ's coordinate is left uncoupled (its cross
 * terms vanish at the maximum, and its curvature hardly changes along a tail). */
static void curvature(const probe *p, int k, const double *u, double chi2, double *h)
{
	const xf_problem *pr = p->t.pr;
	int nt = p->nt, n = p->d - 1, nf = pr->n_full;
	double sigma = exp(u[nt]), inv_s2 = 1.0 / (sigma * sigma);
	double ratio = sigma / p->t.sigma_scale;
	int a = 0;
	for (int m = 0; m < p->d; m++) {
		if (m == k)
			continue;
		int jm = m < nt ? p->t.theta[m] : -1;
		double dm = m < nt ? xf_cmc_dx_du(pr, jm, u[m]) : 0.0;
		int b = 0;
		for (int l = 0; l < p->d; l++) {
			if (l == k)
				continue;
			double v = 0.0;
			if (m < nt && l < nt) {
				int jl = p->t.theta[l];
				v = dm * xf_cmc_dx_du(pr, jl, u[l]) * p->jtj[(size_t)jm * nf + jl] *
				    inv_s2;
			}
			if (m == l && m < nt) {
				double f = sigmoid(u[m]), sp = pr->prior_sigma[jm];
				v += dm * dm / (sp * sp) + (1.0 - 2.0 * f) * (1.0 - 2.0 * f) +
				     2.0 * f * (1.0 - f);
			} else if (m == l)
				v = 2.0 * chi2 * inv_s2 + 2.0 * ratio * ratio;
			h[(size_t)a * n + b++] = v;
		}
		a++;
	}
}

/* The slice u_k = u[k]: u moved to the maximum over the other coordinates (Newton steps
 * with H, a backtracking line search), *ell its Laplace log mass. 0; 1 when the steps did
 * not reach the maximum (a curved valley crawled along: *ell then is too low); −1 where
 * the log target or H is not usable. Each step is one JᵀJ pass, which also gives the log
 * target and its gradient there; the line search's trials are values-only passes. */
static int slice(probe *p, int k, double *u, double *ell)
{
	int d = p->d, n = d - 1;
	double lp, lt;
	for (int it = 0;; it++) {
		double prior = xf_cmc_target_prior(&p->t, u, p->t.x);
		xf_lik_out out = { 0.0, p->jtj, p->b, 0.0 };
		p->passes++;
		if (xf_lik_eval(p->t.lik, p->t.x, &out) ||
		    xf_cmc_target_from_pass(&p->t, u, prior, out.chi2, p->b, &lp, p->g))
			return -1;
		curvature(p, k, u, out.chi2, p->h);
		int a = 0;
		for (int m = 0; m < d; m++)
			if (m != k)
				p->delta[a++] = p->g[m];
		if (LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', n, 1, p->h, n, p->delta, 1) != 0)
			return -1;
		double dec = 0.0, half_logdet = 0.0;
		a = 0;
		for (int m = 0; m < d; m++)
			if (m != k)
				dec += p->g[m] * p->delta[a++];
		for (int i = 0; i < n; i++)
			half_logdet += log(p->h[(size_t)i * n + i]);
		*ell = lp - half_logdet;
		/* dec/2: what a full Newton step would still gain, far below what matters */
		if (dec < 1e-3)
			return 0;
		if (it == XF_BEYOND_NEWTON_MAX)
			return 1;
		double step = 1.0;
		int ok = 0;
		for (int ls = 0; ls < 12 && !ok; ls++, step *= 0.5) {
			a = 0;
			for (int m = 0; m < d; m++)
				p->trial[m] = m == k ? u[m] : u[m] + step * p->delta[a++];
			ok = logp(p, p->trial, &lt, NULL) == 0 && lt >= lp + 1e-4 * step * dec;
		}
		if (!ok) /* no ascent left at this precision: the maximum, if close to it */
			return dec < 1.0 ? 0 : 1;
		memcpy(u, p->trial, sizeof(double) * (size_t)d);
	}
}

/* log of ∫₀ʰ exp(a + (b − a)·t/h) dt */
static double log_segment(double a, double b, double h)
{
	double m = fmax(a, b), dlt = fabs(b - a);
	if (dlt < 1e-9)
		return m + log(h);
	return m + log(h) + log(-expm1(-dlt)) - log(dlt);
}

/* the draw (its d coordinates) whose u_k is nearest v */
static void nearest_draw(const probe *p, const double *u_draws, int n, int stride, double log_sigma,
			 int k, double v, double *u)
{
	int best = 0;
	for (int i = 1; i < n; i++)
		if (fabs(u_draws[(size_t)i * stride + k] - v) <
		    fabs(u_draws[(size_t)best * stride + k] - v))
			best = i;
	memcpy(u, u_draws + (size_t)best * stride, sizeof(double) * (size_t)p->nt);
	u[p->nt] = stride > p->nt ? u_draws[(size_t)best * stride + p->nt] : log_sigma;
}

/* The next slice's start at u_m = v from the last two maxima ua, ue: the best by log
 * target of the last maximum moved to v, and of the path through the two carried on
 * linearly in u and in physical units (along a ridge such as D0 + D_offset = const the
 * path is straight in x and bends in u, where a start 3 units out lands 1e7 below). */
static void predict(probe *p, int m, const double *ua, const double *ue, double v, double *uc)
{
	const xf_problem *pr = p->t.pr;
	int d = p->d, jm = p->t.theta[m];
	double *cand = p->trial, best = -INFINITY, lp;
	double xa = u_to_x(pr, jm, ua[m]), xe = u_to_x(pr, jm, ue[m]), xv = u_to_x(pr, jm, v);
	double ru = (v - ue[m]) / (ue[m] - ua[m]), rx = (xv - xe) / (xe - xa);
	memcpy(uc, ue, sizeof(double) * (size_t)d);
	uc[m] = v;
	for (int c = 0; c < 3; c++) {
		for (int l = 0; l < d; l++) {
			cand[l] = ue[l];
			if (c == 1 || (c == 2 && l >= p->nt))
				cand[l] = ue[l] + (ue[l] - ua[l]) * ru;
			else if (c == 2) {
				int j = p->t.theta[l];
				double xl = u_to_x(pr, j, ue[l]), ya = u_to_x(pr, j, ua[l]);
				double f = (xl + (xl - ya) * rx - pr->lower[j]) /
					   (pr->upper[j] - pr->lower[j]);
				if (f > 0.0 && f < 1.0 && isfinite(f))
					cand[l] = log(f) - log1p(-f);
			}
		}
		cand[m] = v;
		if (logp(p, cand, &lp, NULL) == 0 && lp > best) {
			best = lp;
			memcpy(uc, cand, sizeof(double) * (size_t)d);
		}
	}
}

/* One side (+1 above, −1 below) of parameter m: the mass beyond the draws' extreme and its
 * contribution to the variance of x about mean_x. 0, or −1 when the probe cannot say
 * (out->mass NaN). */
static int walk(probe *p, int m, int side, const double *u_draws, int n, int stride,
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
	o->edge_x = u_to_x(pr, j, e);
	if (!(q2 > q1) || !(side * (e - qa) > 0.0))
		goto done;
	/* each calibration slice at a draw's own u_k, from that draw: on a thin curved ridge
	 * a draw moved to another u_k lies far off it, where Newton steps crawl */
	double ell_a, ell_e;
	nearest_draw(p, u_draws, n, stride, log_sigma, m, qa, ua);
	nearest_draw(p, u_draws, n, stride, log_sigma, m, e, ue);
	double va = ua[m];
	if (!(side * (e - va) > 0.0) || slice(p, m, ua, &ell_a) || slice(p, m, ue, &ell_e))
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
		predict(p, m, ua, ue, v, uc);
		int sr = slice(p, m, uc, &ell);
		if (sr < 0) { /* or from the last maximum itself */
			memcpy(uc, ue, sizeof(double) * (size_t)d);
			uc[m] = v;
			if ((sr = slice(p, m, uc, &ell)) < 0)
				break;
		}
		double seg = exp(log_segment(ell_prev - log_z, ell - log_z, h));
		double dx = u_to_x(pr, j, v_prev + 0.5 * side * h) - mean_x;
		mass += seg;
		var += seg * dx * dx;
		cum_v[steps] = u_to_x(pr, j, v);
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

static double wall_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int xf_cmc_beyond_probe(const cmc_run *r, const double *u_draws, int n, int stride, double sigma,
			xf_cmc_result *res, xf_error *err)
{
	const double t0 = wall_now_s();
	const xf_problem *pr = &r->pr;
	xf_cmc_beyond *tl = &res->beyond;
	int nt = r->n_theta, d = nt + 1, rc = 0;
	probe p;
	memset(&p, 0, sizeof p);
	xf_lik *lik = NULL;
	double *sorted = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
	size_t nf = (size_t)pr->n_full;
	p.g = malloc(sizeof(double) * (size_t)d);
	p.trial = malloc(sizeof(double) * (size_t)d);
	p.delta = malloc(sizeof(double) * (size_t)d);
	p.h = malloc(sizeof(double) * (size_t)d * d);
	p.b = malloc(sizeof(double) * nf);
	p.jtj = malloc(sizeof(double) * nf * nf);
	if (!sorted || !p.g || !p.trial || !p.delta || !p.h || !p.b || !p.jtj ||
	    tail_alloc(tl, pr->n_full) || xf_cmc_target_alloc(&p.t, pr)) {
		rc = xf_fail(err, XF_ERR_NOMEM,
			     "out of memory for the posterior's probe beyond the draws");
		goto done;
	}
	if (n < 100)
		goto done;
	if (!(lik = xf_lik_create(pr, &r->jobs[0].ps, r->pool, err))) {
		rc = err->code;
		goto done;
	}
	p.nt = nt;
	p.d = d;
	p.t.lik = lik;
	p.t.n_points = r->jobs[0].ps.n_pairs * (size_t)pr->n_phi;
	p.t.n_theta = nt;
	p.t.theta = r->theta;
	p.t.dim = d;
	p.t.temper = 1.0;
	p.t.sigma_scale = r->jobs[0].sigma_scale;
	p.t.x_fixed = r->x_start;
	for (int m = 0; m < nt; m++) {
		int j = r->theta[m];
		if (j >= pr->n_phys) /* the scaling: its draws are exact given θ */
			continue;
		double s1 = 0.0, s2 = 0.0;
		for (int i = 0; i < n; i++) {
			double v = u_draws[(size_t)i * stride + m], x = u_to_x(pr, j, v);
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
	tl->wall_s = wall_now_s() - t0;
	xf_info("cmc: beyond the draws: %d parameters with posterior mass the draws missed (%ld "
		"passes, %.1f s)",
		tl->n_flagged, p.passes, tl->wall_s);
done:
	xf_lik_destroy(lik);
	xf_cmc_target_free(&p.t);
	free(sorted);
	free(p.g);
	free(p.trial);
	free(p.delta);
	free(p.h);
	free(p.b);
	free(p.jtj);
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
