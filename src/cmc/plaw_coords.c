/* plaw_coords.c — the power-law sampling coordinates of plaw_coords.h (adr/0082, adr/0083). */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/plaw_coords.h"
#include "xpcsfit/cmc.h"

/* How far inside a bound (as a fraction of the width) the logit gives way to its tangent:
 * beyond it the map stays one-to-one over all reals, and the density there is the prior's
 * edge (the logit's Jacobian vanishes), not a new shape. */
#define XF_PLAW_EDGE 1e-12

static double x_of(double lo, double hi, double u)
{
	return xf_cmc_u_to_x(lo, hi, u);
}

static double dx_du(double lo, double hi, double u)
{
	double x = x_of(lo, hi, u);
	return (x - lo) * (hi - x) / (hi - lo);
}

/* u of x within [lo, hi]: the logit, continued by its tangent within XF_PLAW_EDGE of a
 * bound (C¹, one-to-one over all reals); du/dx into *lp, d log(du/dx)/dx into *dlp. */
static double logit_ext(double lo, double hi, double x, double *lp, double *dlp)
{
	double f = (x - lo) / (hi - lo);
	if (f < XF_PLAW_EDGE || f > 1.0 - XF_PLAW_EDGE) {
		double fe = f < XF_PLAW_EDGE ? XF_PLAW_EDGE : 1.0 - XF_PLAW_EDGE;
		*lp = 1.0 / ((hi - lo) * fe * (1.0 - fe));
		*dlp = 0.0;
		return log(fe) - log1p(-fe) + (f - fe) / (fe * (1.0 - fe));
	}
	*lp = 1.0 / ((hi - lo) * f * (1.0 - f));
	*dlp = (2.0 * f - 1.0) / (f * (1.0 - f) * (hi - lo));
	return log(f) - log1p(-f);
}

/* x of u: the inverse of logit_ext over all reals */
static double logit_ext_inv(double lo, double hi, double u)
{
	double le = log(XF_PLAW_EDGE) - log1p(-XF_PLAW_EDGE),
	       slope = XF_PLAW_EDGE * (1.0 - XF_PLAW_EDGE);
	if (u < le)
		return lo + (hi - lo) * (XF_PLAW_EDGE + (u - le) * slope);
	if (u > -le)
		return lo + (hi - lo) * (1.0 - XF_PLAW_EDGE + (u + le) * slope);
	return x_of(lo, hi, u);
}

/* One triple's u (uA, ue, uc) at w, J[r][c] = du_r/dw_c over (A, e, c), log|det J| and
 * its gradient over (wA, we, wc). */
static void triple_to_u(const xf_plaw_triple *t, const double *w, double *uo, double j[3][3],
			double *log_det, double g_log[3])
{
	double ua = w[t->a];
	double a = x_of(t->lo[0], t->hi[0], ua), da = dx_du(t->lo[0], t->hi[0], ua);
	memset(j, 0, sizeof(double) * 9);
	j[0][0] = j[1][1] = j[2][2] = 1.0;
	g_log[0] = g_log[1] = g_log[2] = 0.0;
	*log_det = 0.0;
	uo[0] = ua;
	uo[1] = w[t->e];
	if (t->noncentre) { /* e·A = q₀ + A₀·(w_e − u_e0)/k_e: the slope, linear in w_e */
		double q = t->q0 + t->a0 * (w[t->e] - t->ue0) / t->ke, e = q / a, lp, dlp;
		uo[1] = logit_ext(t->lo[1], t->hi[1], e, &lp, &dlp);
		double de_dwe = t->a0 / (t->ke * a), de_dwa = -e * da / a;
		j[1][1] = lp * de_dwe;
		j[1][0] = lp * de_dwa;
		*log_det += log(lp * de_dwe);
		g_log[1] += dlp * de_dwe;
		g_log[0] += dlp * de_dwa - da / a;
	}
	uo[2] = t->c >= 0 ? w[t->c] : 0.0;
	if (t->c >= 0) { /* c = S − A·t_ref^e with the level S = S₀ + (w_c − u_c0)/k_c */
		double e = x_of(t->lo[1], t->hi[1], uo[1]), de = dx_du(t->lo[1], t->hi[1], uo[1]);
		double te = exp(e * t->ln_tref), p = a * te;
		double dp_dua = te * da, dp_due = p * t->ln_tref * de;
		double dp_dwa = dp_dua + dp_due * j[1][0], dp_dwe = dp_due * j[1][1];
		double s = t->s0 + (w[t->c] - t->uc0) / t->kc, lp, dlp;
		uo[2] = logit_ext(t->lo[2], t->hi[2], s - p, &lp, &dlp);
		j[2][2] = lp / t->kc;
		j[2][0] = -lp * dp_dwa;
		j[2][1] = -lp * dp_dwe;
		*log_det += log(lp / t->kc);
		g_log[2] += dlp / t->kc;
		g_log[0] -= dlp * dp_dwa;
		g_log[1] -= dlp * dp_dwe;
	}
}

