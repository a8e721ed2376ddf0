/* laplace.c — the initial metric where NLSQ's covariance alone is no Gaussian: the
 * Laplace approximation of the sampler's target at the start, with the priors and the
 * logit transform in (adr/0084).
 *
 * On a ridge (D0 + D_offset identified, α ≈ 0) NLSQ's covariance spreads D0 over tens of
 * thousands: in u its variance exceeds the metric's cap, and a capped variance without
 * its covariances is no covariance — the route had no proposal and NUTS no correlations
 * (small static replicates 3, 5, 12, 21 failed, R̂ up to 2.6). The target's own curvature
 * is finite there: the data's precision (the pseudo-inverse of NLSQ's covariance, zero
 * along a direction it dropped) plus each prior's and the transform's curvature in u,
 *
 *     P = C_u⁺ + share·diag(h),  h_k = (dx/du)²/σ_p² + 2f(1 − f),  f = (x − lo)/(hi − lo),
 *
 * the Gauss–Newton part of −∂²/∂u² of log N(x; μ, σ_p) + log dx/du (the term in the
 * prior's slope times d²x/du² is left out: it can make P indefinite and vanishes at the
 * prior's centre). C_u is already divided by the shard's share, and the priors are
 * tempered by the same share (target.c), so both enter at the same weight. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/cmc_internal.h"

#define XF_LAPLACE_RCOND 1e-12 /* eigenvalues of C_u's correlations kept above this × max */

/* the data's precision: the pseudo-inverse of the n × n covariance c (zero rows for
 * unknown variances), computed on its correlation matrix for conditioning. 0 or −1. */
static int data_precision(int n, const double *c, double *p)
{
	double *r = malloc(sizeof(double) * (size_t)n * n);
	double *ev = malloc(sizeof(double) * (size_t)n);
	double *s = malloc(sizeof(double) * (size_t)n);
	int rc = -1;
	if (!r || !ev || !s)
		goto done;
	for (int k = 0; k < n; k++) {
		double v = c[(size_t)k * n + k];
		s[k] = v > 0.0 && isfinite(v) ? sqrt(v) : 0.0;
	}
	for (int k = 0; k < n; k++)
		for (int l = 0; l < n; l++) {
			double v = c[(size_t)k * n + l];
			r[(size_t)k * n + l] =
				s[k] > 0.0 && s[l] > 0.0 && isfinite(v) ? v / (s[k] * s[l]) : 0.0;
		}
	if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', n, r, n, ev) != 0)
		goto done;
	double emax = ev[n - 1]; /* ascending */
	memset(p, 0, sizeof(double) * (size_t)n * n);
	for (int e = 0; e < n; e++) {
		if (!(ev[e] > XF_LAPLACE_RCOND * emax))
			continue;
		for (int k = 0; k < n; k++)
			for (int l = 0; l < n; l++)
				if (s[k] > 0.0 && s[l] > 0.0)
					p[(size_t)k * n + l] += r[(size_t)k * n + e] *
								r[(size_t)l * n + e] /
								(ev[e] * s[k] * s[l]);
	}
	rc = 0;
done:
	free(r);
	free(ev);
	free(s);
	return rc;
}

/* dx/du of parameter k at x */
static double dx_du(const xf_problem *pr, int k, double x)
{
	double w = pr->upper[k] - pr->lower[k], f = (x - pr->lower[k]) / w;
	return w * f * (1.0 - f);
}

/* the prior's and the transform's curvature in u of parameter k at x (see the top) */
static double prior_curvature(const xf_problem *pr, int k, double x)
{
	double f = (x - pr->lower[k]) / (pr->upper[k] - pr->lower[k]);
	double dxdu = dx_du(pr, k, x), sp = pr->prior_sigma[k];
	return dxdu * dxdu / (sp * sp) + 2.0 * f * (1.0 - f);
}

int xf_cmc_laplace_metric(const xf_problem *pr, const int *theta, int n_theta,
			  const double *x_start, double share, const double *jtj,
			  const double *cov_u, int ld, double *out)
{
	int n = n_theta, nf = pr->n_full, rc = -1;
	double *c = malloc(sizeof(double) * (size_t)n * n);
	double *p = malloc(sizeof(double) * (size_t)n * n);
	if (!c || !p)
		goto done;
	if (jtj) { /* JᵀJ itself: its null direction is the ridge's (see the top) */
		for (int k = 0; k < n; k++)
			for (int l = 0; l < n; l++)
				p[(size_t)k * n + l] = share *
						       jtj[(size_t)theta[k] * nf + theta[l]] *
						       dx_du(pr, theta[k], x_start[theta[k]]) *
						       dx_du(pr, theta[l], x_start[theta[l]]);
	} else {
		for (int k = 0; k < n; k++)
			for (int l = 0; l < n; l++)
				c[(size_t)k * n + l] = cov_u[(size_t)k * ld + l];
		if (data_precision(n, c, p))
			goto done;
	}
	for (int k = 0; k < n; k++)
		p[(size_t)k * n + k] += share * prior_curvature(pr, theta[k], x_start[theta[k]]);
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, p, n) != 0 ||
	    LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', n, p, n) != 0)
		goto done;
	for (int k = 0; k < n; k++)
		for (int l = 0; l < n; l++) {
			double v = k >= l ? p[(size_t)k * n + l] : p[(size_t)l * n + k];
			if (!isfinite(v))
				goto done;
			out[(size_t)k * ld + l] = v;
		}
	rc = 0;
done:
	free(c);
	free(p);
	return rc;
}
