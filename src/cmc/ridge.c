/* ridge.c — the importance route's proposal along a ridge (ridge.h, adr/0099): a grid of
 * the exact posterior's slices, and the triangular map through it. */
#include <gsl/gsl_cdf.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/proposal.h"
#include "cmc/ridge.h"

#define XF_RIDGE_U_MAX	 30.0 /* |u_k| beyond: within e^−30 of a bound */
#define XF_RIDGE_DL_HIGH 0.5  /* a step whose ℓ changed more: the next one half as long */
#define XF_RIDGE_DL_LOW	 0.1  /* … less: 1.5 × as long */
#define XF_RIDGE_WIDEN                                                                             \
	1.2 /* the slices' conditional sds, widened: tails a little heavier than Gauss–Newton's */
#define XF_RIDGE_FIT_ESS 10.0 /* effective points a node's refit needs */

/* ∫₀ʰ exp(a + (b − a)·t/h) dt, a and b at most ~0 (ℓ normalised by its top) */
static double segment_mass(double a, double b, double h)
{
	double m = fmax(a, b), dl = fabs(b - a);
	if (dl < 1e-9)
		return h * exp(m);
	return h * exp(m) * -expm1(-dl) / dl;
}

/* one node: the slice's maximum u [d] and ℓ, the covariance of the others from the
 * Cholesky factor in s->h */