static int find(const int *param, int d, int k)
{
	for (int j = 0; j < d; j++)
		if (param[j] == k)
			return j;
	return -1;
}

/* sd of parameter coordinate j's physical value from a u-space covariance */
static double sd_x(const xf_plaw_triple *t, int i, int j, int d, const double *u0,
		   const double *cov)
{
	return sqrt(cov[(size_t)j * d + j]) * dx_du(t->lo[i], t->hi[i], u0[j]);
}

/* 1 when coordinates i and j of cov correlate by more than XF_PLAW_RIDGE_CORR — and no
 * more than 1: an initial metric whose variances were held to a floor or cap without its
 * covariances (a prior-dominated start) is no covariance, and no evidence of a ridge */
static int ridge_corr(const double *cov, int d, int i, int j)
{
	double r = fabs(cov[(size_t)i * d + j]) /
		   sqrt(cov[(size_t)i * d + i] * cov[(size_t)j * d + j]);
	return r > XF_PLAW_RIDGE_CORR && r <= 1.0;
}

/* 1 when A (coordinate i) and c (j) correlate as a pinned level makes them: negatively
 * (c = S − A·t_ref^e falls as A rises). A positive correlation is another ridge — with
 * α ≈ −1.3 the slope's trade-off carries c up with A (small static replicate 4: +0.96,
 * NUTS at step 0.0035 with the level piece) — which the level piece would bend, not
 * straighten (adr/0084). */
static int level_corr(const double *cov, int d, int i, int j)
{
	return ridge_corr(cov, d, i, j) && cov[(size_t)i * d + j] < 0.0;
}

/* A's range over wall_sd sds in u either side of the start */
static void a_range(const xf_plaw_triple *t, int d, const double *u0, const double *cov,
		    double wall_sd, double *a_lo, double *a_hi)
{
	double ua = u0[t->a], w = wall_sd * sqrt(cov[(size_t)t->a * d + t->a]);
	*a_lo = x_of(t->lo[0], t->hi[0], ua - w);
	*a_hi = x_of(t->lo[0], t->hi[0], ua + w);
}

/* 1 when the slope piece keeps e = q/A inside e's bounds over A's range and q's (the
 * slope ± XF_PLAW_WALL_SD of its sds): elsewhere a bound cuts the ridge, a wall in w. The
 * slope and its sd are NLSQ's where known (small static replicates 55 and 30, adr/0091),
 * else linearised at the start from cov. */
static int slope_in_bounds(const xf_plaw_triple *t, int d, const double *u0, const double *cov,
			   const xf_plaw_slope *known, double wall_sd)
{
	double a_lo, a_hi;
	a_range(t, d, u0, cov, wall_sd, &a_lo, &a_hi);
	double q, sd_q;
	if (known && known->known) {
		q = known->q;
		sd_q = known->sd_q;
	} else {
		double a = x_of(t->lo[0], t->hi[0], u0[t->a]);
		double e = x_of(t->lo[1], t->hi[1], u0[t->e]);
		double ga = dx_du(t->lo[0], t->hi[0], u0[t->a]);
		double ge = dx_du(t->lo[1], t->hi[1], u0[t->e]);
		double var_q = e * e * ga * ga * cov[(size_t)t->a * d + t->a] +
			       a * a * ge * ge * cov[(size_t)t->e * d + t->e] +
			       2.0 * e * a * ga * ge * cov[(size_t)t->a * d + t->e];
		q = e * a;
		sd_q = sqrt(fmax(var_q, 0.0));
	}
	double dq = wall_sd * sd_q;
	return a_lo > 0.0 && (q + dq) / a_lo < t->hi[1] && (q - dq) / a_lo > t->lo[1];
}

/* 1 when the level piece keeps c = S − A·t_ref^e inside c's bounds over A's range (the
 * level and e at the start): elsewhere a bound cuts the ridge, a wall in w (test_cmc_
 * calibration's SBC replicate 147: A near its lower bound, 23 % divergences). */
