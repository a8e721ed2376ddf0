/* slice.c — the exact posterior's slice u_k = v at its maximum over the other
 * coordinates, and its Laplace log mass (slice.h). Each Newton step is one JᵀJ pass, which
 * also gives the log target and its gradient there; the line search's trials are
 * values-only passes. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/slice.h"

#define XF_SLICE_NEWTON_MAX 12 /* Newton steps per slice */

static double sigmoid(double u)
{
	return 1.0 / (1.0 + exp(-u));
}

double xf_slice_u_to_x(const xf_problem *pr, int j, double u)
{
	return pr->lower[j] + (pr->upper[j] - pr->lower[j]) * sigmoid(u);
}

int xf_slice_logp(xf_slice *p, const double *u, double *lp, double *g)
{
	p->passes++;
	return xf_cmc_target_logp(&p->t, u, lp, g);
}

/* H over every coordinate but k, row-major (d − 1)²: the Gauss–Newton curvature of
 * −log p at u. For a logit coordinate at a maximum the prior's slope times d²x/du² equals
 * (1 − 2f)², which stays positive elsewhere; σ's coordinate is left uncoupled (its cross
 * terms vanish at the maximum, and its curvature hardly changes along a tail). */
static void curvature(const xf_slice *p, int k, const double *u, double chi2, double *h)
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

/* One JᵀJ pass at u: the log target *lp, its gradient p->g, JᵀJ in p->jtj, χ² in *chi2. */
static int jtj_pass(xf_slice *p, const double *u, double *lp, double *chi2)
{
	double prior = xf_cmc_target_prior(&p->t, u, p->t.x);
	xf_lik_out out = { 0.0, p->jtj, p->b, 0.0 };
	p->passes++;
	if (xf_lik_eval(p->t.lik, p->t.x, &out) ||
	    xf_cmc_target_from_pass(&p->t, u, prior, out.chi2, p->b, lp, p->g))
		return -1;
	*chi2 = out.chi2;
	return 0;
}

/* The slice u_k = u[k]: u moved to the maximum over the other coordinates (Newton steps
 * with H, a backtracking line search), *ell its Laplace log mass. 0; 1 when the steps did
 * not reach the maximum (a curved valley crawled along: *ell then is too low); −1 where
 * the log target or H is not usable. Each Newton step's full step is tried by a JᵀJ pass,
 * which also gives the log target, its gradient and the next curvature there (a full
 * step is taken nearly always); shorter trials are values-only passes. Near the maximum
 * the Newton decrement dec says what a full step would still gain (dec/2, exact for the
 * quadratic model): below XF_SLICE_DEC_STOP the slice stops, u moved by that last step
 * and *ell counting its gain, instead of paying a pass to take it (the model's error there
 * is of order dec², far below the probe's and the ridge's needs). */
#define XF_SLICE_DEC_STOP   0.02
#define XF_SLICE_NOT_AT_MAX 2	/* slice_max with near: the start is not near the maximum */
#define XF_SLICE_DEC_NEAR   1.0 /* … its first Newton step would gain 0.5 or more */
/* xf_slice_max from u, the JᵀJ pass at u already made when have (its lp, chi2 given);
 * with near, returns XF_SLICE_NOT_AT_MAX, u unchanged, when u's first Newton step would
 * gain XF_SLICE_DEC_NEAR/2 or more (a start that far off may lie off a curved ridge) */
