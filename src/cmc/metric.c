/* metric.c — the Euclidean metric of the sampler (sampler.h): kinetic energy ½pᵀM⁻¹p,
 * velocity M⁻¹p, and momenta p ~ N(0, M) from the Cholesky factor of M⁻¹. Dense (the
 * default: this model's parameters are strongly correlated) or diagonal. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/sampler.h"

int xf_metric_alloc(xf_metric *m, int d, int dense)
{
	size_t n = dense ? (size_t)d * d : (size_t)d;
	m->d = d;
	m->dense = dense;
	m->inv = calloc(n, sizeof(double));
	m->chol = calloc(n, sizeof(double));
	if (!m->inv || !m->chol)
		return -1;
	for (int k = 0; k < d; k++) {
		size_t kk = dense ? (size_t)k * d + k : (size_t)k;
		m->inv[kk] = 1.0;
		m->chol[kk] = 1.0;
	}
	return 0;
}

void xf_metric_free(xf_metric *m)
{
	free(m->inv);
	free(m->chol);
	m->inv = m->chol = NULL;
}

int xf_metric_set(xf_metric *m, const double *cov)
{
	int d = m->d;
	if (!m->dense) {
		for (int k = 0; k < d; k++) {
			double v = cov[k];
			if (!(v > 0.0) || !isfinite(v))
				return -1;
		}
		for (int k = 0; k < d; k++) {
			m->inv[k] = cov[k];
			m->chol[k] = sqrt(cov[k]);
		}
		return 0;
	}
	double *l = malloc(sizeof(double) * (size_t)d * d);
	if (!l)
		return -1;
	memcpy(l, cov, sizeof(double) * (size_t)d * d);
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', d, l, d) != 0) {
		free(l);
		return -1;
	}
	for (int r = 0; r < d; r++) /* dpotrf leaves the upper triangle alone */
		for (int c = r + 1; c < d; c++)
			l[r * d + c] = 0.0;
	memcpy(m->inv, cov, sizeof(double) * (size_t)d * d);
	memcpy(m->chol, l, sizeof(double) * (size_t)d * d);
	free(l);
	return 0;
}

void xf_metric_velocity(const xf_metric *m, const double *p, double *v)
{
	int d = m->d;
	if (!m->dense) {
		for (int k = 0; k < d; k++)
			v[k] = m->inv[k] * p[k];
		return;
	}
	for (int r = 0; r < d; r++) {
		double s = 0.0;
		for (int c = 0; c < d; c++)
			s += m->inv[r * d + c] * p[c];
		v[r] = s;
	}
}

double xf_metric_kinetic(const xf_metric *m, const double *p)
{
	int d = m->d;
	double e = 0.0;
	if (!m->dense) {
		for (int k = 0; k < d; k++)
			e += m->inv[k] * p[k] * p[k];
		return 0.5 * e;
	}
	for (int r = 0; r < d; r++) {
		double s = 0.0;
		for (int c = 0; c < d; c++)
			s += m->inv[r * d + c] * p[c];
		e += p[r] * s;
	}
	return 0.5 * e;
}

void xf_metric_sample(const xf_metric *m, xf_chain_rng *rng, double *p, double *work)
{
	int d = m->d;
	for (int k = 0; k < d; k++)
		work[k] = xf_chain_normal(rng);
	if (!m->dense) {
		for (int k = 0; k < d; k++)
			p[k] = work[k] / m->chol[k];
		return;
	}
	/* solve Lᵀ p = z: then Cov(p) = L⁻ᵀL⁻¹ = (LLᵀ)⁻¹ = M */
	for (int r = d - 1; r >= 0; r--) {
		double s = work[r];
		for (int c = r + 1; c < d; c++)
			s -= m->chol[c * d + r] * p[c];
		p[r] = s / m->chol[r * d + r];
	}
}
