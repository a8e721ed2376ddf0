/* tmap.c — the importance route's transport-map proposal (tmap.h; adr/0078): the map, its
 * Jacobian, its points, and its fit to a round's weighted points (principal axes, a
 * quadratic bend of every other axis along the widest, split scales or a quantile spline
 * per axis). */
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_interp.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/proposal.h"
#include "cmc/isprop.h"
#include "cmc/tmap.h"

/* The weighted points a piece needs before it is fitted: the bend (3 coefficients per
 * axis) and the split scales (a centre and two half-spreads) are noise below this IS-ESS */
#define XF_TMAP_ESS_BEND  60.0
#define XF_TMAP_ESS_SPLIT 60.0
/* the two half-spreads of an axis differ at most this factor: a split from a few
 * dozen effective points can be far off, and the proposal's tails must stay wide */
#define XF_TMAP_SPLIT_MAX 5.0
/* the bend is a quadratic this many whitened sds either side, its tangent beyond */
#define XF_TMAP_BEND_REACH 3.0
/* … and an axis's knots (nine values from seven weighted quantiles: the outer, at
 * Φ(±1.5) = 6.7 % and 93.3 %, rests on ~30 effective points at this IS-ESS) */
#define XF_TMAP_ESS_KNOTS 400.0
/* … and only where the quantiles depart from the split by this many of their noise sds
 * at some knot: measured, 0.4–3.3 on axes the split fits (the CHX matrix's rounds 2 and
 * 3: 2.2 and 4.0 at most; Gaussian test targets ≤ 2.6), 6–18 on the flat tops of the α ≈
 * 0 small static replicates, 7.0 on test_cmc_tmap's exp(−u⁴) */
#define XF_TMAP_KNOT_T 3.0
/* the knots in base units: the quantiles' levels Φ(z) inside, the tails' reach outside */
const double xf_tmap_knot_z[XF_TMAP_KNOTS] = { -4.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 4.0 };
/* An axis's width along the widest (σ_j(y₀), tmap.h) is fitted from the weighted mean
 * square of its residual in XF_TMAP_SCALE_BINS bins of y₀ (edges at these weighted
 * quantiles), where the weights carry enough points (the outer bins hold 5 %: ~20
 * effective points at this IS-ESS) and only where some bin departs from the axis's whole
 * mean square by XF_TMAP_SCALE_T of its noise sds (√(2/ess) in the log): measured on the
 * 23-angle α ≈ −0.02 laminar ridge (adr/0097), the slope's axis 1.26 wide at the lower
 * end of D0's shelf and 0.92 at its middle, 5.7 noise sds; σ_j is kept within
 * 1/XF_TMAP_SCALE_MAX … XF_TMAP_SCALE_MAX of the middle's */
#define XF_TMAP_SCALE_BINS 8
static const double scale_edge[XF_TMAP_SCALE_BINS + 1] = { 0.0, 0.05, 0.15, 0.3, 0.5,
							   0.7, 0.85, 0.95, 1.0 };
#define XF_TMAP_ESS_SCALE 400.0
#define XF_TMAP_SCALE_T	  3.0
#define XF_TMAP_SCALE_MAX 3.0
/* κ/d of the covariance shrinkage (tmap.h): measured on a 16-dimensional static posterior
 * (6 angles, individual scaling), where round 1 leaves an IS-ESS of 68 */
#define XF_TMAP_SHRINK 1.0