static int slice_max(xf_slice *p, int k, double *u, double *ell, int have, double lp, double chi2,
		     int near)
{
	int d = p->d, n = d - 1;
	double lt, chi2_t;
	for (int it = 0;; it++) {
		if (!have && jtj_pass(p, u, &lp, &chi2))
			return -1;
		have = 0;
		curvature(p, k, u, chi2, p->h);
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
		if (near && it == 0 && !(dec < XF_SLICE_DEC_NEAR))
			return XF_SLICE_NOT_AT_MAX;
		if (dec < XF_SLICE_DEC_STOP) { /* the model's maximum: u + δ, ℓ + dec/2 */
			a = 0;
			for (int m = 0; m < d; m++)
				if (m != k)
					u[m] += p->delta[a++];
			*ell += 0.5 * fmax(dec, 0.0);
			return 0;
		}
		if (it == XF_SLICE_NEWTON_MAX)
			return 1;
		a = 0;
		for (int m = 0; m < d; m++)
			p->trial[m] = m == k ? u[m] : u[m] + p->delta[a++];
		if (jtj_pass(p, p->trial, &lt, &chi2_t) == 0 && lt >= lp + 1e-4 * dec) {
			memcpy(u, p->trial, sizeof(double) * (size_t)d);
			lp = lt;
			chi2 = chi2_t;
			have = 1; /* the pass at the new u is this one */
			continue;
		}
		double step = 0.5;
		int ok = 0;
		for (int ls = 1; ls < 12 && !ok; ls++, step *= 0.5) {
			a = 0;
			for (int m = 0; m < d; m++)
				p->trial[m] = m == k ? u[m] : u[m] + step * p->delta[a++];
			ok = xf_slice_logp(p, p->trial, &lt, NULL) == 0 &&
			     lt >= lp + 1e-4 * step * dec;
		}
		if (!ok) /* no ascent left at this precision: the maximum, if close to it */
			return dec < 1.0 ? 0 : 1;
		memcpy(u, p->trial, sizeof(double) * (size_t)d);
	}
}

int xf_slice_max(xf_slice *p, int k, double *u, double *ell)
{
	return slice_max(p, k, u, ell, 0, 0.0, 0.0, 0);
}

/* The next slice's start at u_m = v from the last two maxima ua, ue: the best by log
 * target of the last maximum moved to v, and of the path through the two carried on
 * linearly in u and in physical units (along a ridge such as D0 + D_offset = const the
 * path is straight in x and bends in u, where a start 3 units out lands 1e7 below). */
/* Start c at u_m = v from the last two maxima ua, ue into cand [d]: 0 the last maximum
 * moved to v, 1 the path through the two carried on linearly in u, 2 the same in physical
 * units (along a ridge such as D0 + D_offset = const the path is straight in x and bends
 * in u, where a start 3 units out lands 1e7 below). */
enum { START_MOVED, START_LINEAR_U, START_LINEAR_X, START_N };
static void slice_start(const xf_slice *p, int m, const double *ua, const double *ue, double v,
			int c, double *cand)
{
	const xf_problem *pr = p->t.pr;
	int jm = p->t.theta[m];
	double xa = xf_slice_u_to_x(pr, jm, ua[m]), xe = xf_slice_u_to_x(pr, jm, ue[m]),
	       xv = xf_slice_u_to_x(pr, jm, v);
	double ru = (v - ue[m]) / (ue[m] - ua[m]), rx = (xv - xe) / (xe - xa);
	for (int l = 0; l < p->d; l++) {
		cand[l] = ue[l];
		if (c == START_LINEAR_U || (c == START_LINEAR_X && l >= p->nt))
			cand[l] = ue[l] + (ue[l] - ua[l]) * ru;
		else if (c == START_LINEAR_X) {
			int j = p->t.theta[l];
			double xl = xf_slice_u_to_x(pr, j, ue[l]),
			       ya = xf_slice_u_to_x(pr, j, ua[l]);
			double f = (xl + (xl - ya) * rx - pr->lower[j]) /
				   (pr->upper[j] - pr->lower[j]);
			if (f > 0.0 && f < 1.0 && isfinite(f))
				cand[l] = log(f) - log1p(-f);
		}
	}
	cand[m] = v;
}

/* The next slice's start at u_m = v from the last two maxima ua, ue: the best of the
 * three starts by log target (values passes) into uc [d], *won which (unchanged when none
 * has one). Start `known` (−1: none) was evaluated already, its log target lp_known: not
 * again. Returns the best start's log target. */
