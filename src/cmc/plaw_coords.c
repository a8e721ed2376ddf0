/* plaw_coords.c — the power-law sampling coordinates of plaw_coords.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/plaw_coords.h"

static double sigmoid(double u)
{
	return u >= 0.0 ? 1.0 / (1.0 + exp(-u)) : exp(u) / (1.0 + exp(u));
}

static double x_of(double lo, double hi, double u)
{
	return lo + (hi - lo) * sigmoid(u);
}

static double dx_du(double lo, double hi, double u)
{
	double s = sigmoid(u);
	return (hi - lo) * s * (1.0 - s);
}

/* P = A·t_ref^e at (u_A, u_e), and its derivatives in them */
static double plaw_p(const xf_plaw_triple *t, double ua, double ue, double *dp_dua, double *dp_due)
{
	double e = x_of(t->lo[1], t->hi[1], ue);
	double te = exp(e * t->ln_tref), p = x_of(t->lo[0], t->hi[0], ua) * te;
	if (dp_dua) {
		*dp_dua = te * dx_du(t->lo[0], t->hi[0], ua);
		*dp_due = p * t->ln_tref * dx_du(t->lo[1], t->hi[1], ue);
	}
	return p;
}

/* The non-centring factor h = odds(A₀)/odds(A) = exp(a₀ − w_A), odds of A within its
 * bounds: for A well inside them ∝ A₀/A, since α·A is what the data pin (e's width
 * scales as 1/A). Measured against A₀/A itself (adr/0082): the odds pass the route on 4
 * of 4 static ridges, A₀/A on 2. The exponent is held finite: far tails of a divergent
 * trajectory must give a finite point, not ∞·0. d log h/dw_A = −1. */
static double plaw_h(const xf_plaw_triple *t, double wa)
{
	double x = t->a0 - wa;
	return exp(x < -700.0 ? -700.0 : x > 700.0 ? 700.0 : x);
}

static int find(const int *param, int d, int k)
{
	for (int j = 0; j < d; j++)
		if (param[j] == k)
			return j;
	return -1;
}

static double logit01(double f)
{
	return log(f) - log1p(-f);
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

/* One triple (A, e, c) of parameter indices k0..k0+2; 1 when it takes part. */
static int triple_init(xf_plaw_triple *t, const xf_problem *pr, const int *param, int d,
		       const double *u0, const double *cov, int k0)
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
	if (cov) { /* only on a ridge: elsewhere the straight coordinates fit better */
		double a = x_of(t->lo[0], t->hi[0], u0[t->a]);
		double e = x_of(t->lo[1], t->hi[1], u0[t->e]);
		double sd_ua = sqrt(cov[(size_t)t->a * d + t->a]);
		int wide = sd_x(t, 0, t->a, d, u0, cov) > XF_PLAW_RIDGE_REL_SD * fabs(a) &&
			   sd_ua < XF_PLAW_RIDGE_MAX_U_SD;
		t->noncentre &= wide && ridge_corr(cov, d, t->a, t->e) &&
				fabs(e) < XF_PLAW_NEAR_ZERO_SD * sd_x(t, 1, t->e, d, u0, cov);
		if (t->c >= 0 && !(wide && ridge_corr(cov, d, t->a, t->c)))
			t->c = -1;
	}
	if (!t->noncentre && t->c < 0)
		return 0;
	int n = pr->grid.n_frames;
	t->ln_tref = log(pr->grid.dt_s * sqrt(n > 2 ? (double)(n - 1) : 1.0));
	t->a0 = u0[t->a];
	t->p = t->noncentre ? logit01(-t->lo[1] / (t->hi[1] - t->lo[1])) : 0.0;
	if (t->c >= 0) {
		t->k = 1.0 / dx_du(t->lo[2], t->hi[2], u0[t->c]);
		t->p0 = plaw_p(t, u0[t->a], u0[t->e], NULL, NULL);
		if (!isfinite(t->k) || !isfinite(t->p0))
			t->c = -1; /* the start sits on a bound: no shear */
	}
	return t->noncentre || t->c >= 0;
}

void xf_plaw_coords_init(xf_plaw_coords *pc, const xf_problem *pr, const int *param, int d,
			 const double *u0, const double *cov)
{
	memset(pc, 0, sizeof *pc);
	pc->d = d;
	int starts[XF_PLAW_MAX] = { XF_P_D0, XF_P_GAMMA_DOT_T0 };
	int n_laws = pr->n_phys > XF_P_GAMMA_DOT_T_OFFSET ? 2 : 1;
	for (int i = 0; i < n_laws; i++)
		pc->n += triple_init(&pc->tr[pc->n], pr, param, d, u0, cov, starts[i]);
}

double xf_plaw_to_u(const xf_plaw_coords *pc, const double *w, double *u)
{
	if (u != w)
		memcpy(u, w, sizeof(double) * (size_t)pc->d);
	double log_jac = 0.0;
	for (int i = 0; i < pc->n; i++) {
		const xf_plaw_triple *t = &pc->tr[i];
		double ua = w[t->a], ue = w[t->e];
		if (t->noncentre) {
			ue = t->p + (w[t->e] - t->p) * plaw_h(t, ua);
			log_jac += t->a0 - ua;
		}
		u[t->e] = ue;
		if (t->c >= 0)
			u[t->c] = w[t->c] - t->k * (plaw_p(t, ua, ue, NULL, NULL) - t->p0);
	}
	return log_jac;
}