int xf_tmap_alloc(xf_tmap *m, int d)
{
	memset(m, 0, sizeof *m);
	m->d = d;
	size_t dd = (size_t)d * d;
	m->mu = calloc((size_t)d, sizeof(double));
	m->a = calloc(dd, sizeof(double));
	m->cov = calloc(dd, sizeof(double));
	m->quad = calloc((size_t)d * 3, sizeof(double));
	m->lr = calloc(dd, sizeof(double));
	m->hs = calloc((size_t)d * 3, sizeof(double));
	m->scaled = calloc((size_t)d, sizeof(int));
	m->centre = calloc((size_t)d, sizeof(double));
	m->s_lo = calloc((size_t)d, sizeof(double));
	m->s_hi = calloc((size_t)d, sizeof(double));
	m->zero = calloc((size_t)d, sizeof(double));
	m->eye = calloc(dd, sizeof(double));
	m->work = calloc((size_t)d * 3, sizeof(double));
	m->knotted = calloc((size_t)d, sizeof(int));
	m->knot_v = calloc((size_t)d * XF_TMAP_KNOTS, sizeof(double));
	m->spline = calloc((size_t)d, sizeof(gsl_interp *));
	if (!m->mu || !m->a || !m->cov || !m->quad || !m->lr || !m->hs || !m->scaled ||
	    !m->centre || !m->s_lo || !m->s_hi || !m->zero || !m->eye || !m->work || !m->knotted ||
	    !m->knot_v || !m->spline) {
		xf_tmap_free(m);
		return -1;
	}
	for (int k = 0; k < d; k++)
		m->eye[(size_t)k * d + k] = 1.0;
	return 0;
}

void xf_tmap_free(xf_tmap *m)
{
	free(m->mu);
	free(m->a);
	free(m->cov);
	free(m->quad);
	free(m->lr);
	free(m->hs);
	free(m->scaled);
	free(m->centre);
	free(m->s_lo);
	free(m->s_hi);
	free(m->zero);
	free(m->eye);
	free(m->work);
	for (int j = 0; m->spline && j < m->d; j++)
		if (m->spline[j])
			gsl_interp_free(m->spline[j]);
	free(m->spline);
	free(m->knotted);
	free(m->knot_v);
	memset(m, 0, sizeof *m);
}

void xf_tmap_linear(xf_tmap *m, const double *mean, const double *chol)
{
	int d = m->d;
	m->kind = XF_TMAP_LINEAR;
	memcpy(m->mu, mean, sizeof(double) * (size_t)d);
	memcpy(m->a, chol, sizeof(double) * (size_t)d * d);
	m->log_det = 0.0;
	for (int k = 0; k < d; k++)
		m->log_det += log(chol[(size_t)k * d + k]);
	for (int k = 0; k < d; k++)
		for (int l = 0; l < d; l++) {
			double s = 0.0;
			for (int j = 0; j <= (k < l ? k : l); j++)
				s += chol[(size_t)k * d + j] * chol[(size_t)l * d + j];
			m->cov[(size_t)k * d + l] = s;
		}
}

/* The bend's square term: y² within XF_TMAP_BEND_REACH whitened sds of the centre, its
 * tangent beyond (C¹). The quadratic is fitted where the points are; carried out to a
 * tail it runs away from the ridge it was fitted to (small static replicate 15: the ridge
 * in the power-law coordinates runs straight out to D0 ~ 80 000, the quadratic bend put
 * α's and D_offset's centres 120 log units below it at 8 base sds, adr/0085). */
static double bend_sq(double y)
{
	double a = fabs(y), r = XF_TMAP_BEND_REACH;
	return a <= r ? y * y : r * r + 2.0 * r * (a - r);
}

/* y₀ held within XF_TMAP_BEND_REACH */
static double in_reach(double y0)
{
	double r = XF_TMAP_BEND_REACH;
	return y0 < -r ? -r : y0 > r ? r : y0;
}

/* log σ_j(y₀) of a scaled axis: the quadratic within XF_TMAP_BEND_REACH, constant beyond
 * (a width that kept growing into a tail would be a guess), within ±log XF_TMAP_SCALE_MAX */
static double log_scale(const xf_tmap *m, int j, double y0)
{
	const double *h = m->hs + (size_t)j * 3;
	double t = in_reach(y0), l = h[0] + h[1] * t + h[2] * t * t;
	double cap = log(XF_TMAP_SCALE_MAX);
	return l < -cap ? -cap : l > cap ? cap : l;
}