static int add_node(xf_ridge *rg, const xf_slice *s, int at, const double *u, double ell)
{
	int d = rg->d, n1 = d - 1;
	double *c = rg->cov + (size_t)at * n1 * n1;
	memcpy(c, s->h, sizeof(double) * (size_t)n1 * n1);
	if (LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', n1, c, n1) != 0)
		return -1;
	for (int a = 0; a < n1; a++)
		for (int b = a + 1; b < n1; b++)
			c[(size_t)a * n1 + b] = c[(size_t)b * n1 + a];
	memcpy(rg->mu + (size_t)at * d, u, sizeof(double) * (size_t)d);
	rg->v[at] = u[rg->k];
	rg->ell[at] = ell;
	return 0;
}

/* One side (+1, −1) of the grid from node 0's slice: nodes into the scratch arrays from
 * index *n on. */
static int walk(xf_ridge *rg, xf_slice *s, int side, double sd_k, int cap, int *n)
{
	int d = rg->d, k = rg->k;
	double *ua = malloc(sizeof(double) * (size_t)d), *ue = malloc(sizeof(double) * (size_t)d);
	double *uc = malloc(sizeof(double) * (size_t)d);
	int rc = -1, steps = 0;
	if (!ua || !ue || !uc)
		goto done;
	rc = 0;
	memcpy(ue, rg->mu, sizeof(double) * (size_t)d);
	double h = 0.25 * sd_k, ell_prev = rg->ell[0], top = rg->ell[0];
	for (int i = 1; i < *n; i++)
		top = fmax(top, rg->ell[i]);
	while (*n < cap) {
		double v = ue[k] + side * h, ell;
		if (fabs(v) > XF_RIDGE_U_MAX)
			break;
		int sr = xf_slice_next(s, k, steps ? ua : NULL, ue, v, uc, &ell);
		if (sr != 0 || add_node(rg, s, *n, uc, ell))
			break; /* a slice short of its maximum: its ℓ and centre are off */
		(*n)++;
		steps++;
		double dl = fabs(ell - ell_prev);
		top = fmax(top, ell);
		memcpy(ua, ue, sizeof(double) * (size_t)d);
		memcpy(ue, uc, sizeof(double) * (size_t)d);
		if (ell < ell_prev && ell < top - XF_RIDGE_DROP)
			break;
		ell_prev = ell;
		h *= dl > XF_RIDGE_DL_HIGH ? 0.5 : dl < XF_RIDGE_DL_LOW ? 1.5 : 1.0;
	}
done:
	free(ua);
	free(ue);
	free(uc);
	return rc;
}

typedef struct order {
	double v;
	int i;
} order;

static int cmp_order(const void *a, const void *b)
{
	const order *p = a, *q = b;
	return (p->v > q->v) - (p->v < q->v);
}

/* F from the nodes' ℓ (any offset): normalised, the tails' rates, the cumulative masses */
static void set_marginal(xf_ridge *rg)
{
	int n = rg->n;
	double *ell = rg->ell, top = -INFINITY;
	for (int i = 0; i < n; i++)
		top = fmax(top, ell[i]);
	/* the tails fall at least one e-fold over the grid's whole span */
	double lam_min = 1.0 / (rg->v[n - 1] - rg->v[0]);
	for (int i = 0; i < n; i++)
		ell[i] -= top;
	rg->lam_lo = fmax((ell[1] - ell[0]) / (rg->v[1] - rg->v[0]), lam_min);
	rg->lam_hi = fmax((ell[n - 2] - ell[n - 1]) / (rg->v[n - 1] - rg->v[n - 2]), lam_min);
	/* mass_lo[i]: below node i; [n]: the total */
	rg->mass_lo[0] = exp(ell[0]) / rg->lam_lo;
	for (int i = 0; i + 1 < n; i++)
		rg->mass_lo[i + 1] =
			rg->mass_lo[i] + segment_mass(ell[i], ell[i + 1], rg->v[i + 1] - rg->v[i]);
	double total = rg->mass_lo[n - 1] + exp(ell[n - 1]) / rg->lam_hi;
	for (int i = 0; i < n; i++) {
		ell[i] -= log(total);
		rg->mass_lo[i] /= total;
	}
	rg->mass_lo[n] = 1.0;
}

/* the nodes sorted by v, ℓ normalised to a density, the pieces' cumulative masses */
static int finish(xf_ridge *rg, int n)
{
	int d = rg->d, n1 = d - 1;
	order *o = malloc(sizeof(order) * (size_t)n);
	double *v = malloc(sizeof(double) * (size_t)n), *ell = malloc(sizeof(double) * (size_t)n);
	double *mu = malloc(sizeof(double) * (size_t)n * d);
	double *cov = malloc(sizeof(double) * (size_t)n * n1 * n1);
	if (!o || !v || !ell || !mu || !cov) {
		free(o), free(v), free(ell), free(mu), free(cov);
		return -1;
	}
	for (int i = 0; i < n; i++)
		o[i] = (order){ rg->v[i], i };
	qsort(o, (size_t)n, sizeof *o, cmp_order);
	for (int i = 0; i < n; i++) {
		int j = o[i].i;
		v[i] = rg->v[j];
		ell[i] = rg->ell[j];
		memcpy(mu + (size_t)i * d, rg->mu + (size_t)j * d, sizeof(double) * (size_t)d);
		memcpy(cov + (size_t)i * n1 * n1, rg->cov + (size_t)j * n1 * n1,
		       sizeof(double) * (size_t)n1 * n1);
	}
	memcpy(rg->v, v, sizeof(double) * (size_t)n);
	memcpy(rg->mu, mu, sizeof(double) * (size_t)n * d);
	memcpy(rg->cov, cov, sizeof(double) * (size_t)n * n1 * n1);
	free(o), free(v), free(mu), free(cov);
	rg->n = n;
	memcpy(rg->ell, ell, sizeof(double) * (size_t)n);
	free(ell);
	set_marginal(rg);
	return 0;
}

/* each node's centre and covariance carried to the power-law coordinates w (plaw_coords.h):
 * along a ridge such as D0·t^α + D_offset = const the slices' centres bend in u, by many
 * of their widths between two nodes, and lie nearly still in w */
static int to_w(const xf_ridge *rg, const xf_plaw_coords *pc, double *mu_w, double *cov_w)
{
	int d = rg->d, n1 = d - 1, k = rg->k;
	memcpy(mu_w, rg->mu, sizeof(double) * (size_t)rg->n * d);
	memcpy(cov_w, rg->cov, sizeof(double) * (size_t)rg->n * n1 * n1);
	double *full = malloc(sizeof(double) * (size_t)d * d);
	if (!full)
		return -1;
	int rc = 0;
	for (int i = 0; i < rg->n && !rc; i++) {
		double *c = cov_w + (size_t)i * n1 * n1;
		for (int a = 0, ja = 0; a < d; a++) {
			for (int b = 0, jb = 0; b < d; b++) {
				full[(size_t)a * d + b] =
					a == k || b == k ? 0.0 : c[(size_t)ja * n1 + jb];
				jb += b != k;
			}
			ja += a != k;
		}
		if (xf_plaw_gauss_to_w(pc, mu_w + (size_t)i * d, full)) {
			rc = -1;
			break;
		}
		for (int a = 0, ja = 0; a < d; a++) {
			if (a == k)
				continue;
			for (int b = 0, jb = 0; b < d; b++) {
				if (b == k)
					continue;
				c[(size_t)ja * n1 + jb++] = full[(size_t)a * d + b];
			}
			ja++;
		}
	}
	free(full);
	return rc;
}

/* F(v): the proposal's u_k marginal below v */
static double cdf(const xf_ridge *rg, double v)
{
	int n = rg->n;
	const double *x = rg->v, *ell = rg->ell;
	if (v < x[0])
		return exp(ell[0] - rg->lam_lo * (x[0] - v)) / rg->lam_lo;
	if (v >= x[n - 1])
		return 1.0 - exp(ell[n - 1] - rg->lam_hi * (v - x[n - 1])) / rg->lam_hi;
	int i = 0;
	while (i + 2 < n && x[i + 1] <= v)
		i++;
	double h = x[i + 1] - x[i], a = ell[i], b = ell[i + 1], t = v - x[i];
	double bt = a + (b - a) * t / h; /* ℓ at v */
	return rg->mass_lo[i] + segment_mass(a, bt, t);
}

/* The posterior's covariance in u as the grid shows it [d·d]: the slices' centres spread
 * along F, plus their conditional covariances (zero in row and column k) */
static int grid_cov(const xf_ridge *rg, double *cov)
{
	int d = rg->d, n1 = d - 1, n = rg->n, k = rg->k;
	double *mean = calloc((size_t)d, sizeof(double));
	if (!mean)
		return -1;
	memset(cov, 0, sizeof(double) * (size_t)d * d);
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			double lo = i > 0 ? cdf(rg, 0.5 * (rg->v[i - 1] + rg->v[i])) : 0.0;
			double hi = i + 1 < n ? cdf(rg, 0.5 * (rg->v[i] + rg->v[i + 1])) : 1.0;
			double p = hi - lo;
			const double *m = rg->mu + (size_t)i * d,
				     *c = rg->cov + (size_t)i * n1 * n1;
			for (int a = 0, ja = 0; a < d; a++) {
				if (pass == 0) {
					mean[a] += p * m[a];
					continue;
				}
				for (int b = 0, jb = 0; b < d; b++) {
					double cc =
						a == k || b == k ? 0.0 : c[(size_t)ja * n1 + jb];
					cov[(size_t)a * d + b] +=
						p * ((m[a] - mean[a]) * (m[b] - mean[b]) + cc);
					jb += b != k;
				}
				ja += a != k;
			}
		}
	free(mean);
	return 0;
}

