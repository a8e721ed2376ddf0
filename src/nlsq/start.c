/* start.c — a start estimated from the data when the config gives none (docs/nlsq.md
 * "The start estimate").
 *
 * y = (c2 − offset)/contrast with the quantile estimates is g1_D²·F(Φ)², and at small lags
 * g1_D² ≈ exp(−q²·dt·D(t)·τ) (τ in frames). Along log-spaced bins of t1 the mean of y at
 * each lag gives a local decay rate and so D(t) on the angles nearest perpendicular to the
 * flow (where Φ vanishes); a straight line through log D against log t gives D0 and α.
 * For laminar flow the extra decay of the other angles, y_φ/y_⊥ = F(Φ)², inverted on the
 * first lobe of the sinc, gives the shear integral and so γ̇(t), and γ̇0 and β the same
 * way. Offsets start at 0, φ0 at its start. Everything is clipped into the bounds. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/kernel.h"
#include "nlsq/nlsq_internal.h"
#include "xpcsfit/dist.h"

#define XF_EST_BINS	 8    /* log-spaced t1 bins */
#define XF_EST_Y_LOW	 0.2  /* lags are used while the mean normalised c2 stays above */
#define XF_EST_Y_SHEAR	 0.05 /* smallest shear-angle mean used */
#define XF_EST_PERP_BAND 0.1  /* |cos| within this of the smallest: reference angles */
#define XF_EST_SHEAR_COS 0.3  /* |cos| from this on: angles that see the shear */

/* Mean normalised c2 per (angle, t1 bin, lag): sums and counts over every fitted pair. */
typedef struct lag_means {
	int n_phi, n_bins, n;
	int bin_lo[XF_EST_BINS + 1]; /* first frame of each bin, then the end */
	double *sum;		     /* [n_phi][n_bins][n] */
	double *count;		     /* [n_bins][n] (the same for every angle) */
} lag_means;

static int bin_of(const lag_means *lm, int i)
{
	int b = 0;
	while (b + 1 < lm->n_bins && i >= lm->bin_lo[b + 1])
		b++;
	return b;
}

typedef struct sum_ctx {
	lag_means *lm;
	const xf_problem *pr;
} sum_ctx;

/* Add the normalised c2 of the pairs the dataset holds (all, or a band's, row by row) to
 * the sums. */
static void add_sums(void *ctx, void *state)
{
	const sum_ctx *c = ctx;
	const lag_means *lm = c->lm;
	const xf_problem *pr = c->pr;
	const xf_dataset *ds = pr->ds;
	int n = ds->n_frames;
	size_t cells = (size_t)lm->n_bins * lm->n;
	int i0 = 1, j0 = 2;
	size_t todo = xf_fitted_pairs((size_t)n);
	if (ds->band) {
		i0 = ds->pair_i0;
		j0 = ds->pair_j0;
		todo = ds->pair_count;
	}
	/* the baseline is shared by every angle, and the angle that decays furthest (along
	 * the flow) shows it best: a window too short to decay the others would otherwise
	 * stretch their partial decay over [0, 1] */
	double off = pr->quantile_offset[0];
	for (int a = 1; a < pr->n_phi; a++)
		off = fmin(off, pr->quantile_offset[a]);
	for (int a = 0; a < pr->n_phi; a++) {
		double con = pr->quantile_contrast[a] + pr->quantile_offset[a] - off;
		double *s = (double *)state + (size_t)a * cells;
		if (!(con > 0.0))
			continue;
		size_t left = todo;
		for (int i = i0; i < n - 1 && left; i++) {
			double *row = s + (size_t)bin_of(lm, i) * n;
			int jb = i == i0 ? j0 : i + 1;
			size_t idx = xf_packed_index((size_t)n, (size_t)i, (size_t)jb);
			const double *c2 = ds->c2[a] + (idx - ds->c2_base);
			for (int j = jb; j < n && left; j++, left--)
				row[j - i] += (c2[j - jb] - off) / con;
		}
	}
}

