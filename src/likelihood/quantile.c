/* quantile.c — per-angle contrast/offset starting estimates from the data (nlsq.md):
 * offset = 10th percentile of c2 at long lags, ceiling = 90th percentile at short lags.
 * Percentiles interpolate linearly between order statistics (NumPy's default). */
#include <math.h>
#include <stdlib.h>

#include "xpcsfit/likelihood.h"
#include "util/select.h"

#define XF_QUANTILE_MIN_POINTS 100 /* fewer: use the middle of the bounds */
#define XF_QUANTILE_MIN_REGION 10  /* a smaller region uses the whole angle */

/* Percentile of the fitted lags without building the lag array: lag L (1..N−2) occurs
 * N−1−L times among the pairs 1 ≤ i < j ≤ N−1. */
static double lag_percentile(size_t n_frames, double q)
{
	size_t n_pairs = xf_fitted_pairs(n_frames);
	double h = (double)(n_pairs - 1) * q / 100.0;
	size_t lo = (size_t)floor(h);
	/* value of the k-th smallest lag (0-based) */
	size_t k = lo, seen = 0;
	double v_lo = 0, v_hi = 0;
	for (size_t lag = 1; lag + 1 < n_frames; lag++) {
		size_t count = n_frames - 1 - lag;
		if (k < seen + count) {
			v_lo = (double)lag;
			v_hi = (k + 1 < seen + count) ? (double)lag : (double)(lag + 1);
			break;
		}
		seen += count;
	}
	if (lo + 1 >= n_pairs)
		v_hi = v_lo;
	return v_lo + (h - (double)lo) * (v_hi - v_lo);
}

static double region_percentile(const xf_dataset *ds, int angle, int long_lags, double lag_cut,
				double q, double *buf)
{
	size_t n = (size_t)ds->n_frames, m = 0;
	for (size_t i = 1; i + 1 < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			double lag = (double)(j - i);
			int keep = lag_cut < 0 || (long_lags ? lag >= lag_cut : lag <= lag_cut);
			if (keep)
				buf[m++] = ds->c2[angle][xf_packed_index(n, i, j)];
		}
	if (m < XF_QUANTILE_MIN_REGION && lag_cut >= 0)
		return region_percentile(ds, angle, long_lags, -1.0, q, buf);
	return xf_percentile(buf, m, q);
}

static double clip(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void xf_quantile_scaling(const xf_dataset *ds, const xf_bound *cb, const xf_bound *ob,
			 double *contrast, double *offset)
{
	size_t n_pairs = xf_fitted_pairs((size_t)ds->n_frames);
	double *buf = n_pairs >= XF_QUANTILE_MIN_POINTS ? malloc(sizeof(double) * n_pairs) : NULL;
	if (!buf && n_pairs >= XF_QUANTILE_MIN_POINTS)
		xf_note_no_memory();
	double lag80 = buf ? lag_percentile((size_t)ds->n_frames, 80.0) : 0.0;
	double lag20 = buf ? lag_percentile((size_t)ds->n_frames, 20.0) : 0.0;
	for (int a = 0; a < ds->n_phi; a++) {
		if (!buf) {
			offset[a] = 0.5 * (ob->lower + ob->upper);
			contrast[a] = 0.5 * (cb->lower + cb->upper);
			continue;
		}
		double off = region_percentile(ds, a, 1, lag80, 10.0, buf);
		double ceiling = region_percentile(ds, a, 0, lag20, 90.0, buf);
		off = clip(off, ob->lower, ob->upper);
		offset[a] = off;
		contrast[a] = clip(ceiling - off, cb->lower, cb->upper);
	}
	free(buf);
}