/* How far the slices' centres move between neighbouring nodes, in their own
 * conditional widths (the sum over segments of the Mahalanobis distance, each in the
 * lower node's covariance): what linear interpolation between nodes gets wrong grows with
 * it. +∞ where a centre or covariance is not usable (a wall of the coordinates crossed). */
static double bend(const xf_ridge *rg, const double *mu_w, const double *cov_w, double *work)
{
	int d = rg->d, n1 = d - 1, k = rg->k;
	double total = 0.0, *l = work, *dv = work + (size_t)n1 * n1;
	for (int i = 0; i + 1 < rg->n; i++) {
		memcpy(l, cov_w + (size_t)i * n1 * n1, sizeof(double) * (size_t)n1 * n1);
		if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n1, l, n1) != 0)
			return INFINITY;
		for (int j = 0, a = 0; j < d; j++)
			if (j != k)
				dv[a++] = mu_w[(size_t)(i + 1) * d + j] - mu_w[(size_t)i * d + j];
		double s2 = 0.0;
		for (int a = 0; a < n1; a++) { /* L⁻¹·Δμ by forward substitution */
			double v = dv[a];
			for (int b = 0; b < a; b++)
				v -= l[(size_t)a * n1 + b] * dv[b];
			dv[a] = v / l[(size_t)a * n1 + a];
			s2 += dv[a] * dv[a];
		}
		if (!isfinite(s2))
			return INFINITY;
		total += sqrt(s2);
	}
	return total;
}

