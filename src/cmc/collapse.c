/* collapse.c — the posterior of θ and σ with the per-angle scaling integrated out, and
 * the scaling of each draw from its exact conditional (collapse.h; adr/0086). */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/collapse.h"
#include "cmc/cond_scaling.h"
#include "xpcsfit/cmc.h"
#include "xpcsfit/rng.h"

#define XF_LOG_2PI	    1.8378770664093453
#define XF_COLLAPSE_REDRAWS 64 /* draws of a point's scaling before giving up */

static double log_sigmoid(double u)
{
	return u >= 0.0 ? -log1p(exp(-u)) : u - log1p(exp(u));
}

static double sigmoid(double u)
{
	return u >= 0.0 ? 1.0 / (1.0 + exp(-u)) : exp(u) / (1.0 + exp(u));
}

int xf_collapse_init(xf_collapse *c, xf_cmc_target *t)
{
	memset(c, 0, sizeof *c);
	const xf_problem *pr = t->pr;
	int nt = t->n_theta, nf = pr->n_full, ns = 2 * pr->n_basis, nphi = pr->n_phi;
	int ds = 0;
	for (int m = 0; m < nt; m++)
		ds += t->theta[m] >= pr->n_phys;
	if (ds == 0)
		return 1;
	c->t = t;
	c->d = nt + 1;
	c->ds = ds;
	c->dc = c->d - ds;
	size_t s2 = (size_t)ds * ds;
	c->mcol = malloc(sizeof(int) * (size_t)c->dc);
	c->scol = malloc(sizeof(int) * (size_t)ds);
	c->x = malloc(sizeof(double) * (size_t)nf);
	c->xq = malloc(sizeof(double) * (size_t)nf);
	c->hs = malloc(sizeof(double) * (size_t)ns * ns);
	c->bs = malloc(sizeof(double) * (size_t)ns);
	c->jtj = malloc(sizeof(double) * (size_t)nf * nf);
	c->b = malloc(sizeof(double) * (size_t)nf);
	c->p = malloc(sizeof(double) * s2);
	c->pinv = malloc(sizeof(double) * s2);
	c->shat = malloc(sizeof(double) * (size_t)ds);
	c->v = malloc(sizeof(double) * (size_t)ds);
	c->gg = malloc(sizeof(double) * (size_t)nphi * pr->n_phys);
	c->dg = malloc(sizeof(double) * (size_t)nphi * pr->n_phys);
	c->wcc = malloc(sizeof(double) * (size_t)nphi);
	c->wco = malloc(sizeof(double) * (size_t)nphi);
	c->delta = malloc(sizeof(double) * (size_t)ns);
	c->angle = malloc(sizeof(double) * (size_t)nphi * 3 * pr->n_phys);
	c->con0 = malloc(sizeof(double) * (size_t)nphi * 4);
	c->off0 = c->con0 ? c->con0 + nphi : NULL;
	c->con1 = c->con0 ? c->con0 + 2 * nphi : NULL;
	c->off1 = c->con0 ? c->con0 + 3 * nphi : NULL;
	c->fused = 1;
	if (!c->angle || !c->con0 || !c->mcol || !c->scol || !c->x || !c->xq || !c->hs || !c->bs ||
	    !c->jtj || !c->b || !c->p || !c->pinv || !c->shat || !c->v || !c->gg || !c->dg ||
	    !c->wcc || !c->wco || !c->delta) {
		xf_collapse_free(c);
		return -1;
	}
	int im = 0, is = 0;
	for (int m = 0; m < nt; m++) {
		if (t->theta[m] >= pr->n_phys)
			c->scol[is++] = m;
		else
			c->mcol[im++] = m;
	}
	c->mcol[im] = nt; /* log σ, the last coordinate of both */
	return 0;
}

void xf_collapse_free(xf_collapse *c)
{
	free(c->mcol);
	free(c->scol);
	free(c->x);
	free(c->xq);
	free(c->hs);
	free(c->bs);
	free(c->jtj);
	free(c->b);
	free(c->p);
	free(c->pinv);
	free(c->shat);
	free(c->v);
	free(c->gg);
	free(c->dg);
	free(c->wcc);
	free(c->wco);
	free(c->delta);
	free(c->angle);
	free(c->con0);
	memset(c, 0, sizeof *c);
}

void xf_collapse_restrict(const xf_collapse *c, const double *u, double *uc)
{
	for (int j = 0; j < c->dc; j++)
		uc[j] = u[c->mcol[j]];
}

