/* quantile.c — per-angle contrast/offset starting estimates from the data (nlsq.md):
 * offset = 10th percentile of c2 at long lags, ceiling = 90th percentile at short lags.
 * Percentiles interpolate linearly between order statistics (NumPy's default). */
#include <math.h>
#include <stdlib.h>

#include "nlsq/problem.h"

#define XF_QUANTILE_MIN_POINTS 100  /* fewer: use the middle of the bounds */
#define XF_QUANTILE_MIN_REGION 10   /* a smaller region uses the whole angle */

static void swap(double *a, double *b)
{
	double t = *a;
	*a = *b;
	*b = t;
}

/* k-th smallest of v[0..n-1] (0-based) by Hoare quickselect with a median-of-three
 * pivot; afterwards v[k] holds it and v[k+1..] are not smaller. O(n), where a sort
 * would cost n log n for every angle. */
static double select_kth(double *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (hi > lo) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] < v[lo])
			swap(&v[mid], &v[lo]);
		if (v[hi] < v[lo])
			swap(&v[hi], &v[lo]);
		if (v[hi] < v[mid])
			swap(&v[hi], &v[mid]);
		double pivot = v[mid];
		size_t i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				swap(&v[i], &v[j]);
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return v[k];
}

/* Percentile q (0..100) of v[0..n-1] (reordered), NumPy 'linear'. */
static double percentile(double *v, size_t n, double q)
{
	double h = (double)(n - 1) * q / 100.0;
	size_t lo = (size_t)floor(h);
	double v_lo = select_kth(v, n, lo);
	if (lo + 1 >= n)
		return v_lo;
	double v_hi = v[lo + 1];  /* the smallest value above position lo */
	for (size_t m = lo + 2; m < n; m++)
		if (v[m] < v_hi)
			v_hi = v[m];
	return v_lo + (h - (double)lo) * (v_hi - v_lo);
}

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
	return percentile(buf, m, q);
}

static double clip(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

void xf_quantile_scaling(const xf_dataset *ds, const xf_bound *cb, const xf_bound *ob,
			 double *contrast, double *offset)
{
	size_t n_pairs = xf_fitted_pairs((size_t)ds->n_frames);
	double *buf = n_pairs >= XF_QUANTILE_MIN_POINTS ? malloc(sizeof(double) * n_pairs) : NULL;
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