void xf_plaw_to_w(const xf_plaw_coords *pc, const double *u, double *w)
{
	if (u != w)
		memcpy(w, u, sizeof(double) * (size_t)pc->d);
	for (int i = 0; i < pc->n; i++) {
		const xf_plaw_triple *t = &pc->tr[i];
		double ua = u[t->a], ue = u[t->e];
		if (t->c >= 0)
			w[t->c] = u[t->c] + t->k * (plaw_p(t, ua, ue, NULL, NULL) - t->p0);
		if (t->noncentre)
			w[t->e] = t->p + (ue - t->p) / plaw_h(t, ua);
	}
}

void xf_plaw_jacobian(const xf_plaw_coords *pc, const double *w, double *jac)
{
	int d = pc->d;
	memset(jac, 0, sizeof(double) * (size_t)d * d);
	for (int j = 0; j < d; j++)
		jac[(size_t)j * d + j] = 1.0;
	for (int i = 0; i < pc->n; i++) {
		const xf_plaw_triple *t = &pc->tr[i];
		double ua = w[t->a], ue = w[t->e];
		double *re = jac + (size_t)t->e * d;
		if (t->noncentre) {
			double h = plaw_h(t, ua);
			ue = t->p + (w[t->e] - t->p) * h;
			re[t->a] = -(w[t->e] - t->p) * h;
			re[t->e] = h;
		}
		if (t->c >= 0) {
			double pa, pe;
			plaw_p(t, ua, ue, &pa, &pe);
			double *rc = jac + (size_t)t->c * d;
			rc[t->a] = -t->k * (pa + pe * re[t->a]);
			rc[t->e] = -t->k * pe * re[t->e];
		}
	}
}

int xf_plaw_gauss_to_w(const xf_plaw_coords *pc, double *mean, double *cov)
{
	int d = pc->d;
	if (pc->n == 0)
		return 0;
	double *g = calloc((size_t)d * d, sizeof(double));
	double *tmp = malloc(sizeof(double) * (size_t)d * d);
	if (!g || !tmp) {
		free(g);
		free(tmp);
		return -1;
	}
	for (int j = 0; j < d; j++)
		g[(size_t)j * d + j] = 1.0;
	for (int i = 0; i < pc->n; i++) { /* G = dw/du at the mean (to_w differentiated) */
		const xf_plaw_triple *t = &pc->tr[i];
		double ua = mean[t->a], ue = mean[t->e];
		if (t->noncentre) { /* w_e = p + (u_e − p)/h, d(1/h)/du_A = 1/h */
			double hi = 1.0 / plaw_h(t, ua);
			g[(size_t)t->e * d + t->a] = (ue - t->p) * hi;
			g[(size_t)t->e * d + t->e] = hi;
		}
		if (t->c >= 0) {
			double pa, pe;
			plaw_p(t, ua, ue, &pa, &pe);
			g[(size_t)t->c * d + t->a] = t->k * pa;
			g[(size_t)t->c * d + t->e] = t->k * pe;
		}
	}
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
	xf_plaw_to_w(pc, mean, mean);
	free(g);
	free(tmp);
	return 0;
}

void xf_plaw_grad_to_w(const xf_plaw_coords *pc, const double *w, const double *grad_u,
		       double *grad_w)
{
	if (grad_w != grad_u)
		memcpy(grad_w, grad_u, sizeof(double) * (size_t)pc->d);
	for (int i = 0; i < pc->n; i++) {
		const xf_plaw_triple *t = &pc->tr[i];
		double ua = w[t->a], ue = w[t->e], jea = 0.0, jee = 1.0;
		double ge = grad_u[t->e], gc = t->c >= 0 ? grad_u[t->c] : 0.0;
		if (t->noncentre) {
			jee = plaw_h(t, ua);
			ue = t->p + (w[t->e] - t->p) * jee;
			jea = -(w[t->e] - t->p) * jee;
			grad_w[t->a] -= 1.0; /* log|du/dw| = a₀ − w_A */
		}
		grad_w[t->a] += jea * ge;
		grad_w[t->e] = jee * ge;
		if (t->c >= 0) {
			double pa, pe;
			plaw_p(t, ua, ue, &pa, &pe);
			grad_w[t->a] += -t->k * (pa + pe * jea) * gc;
			grad_w[t->e] += -t->k * pe * jee * gc;
		}
	}
}

int xf_plaw_target_logp(void *ctx, const double *w, double *logp, double *grad)
{
	xf_plaw_target *pt = ctx;
	double lj = xf_plaw_to_u(pt->pc, w, pt->u);
	int rc = pt->logp(pt->ctx, pt->u, logp, grad ? pt->g : NULL);
	if (rc)
		return rc;
	*logp += lj;
	if (grad)
		xf_plaw_grad_to_w(pt->pc, w, pt->g, grad);
	return 0;
}

void xf_plaw_draws_to_u(const xf_plaw_coords *pc, int n, double *draws, double *logp)
{
	for (int i = 0; i < n; i++)
		logp[i] -= xf_plaw_to_u(pc, draws + (size_t)i * pc->d, draws + (size_t)i * pc->d);
}
