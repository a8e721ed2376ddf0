/* cond_scaling.c — the route's proposal with the per-angle scaling drawn from its exact
 * conditional given θ and σ (cond_scaling.h; adr/0081). */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/cond_scaling.h"
#include "cmc/proposal.h"
#include "util/interrupt.h"
#include "xpcsfit/dist.h"
#include "xpcsfit/rng.h"

#define XF_HALF_LOG_2PI 0.91893853320467274
#define XF_COND_TICK	64 /* points between two progress calls */

int xf_cond_scaling_count(const xf_cmc_target *t)
{
	int n = 0;
	for (int m = 0; m < t->n_theta; m++)
		n += t->theta[m] >= t->pr->n_phys;
	return n;
}

/* The linear map N(mu, cov) (cov [d·d] lower triangle read, overwritten by its factor);
 * 0, or 1 when cov is not positive definite (the map unchanged). */
static int map_from_cov(xf_tmap *map, const double *mu, double *cov)
{
	int d = map->d;
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', d, cov, d) != 0)
		return 1;
	for (int j = 0; j < d; j++)
		for (int l = j + 1; l < d; l++)
			cov[(size_t)j * d + l] = 0.0;
	xf_tmap_linear(map, mu, cov);
	return 0;
}

int xf_cond_scaling_init(xf_cond_scaling *cs, xf_cmc_target *t, const xf_plaw_slope *slope,
			 const double *mean, const double *cov)
{
	memset(cs, 0, sizeof *cs);
	int nt = t->n_theta, d = nt + 1, nf = t->pr->n_full;
	cs->t = t;
	cs->d = d;
	cs->d_s = xf_cond_scaling_count(t);
	cs->d_m = d - cs->d_s;
	int dm = cs->d_m, ds = cs->d_s;
	cs->mcol = malloc(sizeof(int) * (size_t)dm);
	cs->scol = malloc(sizeof(int) * (size_t)(ds > 0 ? ds : 1));
	cs->u0 = malloc(sizeof(double) * (size_t)d);
	int ns = 2 * t->pr->n_basis;	/* the scaling block of JᵀJ and b */
	const size_t nb = XF_LIK_BATCH; /* the points of one sweep (draw_run) */
	cs->jtj = malloc(sizeof(double) * nb * (size_t)(ns > 0 ? ns * ns : 1));
	cs->b = malloc(sizeof(double) * nb * (size_t)(ns > 0 ? ns : 1));
	cs->x = malloc(sizeof(double) * nb * (size_t)nf);
	cs->chi2 = malloc(sizeof(double) * nb);
	cs->sigma = malloc(sizeof(double) * nb);
	cs->lj = malloc(sizeof(double) * nb);
	cs->xq = malloc(sizeof(double) * (size_t)nf);
	cs->delta = malloc(sizeof(double) * (size_t)(ns > 0 ? ns : 1));
	cs->u = malloc(sizeof(double) * (size_t)d);
	cs->um = malloc(sizeof(double) * (size_t)dm);
	cs->wm = malloc(sizeof(double) * (size_t)dm);
	int *param = malloc(sizeof(int) * (size_t)dm);
	cs->p = malloc(sizeof(double) * (size_t)(ds > 0 ? ds * ds : 1));
	cs->rhs = malloc(sizeof(double) * (size_t)(ds > 0 ? ds : 1));
	cs->v = malloc(sizeof(double) * (size_t)(ds > 0 ? ds : 1));
	double *chol = malloc(sizeof(double) * (size_t)dm * dm);
	double *mu = malloc(sizeof(double) * (size_t)dm);
	cs->lap_cov = malloc(sizeof(double) * (size_t)dm * dm);
	int rc = -1;
	if (!cs->mcol || !cs->scol || !cs->u0 || !cs->jtj || !cs->b || !cs->x || !cs->chi2 ||
	    !cs->sigma || !cs->lj || !cs->xq || !cs->delta || !cs->u || !cs->um || !cs->wm ||
	    !param || !cs->p || !cs->rhs || !cs->v || !chol || !mu || !cs->lap_cov ||
	    xf_tmap_alloc(&cs->map, dm))
		goto done;
	int im = 0, is = 0;
	for (int m = 0; m < nt; m++) {
		if (t->theta[m] >= t->pr->n_phys)
			cs->scol[is++] = m;
		else
			cs->mcol[im++] = m;
	}
	cs->mcol[im] = nt; /* log σ, the map's last coordinate */
	memcpy(cs->u0, mean, sizeof(double) * (size_t)d);
	for (int j = 0; j < dm; j++) {
		mu[j] = mean[cs->mcol[j]];
		for (int l = 0; l < dm; l++)
			chol[(size_t)j * dm + l] = cov[(size_t)cs->mcol[j] * d + cs->mcol[l]];
	}
	memcpy(cs->lap_cov, chol, sizeof(double) * (size_t)dm * dm);
	for (int j = 0; j < dm; j++)
		param[j] = j < dm - 1 ? t->theta[cs->mcol[j]] : -1;
	xf_plaw_coords_init_at(&cs->pc, t->pr, param, dm, mu, chol, slope, XF_PLAW_ROUTE);
	if (xf_plaw_gauss_to_w(&cs->pc, mu, chol))
		goto done;
	rc = map_from_cov(&cs->map, mu, chol);
done:
	free(param);
	free(chol);
	free(mu);
	return rc;
}

