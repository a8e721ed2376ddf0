/* stats.c — statistics of one angle's whole packed triangle (dataset.h): the range and
 * mean and Σ|c2| of the fitted points (the data checks of src/nlsq/degenerate.c) and the
 * raw quantile estimates of the per-angle starts (src/likelihood/quantile.c, nlsq.md:
 * offset = 10th percentile of c2 at long lags, ceiling = 90th at short lags; NumPy's
 * 'linear' percentile). One home for them: the serial fit computes them from the held
 * triangle, a band load from each map while it passes through memory (adr/0027). */
#include <assert.h>
#include <math.h>

#include "xpcsfit/dataset.h"
#include "util/select.h"

#define XF_QUANTILE_MIN_REGION 10 /* a smaller region uses the whole angle */

void xf_map_range(const double *c2, size_t n, double *lo, double *hi, double *mean)
{
	size_t count = 0;
	double s = 0.0;
	*lo = INFINITY;
	*hi = -INFINITY;
	for (size_t i = 1; i + 1 < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			double v = c2[xf_packed_index(n, i, j)];
			*lo = fmin(*lo, v);
			*hi = fmax(*hi, v);
			s += v;
			count++;
		}
	assert(count == xf_fitted_pairs(n));
	*mean = count ? s / (double)count : NAN;
}

void xf_map_abs_sum(const double *c2, size_t n, double *abs_sum, size_t *abs_count)
{
	double s = *abs_sum;
	size_t count = *abs_count;
	for (size_t i = 1; i + 1 < n; i++)
		for (size_t j = i + 1; j < n; j++, count++)
			s += fabs(c2[xf_packed_index(n, i, j)]);
	*abs_sum = s;
	*abs_count = count;
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

static double region_percentile(const double *c2, size_t n, int long_lags, double lag_cut, double q,
				double *buf)
{
	size_t m = 0;
	for (size_t i = 1; i + 1 < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			double lag = (double)(j - i);
			int keep = lag_cut < 0 || (long_lags ? lag >= lag_cut : lag <= lag_cut);
			if (keep)
				buf[m++] = c2[xf_packed_index(n, i, j)];
		}
	if (m < XF_QUANTILE_MIN_REGION && lag_cut >= 0)
		return region_percentile(c2, n, long_lags, -1.0, q, buf);
	return xf_percentile(buf, m, q);
}

void xf_map_quantiles(const double *c2, size_t n, double *buf, double *offset, double *ceiling)
{
	if (xf_fitted_pairs(n) < XF_QUANTILE_MIN_POINTS) {
		*offset = *ceiling = NAN;
		return;
	}
	*offset = region_percentile(c2, n, 1, lag_percentile(n, 80.0), 10.0, buf);
	*ceiling = region_percentile(c2, n, 0, lag_percentile(n, 20.0), 90.0, buf);
}