static int lag_means_fill(lag_means *lm, const xf_problem *pr)
{
	const xf_dataset *ds = pr->ds;
	int n = ds->n_frames;
	memset(lm, 0, sizeof *lm);
	lm->n_phi = pr->n_phi;
	lm->n = n;
	/* bins log-spaced in the frame index 1..n−2, without empty ones */
	int nb = 0;
	lm->bin_lo[0] = 1;
	for (int b = 1; b <= XF_EST_BINS; b++) {
		int e = (int)lround(exp(log((double)(n - 1)) * b / XF_EST_BINS));
		if (e > lm->bin_lo[nb] && e <= n - 1)
			lm->bin_lo[++nb] = e;
	}
	if (lm->bin_lo[nb] < n - 1)
		lm->bin_lo[++nb] = n - 1;
	lm->n_bins = nb;
	size_t cells = (size_t)nb * (size_t)n;
	lm->sum = calloc((size_t)pr->n_phi * cells, sizeof(double));
	lm->count = calloc(cells, sizeof(double));
	if (!lm->sum || !lm->count)
		return -1;
	for (int i = 1; i < n - 1; i++) {
		int b = bin_of(lm, i);
		for (int j = i + 1; j < n; j++)
			lm->count[(size_t)b * n + (j - i)] += 1.0;
	}
	/* a band (an MPI rank, adr/0027) adds its pairs to the sums the rank before left:
	 * every cell gets its terms in the order of one process */
	sum_ctx c = { lm, pr };
	if (!ds->band) {
		add_sums(&c, lm->sum);
		return 0;
	}
	return xf_dist_chain(lm->sum, sizeof(double) * (size_t)pr->n_phi * cells, add_sums, &c);
}

static void lag_means_free(lag_means *lm)
{
	free(lm->sum);
	free(lm->count);
}

/* Mean of the normalised c2 over a group of angles (weights w[a], 0 = left out). */
static double group_mean(const lag_means *lm, const double *w, int b, int lag)
{
	double c = lm->count[(size_t)b * lm->n + lag];
	if (c <= 0.0)
		return NAN;
	double s = 0.0, ws = 0.0;
	size_t cells = (size_t)lm->n_bins * lm->n;
	for (int a = 0; a < lm->n_phi; a++)
		if (w[a] > 0.0) {
			s += w[a] * lm->sum[(size_t)a * cells + (size_t)b * lm->n + lag] / c;
			ws += w[a];
		}
	return ws > 0.0 ? s / ws : NAN;
}

/* A rate from values v(τ) = exp(−R·τ)-like decays: weighted least squares of −ln v = R·τ
 * through the origin over the usable lags. *mid_lag receives the weighted mean lag. */
typedef struct rate_fit {
	double sw_tt, sw_ty, sw_t, sw;
} rate_fit;

static void rate_add(rate_fit *f, double lag, double neg_log, double weight)
{
	f->sw_tt += weight * lag * lag;
	f->sw_ty += weight * lag * neg_log;
	f->sw_t += weight * lag;
	f->sw += weight;
}

/* Straight line y = c + e·x, weighted; returns 0 when it could be fitted. */
typedef struct line_fit {
	double sw, sx, sy, sxx, sxy;
	int n;
} line_fit;

static void line_add(line_fit *f, double x, double y, double w)
{
	f->sw += w;
	f->sx += w * x;
	f->sy += w * y;
	f->sxx += w * x * x;
	f->sxy += w * x * y;
	f->n++;
}

static int line_solve(const line_fit *f, double *c, double *e)
{
	if (f->n == 0 || f->sw <= 0.0)
		return -1;
	double det = f->sw * f->sxx - f->sx * f->sx;
	if (f->n < 2 || !(det > 1e-12 * f->sw * f->sxx)) {
		*e = 0.0;
		*c = f->sy / f->sw;
		return 0;
	}
	*e = (f->sw * f->sxy - f->sx * f->sy) / det;
	*c = (f->sy - *e * f->sx) / f->sw;
	return 0;
}

/* Time (s) of a bin: its middle frame plus half the typical lag used there. */
static double bin_time(const lag_means *lm, int b, double mid_lag, double dt_s)
{
	double mid = 0.5 * (lm->bin_lo[b] + lm->bin_lo[b + 1] - 1);
	return (mid + 0.5 * mid_lag) * dt_s;
}

