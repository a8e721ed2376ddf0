/* summary.c — one shard's diagnostics and summaries from its draws (cmc.md
 * "Diagnostics"): rank-normalised split R̂, bulk and tail ESS of every coordinate, the
 * divergence rate, the fraction of transitions at max tree depth, E-BFMI per chain;
 * physical means and sds; the u-space mean, covariance, skewness and excess kurtosis of
 * θ that the combination and its report use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/cmc_internal.h"
#include "cmc/diagnostics.h"

static int alloc_shard(xf_cmc_shard *out, int n_theta)
{
	size_t nt = (size_t)n_theta;
	out->rhat = malloc(sizeof(double) * (nt + 1));
	out->ess_bulk = malloc(sizeof(double) * (nt + 1));
	out->ess_tail = malloc(sizeof(double) * (nt + 1));
	out->mean = calloc(nt, sizeof(double));
	out->sd = calloc(nt, sizeof(double));
	out->skew = calloc(nt, sizeof(double));
	out->kurtosis = calloc(nt, sizeof(double));
	out->u_mean = calloc(nt, sizeof(double));
	out->u_cov = calloc(nt * nt, sizeof(double));
	return !(out->rhat && out->ess_bulk && out->ess_tail && out->mean && out->sd && out->skew &&
		 out->kurtosis && out->u_mean && out->u_cov);
}

/* R̂ and ESS of every coordinate: columns [chains][draws] of the draws. */
static int convergence(const xf_shard_draws *s, xf_cmc_shard *out)
{
	int nc = s->n_chains, nd = s->n_draws, dim = s->dim;
	double *col = malloc(sizeof(double) * (size_t)nc * nd);
	if (!col)
		return -1;
	out->rhat_max = 0.0;
	out->ess_bulk_min = out->ess_tail_min = INFINITY;
	for (int k = 0; k < dim; k++) {
		for (int c = 0; c < nc; c++)
			for (int i = 0; i < nd; i++)
				col[(size_t)c * nd + i] = s->draws[((size_t)c * nd + i) * dim + k];
		out->rhat[k] = xf_diag_rhat(col, nc, nd);
		out->ess_bulk[k] = xf_diag_ess_bulk(col, nc, nd);
		out->ess_tail[k] = xf_diag_ess_tail(col, nc, nd);
		/* NaN (constant draws, too few) counts as the worst value */
		out->rhat_max = isnan(out->rhat[k]) ? INFINITY : fmax(out->rhat_max, out->rhat[k]);
		out->ess_bulk_min =
			isnan(out->ess_bulk[k]) ? 0.0 : fmin(out->ess_bulk_min, out->ess_bulk[k]);
		out->ess_tail_min =
			isnan(out->ess_tail[k]) ? 0.0 : fmin(out->ess_tail_min, out->ess_tail[k]);
	}
	free(col);
	return 0;
}

/* The sampler's health: divergences, depth saturation, E-BFMI, step size. */
static void sampler_health(const xf_shard_draws *s, int max_depth, xf_cmc_shard *out)
{
	size_t n = (size_t)s->n_chains * (size_t)s->n_draws;
	long div = 0, sat = 0, depth = 0;
	for (size_t i = 0; i < n; i++) {
		div += s->divergent[i];
		sat += s->depth[i] >= max_depth;
		depth += s->depth[i];
	}
	out->mean_depth = (double)depth / (double)n;
	out->divergences = div;
	out->divergence_rate = (double)div / (double)n;
	out->depth_saturation = (double)sat / (double)n;
	out->ebfmi_min = INFINITY;
	out->step_size_mean = 0.0;
	for (int c = 0; c < s->n_chains; c++) {
		double e = xf_diag_ebfmi(s->energy + (size_t)c * s->n_draws, s->n_draws);
		out->ebfmi_min = isnan(e) ? out->ebfmi_min : fmin(out->ebfmi_min, e);
		out->step_size_mean += s->step_size[c] / s->n_chains;
	}
	out->grad_evals = s->grad_evals;
}

/* Moments in u-space of θ (pooled draws) and physical means and sds; σ's mean and sd. */
static int moments(const xf_problem *pr, const int *theta, int n_theta, const xf_shard_draws *s,
		   xf_cmc_shard *out)
{
	size_t n = (size_t)s->n_chains * (size_t)s->n_draws, nt = (size_t)n_theta;
	double *x = malloc(sizeof(double) * (nt ? nt : 1));
	double *m3 = calloc(nt ? nt : 1, sizeof(double)), *m4 = calloc(nt ? nt : 1, sizeof(double));
	if (!x || !m3 || !m4) {
		free(x);
		free(m3);
		free(m4);
		return -1;
	}
	double sig_sum = 0.0, sig_sq = 0.0;
	for (size_t i = 0; i < n; i++) {
		const double *u = s->draws + i * (size_t)s->dim;
		for (size_t k = 0; k < nt; k++)
			out->u_mean[k] += u[k] / (double)n;
		xf_cmc_theta_physical(pr, theta, n_theta, u, x);
		for (size_t k = 0; k < nt; k++)
			out->mean[k] += x[k] / (double)n;
		double sigma = exp(u[nt]);
		sig_sum += sigma;
		sig_sq += sigma * sigma;
	}
	for (size_t i = 0; i < n; i++) {
		const double *u = s->draws + i * (size_t)s->dim;
		xf_cmc_theta_physical(pr, theta, n_theta, u, x);
		for (size_t k = 0; k < nt; k++) {
			double d = u[k] - out->u_mean[k], dx = x[k] - out->mean[k];
			out->sd[k] += dx * dx;
			m3[k] += d * d * d;
			m4[k] += d * d * d * d;
			for (size_t l = 0; l < nt; l++)
				out->u_cov[k * nt + l] += d * (u[l] - out->u_mean[l]);
		}
	}
	for (size_t k = 0; k < nt; k++) {
		double var_u = out->u_cov[k * nt + k] / (double)n;
		out->sd[k] = sqrt(out->sd[k] / (double)(n - 1));
		out->skew[k] = var_u > 0.0 ? m3[k] / (double)n / pow(var_u, 1.5) : NAN;
		out->kurtosis[k] = var_u > 0.0 ? m4[k] / (double)n / (var_u * var_u) - 3.0 : NAN;
	}
	for (size_t k = 0; k < nt * nt; k++)
		out->u_cov[k] /= (double)(n - 1);
	out->sigma_mean = sig_sum / (double)n;
	out->sigma_sd = sqrt(fmax(0.0, (sig_sq - sig_sum * sig_sum / (double)n) / (double)(n - 1)));
	free(x);
	free(m3);
	free(m4);
	return 0;
}

int xf_shard_summarize(const xf_problem *pr, const int *theta, int n_theta, const xf_shard_draws *s,
		       int max_depth, xf_cmc_shard *out)
{
	if (alloc_shard(out, n_theta))
		return -1;
	out->failed = s->failed;
	out->sigma_scale = s->sigma_scale;
	out->noise = s->noise;
	if (s->failed) {
		snprintf(out->reason, sizeof out->reason, "%s", s->reason);
		return 0;
	}
	if (convergence(s, out) || moments(pr, theta, n_theta, s, out))
		return -1;
	sampler_health(s, max_depth, out);
	return 0;
}