/* θ at uc with the scaling at s₀ into c->x; the scaling pass there; P = H_ss/σ² +
 * diag(τ/sd²) over the sampled coefficients, factored (c->p holds L, P = L·Lᵀ), and
 * ŝ = P⁻¹·[(H_ss·s₀ + b_s)/σ² + τ·μ/sd²] (cond_scaling.c's conditional). 0 or −1. */
static int conditional(xf_collapse *c, const double *uc, double *sigma, int *fused)
{
	const xf_cmc_target *t = c->t;
	const xf_problem *pr = t->pr;
	int ds = c->ds, dc = c->dc;
	memcpy(c->x, t->x_fixed, sizeof(double) * (size_t)pr->n_full);
	for (int j = 0; j < dc - 1; j++) {
		int k = t->theta[c->mcol[j]];
		c->x[k] = xf_cmc_u_to_x(pr->lower[k], pr->upper[k], uc[j]);
	}
	*sigma = exp(uc[dc - 1]);
	if (!isfinite(*sigma) || !(*sigma > 0.0))
		return -1;
	int rc = 0;
	if (*fused &&
	    (rc = xf_lik_eval_collapse(t->lik, c->x, &c->chi2_s0, c->hs, c->bs, c->angle)) == 1)
		c->fused = *fused = 0; /* none where the passes run (a GPU): two passes from now */
	if (!*fused)
		rc = xf_lik_eval_scaling(t->lik, c->x, &c->chi2_s0, c->hs, c->bs);
	if (rc)
		return -1;
	xf_scaling_conditional(t, c->scol, ds, c->x, c->hs, c->bs, *sigma, c->p, c->shat);
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', ds, c->p, ds) != 0 ||
	    LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', ds, 1, c->p, ds, c->shat, 1) != 0)
		return -1;
	return 0;
}

/* χ² at the point whose sampled coefficients are s [ds] (the rest at s₀), from the
 * scaling pass's quadratic: exact, since the model is linear in them. */
static double chi2_at(xf_collapse *c, const double *s)
{
	const xf_cmc_target *t = c->t;
	const xf_problem *pr = t->pr;
	int np = pr->n_phys, ns = 2 * pr->n_basis;
	memset(c->delta, 0, sizeof(double) * (size_t)ns);
	for (int a = 0; a < c->ds; a++) {
		int k = t->theta[c->scol[a]];
		c->delta[k - np] = s[a] - t->x_fixed[k];
	}
	double q = c->chi2_s0;
	for (int a = 0; a < ns; a++) {
		double hd = 0.0;
		for (int b = 0; b < ns; b++)
			hd += c->hs[(size_t)a * ns + b] * c->delta[b];
		q += c->delta[a] * (hd - 2.0 * c->bs[a]);
	}
	return q;
}

