/* covariance.c — (JᵀJ)⁻¹ over the free parameters at the solution, as a pseudo-inverse
 * of the Jacobi-scaled matrix so that parameters spanning 1e-6…1e5 do not spoil the
 * conditioning; reports the numerical rank. */
#include "nlsq/covariance.h"
#include "xpcsfit/error.h"

#include <lapacke.h>
#include <assert.h>
#include <math.h>
#include <stdlib.h>

#define XF_COV_RCOND 1e-12 /* eigenvalues below this fraction of the largest are dropped */

int xf_covariance(const double *jtj, int n, const int *free_mask, double scale_factor, double *cov,
		  int *rank, double *weak_dir)
{
	int m = 0;
	assert(n > 0);
	for (int k = 0; k < n * n; k++)
		cov[k] = NAN;
	for (int k = 0; weak_dir && k < n; k++)
		weak_dir[k] = 0.0;
	*rank = 0;
	int *idx = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
	double *a = malloc(sizeof(double) * (size_t)n * n + 1);
	double *d = malloc(sizeof(double) * (size_t)n + 1);
	double *ev = malloc(sizeof(double) * (size_t)n + 1);
	if (!idx || !a || !d || !ev) {
		free(idx);
		free(a);
		free(d);
		free(ev);
		xf_note_no_memory(); /* callers read the NaN as "no information" */
		return -1;
	}
	for (int k = 0; k < n; k++)
		if (free_mask[k])
			idx[m++] = k;
	if (m == 0) {
		free(idx);
		free(a);
		free(d);
		free(ev);
		return 0;
	}
	for (int p = 0; p < m; p++) {
		double h = jtj[idx[p] * n + idx[p]];
		d[p] = h > 0.0 ? 1.0 / sqrt(h) : 1.0;
	}
	for (int p = 0; p < m; p++)
		for (int q = 0; q < m; q++)
			a[p * m + q] = jtj[idx[p] * n + idx[q]] * d[p] * d[q];
	int info = LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', m, a, m, ev);
	if (info != 0) {
		free(idx);
		free(a);
		free(d);
		free(ev);
		return -1;
	}
	/* eigenvalues ascend: column 0 is the least determined direction */
	for (int p = 0; weak_dir && p < m; p++)
		weak_dir[idx[p]] = a[p * m];
	double emax = ev[m - 1];
	/* pseudo-inverse: Σ_k v_k v_kᵀ / e_k over kept eigenvalues (columns of a) */
	for (int p = 0; p < m; p++)
		for (int q = 0; q < m; q++)
			cov[idx[p] * n + idx[q]] = 0.0;
	for (int e = 0; e < m; e++) {
		if (!(ev[e] > XF_COV_RCOND * emax))
			continue;
		(*rank)++;
		for (int p = 0; p < m; p++)
			for (int q = 0; q < m; q++)
				cov[idx[p] * n + idx[q]] += a[p * m + e] * a[q * m + e] / ev[e] *
							    d[p] * d[q] * scale_factor;
	}
	free(idx);
	free(a);
	free(d);
	free(ev);
	return 0;
}