/* The skew of one axis, smooth: v = c + a·z + b·(√(1 + z²) − 1) with a = (s₊ + s₋)/2,
 * b = (s₊ − s₋)/2: slope s₋ far below the centre, s₊ far above, a at z = 0, always
 * positive (|b| < a), so v is monotone with a continuous density. (A piecewise-linear
 * split, slope s₋ or s₊ on each side of z = 0, gives the proposal a jump at the centre
 * that the axis check reads as a misfit: measured on a split-normal target, k̂ −0.5 but
 * axis deviation 0.44.) Adds log dv/dz to *lj. */
static double split(const xf_tmap *m, int j, double z, double *lj)
{
	double a = 0.5 * (m->s_hi[j] + m->s_lo[j]), b = 0.5 * (m->s_hi[j] - m->s_lo[j]);
	double r = sqrt(1.0 + z * z);
	*lj += log(a + b * z / r);
	return m->centre[j] + a * z + b * (r - 1.0);
}

/* A knotted axis: Steffen's monotone cubic through the knots, continued linearly beyond
 * the outer ones by the split's scale on that side (or the spline's end slope where that
 * is steeper: the tails stay at least as wide as the split's). Adds log dv/dz to *lj. */
static double knotted(const xf_tmap *m, int j, double z, double *lj)
{
	const double *kz = xf_tmap_knot_z, *kv = m->knot_v + (size_t)j * XF_TMAP_KNOTS;
	int last = XF_TMAP_KNOTS - 1;
	if (z < kz[0] || z > kz[last]) {
		int k = z < kz[0] ? 0 : last;
		double s = gsl_interp_eval_deriv(m->spline[j], kz, kv, kz[k], NULL);
		s = fmax(s, k ? m->s_hi[j] : m->s_lo[j]);
		*lj += log(s);
		return kv[k] + s * (z - kz[k]);
	}
	*lj += log(gsl_interp_eval_deriv(m->spline[j], kz, kv, z, NULL));
	return gsl_interp_eval(m->spline[j], kz, kv, z, NULL);
}

double xf_tmap_to_u(const xf_tmap *m, const double *z, double *u)
{
	int d = m->d;
	if (m->kind == XF_TMAP_LINEAR) {
		for (int k = 0; k < d; k++) {
			double s = m->mu[k];
			for (int l = 0; l <= k; l++)
				s += m->a[(size_t)k * d + l] * z[l];
			u[k] = s;
		}
		return m->log_det;
	}
	double lj = m->log_det, *v = m->work, *y = m->work + d;
	for (int j = 0; j < d; j++)
		v[j] = m->knotted[j] ? knotted(m, j, z[j], &lj) : split(m, j, z[j], &lj);
	/* y₀ = v₀; y_j = bend(y₀) + (L_r·v)_j; then u = μ + A·y */
	y[0] = v[0];
	for (int j = 1; j < d; j++) {
		const double *q = m->quad + (size_t)j * 3;
		double r = 0.0;
		for (int l = 1; l <= j; l++)
			r += m->lr[(size_t)j * d + l] * v[l];
		if (m->scaled[j]) {
			double ls = log_scale(m, j, y[0]);
			lj += ls;
			r *= exp(ls);
		}
		y[j] = q[0] + q[1] * y[0] + q[2] * bend_sq(y[0]) + r;
	}
	for (int k = 0; k < d; k++) {
		double s = m->mu[k];
		for (int l = 0; l < d; l++)
			s += m->a[(size_t)k * d + l] * y[l];
		u[k] = s;
	}
	return lj;
}

double xf_tmap_draw(const xf_tmap *m, uint64_t seed, uint64_t i, double core, double *z, double *u)
{
	int d = m->d;
	if (m->kind == XF_TMAP_LINEAR) {
		double lq = xf_mix_draw(seed, i, d, m->mu, m->a, core, u);
		if (z) /* L·z = u − μ */
			for (int k = 0; k < d; k++) {
				double s = u[k] - m->mu[k];
				for (int l = 0; l < k; l++)
					s -= m->a[(size_t)k * d + l] * z[l];
				z[k] = s / m->a[(size_t)k * d + k];
			}
		return lq;
	}
	double *zz = z ? z : m->work + 2 * d;
	double lb = xf_mix_draw(seed, i, d, m->zero, m->eye, core, zz);
	return lb - xf_tmap_to_u(m, zz, u);
}

