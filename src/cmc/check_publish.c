/* check_publish.c — publishing the corrected posterior once the self-check passed
 * (check.c; cmc.md "When the combination can be trusted", adr/0039): the PSIS-weighted
 * summaries, covariance and per-angle values replace the consensus ones, and the draws
 * become a systematic resample of the proposal's points by their smoothed weights, so
 * everything downstream (results.h5 /cmc/draws, plots) shows the corrected posterior.
 * The plain consensus summaries and draws are kept in res->check. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/check.h"
#include "xpcsfit/rng.h"

typedef struct weighted {
	double x, w;
} weighted;

static int cmp_weighted(const void *a, const void *b)
{
	const weighted *p = a, *q = b;
	return (p->x > q->x) - (p->x < q->x);
}

/* Weighted quantile q of sorted (x, w) (Σ w = 1): linear between the midpoints of the
 * cumulative weights, so equal weights give NumPy's "hazen" definition. */
static double weighted_quantile(const weighted *v, int n, double q)
{
	double cum = 0.0, prev_mid = 0.0, prev_x = v[0].x;
	for (int i = 0; i < n; i++) {
		double mid = cum + 0.5 * v[i].w;
		if (mid >= q) {
			if (i == 0 || mid <= prev_mid)
				return v[i].x;
			return prev_x + (q - prev_mid) / (mid - prev_mid) * (v[i].x - prev_x);
		}
		cum += v[i].w;
		prev_mid = mid;
		prev_x = v[i].x;
	}
	return v[n - 1].x;
}

/* mean, sd, median, 5 %, 95 % of values x[m] under weights w[m] */
static void weighted_summary(const double *x, const double *w, int m, weighted *buf, double *mean,
			     double *sd, double *median, double *q05, double *q95)
{
	double mu = 0.0, var = 0.0;
	for (int i = 0; i < m; i++)
		mu += w[i] * x[i];
	for (int i = 0; i < m; i++)
		var += w[i] * (x[i] - mu) * (x[i] - mu);
	for (int i = 0; i < m; i++)
		buf[i] = (weighted){ x[i], w[i] };
	qsort(buf, (size_t)m, sizeof(weighted), cmp_weighted);
	*mean = mu;
	*sd = sqrt(var);
	*median = weighted_quantile(buf, m, 0.50);
	*q05 = weighted_quantile(buf, m, 0.05);
	*q95 = weighted_quantile(buf, m, 0.95);
}

/* The weighted summaries of the points u[m][dim] into res (allocated by the caller). */
static int weighted_summaries(const cmc_run *r, xf_cmc_result *res, const double *u, int dim,
			      const double *w, int m)
{
	int nf = res->n_params, nt = r->n_theta, na = res->n_phi;
	double *x = malloc(sizeof(double) * (size_t)m * nf), *xt = malloc(sizeof(double) * nt);
	double *col = malloc(sizeof(double) * m), *con = malloc(sizeof(double) * (size_t)m * na);
	double *off = malloc(sizeof(double) * (size_t)m * na);
	weighted *buf = malloc(sizeof(weighted) * m);
	int rc = -1;
	if (!x || !xt || !col || !con || !off || !buf)
		goto done;
	for (int i = 0; i < m; i++) {
		double *xi = x + (size_t)i * nf;
		memcpy(xi, r->x_start, sizeof(double) * (size_t)nf);
		xf_cmc_theta_physical(&r->pr, r->theta, nt, u + (size_t)i * dim, xt);
		for (int k = 0; k < nt; k++)
			xi[r->theta[k]] = xt[k];
		xf_problem_scaling(&r->pr, xi, con + (size_t)i * na, off + (size_t)i * na);
	}
	for (int k = 0; k < nf; k++) {
		if (res->is_fixed[k]) {
			res->mean[k] = res->median[k] = res->q05[k] = res->q95[k] = r->x_start[k];
			res->sd[k] = 0.0;
			continue;
		}
		for (int i = 0; i < m; i++)
			col[i] = x[(size_t)i * nf + k];
		weighted_summary(col, w, m, buf, &res->mean[k], &res->sd[k], &res->median[k],
				 &res->q05[k], &res->q95[k]);
	}
	for (int k = 0; k < nf; k++) /* the covariance too: it is what a user propagates */
		for (int l = 0; l < nf; l++) {
			double s = 0.0;
			if (!res->is_fixed[k] && !res->is_fixed[l])
				for (int i = 0; i < m; i++)
					s += w[i] * (x[(size_t)i * nf + k] - res->mean[k]) *
					     (x[(size_t)i * nf + l] - res->mean[l]);
			res->cov[(size_t)k * nf + l] = s;
		}
	for (int a = 0; a < na; a++) {
		double med, q05, q95;
		for (int i = 0; i < m; i++)
			col[i] = con[(size_t)i * na + a];
		weighted_summary(col, w, m, buf, &res->contrast[a], &res->contrast_sd[a], &med,
				 &q05, &q95);
		for (int i = 0; i < m; i++)
			col[i] = off[(size_t)i * na + a];
		weighted_summary(col, w, m, buf, &res->offset[a], &res->offset_sd[a], &med, &q05,
				 &q95);
	}
	rc = 0;
done:
	free(x);
	free(xt);
	free(col);
	free(con);
	free(off);
	free(buf);
	return rc;
}