void xf_cond_scaling_free(xf_cond_scaling *cs)
{
	free(cs->mcol);
	free(cs->scol);
	free(cs->u0);
	free(cs->lap_cov);
	free(cs->jtj);
	free(cs->b);
	free(cs->x);
	free(cs->chi2);
	free(cs->sigma);
	free(cs->lj);
	free(cs->xq);
	free(cs->delta);
	free(cs->u);
	free(cs->um);
	free(cs->wm);
	free(cs->p);
	free(cs->rhs);
	free(cs->v);
	free(cs->fit_u);
	if (cs->map.d)
		xf_tmap_free(&cs->map);
	memset(cs, 0, sizeof *cs);
}

void xf_scaling_conditional(const xf_cmc_target *t, const int *scol, int ds, const double *x,
			    const double *h_ss, const double *b_s, double sigma, double *p,
			    double *rhs)
{
	const xf_problem *pr = t->pr;
	int np = pr->n_phys, ns = 2 * pr->n_basis;
	double inv_s2 = 1.0 / (sigma * sigma);
	for (int a = 0; a < ds; a++) {
		int ka = t->theta[scol[a]];
		double r = b_s[ka - np];
		for (int c = 0; c < ds; c++) {
			int kc = t->theta[scol[c]];
			double h = h_ss[(size_t)(ka - np) * ns + (kc - np)];
			p[(size_t)a * ds + c] = h * inv_s2;
			r += h * x[kc];
		}
		double prec = t->temper / (pr->prior_sigma[ka] * pr->prior_sigma[ka]);
		p[(size_t)a * ds + a] += prec;
		rhs[a] = r * inv_s2 + prec * pr->prior_mu[ka];
	}
}

/* One point's part before its pass: base coordinates z (the map's, then the scaling's ε)
 * → u [d] with the scaling at s₀'s, θ (the scaling at s₀) into x and σ into *sigma;
 * returns log|du/dz| of the map's coordinates. */
static double point_start(xf_cond_scaling *cs, const double *z, double *u, double *x, double *sigma)
{
	int d = cs->d, dm = cs->d_m;
	double lj = xf_tmap_to_u(&cs->map, z, cs->wm);
	lj += xf_plaw_to_u(&cs->pc, cs->wm, cs->um);
	memcpy(u, cs->u0, sizeof(double) * (size_t)d);
	for (int j = 0; j < dm; j++)
		u[cs->mcol[j]] = cs->um[j];
	xf_cmc_to_physical(cs->t, u, x, sigma);
	return lj;
}

/* The rest of one point from its scaling pass at x (χ² = chi2, +∞ where the pass failed;
 * the scaling block jtj, b): the scaling drawn from its conditional into u; returns
 * lj + log|du/dz| of the scaling, −∞ where the point has no density (a coefficient beyond
 * its bound, or θ where the model is not finite: u then holds s₀'s scaling). lp (may be
 * NULL): the log target at u, with χ² from the pass's quadratic in the scaling (exact:
 * the model is linear in it; test_likelihood checks the quadratic against a values pass). */
