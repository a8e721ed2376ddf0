/* covariance.c — (JᵀJ)⁻¹ over the free parameters at the solution, as a pseudo-inverse
 * of the Jacobi-scaled matrix so that parameters spanning 1e-6…1e5 do not spoil the
 * conditioning; reports the numerical rank. The scaled eigen-decomposition is shared with
 * the ridge analysis (ridge.c). */
#include "nlsq/covariance.h"
#include "xpcsfit/error.h"

#include <lapacke.h>
#include <assert.h>
#include <math.h>
#include <stdlib.h>

#define XF_COV_RCOND 1e-12 /* eigenvalues below this fraction of the largest are dropped */

void xf_scaled_eigen_free(xf_scaled_eigen *se)
{
	free(se->idx);
	free(se->d);
	free(se->vec);
	free(se->ev);
	se->idx = NULL;
	se->d = se->vec = se->ev = NULL;
	se->m = 0;
}

int xf_scaled_eigen_of(const double *jtj, int n, const int *free_mask, xf_scaled_eigen *se)
{
	int m = 0;
	assert(n > 0);
	se->m = 0;
	se->idx = malloc(sizeof(int) * (size_t)n);
	se->vec = malloc(sizeof(double) * (size_t)n * n + 1);
	se->d = malloc(sizeof(double) * (size_t)n + 1);
	se->ev = malloc(sizeof(double) * (size_t)n + 1);
	if (!se->idx || !se->vec || !se->d || !se->ev) {
		xf_scaled_eigen_free(se);
		xf_note_no_memory(); /* callers read the failure as "no information" */
		return -1;
	}
	for (int k = 0; k < n; k++)
		if (free_mask[k])
			se->idx[m++] = k;
	se->m = m;
	if (m == 0)
		return 0;
	for (int p = 0; p < m; p++) {
		double h = jtj[se->idx[p] * n + se->idx[p]];
		se->d[p] = h > 0.0 ? 1.0 / sqrt(h) : 1.0;
	}
	for (int p = 0; p < m; p++)
		for (int q = 0; q < m; q++)
			se->vec[p * m + q] = jtj[se->idx[p] * n + se->idx[q]] * se->d[p] * se->d[q];
	if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', m, se->vec, m, se->ev) != 0) {
		xf_scaled_eigen_free(se);
		return -1;
	}
	return 0;
}

int xf_covariance(const double *jtj, int n, const int *free_mask, double scale_factor, double *cov,
		  int *rank, double *weak_dir)
{
	xf_scaled_eigen se;
	for (int k = 0; k < n * n; k++)
		cov[k] = NAN;
	for (int k = 0; weak_dir && k < n; k++)
		weak_dir[k] = 0.0;
	*rank = 0;
	if (xf_scaled_eigen_of(jtj, n, free_mask, &se))
		return -1;
	int m = se.m;
	const int *idx = se.idx;
	const double *a = se.vec, *d = se.d, *ev = se.ev;
	if (m == 0) {
		xf_scaled_eigen_free(&se);
		return 0;
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
	xf_scaled_eigen_free(&se);
	return 0;
}