static int level_in_bounds(const xf_plaw_triple *t, int d, const double *u0, const double *cov,
			   double wall_sd)
{
	double a_lo, a_hi;
	a_range(t, d, u0, cov, wall_sd, &a_lo, &a_hi);
	double a = x_of(t->lo[0], t->hi[0], u0[t->a]), e = x_of(t->lo[1], t->hi[1], u0[t->e]);
	double c = x_of(t->lo[2], t->hi[2], u0[t->c]), g = exp(e * t->ln_tref);
	return c - (a_hi - a) * g > t->lo[2] && c + (a - a_lo) * g < t->hi[2];
}

/* One triple (A, e, c) of parameter indices k0..k0+2; 1 when it takes part. */
static int triple_init(xf_plaw_triple *t, const xf_problem *pr, const int *param, int d,
		       const double *u0, const double *cov, const xf_plaw_slope *slope, int k0,
		       double max_u_sd, double wall_sd)
{
	memset(t, 0, sizeof *t);
	t->a = find(param, d, k0);
	t->e = find(param, d, k0 + 1);
	t->c = find(param, d, k0 + 2);
	if (t->a < 0 || t->e < 0)
		return 0;
	for (int i = 0; i < 3; i++) {
		t->lo[i] = pr->lower[k0 + i];
		t->hi[i] = pr->upper[k0 + i];
	}
	t->noncentre = t->lo[0] >= 0.0 && t->lo[1] < 0.0 && t->hi[1] > 0.0;
	int n = pr->grid.n_frames;
	t->ln_tref = log(pr->grid.dt_s * sqrt(n > 2 ? (double)(n - 1) : 1.0));
	if (cov) { /* only on a ridge: elsewhere the straight coordinates fit better */
		double a = x_of(t->lo[0], t->hi[0], u0[t->a]);
		double e = x_of(t->lo[1], t->hi[1], u0[t->e]);
		/* A's sd relative to A, or — where the start sits against a bound of A, and
		 * dx/du hides any spread — its sd in u */
		int at_bound = xf_cmc_near_bound(t->lo[0], t->hi[0], a);
		int wide = sd_x(t, 0, t->a, d, u0, cov) > XF_PLAW_RIDGE_REL_SD * fabs(a) ||
			   (at_bound && sqrt(cov[(size_t)t->a * d + t->a]) > 0.5);
		/* the slope piece only while the data confine A: over e-folds of A it fails
		 * without a wall too (adr/0083, adr/0084); the level piece holds there */
		double sd_ua = sqrt(cov[(size_t)t->a * d + t->a]);
		t->noncentre &= wide && sd_ua < max_u_sd && ridge_corr(cov, d, t->a, t->e) &&
				fabs(e) < XF_PLAW_NEAR_ZERO_SD * sd_x(t, 1, t->e, d, u0, cov) &&
				slope_in_bounds(t, d, u0, cov, slope, wall_sd);
		if (t->c >= 0 && !(wide && level_corr(cov, d, t->a, t->c) &&
				   level_in_bounds(t, d, u0, cov, wall_sd)))
			t->c = -1;
	}
	if (!t->noncentre && t->c < 0)
		return 0;
	t->a0 = x_of(t->lo[0], t->hi[0], u0[t->a]);
	t->ue0 = u0[t->e];
	double e0 = x_of(t->lo[1], t->hi[1], u0[t->e]);
	t->ke = 1.0 / dx_du(t->lo[1], t->hi[1], u0[t->e]);
	t->q0 = e0 * t->a0;
	if (!isfinite(t->ke) || !(t->a0 > 0.0))
		t->noncentre = 0; /* the start sits on a bound */
	if (t->c >= 0) {
		t->uc0 = u0[t->c];
		t->kc = 1.0 / dx_du(t->lo[2], t->hi[2], u0[t->c]);
		t->s0 = t->a0 * exp(e0 * t->ln_tref) + x_of(t->lo[2], t->hi[2], u0[t->c]);
		if (!isfinite(t->kc) || !isfinite(t->s0))
			t->c = -1;
	}
	return t->noncentre || t->c >= 0;
}