/* The coordinates the centres and covariances are interpolated in: of u itself, the
 * power-law coordinates the grid's own covariance selects (the route's tests, adr/0084),
 * and every piece the parameters allow, the one whose centres bend least (ridge.h).
 * On the kept 23 × 1 000 file the first two agree; on its 310-frame version, where NLSQ
 * calls the ridge rank-deficient, the route's tests select none, and in u the centres
 * bend by thousands of their widths between two nodes. 0, or −1 out of memory. */
static int choose_coords(xf_ridge *rg, const xf_slice *s, const double *u0, const double *gcov,
			 const xf_plaw_slope *slopes)
{
	int d = rg->d, n1 = d - 1, k = rg->k, rc = -1;
	int *param = malloc(sizeof(int) * (size_t)d);
	double *mu_w = malloc(sizeof(double) * (size_t)rg->n * d);
	double *cov_w = malloc(sizeof(double) * (size_t)rg->n * n1 * n1);
	double *work = malloc(sizeof(double) * ((size_t)n1 * n1 + (size_t)d));
	xf_plaw_coords cand[3];
	double best = INFINITY;
	int pick = 0;
	if (!param || !mu_w || !cov_w || !work)
		goto done;
	for (int j = 0; j < d; j++)
		param[j] = j < s->nt ? s->t.theta[j] : -1;
	memset(&cand[0], 0, sizeof cand[0]);
	cand[0].d = d;
	xf_plaw_coords_init_at(&cand[1], s->t.pr, param, d, u0, gcov, slopes, XF_PLAW_ROUTE);
	xf_plaw_coords_init_at(&cand[2], s->t.pr, param, d, u0, NULL, slopes, XF_PLAW_ROUTE);
	for (int c = 0; c < 3; c++) {
		for (int i = 0; i < cand[c].n; i++) /* the ridge's coordinate must be w's own */
			if (cand[c].tr[i].e == k || cand[c].tr[i].c == k)
				cand[c].n = 0;
		int r = to_w(rg, &cand[c], mu_w, cov_w);
		if (r < 0)
			goto done;
		double b = r ? INFINITY : bend(rg, mu_w, cov_w, work);
		if (b < 0.5 * best) { /* a new piece only where it halves the bend */
			best = b;
			pick = c;
		}
	}
	rg->pc = cand[pick];
	rc = to_w(rg, &rg->pc, mu_w, cov_w) < 0 ? -1 : 0;
	memcpy(rg->mu, mu_w, sizeof(double) * (size_t)rg->n * d);
	memcpy(rg->cov, cov_w, sizeof(double) * (size_t)rg->n * n1 * n1);
	rg->bend = best;
done:
	free(param);
	free(mu_w);
	free(cov_w);
	free(work);
	return rc;
}

