/* select.h — order statistics in O(n) (select.c). */
#ifndef XPCSFIT_UTIL_SELECT_H
#define XPCSFIT_UTIL_SELECT_H

#include <stddef.h>

/* k-th smallest (0-based) of v[0..n-1]; reorders v. */
double xf_select_kth(double *v, size_t n, size_t k);
/* The median of v[0..n-1] (n > 0): the middle order statistic, or the mean of the two
 * middle ones — the values a sort gives, bit for bit; reorders v. */
double xf_median(double *v, size_t n);
/* Percentile q (0..100) of v[0..n-1] with linear interpolation between order
 * statistics (NumPy's default); reorders v. n must be > 0. */
double xf_percentile(double *v, size_t n, double q);

#endif