static double predict(xf_slice *p, int m, const double *ua, const double *ue, double v, double *uc,
		      int *won, int known, double lp_known)
{
	double *cand = p->trial, best = -INFINITY, lp;
	memcpy(uc, ue, sizeof(double) * (size_t)p->d);
	uc[m] = v;
	for (int c = 0; c < START_N; c++) {
		slice_start(p, m, ua, ue, v, c, cand);
		int ok = c == known ? (lp = lp_known, 1) : xf_slice_logp(p, cand, &lp, NULL) == 0;
		if (ok && lp > best) {
			best = lp;
			*won = c;
			memcpy(uc, cand, sizeof(double) * (size_t)p->d);
		}
	}
	return best;
}

int xf_slice_next(xf_slice *p, int k, const double *ua, const double *ue, double v, double *uc,
		  double *ell)
{
	if (ua) {
		/* the start that won the last prediction first, by the JᵀJ pass its Newton step
		 * needs: where it is near the maximum (nearly always along a walk or a ridge:
		 * usually within the stop already), Newton steps from it; the three candidates'
		 * values passes only where it is not */
		double lp = -INFINITY, chi2 = 0.0;
		int lead = p->lead, known = -1, sr;
		slice_start(p, k, ua, ue, v, lead, uc);
		if (jtj_pass(p, uc, &lp, &chi2) == 0) {
			known = lead;
			sr = slice_max(p, k, uc, ell, 1, lp, chi2, 1);
			if (sr != XF_SLICE_NOT_AT_MAX && sr >= 0)
				return sr;
		}
		/* the lead's own pass is still the slice's (values passes leave it): where the
		 * lead wins after all, its Newton steps go on from it */
		double best = predict(p, k, ua, ue, v, uc, &p->lead, known, lp);
		if (known >= 0 && p->lead == lead && best == lp)
			sr = slice_max(p, k, uc, ell, 1, lp, chi2, 0);
		else
			sr = xf_slice_max(p, k, uc, ell);
		if (sr >= 0)
			return sr;
	}
	memcpy(uc, ue, sizeof(double) * (size_t)p->d);
	uc[k] = v;
	return xf_slice_max(p, k, uc, ell);
}

int xf_slice_open(xf_slice *p, const cmc_run *r, xf_error *err)
{
	const xf_problem *pr = &r->pr;
	int nt = r->n_theta, d = nt + 1;
	size_t nf = (size_t)pr->n_full;
	memset(p, 0, sizeof *p);
	p->g = malloc(sizeof(double) * (size_t)d);
	p->trial = malloc(sizeof(double) * (size_t)d);
	p->delta = malloc(sizeof(double) * (size_t)d);
	p->h = malloc(sizeof(double) * (size_t)d * d);
	p->b = malloc(sizeof(double) * nf);
	p->jtj = malloc(sizeof(double) * nf * nf);
	if (!p->g || !p->trial || !p->delta || !p->h || !p->b || !p->jtj ||
	    xf_cmc_target_alloc(&p->t, pr)) {
		xf_slice_close(p);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the posterior's slices");
	}
	if (!(p->t.lik = xf_lik_create(pr, &r->jobs[0].ps, r->pool, err))) {
		int rc = err->code;
		xf_slice_close(p);
		return rc;
	}
	p->nt = nt;
	p->d = d;
	p->lead = START_LINEAR_X;
	p->t.n_points = r->jobs[0].ps.n_pairs * (size_t)pr->n_phi;
	p->t.n_theta = nt;
	p->t.theta = r->theta;
	p->t.dim = d;
	p->t.temper = 1.0;
	p->t.sigma_scale = r->jobs[0].sigma_scale;
	p->t.x_fixed = r->x_start;
	return 0;
}

void xf_slice_close(xf_slice *p)
{
	if (p->t.pr) {
		xf_lik_destroy(p->t.lik);
		xf_cmc_target_free(&p->t);
	}
	free(p->g);
	free(p->trial);
	free(p->delta);
	free(p->h);
	free(p->b);
	free(p->jtj);
	memset(p, 0, sizeof *p);
}