/* Weighted median of v[n] (w: Σ = 1): the smallest v whose cumulative weight reaches ½;
 * ties in v ordered by index, so the result is a pure function of the inputs. */
typedef struct wv {
	double v, w;
	int i;
} wv;

static int wv_cmp(const void *a, const void *b)
{
	const wv *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return x->i - y->i;
}

/* centre (weighted median) and the two half-spreads √E[(v − c)² | side] of one axis,
 * the ratio kept within XF_TMAP_SPLIT_MAX */
static void fit_split(wv *buf, int n, double *centre, double *s_lo, double *s_hi)
{
	qsort(buf, (size_t)n, sizeof *buf, wv_cmp);
	double cum = 0.0, c = buf[n - 1].v;
	for (int i = 0; i < n; i++) {
		cum += buf[i].w;
		if (cum >= 0.5) {
			c = buf[i].v;
			break;
		}
	}
	double wl = 0.0, sl = 0.0, wh = 0.0, sh = 0.0;
	for (int i = 0; i < n; i++) {
		double e = buf[i].v - c;
		if (e < 0.0) {
			wl += buf[i].w;
			sl += buf[i].w * e * e;
		} else {
			wh += buf[i].w;
			sh += buf[i].w * e * e;
		}
	}
	double lo = wl > 0.0 ? sqrt(sl / wl) : 1.0, hi = wh > 0.0 ? sqrt(sh / wh) : 1.0;
	if (!(lo > 0.0) || !(hi > 0.0) || !isfinite(lo) || !isfinite(hi)) {
		*centre = 0.0;
		*s_lo = *s_hi = 1.0;
		return;
	}
	if (hi > XF_TMAP_SPLIT_MAX * lo)
		hi = XF_TMAP_SPLIT_MAX * lo;
	if (lo > XF_TMAP_SPLIT_MAX * hi)
		lo = XF_TMAP_SPLIT_MAX * hi;
	*centre = c;
	*s_lo = lo;
	*s_hi = hi;
}

/* The knots of one axis from its points sorted by fit_split (buf): the weighted quantiles
 * at Φ(z_k) inside, the split's scales from the outer quantiles to z = ±4, kept strictly
 * increasing (xf_tmap_set_knots' return); 0 (the split stays) where the split already
 * follows the quantiles. */
static int fit_knots(xf_tmap *m, int j, const wv *buf, int n, double ess)
{
	double *kv = m->knot_v + (size_t)j * XF_TMAP_KNOTS;
	const double *kz = xf_tmap_knot_z;
	int last = XF_TMAP_KNOTS - 1, i = 0;
	double cum = 0.0;
	for (int k = 1; k < last; k++) { /* levels rise with k: one pass over the points */
		double p = gsl_cdf_ugaussian_P(kz[k]);
		while (i < n - 1 && cum + buf[i].w < p)
			cum += buf[i++].w;
		kv[k] = buf[i].v;
	}
	kv[0] = kv[1] - (kz[1] - kz[0]) * m->s_lo[j];
	kv[last] = kv[last - 1] + (kz[last] - kz[last - 1]) * m->s_hi[j];
	/* the split's own values at the inner knots, against the quantiles' noise there
	 * (√(p(1 − p)/ess)/φ(z) sds): where no knot departs by XF_TMAP_KNOT_T of it, the
	 * axis keeps the split, a shape it already describes */
	double a = 0.5 * (m->s_hi[j] + m->s_lo[j]), b = 0.5 * (m->s_hi[j] - m->s_lo[j]), dev = 0.0;
	for (int k = 1; k < last; k++) {
		double sv = m->centre[j] + a * kz[k] + b * (sqrt(1.0 + kz[k] * kz[k]) - 1.0);
		double p = gsl_cdf_ugaussian_P(kz[k]);
		double noise =
			sqrt(p * (1.0 - p) / ess) / (exp(-0.5 * kz[k] * kz[k]) / sqrt(2.0 * M_PI));
		dev = fmax(dev, fabs(kv[k] - sv) / a / noise);
	}
	if (!(dev >= XF_TMAP_KNOT_T))
		return 0;
	double gap = 1e-3 * (kv[last] - kv[0]);
	for (int k = 1; k <= last; k++) /* ties (a point of large weight) stay monotone */
		if (kv[k] < kv[k - 1] + gap)
			kv[k] = kv[k - 1] + gap;
	return xf_tmap_set_knots(m, j, kv);
}