static int ridge_alloc(xf_ridge *rg, int d, int k, int cap)
{
	int n1 = d - 1;
	memset(rg, 0, sizeof *rg);
	rg->d = d;
	rg->k = k;
	rg->pc.d = d; /* w = u until the power-law coordinates are set */
	rg->v = malloc(sizeof(double) * cap);
	rg->ell = malloc(sizeof(double) * cap);
	rg->mass_lo = malloc(sizeof(double) * (cap + 1));
	rg->mu = malloc(sizeof(double) * (size_t)cap * d);
	rg->cov = malloc(sizeof(double) * (size_t)cap * n1 * n1);
	rg->work = malloc(sizeof(double) * ((size_t)n1 * n1 + 2 * (size_t)d));
	return !rg->v || !rg->ell || !rg->mass_lo || !rg->mu || !rg->cov || !rg->work;
}

int xf_ridge_from_nodes(xf_ridge *rg, int d, int k, int n, const double *v, const double *ell,
			const double *mu, const double *cov)
{
	int n1 = d - 1;
	if (n < 3 || n > XF_RIDGE_NODES_MAX)
		return 1;
	if (ridge_alloc(rg, d, k, n)) {
		xf_ridge_free(rg);
		return -1;
	}
	memcpy(rg->v, v, sizeof(double) * (size_t)n);
	memcpy(rg->ell, ell, sizeof(double) * (size_t)n);
	memcpy(rg->mu, mu, sizeof(double) * (size_t)n * d);
	memcpy(rg->cov, cov, sizeof(double) * (size_t)n * n1 * n1);
	if (finish(rg, n)) {
		xf_ridge_free(rg);
		return -1;
	}
	return 0;
}

int xf_ridge_build(xf_ridge *rg, xf_slice *s, int k, const double *u0, const double *cov_u,
		   const xf_plaw_slope *slopes)
{
	int d = s->d, cap = XF_RIDGE_NODES_MAX, n = 0, rc = 1;
	int bad = ridge_alloc(rg, d, k, cap);
	double *u = malloc(sizeof(double) * (size_t)d), ell, sd_k = sqrt(cov_u[(size_t)k * d + k]);
	double *gcov = NULL;
	long p0 = s->passes;
	if (bad || !u) {
		rc = -1;
		goto done;
	}
	memcpy(u, u0, sizeof(double) * (size_t)d);
	if (!(sd_k > 0.0) || xf_slice_max(s, k, u, &ell) != 0 || add_node(rg, s, 0, u, ell))
		goto done;
	n = 1;
	/* each side up to half the nodes, what one leaves over to the other */
	if (walk(rg, s, +1, sd_k, cap / 2, &n) || walk(rg, s, -1, sd_k, cap, &n)) {
		rc = -1;
		goto done;
	}
	if (n < 3)
		goto done;
	if (finish(rg, n) || !(gcov = malloc(sizeof(double) * (size_t)d * d))) {
		rc = -1;
		goto done;
	}
	/* the power-law coordinates decided by the covariance the grid shows, not the
	 * Laplace one: on a ridge NLSQ calls rank-deficient (the 23 × 310 α ≈ −0.02 file) the
	 * Laplace covariance keeps them off, and in u the slices' centres bend by thousands
	 * of their widths between two nodes (IS-ESS 38 of 1 000) */
	if (grid_cov(rg, gcov)) {
		rc = -1;
		goto done;
	}
	rc = choose_coords(rg, s, u0, gcov, slopes);
done:
	rg->passes = s->passes - p0;
	free(u);
	free(gcov);
	return rc;
}

void xf_ridge_free(xf_ridge *rg)
{
	free(rg->v);
	free(rg->ell);
	free(rg->mass_lo);
	free(rg->mu);
	free(rg->cov);
	free(rg->work);
	memset(rg, 0, sizeof *rg);
}

/* u_k at lower probability p, upper q = 1 − p (each exact where small); its segment
 * (−1: below the grid, n − 1: above) into *seg */