void xf_plaw_coords_init_at(xf_plaw_coords *pc, const xf_problem *pr, const int *param, int d,
			    const double *u0, const double *cov, const xf_plaw_slope *slope,
			    int use)
{
	double max_u_sd = use == XF_PLAW_CHAINS ? XF_PLAW_RIDGE_MAX_U_SD : INFINITY;
	double wall_sd = use == XF_PLAW_ROUTE ? XF_PLAW_WALL_SD_ROUTE : XF_PLAW_WALL_SD;
	memset(pc, 0, sizeof *pc);
	pc->d = d;
	int starts[XF_PLAW_MAX] = { XF_P_D0, XF_P_GAMMA_DOT_T0 };
	int n_laws = pr->n_phys > XF_P_GAMMA_DOT_T_OFFSET ? 2 : 1;
	for (int i = 0; i < n_laws; i++)
		if (triple_init(&pc->tr[pc->n], pr, param, d, u0, cov, slope ? &slope[i] : NULL,
				starts[i], max_u_sd, wall_sd))
			pc->tr[pc->n++].law = i;
}

void xf_plaw_coords_init(xf_plaw_coords *pc, const xf_problem *pr, const int *param, int d,
			 const double *u0, const double *cov)
{
	xf_plaw_coords_init_at(pc, pr, param, d, u0, cov, NULL, XF_PLAW_CHAINS);
}

void xf_plaw_coords_init_wide(xf_plaw_coords *pc, const xf_problem *pr, const int *param, int d,
			      const double *u0, const double *cov)
{
	xf_plaw_coords_init_at(pc, pr, param, d, u0, cov, NULL, XF_PLAW_WIDE);
}

double xf_plaw_to_u(const xf_plaw_coords *pc, const double *w, double *u)
{
	if (u != w)
		memcpy(u, w, sizeof(double) * (size_t)pc->d);
	double log_jac = 0.0;
	for (int i = 0; i < pc->n; i++) { /* triples share no coordinate: u may alias w */
		const xf_plaw_triple *t = &pc->tr[i];
		double uo[3], j[3][3], ld, gl[3];
		triple_to_u(t, w, uo, j, &ld, gl);
		u[t->e] = uo[1];
		if (t->c >= 0)
			u[t->c] = uo[2];
		log_jac += ld;
	}
	return log_jac;
}

void xf_plaw_to_w(const xf_plaw_coords *pc, const double *u, double *w)
{
	if (u != w)
		memcpy(w, u, sizeof(double) * (size_t)pc->d);
	for (int i = 0; i < pc->n; i++) {
		const xf_plaw_triple *t = &pc->tr[i];
		double a = x_of(t->lo[0], t->hi[0], u[t->a]);
		double ue = u[t->e], e = x_of(t->lo[1], t->hi[1], ue);
		if (t->c >= 0) {
			double c = logit_ext_inv(t->lo[2], t->hi[2], u[t->c]);
			w[t->c] = t->uc0 + t->kc * (c + a * exp(e * t->ln_tref) - t->s0);
		}
		if (t->noncentre)
			w[t->e] =
				t->ue0 +
				t->ke * (logit_ext_inv(t->lo[1], t->hi[1], ue) * a - t->q0) / t->a0;
	}
}

void xf_plaw_jacobian(const xf_plaw_coords *pc, const double *w, double *jac)
{
	int d = pc->d;
	memset(jac, 0, sizeof(double) * (size_t)d * d);
	for (int k = 0; k < d; k++)
		jac[(size_t)k * d + k] = 1.0;
	for (int i = 0; i < pc->n; i++) {
		const xf_plaw_triple *t = &pc->tr[i];
		double uo[3], j[3][3], ld, gl[3];
		int ix[3] = { t->a, t->e, t->c };
		triple_to_u(t, w, uo, j, &ld, gl);
		for (int r = 1; r < 3; r++)
			for (int c = 0; c < 3; c++)
				if (ix[r] >= 0 && ix[c] >= 0)
					jac[(size_t)ix[r] * d + ix[c]] = j[r][c];
	}
}

