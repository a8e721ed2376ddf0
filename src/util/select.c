/* select.c — order statistics without sorting (quickselect), and NumPy's default
 * ('linear') percentile built on it. Used for the quantile starts of the fit and for
 * the colour ranges of the plots. */
#include "util/select.h"

#include <math.h>

static void swap(double *a, double *b)
{
	double t = *a;
	*a = *b;
	*b = t;
}

/* k-th smallest of v[0..n-1] (0-based) by Hoare quickselect with a median-of-three
 * pivot; afterwards v[k] holds it and v[k+1..] are not smaller. O(n), where a sort
 * would cost n log n for every angle. */
double xf_select_kth(double *v, size_t n, size_t k)
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

double xf_median(double *v, size_t n)
{
	size_t k = (n - 1) / 2;
	double lo = xf_select_kth(v, n, k);
	if (n % 2)
		return lo;
	double hi = v[k + 1]; /* the smallest value above position k */
	for (size_t m = k + 2; m < n; m++)
		if (v[m] < hi)
			hi = v[m];
	return 0.5 * (lo + hi);
}

/* Percentile q (0..100) of v[0..n-1] (reordered), NumPy 'linear'. */
double xf_percentile(double *v, size_t n, double q)
{
	double h = (double)(n - 1) * q / 100.0;
	size_t lo = (size_t)floor(h);
	double v_lo = xf_select_kth(v, n, lo);
	if (lo + 1 >= n)
		return v_lo;
	double v_hi = v[lo + 1]; /* the smallest value above position lo */
	for (size_t m = lo + 2; m < n; m++)
		if (v[m] < v_hi)
			v_hi = v[m];
	return v_lo + (h - (double)lo) * (v_hi - v_lo);
}