static double point_end(xf_cond_scaling *cs, const double *z, double *u, const double *x,
			double sigma, double lj, double chi2, const double *jtj, const double *b,
			double *lp)
{
	if (lp)
		*lp = -INFINITY;
	const xf_cmc_target *t = cs->t;
	const xf_problem *pr = t->pr;
	int dm = cs->d_m, ds = cs->d_s;
	int np = pr->n_phys, ns = 2 * pr->n_basis;
	cs->passes++;
	if (!isfinite(chi2) || !isfinite(sigma) || !(sigma > 0.0))
		return -INFINITY;
	xf_scaling_conditional(t, cs->scol, ds, x, jtj, b, sigma, cs->p, cs->rhs);
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', ds, cs->p, ds) != 0)
		return -INFINITY;
	/* ŝ = P⁻¹·rhs, then s = ŝ + L⁻ᵀ·ε (back substitution on Lᵀ) */
	for (int a = 0; a < ds; a++) { /* L·y = rhs */
		double s = cs->rhs[a];
		for (int c = 0; c < a; c++)
			s -= cs->p[(size_t)a * ds + c] * cs->rhs[c];
		cs->rhs[a] = s / cs->p[(size_t)a * ds + a];
	}
	const double *eps = z + dm;
	for (int a = ds - 1; a >= 0; a--) { /* Lᵀ·(ŝ + v) = y + ε */
		double s = cs->rhs[a] + eps[a];
		for (int c = a + 1; c < ds; c++)
			s -= cs->p[(size_t)c * ds + a] * cs->v[c];
		cs->v[a] = s / cs->p[(size_t)a * ds + a];
	}
	double lj_s = 0.0;
	for (int a = 0; a < ds; a++) {
		int k = t->theta[cs->scol[a]];
		double lo = pr->lower[k], hi = pr->upper[k];
		double f = (cs->v[a] - lo) / (hi - lo);
		if (!(f > 0.0 && f < 1.0))
			return -INFINITY; /* u keeps s₀'s value: finite, weight 0 */
		lj_s -= log(cs->p[(size_t)a * ds + a]) + log((hi - lo) * f * (1.0 - f));
	}
	for (int a = 0; a < ds; a++) {
		int k = t->theta[cs->scol[a]];
		double f = (cs->v[a] - pr->lower[k]) / (pr->upper[k] - pr->lower[k]);
		u[cs->scol[a]] = log(f) - log1p(-f);
	}
	if (lp) {
		/* χ²(s) = χ²(s₀) − 2Δᵀb + ΔᵀHΔ over every scaling coefficient, Δ = s − s₀
		 * at the physical point the target reads from u (0 where not sampled) */
		double prior = xf_cmc_target_prior(t, u, cs->xq);
		for (int a = 0; a < ns; a++)
			cs->delta[a] = cs->xq[np + a] - x[np + a];
		double q = chi2;
		for (int a = 0; a < ns; a++) {
			double hd = 0.0;
			for (int c = 0; c < ns; c++)
				hd += jtj[(size_t)a * ns + c] * cs->delta[c];
			q += cs->delta[a] * (hd - 2.0 * b[a]);
		}
		double v = xf_cmc_target_combine(t, u, prior, q);
		*lp = isfinite(v) ? v : -INFINITY;
	}
	return lj + lj_s;
}

/* One point on its own (point_start, one scaling pass, point_end). */
static double point_to_u(xf_cond_scaling *cs, const double *z, double *u, double *lp)
{
	double sigma, chi2;
	double lj = point_start(cs, z, u, cs->x, &sigma);
	if (xf_lik_eval_scaling(cs->t->lik, cs->x, &chi2, cs->jtj, cs->b))
		chi2 = INFINITY;
	return point_end(cs, z, u, cs->x, sigma, lj, chi2, cs->jtj, cs->b, lp);
}