int xf_tmap_set_knots(xf_tmap *m, int j, const double *v)
{
	double *kv = m->knot_v + (size_t)j * XF_TMAP_KNOTS;
	m->knotted[j] = 0;
	for (int k = 0; k < XF_TMAP_KNOTS; k++)
		if (!isfinite(v[k]) || (k && !(v[k] > v[k - 1])))
			return 0;
	if (kv != v)
		memcpy(kv, v, sizeof(double) * XF_TMAP_KNOTS);
	if (!m->spline[j] && !(m->spline[j] = gsl_interp_alloc(gsl_interp_steffen, XF_TMAP_KNOTS)))
		return -1;
	m->knotted[j] = gsl_interp_init(m->spline[j], xf_tmap_knot_z, kv, XF_TMAP_KNOTS) == 0;
	return m->knotted[j];
}

/* y_j ≈ a + b·y_k + c·y_k² by weighted least squares (3 × 3 normal equations); 0, or −1
 * when singular (the bend is then left out) */
static int fit_bend(const double *y, const double *w, int n, int d, int k, int j, double *q)
{
	double g[9] = { 0 }, r[3] = { 0 };
	for (int i = 0; i < n; i++) {
		double yk = y[(size_t)i * d + k], f[3] = { 1.0, yk, bend_sq(yk) };
		for (int a = 0; a < 3; a++) {
			r[a] += w[i] * f[a] * y[(size_t)i * d + j];
			for (int b = 0; b < 3; b++)
				g[a * 3 + b] += w[i] * f[a] * f[b];
		}
	}
	if (LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', 3, 1, g, 3, r, 1) != 0)
		return -1;
	memcpy(q, r, sizeof r);
	return 0;
}

/* The axis the others bend along: the one whose quadratic explains most of the other
 * axes' variance (each is 1 in whitened units). On a curved ridge that is usually the
 * widest, but not when several axes are about as wide (a well-identified parameter
 * beside the ridge): the widest is then an arbitrary mix of them. */
static int bend_source(const double *y, const double *w, int n, int d)
{
	int best = 0;
	double best_s = -INFINITY;
	for (int k = 0; k < d; k++) {
		double s = 0.0, q[3];
		for (int j = 0; j < d; j++) {
			if (j == k || fit_bend(y, w, n, d, k, j, q))
				continue;
			double rv = 0.0;
			for (int i = 0; i < n; i++) {
				double yk = y[(size_t)i * d + k];
				double e = y[(size_t)i * d + j] -
					   (q[0] + q[1] * yk + q[2] * bend_sq(yk));
				rv += w[i] * e * e;
			}
			s += 1.0 - rv;
		}
		if (s > best_s) {
			best = k;
			best_s = s;
		}
	}
	return best;
}

/* Axis j's width along y₀ (tmap.h, XF_TMAP_SCALE_*): its residuals' weighted mean
 * square in bins of y₀ (sorted: buf, by y₀ with the points' weights), log of it fitted by
 * a quadratic in the bins' mean t (y₀ within XF_TMAP_BEND_REACH) weighted by their ESS,
 * where some bin departs from the whole by XF_TMAP_SCALE_T noise sds; centred so that
 * the weighted mean of σ_j² is 1 (L_r keeps the axis's overall width). The residuals
 * (y's column j) are then divided by σ_j(y₀). */
static void fit_scale(xf_tmap *m, int j, double *y, const wv *buf, int n, int d)
{
	double t[XF_TMAP_SCALE_BINS], lv[XF_TMAP_SCALE_BINS], eb[XF_TMAP_SCALE_BINS];
	double all = 0.0, dev = 0.0;
	for (int i = 0; i < n; i++) {
		double e = y[(size_t)buf[i].i * d + j];
		all += buf[i].w * e * e;
	}
	int i = 0;
	double cum = 0.0;
	for (int b = 0; b < XF_TMAP_SCALE_BINS; b++) {
		double sw = 0.0, sw2 = 0.0, st = 0.0, sv = 0.0;
		while (i < n &&
		       (cum + buf[i].w <= scale_edge[b + 1] || b == XF_TMAP_SCALE_BINS - 1)) {
			double wi = buf[i].w, y0 = buf[i].v, e = y[(size_t)buf[i].i * d + j];
			sw += wi;
			sw2 += wi * wi;
			st += wi * in_reach(y0);
			sv += wi * e * e;
			cum += wi;
			i++;
		}
		if (!(sw > 0.0) || !(sv > 0.0) || !(all > 0.0))
			return;
		t[b] = st / sw;
		lv[b] = log(sv / sw);
		eb[b] = sw * sw / sw2;
		dev = fmax(dev, fabs(lv[b] - log(all)) / sqrt(2.0 / eb[b]));
	}
	if (!(dev >= XF_TMAP_SCALE_T))
		return;
	double g[9] = { 0 }, rhs[3] = { 0 };
	for (int b = 0; b < XF_TMAP_SCALE_BINS; b++) {
		double f[3] = { 1.0, t[b], t[b] * t[b] }, wb = eb[b] / 2.0;
		for (int a = 0; a < 3; a++) {
			rhs[a] += wb * f[a] * lv[b];
			for (int c = 0; c < 3; c++)
				g[a * 3 + c] += wb * f[a] * f[c];
		}
	}
	if (LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', 3, 1, g, 3, rhs, 1) != 0)
		return;
	double *h = m->hs + (size_t)j * 3;
	h[0] = 0.0;
	h[1] = 0.5 * rhs[1];
	h[2] = 0.5 * rhs[2];
	m->scaled[j] = 1;
	double s2 = 0.0; /* centred: Σ w·σ_j² = 1 */
	for (int k = 0; k < n; k++)
		s2 += buf[k].w * exp(2.0 * log_scale(m, j, buf[k].v));
	h[0] = -0.5 * log(s2);
	for (int k = 0; k < n; k++)
		y[(size_t)buf[k].i * d + j] /= exp(log_scale(m, j, buf[k].v));
}

/* exchange columns a and b of the row-major n × d array x */
static void swap_columns(double *x, int n, int d, int a, int b)
{
	for (int i = 0; i < n; i++) {
		double t = x[(size_t)i * d + a];
		x[(size_t)i * d + a] = x[(size_t)i * d + b];
		x[(size_t)i * d + b] = t;
	}
}

/* mean and covariance of the weighted points into m->mu and cov; A = V·Λ^{1/2} (widest
 * axis first) into m->a, log|det A| returned through *log_det; −1 when not positive
 * definite */
static int principal_axes(xf_tmap *m, const double *u, const double *w, int n, double ess,
			  double *cov, double *log_det)
{
	int d = m->d;
	double *ev = m->work, kappa = XF_TMAP_SHRINK * d;
	memset(m->mu, 0, sizeof(double) * (size_t)d);
	memset(cov, 0, sizeof(double) * (size_t)d * d);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < d; k++)
			m->mu[k] += w[i] * u[(size_t)i * d + k];
	for (int i = 0; i < n; i++)
		for (int k = 0; k < d; k++)
			for (int l = 0; l < d; l++)
				cov[(size_t)k * d + l] += w[i] * (u[(size_t)i * d + k] - m->mu[k]) *
							  (u[(size_t)i * d + l] - m->mu[l]);
	for (size_t k = 0; k < (size_t)d * d; k++) /* shrunk towards the map's own */
		cov[k] = (ess * cov[k] + kappa * m->cov[k]) / (ess + kappa);
	memcpy(m->cov, cov, sizeof(double) * (size_t)d * d);
	if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'L', d, cov, d, ev) != 0 || !(ev[0] > 0.0))
		return -1;
	*log_det = 0.0;
	for (int j = 0; j < d; j++) { /* column j of A: the (d − 1 − j)-th eigenvector */
		int e = d - 1 - j;
		double s = sqrt(ev[e]);
		*log_det += log(s);
		for (int k = 0; k < d; k++)
			m->a[(size_t)k * d + j] = cov[(size_t)k * d + e] * s;
	}
	return 0;
}