static double invert(const xf_ridge *rg, double p, double q, int *seg)
{
	int n = rg->n;
	const double *v = rg->v, *ell = rg->ell, *c = rg->mass_lo;
	if (p < c[0]) {
		*seg = -1;
		return v[0] + (log(p * rg->lam_lo) - ell[0]) / rg->lam_lo;
	}
	if (q < 1.0 - c[n - 1]) {
		*seg = n - 1;
		return v[n - 1] - (log(q * rg->lam_hi) - ell[n - 1]) / rg->lam_hi;
	}
	int i = 0;
	while (i + 2 < n && c[i + 1] <= p)
		i++;
	*seg = i;
	double h = v[i + 1] - v[i], s = (ell[i + 1] - ell[i]) / h, tau;
	if (p <= 0.5) { /* from node i up */
		double m = p - c[i];
		tau = fabs(s * h) < 1e-9 ? m * exp(-ell[i]) : log1p(s * m * exp(-ell[i])) / s;
	} else { /* from node i + 1 down, with the upper probability */
		double m = q - (1.0 - c[i + 1]);
		tau = fabs(s * h) < 1e-9 ? m * exp(-ell[i + 1])
					 : -log1p(-s * m * exp(-ell[i + 1])) / s;
		tau = h - tau;
	}
	return v[i] + fmin(fmax(tau, 0.0), h);
}

/* log f at v in segment seg */
static double log_f(const xf_ridge *rg, int seg, double v)
{
	int n = rg->n;
	if (seg < 0)
		return rg->ell[0] - rg->lam_lo * (rg->v[0] - v);
	if (seg >= n - 1)
		return rg->ell[n - 1] - rg->lam_hi * (v - rg->v[n - 1]);
	double t = (v - rg->v[seg]) / (rg->v[seg + 1] - rg->v[seg]);
	return (1.0 - t) * rg->ell[seg] + t * rg->ell[seg + 1];
}

double xf_ridge_to_u(const xf_ridge *rg, const double *z, double *u)
{
	int d = rg->d, n1 = d - 1, k = rg->k, n = rg->n, seg;
	double p = gsl_cdf_ugaussian_P(z[0]), q = gsl_cdf_ugaussian_Q(z[0]);
	if (!(p > 0.0) || !(q > 0.0))
		return NAN;
	double v = invert(rg, p, q, &seg);
	double lf = log_f(rg, seg, v);
	/* the other coordinates' centre and covariance: linear between the nodes, the end
	 * node's beyond them */
	int i0 = seg < 0	? 0
		 : seg >= n - 1 ? n - 1
				: seg,
	    i1 = seg < 0 || seg >= n - 1 ? i0 : seg + 1;
	double t = i1 == i0 ? 0.0 : (v - rg->v[i0]) / (rg->v[i1] - rg->v[i0]);
	double *l = rg->work, *mu = rg->work + (size_t)n1 * n1;
	const double *c0 = rg->cov + (size_t)i0 * n1 * n1, *c1 = rg->cov + (size_t)i1 * n1 * n1;
	for (int a = 0; a < n1 * n1; a++)
		l[a] = XF_RIDGE_WIDEN * XF_RIDGE_WIDEN * ((1.0 - t) * c0[a] + t * c1[a]);
	for (int j = 0; j < d; j++)
		mu[j] = (1.0 - t) * rg->mu[(size_t)i0 * d + j] + t * rg->mu[(size_t)i1 * d + j];
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n1, l, n1) != 0)
		return NAN;
	double log_det = 0.0, *w = mu + d;
	int a = 0;
	for (int j = 0; j < d; j++) {
		if (j == k) {
			w[j] = v;
			continue;
		}
		double s = mu[j];
		for (int b = 0; b <= a; b++)
			s += l[(size_t)a * n1 + b] * z[1 + b];
		w[j] = s;
		log_det += log(l[(size_t)a * n1 + a]);
		a++;
	}
	log_det += xf_plaw_to_u(&rg->pc, w, u);
	return -0.5 * z[0] * z[0] - 0.5 * log(2.0 * M_PI) - lf + log_det;
}