static int cs_to_u(void *ctx, int n, const double *z, double *u, double *log_jac)
{
	xf_cond_scaling *cs = ctx;
	for (int i = 0; i < n; i++)
		log_jac[i] = point_to_u(cs, z + (size_t)i * cs->d, u + (size_t)i * cs->d, NULL);
	return 0;
}

/* Points [i0, i1) in this process: drawn, then their scaling passes XF_LIK_BATCH points a sweep over the
 * data (xf_lik_eval_scalings: the bits of one pass per point), then finished. */
static int draw_run(xf_cond_scaling *cs, uint64_t seed, long i0, long i1, double core, double *z,
		    double *u, double *lq, double *lp, long n_all)
{
	int d = cs->d, dm = cs->d_m, ds = cs->d_s;
	size_t nf = (size_t)cs->t->pr->n_full, ns = 2 * (size_t)cs->t->pr->n_basis;
	double *zz = malloc(sizeof(double) * XF_LIK_BATCH * (size_t)d), lb[XF_LIK_BATCH];
	int live[XF_LIK_BATCH];
	if (!zz)
		return -1;
	for (long b0 = i0; b0 < i1; b0 += XF_LIK_BATCH) {
		int m = i1 - b0 < XF_LIK_BATCH ? (int)(i1 - b0) : XF_LIK_BATCH, n_live = 0;
		for (int k = 0; k < m; k++) {
			long i = b0 + k;
			double *zi = z ? z + (size_t)(i - i0) * d : zz + (size_t)k * d;
			double *ui = u + (size_t)(i - i0) * d;
			live[k] = !xf_interrupted(); /* the caller sees it after its pass */
			if (!live[k]) {
				memcpy(ui, cs->u0, sizeof(double) * (size_t)d);
				memset(zi, 0, sizeof(double) * (size_t)d);
				lq[i - i0] = INFINITY;
				lp[i - i0] = -INFINITY;
				continue;
			}
			lb[k] = xf_mix_draw(seed, (uint64_t)i, dm, cs->map.zero, cs->map.eye, core,
					    zi);
			for (int a = 0; a < ds; a++) {
				double e = xf_rng_normal(seed, XF_RNG_CMC_CHECK, (uint64_t)i,
							 (uint64_t)a, 1);
				zi[dm + a] = e;
				lb[k] += -0.5 * e * e - XF_HALF_LOG_2PI;
			}
			/* the live points' θ packed at the front of the sweep */
			cs->lj[n_live] = point_start(cs, zi, ui, cs->x + (size_t)n_live * nf,
						     cs->sigma + n_live);
			n_live++;
		}
		if (n_live &&
		    xf_lik_eval_scalings(cs->t->lik, n_live, cs->x, cs->chi2, cs->jtj, cs->b)) {
			free(zz);
			return -1;
		}
		for (int k = 0, j = 0; k < m; k++) {
			long i = b0 + k;
			if (!live[k])
				continue;
			double *zi = z ? z + (size_t)(i - i0) * d : zz + (size_t)k * d;
			double lj = point_end(cs, zi, u + (size_t)(i - i0) * d,
					      cs->x + (size_t)j * nf, cs->sigma[j], cs->lj[j],
					      cs->chi2[j], cs->jtj + (size_t)j * ns * ns,
					      cs->b + (size_t)j * ns, lp + (i - i0));
			j++;
			/* no density there: log q = +∞ makes the log weight −∞ */
			lq[i - i0] = isfinite(lj) ? lb[k] - lj : INFINITY;
		}
		long done = b0 + m - i0;
		if (cs->tick && (done / XF_COND_TICK != (done - m) / XF_COND_TICK || b0 + m == i1))
			cs->tick(cs->tick_ctx, done * n_all / (i1 - i0), n_all); /* scaled to all */
	}
	free(zz);
	return 0;
}

/* Every point is a pure function of (seed, i), so under several ranks each computes a
 * contiguous run of the points and the runs are gathered in rank order: the bytes of
 * one process (as xf_full_logp_batch shares its points). */