int xf_tmap_fit(xf_tmap *m, const double *u, const double *w, int n, double ess)
{
	int d = m->d, rc = -1;
	double *cov = malloc(sizeof(double) * (size_t)d * d);
	double *y = malloc(sizeof(double) * (size_t)n * d);
	wv *buf = malloc(sizeof(wv) * (size_t)n);
	double *mu_old = malloc(sizeof(double) * (size_t)d),
	       *a_old = malloc(sizeof(double) * (size_t)d * d),
	       *cov_old = malloc(sizeof(double) * (size_t)d * d);
	if (!cov || !y || !buf || !mu_old || !a_old || !cov_old)
		goto done;
	memcpy(mu_old, m->mu, sizeof(double) * (size_t)d);
	memcpy(a_old, m->a, sizeof(double) * (size_t)d * d);
	double log_det_a;
	memcpy(cov_old, m->cov, sizeof(double) * (size_t)d * d);
	if (principal_axes(m, u, w, n, ess, cov, &log_det_a)) {
		memcpy(m->mu, mu_old, sizeof(double) * (size_t)d); /* unchanged */
		memcpy(m->a, a_old, sizeof(double) * (size_t)d * d);
		memcpy(m->cov, cov_old, sizeof(double) * (size_t)d * d);
		rc = 1;
		goto done;
	}
	/* whitened principal coordinates y = Λ^{-1/2}·Vᵀ·(u − μ): A's columns are
	 * orthogonal, so row j of A⁻¹ is column j of A over its squared norm */
	for (int j = 0; j < d; j++) {
		double nn = 0.0;
		for (int k = 0; k < d; k++)
			nn += m->a[(size_t)k * d + j] * m->a[(size_t)k * d + j];
		for (int i = 0; i < n; i++) {
			double s = 0.0;
			for (int k = 0; k < d; k++)
				s += m->a[(size_t)k * d + j] * (u[(size_t)i * d + k] - m->mu[k]);
			y[(size_t)i * d + j] = s / nn;
		}
	}
	m->kind = XF_TMAP_CURVED;
	memset(m->quad, 0, sizeof(double) * (size_t)d * 3);
	if (ess >= XF_TMAP_ESS_BEND) {
		int k = bend_source(y, w, n, d); /* first: u = μ + A·y is unchanged */
		swap_columns(m->a, d, d, 0, k);
		swap_columns(y, n, d, 0, k);
	}
	for (int j = 1; j < d && ess >= XF_TMAP_ESS_BEND; j++)
		if (fit_bend(y, w, n, d, 0, j, m->quad + (size_t)j * 3))
			memset(m->quad + (size_t)j * 3, 0, sizeof(double) * 3);
	/* residuals of the bend in y's columns 1.., their covariance and lower factor */
	for (int i = 0; i < n; i++)
		for (int j = 1; j < d; j++) {
			const double *q = m->quad + (size_t)j * 3;
			double y0 = y[(size_t)i * d];
			y[(size_t)i * d + j] -= q[0] + q[1] * y0 + q[2] * bend_sq(y0);
		}
	memset(m->hs, 0, sizeof(double) * (size_t)d * 3);
	memset(m->scaled, 0, sizeof(int) * (size_t)d);
	if (ess >= XF_TMAP_ESS_SCALE && d > 1) {
		for (int i = 0; i < n; i++)
			buf[i] = (wv){ y[(size_t)i * d], w[i], i };
		qsort(buf, (size_t)n, sizeof *buf, wv_cmp);
		for (int j = 1; j < d; j++)
			fit_scale(m, j, y, buf, n, d);
	}
	memset(m->lr, 0, sizeof(double) * (size_t)d * d);
	m->lr[0] = 1.0;
	for (int j = 1; j < d; j++)
		for (int l = 1; l <= j; l++) {
			double s = 0.0;
			for (int i = 0; i < n; i++)
				s += w[i] * y[(size_t)i * d + j] * y[(size_t)i * d + l];
			m->lr[(size_t)j * d + l] = s;
		}
	double log_det_r = 0.0;
	if (d > 1) {
		if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', d - 1, m->lr + d + 1, d) != 0) {
			memset(m->lr, 0, sizeof(double) * (size_t)d * d);
			for (int j = 0; j < d; j++)
				m->lr[(size_t)j * d + j] = 1.0;
		}
		for (int j = 1; j < d; j++) {
			for (int l = j + 1; l < d; l++)
				m->lr[(size_t)j * d + l] = 0.0;
			log_det_r += log(m->lr[(size_t)j * d + j]);
		}
	}
	/* v = (y₀, L_r⁻¹·residuals): the coordinates the split scales act on */
	for (int i = 0; i < n; i++)
		for (int j = 1; j < d; j++) {
			double s = y[(size_t)i * d + j];
			for (int l = 1; l < j; l++)
				s -= m->lr[(size_t)j * d + l] * y[(size_t)i * d + l];
			y[(size_t)i * d + j] = s / m->lr[(size_t)j * d + j];
		}
	for (int j = 0; j < d; j++) {
		m->centre[j] = 0.0;
		m->s_lo[j] = m->s_hi[j] = 1.0;
		m->knotted[j] = 0;
		if (ess < XF_TMAP_ESS_SPLIT)
			continue;
		for (int i = 0; i < n; i++)
			buf[i] = (wv){ y[(size_t)i * d + j], w[i], i };
		fit_split(buf, n, m->centre + j, m->s_lo + j, m->s_hi + j);
		if (ess >= XF_TMAP_ESS_KNOTS && fit_knots(m, j, buf, n, ess) < 0)
			goto done;
	}
	m->log_det = log_det_a + log_det_r;
	rc = 0;