int xf_plaw_gauss_to_w(const xf_plaw_coords *pc, double *mean, double *cov)
{
	int d = pc->d, rc = -1;
	if (pc->n == 0)
		return 0;
	double *g = calloc((size_t)d * d, sizeof(double));
	double *tmp = malloc(sizeof(double) * (size_t)d * d);
	lapack_int *piv = malloc(sizeof(lapack_int) * (size_t)d);
	if (!g || !tmp || !piv)
		goto done;
	/* G = dw/du at the mean: the inverse of du/dw at w(mean) */
	xf_plaw_to_w(pc, mean, mean);
	xf_plaw_jacobian(pc, mean, tmp);
	for (int k = 0; k < d; k++)
		g[(size_t)k * d + k] = 1.0;
	if (LAPACKE_dgesv(LAPACK_ROW_MAJOR, d, d, tmp, d, piv, g, d) != 0)
		goto done;	    /* triangular with a positive diagonal: not reached */
	for (int r = 0; r < d; r++) /* tmp = G·cov */
		for (int c = 0; c < d; c++) {
			double s = 0.0;
			for (int l = 0; l < d; l++)
				s += g[(size_t)r * d + l] * cov[(size_t)l * d + c];
			tmp[(size_t)r * d + c] = s;
		}
	for (int r = 0; r < d; r++) /* cov = tmp·Gᵀ */
		for (int c = 0; c < d; c++) {
			double s = 0.0;
			for (int l = 0; l < d; l++)
				s += tmp[(size_t)r * d + l] * g[(size_t)c * d + l];
			cov[(size_t)r * d + c] = s;
		}
	rc = 0;
done:
	free(g);
	free(tmp);
	free(piv);
	return rc;
}

/* grad_w over one triple's coordinates: J ᵀ·grad_u + ∇ log|det J| (grad_w may alias grad_u:
 * the triple's grad_u is read first) */
static void triple_grad(const xf_plaw_triple *t, const double j[3][3], const double gl[3],
			const double *grad_u, double *grad_w)
{
	int ix[3] = { t->a, t->e, t->c };
	double gu[3] = { grad_u[t->a], grad_u[t->e], t->c >= 0 ? grad_u[t->c] : 0.0 };
	for (int c = 0; c < 3; c++) {
		if (ix[c] < 0)
			continue;
		double v = gl[c];
		for (int r = 0; r < 3; r++)
			if (ix[r] >= 0)
				v += j[r][c] * gu[r];
		grad_w[ix[c]] = v;
	}
}

void xf_plaw_grad_to_w(const xf_plaw_coords *pc, const double *w, const double *grad_u,
		       double *grad_w)
{
	if (grad_w != grad_u)
		memcpy(grad_w, grad_u, sizeof(double) * (size_t)pc->d);
	for (int i = 0; i < pc->n; i++) { /* (du/dw)ᵀ·grad_u + ∇ log|du/dw|, triple by triple */
		double uo[3], j[3][3], ld, gl[3];
		triple_to_u(&pc->tr[i], w, uo, j, &ld, gl);
		triple_grad(&pc->tr[i], j, gl, grad_u, grad_w);
	}
}

int xf_plaw_target_logp(void *ctx, const double *w, double *logp, double *grad)
{
	xf_plaw_target *pt = ctx;
	const xf_plaw_coords *pc = pt->pc;
	/* each triple's map once: u, and the Jacobian the gradient needs after the pass */
	double j[XF_PLAW_MAX][3][3], gl[XF_PLAW_MAX][3], lj = 0.0;
	memcpy(pt->u, w, sizeof(double) * (size_t)pc->d);
	for (int i = 0; i < pc->n; i++) {
		const xf_plaw_triple *t = &pc->tr[i];
		double uo[3], ld;
		triple_to_u(t, w, uo, j[i], &ld, gl[i]);
		pt->u[t->e] = uo[1];
		if (t->c >= 0)
			pt->u[t->c] = uo[2];
		lj += ld;
	}
	int rc = pt->logp(pt->ctx, pt->u, logp, grad ? pt->g : NULL);
	if (rc)
		return rc;
	*logp += lj;
	if (grad) {
		memcpy(grad, pt->g, sizeof(double) * (size_t)pc->d);
		for (int i = 0; i < pc->n; i++)
			triple_grad(&pc->tr[i], j[i], gl[i], pt->g, grad);
	}
	return 0;
}

void xf_plaw_draws_to_u(const xf_plaw_coords *pc, int n, double *draws, double *logp)
{
	for (int i = 0; i < n; i++)
		logp[i] -= xf_plaw_to_u(pc, draws + (size_t)i * pc->d, draws + (size_t)i * pc->d);
}

void xf_plaw_describe(const xf_plaw_coords *pc, char *buf, size_t size)
{
	snprintf(buf, size, "none");
	size_t len = 0;
	for (int i = 0; i < pc->n && len < size; i++) {
		const xf_plaw_triple *t = &pc->tr[i];
		const char *pieces = t->noncentre && t->c >= 0 ? "level and slope"
				     : t->noncentre	       ? "slope"
							       : "level";
		int n = snprintf(buf + len, size - len, "%s%s %s", len ? ", " : "",
				 t->law ? "shear rate" : "D(t)", pieces);
		len += n > 0 ? (size_t)n : 0;
	}
}