static int cs_draw(void *ctx, uint64_t seed, long i0, long i1, double core, double *z, double *u,
		   double *lq, double *lp)
{
	xf_cond_scaling *cs = ctx;
	int ranks = xf_dist_ranks(), d = cs->d;
	long n = i1 - i0;
	if (ranks <= 1 || n < ranks)
		return draw_run(cs, seed, i0, i1, core, z, u, lq, lp, n);
	int first, count;
	xf_dist_blocks((int)n, ranks, xf_dist_rank(), &first, &count);
	size_t f = (size_t)first, c = (size_t)count, dd = (size_t)d;
	int rc = draw_run(cs, seed, i0 + first, i0 + first + count, core, z ? z + f * dd : NULL,
			  u + f * dd, lq + f, lp + f, n);
	if (xf_dist_allgather_run(u, f * dd, c * dd, (size_t)n * dd) ||
	    (z && xf_dist_allgather_run(z, f * dd, c * dd, (size_t)n * dd)) ||
	    xf_dist_allgather_run(lq, f, c, (size_t)n) ||
	    xf_dist_allgather_run(lp, f, c, (size_t)n))
		rc = -1;
	return rc;
}

static int cs_fit(void *ctx, const double *u, const double *w, int n, double ess)
{
	xf_cond_scaling *cs = ctx;
	int d = cs->d, dm = cs->d_m;
	if (n > cs->fit_n) {
		double *f = realloc(cs->fit_u, sizeof(double) * (size_t)n * dm);
		if (!f)
			return -1;
		cs->fit_u = f;
		cs->fit_n = n;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < dm; j++)
			cs->fit_u[(size_t)i * dm + j] = u[(size_t)i * d + cs->mcol[j]];
	for (int i = 0; i < n; i++)
		xf_plaw_to_w(&cs->pc, cs->fit_u + (size_t)i * dm, cs->fit_u + (size_t)i * dm);
	return xf_tmap_fit(&cs->map, cs->fit_u, w, n, ess);
}

/* log of parameter k's tempered prior in u (TN in x and the logit's Jacobian) at u_k, its
 * first and second derivatives (target.c's prior term, differentiated). */
static double prior_u(const xf_problem *pr, int k, double temper, double u, double *d1, double *d2)
{
	double s = u >= 0.0 ? 1.0 / (1.0 + exp(-u)) : exp(u) / (1.0 + exp(u));
	double w = pr->upper[k] - pr->lower[k], x = pr->lower[k] + w * s;
	double x1 = w * s * (1.0 - s), x2 = x1 * (1.0 - 2.0 * s);
	double iv = temper / (pr->prior_sigma[k] * pr->prior_sigma[k]), e = x - pr->prior_mu[k];
	*d1 = -iv * e * x1 + (1.0 - 2.0 * s);
	*d2 = -iv * (x1 * x1 + e * x2) - 2.0 * s * (1.0 - s);
	return -0.5 * iv * e * e + log(x1);
}

/* f(u) = −½(u − m)ᵀP(u − m) + Σ log π_k(u_k) over θ's physical coordinates (the map's
 * last, log σ, has a flat prior beside its data); with d2 != NULL its gradient into g and
 * the prior terms' second derivatives, non-positive parts only, into d2. */
static double restart_f(const xf_cond_scaling *cs, const double *pm, const double *m0,
			const double *u, double *g, double *d2)
{
	const xf_cmc_target *t = cs->t;
	int dm = cs->d_m;
	double f = 0.0;
	for (int j = 0; j < dm; j++) {
		double q = 0.0, a1 = 0.0, a2 = 0.0;
		for (int l = 0; l < dm; l++)
			q += pm[(size_t)j * dm + l] * (u[l] - m0[l]);
		f -= 0.5 * (u[j] - m0[j]) * q;
		if (j < dm - 1)
			f += prior_u(t->pr, t->theta[cs->mcol[j]], t->temper, u[j], &a1, &a2);
		if (d2) {
			g[j] = a1 - q;
			d2[j] = fmin(a2, 0.0); /* a non-concave prior term adds no curvature */
		}
	}
	return f;
}

/* h = P − diag(d2), factored (lower); 0 or LAPACK's error */
static int restart_curvature(const double *pm, const double *d2, int dm, double *h)
{
	memcpy(h, pm, sizeof(double) * (size_t)dm * dm);
	for (int j = 0; j < dm; j++)
		h[(size_t)j * dm + j] -= d2[j];
	return LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', dm, h, dm);
}