done:
	free(cov);
	free(y);
	free(buf);
	free(mu_old);
	free(a_old);
	free(cov_old);
	return rc;
}

/* The map alone as a proposal of the check (isprop.h). */
static int tmap_prop_draw(void *ctx, uint64_t seed, long i0, long i1, double core, double *z,
			  double *u, double *lq, double *lp)
{
	(void)lp; /* the check evaluates the target */
	const xf_tmap *m = ctx;
	for (long i = i0; i < i1; i++)
		lq[i - i0] = xf_tmap_draw(m, seed, (uint64_t)i, core,
					  z ? z + (size_t)(i - i0) * m->d : NULL,
					  u + (size_t)(i - i0) * m->d);
	return 0;
}

static int tmap_prop_to_u(void *ctx, int n, const double *z, double *u, double *log_jac)
{
	const xf_tmap *m = ctx;
	for (int i = 0; i < n; i++)
		log_jac[i] = xf_tmap_to_u(m, z + (size_t)i * m->d, u + (size_t)i * m->d);
	return 0;
}

static int tmap_prop_fit(void *ctx, const double *u, const double *w, int n, double ess)
{
	return xf_tmap_fit(ctx, u, w, n, ess);
}

void xf_is_prop_tmap(xf_is_prop *p, xf_tmap *map)
{
	p->d = p->d_mix = map->d;
	p->in_z = 0;
	p->gives_logp = 0;
	p->map = map;
	p->draw = tmap_prop_draw;
	p->to_u = tmap_prop_to_u;
	p->fit = tmap_prop_fit;
	p->restart = NULL;
	p->ctx = map;
}
