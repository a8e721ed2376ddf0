/* appendix.c — a posterior run's appendix (cmc_appendix.h, adr/0109): the result's own
 * records borrowed, the published chains' diagnostics and the route's sentence computed
 * once, and the shard store's loaders, so that the result files call nothing in cmc/. */
#include "xpcsfit/cmc.h"

#include <stdlib.h>
#include <string.h>

static int load_draws(const void *ctx, long id, int physical, double **draws, int *n_chains,
		      int *n_draws, int *dim, xf_error *err)
{
	const xf_cmc_result *res = ctx;
	int rc = xf_cmc_shard_draws(res, id, draws, n_chains, n_draws, dim, err);
	if (rc != 0 || !physical || *dim != res->n_theta + 1)
		return rc;
	size_t n = (size_t)*n_chains * (size_t)*n_draws * (size_t)*dim;
	for (size_t q = 0; q < n; q += (size_t)*dim)
		xf_cmc_result_to_physical(res, *draws + q, *draws + q);
	return 0;
}

static int load_stats(const void *ctx, long id, xf_cmc_shard_stats *st, xf_error *err)
{
	return xf_cmc_shard_stats_load(ctx, id, st, err);
}

int xf_cmc_appendix_of(const xf_cmc_result *res, xf_cmc_appendix *a, xf_error *err)
{
	memset(a, 0, sizeof *a);
	if (xf_cmc_posterior_diagnostics(res, &a->diag) != 0)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the posterior diagnostics");
	a->lower = res->lower;
	a->upper = res->upper;
	a->n_theta = res->n_theta;
	a->theta = res->theta;
	a->gp_mean = res->gp_mean;
	a->gp_cov = res->gp_cov;
	a->n_shards = res->n_shards;
	a->n_kept = res->n_kept;
	a->shards = res->shards;
	a->n_chains = res->n_chains;
	a->n_warmup = res->n_warmup;
	a->n_samples = res->n_samples;
	a->target_accept = res->target_accept;
	a->temper = res->temper;
	a->combination = res->combination;
	a->check = &res->check;
	a->approx = &res->approx;
	a->sensitivity = &res->sensitivity;
	a->prior_vs_nlsq = &res->prior_vs_nlsq;
	a->beyond = &res->beyond;
	a->seed = res->seed;
	a->grad_evals = res->grad_evals;
	a->shard_dir = res->shard_dir;
	a->route_note = res->route_note;
	a->device = &res->device;
	xf_cmc_route_describe(res, a->route_text, sizeof a->route_text);
	a->sigma_mean = res->sigma_mean;
	a->sigma_sd = res->sigma_sd;
	a->time_approx_s = res->time_approx_s;
	a->time_nuts_s = res->time_nuts_s;
	a->time_sampling_s = res->time_sampling_s;
	a->time_combine_s = res->time_combine_s;
	a->time_total_s = res->time_total_s;
	a->shard_draws = load_draws;
	a->shard_stats = load_stats;
	a->store = res;
	return 0;
}

void xf_cmc_appendix_free(xf_cmc_appendix *a)
{
	xf_cmc_posterior_diag_free(&a->diag);
	memset(a, 0, sizeof *a);
}