/* The map's second start (isprop.h restart): the likelihood's quadratic from NLSQ (the
 * map's first start) times the exact priors of θ's physical coordinates — its mode by
 * damped Newton steps, no pass over the data — with the inverse curvature there as the
 * covariance. NLSQ fits the data alone; on a small file whose priors are as strong as the
 * data (SBC's replicates) round 1 from it is hopeless (k̂ 12–156, adr/0078), while the
 * priors' pull is known in closed form. */
static int cs_restart(void *ctx)
{
	xf_cond_scaling *cs = ctx;
	int dm = cs->d_m, n = dm * dm, rc = -1;
	double *pm = malloc(sizeof(double) * (size_t)n), *h = malloc(sizeof(double) * (size_t)n);
	double *m0 = malloc(sizeof(double) * (size_t)dm), *u = malloc(sizeof(double) * (size_t)dm);
	double *g = malloc(sizeof(double) * (size_t)dm),
	       *step = malloc(sizeof(double) * (size_t)dm);
	double *d2 = malloc(sizeof(double) * (size_t)dm), *un = malloc(sizeof(double) * (size_t)dm);
	if (!pm || !h || !m0 || !u || !g || !step || !d2 || !un)
		goto done;
	for (int j = 0; j < dm; j++)
		m0[j] = u[j] = cs->u0[cs->mcol[j]];
	memcpy(pm, cs->lap_cov, sizeof(double) * (size_t)n); /* P = Σ⁻¹ */
	rc = 1;
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', dm, pm, dm) ||
	    LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', dm, pm, dm))
		goto done;
	for (int j = 0; j < dm; j++)
		for (int l = j + 1; l < dm; l++)
			pm[(size_t)j * dm + l] = pm[(size_t)l * dm + j];
	double f = restart_f(cs, pm, m0, u, g, d2);
	for (int it = 0; it < 50; it++) {
		memcpy(step, g, sizeof(double) * (size_t)dm);
		if (restart_curvature(pm, d2, dm, h) ||
		    LAPACKE_dpotrs(LAPACK_ROW_MAJOR, 'L', dm, 1, h, dm, step, 1))
			goto done;
		double gain = 0.0, fn = -INFINITY, lam = 1.0;
		for (int j = 0; j < dm; j++)
			gain += g[j] * step[j];
		for (int half = 0; half < 30 && !(fn >= f); half++, lam *= 0.5) { /* f must rise */
			for (int j = 0; j < dm; j++)
				un[j] = u[j] + lam * step[j];
			fn = restart_f(cs, pm, m0, un, NULL, NULL);
		}
		if (!(fn >= f))
			break;
		memcpy(u, un, sizeof(double) * (size_t)dm);
		f = restart_f(cs, pm, m0, u, g, d2);
		if (gain * lam < 1e-10) /* the Newton decrement: converged */
			break;
	}
	/* the covariance: the inverse curvature at the mode, and its lower factor */
	if (restart_curvature(pm, d2, dm, h) || LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', dm, h, dm))
		goto done;
	for (int j = 0; j < dm; j++)
		for (int l = j + 1; l < dm; l++)
			h[(size_t)j * dm + l] = h[(size_t)l * dm + j];
	rc = -1;
	if (xf_plaw_gauss_to_w(&cs->pc, u, h))
		goto done;
	rc = map_from_cov(&cs->map, u, h);
done:
	free(pm);
	free(h);
	free(m0);
	free(u);
	free(g);
	free(step);
	free(d2);
	free(un);
	return rc;
}

void xf_cond_scaling_prop(xf_cond_scaling *cs, xf_is_prop *p)
{
	p->d = cs->d;
	p->d_mix = cs->d_m;
	p->in_z = 1;
	p->gives_logp = 1;
	p->map = &cs->map;
	p->draw = cs_draw;
	p->to_u = cs_to_u;
	p->fit = cs_fit;
	p->restart = cs_restart;
	p->ctx = cs;
}