static int ridge_draw(void *ctx, uint64_t seed, long i0, long i1, double core, double *z, double *u,
		      double *lq, double *lp)
{
	(void)lp;
	const xf_ridge *rg = ctx;
	int d = rg->d;
	double *zero = calloc((size_t)d, sizeof(double)),
	       *eye = calloc((size_t)d * d, sizeof(double));
	double *zz = malloc(sizeof(double) * (size_t)d);
	if (!zero || !eye || !zz) {
		free(zero), free(eye), free(zz);
		return -1;
	}
	for (int j = 0; j < d; j++)
		eye[(size_t)j * d + j] = 1.0;
	for (long i = i0; i < i1; i++) {
		double *zi = z ? z + (size_t)(i - i0) * d : zz;
		double lb = xf_mix_draw(seed, (uint64_t)i, d, zero, eye, core, zi);
		lq[i - i0] = lb - xf_ridge_to_u(rg, zi, u + (size_t)(i - i0) * d);
		if (isnan(lq[i - i0]))
			lq[i - i0] = INFINITY; /* no image: a weight of 0 */
	}
	free(zero), free(eye), free(zz);
	return 0;
}

static int ridge_to_u(void *ctx, int n, const double *z, double *u, double *log_jac)
{
	const xf_ridge *rg = ctx;
	for (int i = 0; i < n; i++)
		log_jac[i] = xf_ridge_to_u(rg, z + (size_t)i * rg->d, u + (size_t)i * rg->d);
	return 0;
}

/* The marginal F refitted to the exact posterior's: the weighted points' mass between
 * the midpoints around each node against F's there, ℓ moved by the log of their ratio
 * where the points carry XF_RIDGE_FIT_ESS effective points, by the nearest such node's
 * elsewhere. The slices gave ℓ by Laplace's approximation of each slice's mass: on a
 * ridge whose width changes along it, not quite the marginal (the 23 × 1 000 ridge: axis
 * 0's drop 0.96 against 0.5); the weights measure the difference. 0, or 1 when no node
 * carries enough points (F unchanged). */
static int ridge_fit(void *ctx, const double *u, const double *w, int n_pts, double ess)
{
	(void)ess;
	xf_ridge *rg = ctx;
	int n = rg->n, d = rg->d, k = rg->k, have = 0;
	double corr[XF_RIDGE_NODES_MAX], mass[XF_RIDGE_NODES_MAX], sq[XF_RIDGE_NODES_MAX];
	for (int i = 0; i < n; i++)
		mass[i] = sq[i] = 0.0;
	for (int j = 0; j < n_pts; j++) {
		double v = u[(size_t)j * d + k];
		int i = 0;
		while (i + 1 < n && v >= 0.5 * (rg->v[i] + rg->v[i + 1]))
			i++;
		mass[i] += w[j];
		sq[i] += w[j] * w[j];
	}
	for (int i = 0; i < n; i++) {
		double lo = i > 0 ? cdf(rg, 0.5 * (rg->v[i - 1] + rg->v[i])) : 0.0;
		double hi = i + 1 < n ? cdf(rg, 0.5 * (rg->v[i] + rg->v[i + 1])) : 1.0;
		int ok = sq[i] > 0.0 && mass[i] * mass[i] / sq[i] >= XF_RIDGE_FIT_ESS && hi > lo;
		corr[i] = ok ? log(mass[i] / (hi - lo)) : NAN;
		have += ok;
	}
	if (!have)
		return 1;
	for (int i = 0; i < n; i++) {
		double c = corr[i];
		for (int r = 1; isnan(c) && r < n; r++) /* the nearest node that has one */
			if (i - r >= 0 && !isnan(corr[i - r]))
				c = corr[i - r];
			else if (i + r < n && !isnan(corr[i + r]))
				c = corr[i + r];
		rg->ell[i] += c;
	}
	set_marginal(rg);
	return 0;
}

void xf_is_prop_ridge(xf_is_prop *p, xf_ridge *rg)
{
	p->d = p->d_mix = rg->d;
	p->in_z = 1;
	p->gives_logp = 0;
	p->map = NULL;
	p->draw = ridge_draw;
	p->to_u = ridge_to_u;
	p->fit = ridge_fit;
	p->restart = NULL;
	p->ctx = rg;
}