/* Systematic resampling into draws [n_draws][n_params]: G positions (g + u₀)/G on the
 * cumulative weights (index order), u₀ from the check's stream at a counter no point
 * uses. Every point is kept ⌊G·w⌋ or ⌈G·w⌉ times; the result is a pure function of the
 * weights and the seed. */
static void resample(const cmc_run *r, const xf_cmc_result *res, const double *u, int dim,
		     const double *w, int m, double *draws, double *xt)
{
	int g_n = res->n_draws, nf = res->n_params, nt = r->n_theta;
	double u0 = xf_rng_uniform(r->seed, XF_RNG_CMC_CHECK, UINT64_MAX, 0, 0);
	double cum = w[0];
	int i = 0;
	for (int g = 0; g < g_n; g++) {
		double pos = (g + u0) / g_n;
		while (pos > cum && i < m - 1)
			cum += w[++i];
		double *x = draws + (size_t)g * nf;
		memcpy(x, r->x_start, sizeof(double) * (size_t)nf);
		xf_cmc_theta_physical(&r->pr, r->theta, nt, u + (size_t)i * dim, xt);
		for (int k = 0; k < nt; k++)
			x[r->theta[k]] = xt[k];
	}
}

int xf_cmc_publish_weighted(const cmc_run *r, xf_cmc_result *res, const double *u, int dim,
			    const double *w, int m)
{
	double *xt = malloc(sizeof(double) * (size_t)(r->n_theta ? r->n_theta : 1));
	if (!xt || weighted_summaries(r, res, u, dim, w, m)) {
		free(xt);
		return -1;
	}
	resample(r, res, u, dim, w, m, res->draws, xt);
	free(xt);
	return 0;
}

int xf_cmc_check_publish(const cmc_run *r, xf_cmc_result *res, const double *w)
{
	xf_cmc_check *c = &res->check;
	int nf = res->n_params;
	/* the plain consensus summaries and draws, kept under their own names */
	size_t bytes = sizeof(double) * (size_t)nf;
	double *consensus = malloc(sizeof(double) * (size_t)(res->n_draws ? res->n_draws : 1) * nf);
	if (!consensus)
		return -1;
	memcpy(c->mean, res->mean, bytes);
	memcpy(c->sd, res->sd, bytes);
	memcpy(c->median, res->median, bytes);
	memcpy(c->q05, res->q05, bytes);
	memcpy(c->q95, res->q95, bytes);
	memcpy(consensus, res->draws, sizeof(double) * (size_t)res->n_draws * nf);
	if (xf_cmc_publish_weighted(r, res, c->u, c->dim, w, c->m)) {
		free(consensus);
		return -1;
	}
	c->draws = consensus;
	c->corrected = 1;
	return 0;
}