/* P⁻¹ from its factor into c->pinv (full). */
static int inverse(xf_collapse *c)
{
	int ds = c->ds;
	memcpy(c->pinv, c->p, sizeof(double) * (size_t)ds * ds);
	if (LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', ds, c->pinv, ds) != 0)
		return -1;
	for (int a = 0; a < ds; a++)
		for (int b = a + 1; b < ds; b++)
			c->pinv[(size_t)a * ds + b] = c->pinv[(size_t)b * ds + a];
	return 0;
}

static int inside(const xf_problem *pr, int k, double x)
{
	return x > pr->lower[k] && x < pr->upper[k];
}

/* From the collapse pass at s₀: the physical part of b at ŝ into c->b and the angle sums
 * into c->gg, c->dg. With y = res₀ + off₀ + con₀·g1² (g1² for short, G),
 *   b_m(ŝ) = Σ_p ĉon_p·Σ_{i∈p} ∂_m G·(y − ôff_p − ĉon_p·G)
 *          = Σ_p ĉon_p·[R_p,m + (off₀_p − ôff_p)·DG_p,m + (con₀_p − ĉon_p)·GG_p,m]. */
static void gradient_at_shat(xf_collapse *c)
{
	const xf_cmc_target *t = c->t;
	const xf_problem *pr = t->pr;
	int np = pr->n_phys;
	xf_problem_scaling(pr, c->x, c->con0, c->off0);
	for (int a = 0; a < c->ds; a++)
		c->x[t->theta[c->scol[a]]] = c->shat[a];
	xf_problem_scaling(pr, c->x, c->con1, c->off1);
	for (int m = 0; m < np; m++)
		c->b[m] = 0.0;
	for (int p = 0; p < pr->n_phi; p++) {
		const double *row = c->angle + (size_t)p * 3 * np;
		double dof = c->off0[p] - c->off1[p], dco = c->con0[p] - c->con1[p];
		for (int m = 0; m < np; m++) {
			double gg = row[np + m], dg = row[2 * np + m];
			c->b[m] += c->con1[p] * (row[m] + dof * dg + dco * gg);
			c->gg[(size_t)p * np + m] = gg;
			c->dg[(size_t)p * np + m] = dg;
		}
	}
}

int xf_collapse_logp(void *ctx, const double *uc, double *logp, double *grad)
{
	xf_collapse *c = ctx;
	xf_cmc_target *t = c->t;
	const xf_problem *pr = t->pr;
	int np = pr->n_phys, nb = pr->n_basis, ds = c->ds, dc = c->dc;
	t->evals++;
	if (t->evals_total) /* progress and time only (eta.h) */
		__atomic_add_fetch(t->evals_total, 1, __ATOMIC_RELAXED);
	double sigma;
	int fused = grad && c->fused;
	if (conditional(c, uc, &sigma, &fused))
		return -1;
	double prior = 0.0, log_det_half = 0.0;
	for (int a = 0; a < ds; a++) {
		int k = t->theta[c->scol[a]];
		if (!inside(pr, k, c->shat[a])) {
			if (grad)
				c->near_bound++;
			return -1; /* the conditional beyond a bound: no mass the integral counts */
		}
		double z = (c->shat[a] - pr->prior_mu[k]) / pr->prior_sigma[k];
		prior += -0.5 * z * z;
		log_det_half += log(c->p[(size_t)a * ds + a]);
	}
	for (int j = 0; j < dc - 1; j++) {
		int k = t->theta[c->mcol[j]];
		double z = (c->x[k] - pr->prior_mu[k]) / pr->prior_sigma[k];
		/* log TN(x) + log|dx/du| = −z²/2 + log w + log s(u) + log s(−u) (+ const) */
		prior += -0.5 * z * z + log(pr->upper[k] - pr->lower[k]) + log_sigmoid(uc[j]) +
			 log_sigmoid(-uc[j]);
	}
	double chi2 = chi2_at(c, c->shat);
	double log_sigma = uc[dc - 1], ratio = sigma / t->sigma_scale;
	double n = (double)t->n_points, inv_s2 = 1.0 / (sigma * sigma);
	double lp = t->temper * prior + (-0.5 * ratio * ratio + log_sigma) +
		    (-n * log_sigma - 0.5 * chi2 * inv_s2 - 0.5 * n * XF_LOG_2PI) +
		    0.5 * ds * XF_LOG_2PI - log_det_half;
	if (!isfinite(lp))
		return -1;
	*logp = lp;
	if (!grad)
		return 0;
	if (fused)
		gradient_at_shat(c);
	else { /* the full pass at (θ, ŝ): the partial gradient there and the angle sums */
		for (int a = 0; a < ds; a++)
			c->x[t->theta[c->scol[a]]] = c->shat[a];
		xf_lik_out out = { 0.0, c->jtj, c->b, 0.0 };
		if (xf_lik_eval(t->lik, c->x, &out) || xf_lik_angle_sums(t->lik, c->gg, c->dg))
			return -1;
	}
	if (inverse(c))
		return -1;
	for (int a = 0; a < ds; a++) {
		int k = t->theta[c->scol[a]];
		double sd = sqrt(c->pinv[(size_t)a * ds + a]), s = c->shat[a];
		if (!(fmin(s - pr->lower[k], pr->upper[k] - s) >= XF_COLLAPSE_MIN_SD * sd)) {
			c->near_bound++;
			break;
		}
	}
	/* tr(P⁻¹·∂H_ss/∂x_m) = Σ_p 2·gg_p,m·W_cc,p + 2·dg_p,m·W_co,p, with W the angle's
	 * basis rows weighted by P⁻¹ (contrast × contrast, contrast × offset) */
	for (int p = 0; p < pr->n_phi; p++) {
		double wcc = 0.0, wco = 0.0;
		const double *row = pr->basis + (size_t)p * nb;
		for (int a = 0; a < ds; a++) {
			int ra = t->theta[c->scol[a]] - np;
			if (ra >= nb || row[ra] == 0.0)
				continue; /* a contrast coefficient that reaches angle p */
			for (int b = 0; b < ds; b++) {
				int rb = t->theta[c->scol[b]] - np;
				double w = c->pinv[(size_t)a * ds + b] * row[ra] * row[rb % nb];
				if (rb < nb)
					wcc += w;
				else
					wco += w;
			}
		}
		c->wcc[p] = wcc;
		c->wco[p] = wco;
	}
	for (int j = 0; j < dc - 1; j++) {
		int k = t->theta[c->mcol[j]];
		double tr = 0.0;
		for (int p = 0; p < pr->n_phi; p++)
			tr += 2.0 * c->gg[(size_t)p * np + k] * c->wcc[p] +
			      2.0 * c->dg[(size_t)p * np + k] * c->wco[p];
		double s = sigmoid(uc[j]);
		double dxdu = (pr->upper[k] - pr->lower[k]) * s * (1.0 - s);
		double dprior_dx =
			-(c->x[k] - pr->prior_mu[k]) / (pr->prior_sigma[k] * pr->prior_sigma[k]);
		grad[j] = t->temper * (dprior_dx * dxdu + (1.0 - 2.0 * s)) +
			  (c->b[k] - 0.5 * tr) * inv_s2 * dxdu;
	}
	/* σ: −½·∂log|P|/∂log σ = tr(P⁻¹·H_ss)/σ² */
	int ns = 2 * nb;
	double tr_h = 0.0;
	for (int a = 0; a < ds; a++) {
		int ka = t->theta[c->scol[a]] - np;
		for (int b = 0; b < ds; b++)
			tr_h += c->pinv[(size_t)a * ds + b] *
				c->hs[(size_t)ka * ns + (t->theta[c->scol[b]] - np)];
	}
	grad[dc - 1] = -ratio * ratio + 1.0 - n + chi2 * inv_s2 + tr_h * inv_s2;
	return 0;
}

double xf_collapse_margin(xf_collapse *c, const double *uc)
{
	const xf_problem *pr = c->t->pr;
	double sigma, margin = INFINITY;
	int fused = 0; /* the scaling pass alone */
	if (conditional(c, uc, &sigma, &fused) || inverse(c))
		return -1.0;
	for (int a = 0; a < c->ds; a++) {
		int k = c->t->theta[c->scol[a]];
		double sd = sqrt(c->pinv[(size_t)a * c->ds + a]), s = c->shat[a];
		double m = fmin(s - pr->lower[k], pr->upper[k] - s) / sd;
		if (isnan(m))
			return -1.0;
		margin = fmin(margin, m);
	}
	return margin;
}

int xf_collapse_expand(xf_collapse *c, const double *uc, uint64_t seed, uint64_t a, uint64_t b,
		       double *u, double *logp)
{
	xf_cmc_target *t = c->t;
	const xf_problem *pr = t->pr;
	int ds = c->ds, ok = 0;
	double sigma;
	int fused = 0; /* the scaling pass alone */
	if (conditional(c, uc, &sigma, &fused))
		return -1;
	for (int attempt = 0; attempt < XF_COLLAPSE_REDRAWS && !ok; attempt++) {
		/* s = ŝ + L⁻ᵀ·ε: back substitution on Lᵀ */
		for (int i = ds - 1; i >= 0; i--) {
			double e = xf_rng_normal(seed, XF_RNG_CMC_COLLAPSE, a, b,
						 (uint64_t)i + ((uint64_t)attempt << 16));
			for (int j = i + 1; j < ds; j++)
				e -= c->p[(size_t)j * ds + i] * c->delta[j];
			c->delta[i] = e / c->p[(size_t)i * ds + i];
		}
		ok = 1;
		for (int i = 0; i < ds; i++) {
			c->v[i] = c->shat[i] + c->delta[i];
			ok &= inside(pr, t->theta[c->scol[i]], c->v[i]);
		}
	}
	if (!ok)
		return -1;
	for (int j = 0; j < c->dc; j++)
		u[c->mcol[j]] = uc[j];
	for (int i = 0; i < ds; i++) {
		int k = t->theta[c->scol[i]];
		double f = (c->v[i] - pr->lower[k]) / (pr->upper[k] - pr->lower[k]);
		u[c->scol[i]] = log(f) - log1p(-f);
	}
	double prior = xf_cmc_target_prior(t, u, c->xq);
	/* the point as the target reads it back from u (the logit's rounding included) */
	for (int i = 0; i < ds; i++)
		c->v[i] = c->xq[t->theta[c->scol[i]]];
	*logp = xf_cmc_target_combine(t, u, prior, chi2_at(c, c->v));
	return isfinite(*logp) ? 0 : -1;
}