/* D(t) per bin from the reference angles, then log D = log D0 + α log t. */
static void estimate_diffusion(const xf_problem *pr, const lag_means *lm, const double *w_ref,
			       double *d0, double *alpha)
{
	double q2dt = pr->grid.q * pr->grid.q * pr->grid.dt_s;
	line_fit lf = { 0 };
	double fallback = NAN;
	for (int b = 0; b < lm->n_bins; b++) {
		rate_fit rf = { 0 };
		for (int lag = 1; lag < lm->n - lm->bin_lo[b]; lag++) {
			double y = group_mean(lm, w_ref, b, lag);
			if (!(y >= XF_EST_Y_LOW) || y > 1.5)
				break;
			double c = lm->count[(size_t)b * lm->n + lag];
			rate_add(&rf, lag, -log(fmin(y, 1.0)), c * y * y);
		}
		if (rf.sw_tt <= 0.0) {
			/* decayed within one frame: a lower bound on the rate */
			double y = group_mean(lm, w_ref, b, 1);
			if (isnan(fallback) && y > 0.0 && y < XF_EST_Y_LOW)
				fallback = -log(y) / q2dt;
			continue;
		}
		double rate = rf.sw_ty / rf.sw_tt;
		double mid_lag = rf.sw_t / rf.sw;
		/* a rate whose decay over the lags used stays below 1 % is noise: skip */
		if (!(rate * mid_lag > 0.01))
			continue;
		double t = bin_time(lm, b, mid_lag, pr->grid.dt_s);
		line_add(&lf, log(t), log(rate / q2dt), rf.sw);
	}
	double c, e;
	if (line_solve(&lf, &c, &e) == 0) {
		*d0 = exp(c);
		*alpha = e;
	} else if (!isnan(fallback)) {
		*d0 = fallback;
		*alpha = 0.0;
	} else {
		/* no visible decay anywhere: as slow as the bounds allow */
		*d0 = pr->lower[XF_P_D0];
		*alpha = 0.0;
	}
}

/* Φ ≥ 0 on the first lobe with F(Φ)² = r (F = sinc² for homodyne, |sinc(πΦ)| for
 * pnas2024), by bisection: F² falls monotonically from 1 to 0 there. */
static double invert_shear(double r, xf_shear_model model)
{
	double lo = 0.0, hi = model == XF_SHEAR_PNAS2024 ? 1.0 : M_PI;
	for (int it = 0; it < 60; it++) {
		double mid = 0.5 * (lo + hi), d;
		double f = xf_shear_factor(mid, model, &d);
		if (f * f > r)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

/* γ̇(t) per bin from the angles that see the shear, against the reference group. */
static void estimate_shear(const xf_problem *pr, const lag_means *lm, const double *w_ref,
			   const double *abs_cos, double *w_one, double *g0, double *beta)
{
	const double s = pr->grid.q * pr->grid.gap_A * pr->grid.dt_s / (2.0 * M_PI);
	line_fit lf = { 0 };
	for (int b = 0; b < lm->n_bins; b++) {
		rate_fit rf = { 0 };
		for (int a = 0; a < lm->n_phi; a++) {
			if (abs_cos[a] < XF_EST_SHEAR_COS)
				continue;
			for (int k = 0; k < lm->n_phi; k++)
				w_one[k] = k == a;
			for (int lag = 1; lag < lm->n - lm->bin_lo[b]; lag++) {
				double ref = group_mean(lm, w_ref, b, lag);
				double y = group_mean(lm, w_one, b, lag);
				if (!(ref >= XF_EST_Y_LOW) || !(y >= XF_EST_Y_SHEAR))
					break;
				double r = fmin(y / ref, 1.0);
				double phase = invert_shear(r, pr->grid.shear_model);
				double integral = phase / (s * abs_cos[a]); /* γ̇·τ in frames */
				double c = lm->count[(size_t)b * lm->n + lag];
				rate_add(&rf, lag, integral, c * y * y);
			}
		}
		if (rf.sw_tt <= 0.0)
			continue;
		double rate = rf.sw_ty / rf.sw_tt, mid_lag = rf.sw_t / rf.sw;
		/* a phase below 0.1 rad over the lags used is within the noise */
		if (!(rate * mid_lag * s > 0.1))
			continue;
		line_add(&lf, log(bin_time(lm, b, mid_lag, pr->grid.dt_s)), log(rate), rf.sw);
	}
	double c, e;
	if (line_solve(&lf, &c, &e) == 0) {
		*g0 = exp(c);
		*beta = e;
	} else {
		/* no visible shear decorrelation: a rate whose phase stays small over the
		 * whole window */
		*g0 = 0.1 / (s * (lm->n - 1));
		*beta = 0.0;
	}
}

static double clip(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Mean normalised c2 over every fitted point: the correlation the data show. */
static double data_mean(const lag_means *lm)
{
	double s = 0.0, c = 0.0;
	size_t cells = (size_t)lm->n_bins * lm->n;
	for (size_t k = 0; k < cells; k++) {
		for (int a = 0; a < lm->n_phi; a++)
			s += lm->sum[(size_t)a * cells + k];
		c += lm->count[k] * lm->n_phi;
	}
	return c > 0.0 ? s / c : 0.0;
}

/* A point model's own start (its record's estimator, adr/0128) from the data's g1² against
 * lag, the mean over angles and t1 bins; 0 or −1 (allocation) */
static int model_start(const xf_problem *pr, const lag_means *lm, double *theta)
{
	int n_lags = lm->n - 1;
	double *lag_s = malloc(sizeof(double) * (size_t)(n_lags > 0 ? n_lags : 1));
	double *g1sq = malloc(sizeof(double) * (size_t)(n_lags > 0 ? n_lags : 1));
	if (!lag_s || !g1sq) {
		free(lag_s);
		free(g1sq);
		return -1;
	}
	size_t cells = (size_t)lm->n_bins * lm->n;
	for (int lag = 1; lag <= n_lags; lag++) {
		double s = 0.0, c = 0.0;
		for (int b = 0; b < lm->n_bins; b++) {
			size_t k = (size_t)b * lm->n + lag;
			for (int a = 0; a < lm->n_phi; a++)
				s += lm->sum[(size_t)a * cells + k];
			c += lm->count[k] * lm->n_phi;
		}
		lag_s[lag - 1] = lag * pr->grid.dt_s;
		g1sq[lag - 1] = c > 0.0 ? s / c : NAN;
	}
	pr->model->start(&pr->grid, n_lags, lag_s, g1sq, theta);
	free(lag_s);
	free(g1sq);
	return 0;
}

int xf_nlsq_estimate_start(const xf_problem *pr, double *theta, double *mean_g1sq)
{
	lag_means lm = { 0 };
	int n_phi = pr->n_phi;
	double phi0 = pr->start[XF_P_PHI0 < pr->n_phys ? XF_P_PHI0 : 0];
	if (!pr->model->shear)
		phi0 = 0.0;
	assert(n_phi > 0);
	/* three weights per angle: |cos(φ0 − φ)|, the reference group, one angle alone */
	double *work = malloc(3 * (size_t)n_phi * sizeof *work);
	if (!work || lag_means_fill(&lm, pr)) {
		free(work);
		lag_means_free(&lm);
		return -1;
	}
	if (!xf_nlsq_model_estimated(pr)) { /* its own estimator, or the request's start */
		for (int k = 0; k < XF_N_PHYS; k++)
			theta[k] = k < pr->n_phys ? pr->start[k] : 0.0;
		int rc = pr->model->start ? model_start(pr, &lm, theta) : 0;
		*mean_g1sq = data_mean(&lm);
		lag_means_free(&lm);
		free(work);
		for (int k = 0; k < pr->n_phys;
		     k++) /* an estimate it could not make: the request's */
			theta[k] =
				clip(pr->fixed[k] || !isfinite(theta[k]) ? pr->start[k] : theta[k],
				     pr->lower[k], pr->upper[k]);
		return rc;
	}
	double *abs_cos = work, *w_ref = work + n_phi, *w_one = work + 2 * (size_t)n_phi;
	double min_cos = 2.0;
	for (int a = 0; a < n_phi; a++) {
		abs_cos[a] = pr->model->shear ? fabs(cos((phi0 - pr->ds->phi_deg[a]) * XF_DEG2RAD))
					      : 0.0;
		min_cos = fmin(min_cos, abs_cos[a]);
	}
	for (int a = 0; a < n_phi; a++)
		w_ref[a] = abs_cos[a] <= min_cos + XF_EST_PERP_BAND ? 1.0 : 0.0;
	for (int k = 0; k < XF_N_PHYS; k++)
		theta[k] = 0.0;
	estimate_diffusion(pr, &lm, w_ref, &theta[XF_P_D0], &theta[XF_P_ALPHA]);
	if (pr->model->shear) {
		estimate_shear(pr, &lm, w_ref, abs_cos, w_one, &theta[XF_P_GAMMA_DOT_T0],
			       &theta[XF_P_BETA]);
		theta[XF_P_PHI0] = phi0;
	}
	*mean_g1sq = data_mean(&lm);
	lag_means_free(&lm);
	free(work);
	for (int k = 0; k < pr->n_phys; k++)
		theta[k] = clip(pr->fixed[k] ? pr->start[k] : theta[k], pr->lower[k], pr->upper[k]);
	return 0;
}
