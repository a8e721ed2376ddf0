/* posterior_diag.c — the published posterior as chains (adr/0061): how its draws
 * res->draws split into chains, each parameter's rank-normalised split R̂, bulk and
 * tail ESS and Monte Carlo standard errors of that posterior (diagnostics.c computes
 * them), and the sampler's statistics of a shard read back from the shard store.
 *
 * Chains exist where the draws are Markov chains: the exact NUTS posterior (K = 1: the
 * chains themselves) and the consensus rules (draw i of chain c is the consensus of every
 * kept shard's draw i of chain c, combine.c), unless the self-check published the
 * importance-weighted posterior. The importance route's and the self-check's published
 * draws are a systematic resample of independent proposal points (a repeated point's
 * copies adjacent) and the Gaussian rules draw independent normals: one chain. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/cmc_internal.h"
#include "cmc/diagnostics.h"
#include "xpcsfit/cmc.h"

static void layout(const xf_cmc_result *res, xf_cmc_posterior_diag *d)
{
	const xf_combine_record *rule = xf_combine_record_of(res->combination);
	int consensus = rule && rule->from_shard_draws;
	int chains = res->n_chains > 0 && res->n_draws == res->n_chains * res->n_samples;
	d->n_chains = res->n_draws > 0 ? 1 : 0;
	d->n_draws = res->n_draws;
	d->markov = 0;
	if (xf_route_record_of(res->route)->from_importance_points || res->check.corrected) {
		d->layout = XF_CHAINS_RESAMPLED;
		d->note = "independent draws: a systematic resample of importance-sampling "
			  "points by their Pareto-smoothed weights (repeated points adjacent); "
			  "one chain; the importance check's IS-ESS is in results.h5";
	} else if (!consensus) {
		d->layout = XF_CHAINS_INDEPENDENT;
		d->note = "independent draws of the combined Gaussian (the combination rule "
			  "draws them); one chain";
	} else if (!chains) {
		d->layout = XF_CHAINS_POOLED;
		d->note = "the shards' chains had different lengths: the draws are pooled as "
			  "one chain";
	} else {
		d->n_chains = res->n_chains;
		d->n_draws = res->n_samples;
		d->markov = 1;
		d->layout = res->n_shards == 1 ? XF_CHAINS_NUTS : XF_CHAINS_CONSENSUS;
		d->note = res->n_shards == 1
				  ? "the NUTS chains of the exact posterior"
				  : "chain c, draw i: the consensus of every kept shard's draw i "
				    "of chain c";
	}
}

int xf_cmc_posterior_diagnostics(const xf_cmc_result *res, xf_cmc_posterior_diag *d)
{
	memset(d, 0, sizeof *d);
	layout(res, d);
	size_t nf = (size_t)res->n_params, n = (size_t)res->n_draws;
	double **cols[5] = { &d->rhat, &d->ess_bulk, &d->ess_tail, &d->mcse_mean, &d->mcse_sd };
	for (int c = 0; c < 5; c++)
		*cols[c] = malloc(sizeof(double) * (nf ? nf : 1));
	double *x = malloc(sizeof(double) * (n ? n : 1));
	int bad = !x;
	for (int c = 0; c < 5; c++)
		bad = bad || !*cols[c];
	for (size_t k = 0; !bad && k < nf; k++) {
		for (size_t g = 0; g < n; g++)
			x[g] = res->draws[g * nf + k];
		int free_k = !res->is_fixed[k] && n > 0;
		int m = d->n_chains, l = d->n_draws;
		d->rhat[k] = free_k ? xf_diag_rhat(x, m, l) : NAN;
		d->ess_bulk[k] = free_k ? xf_diag_ess_bulk(x, m, l) : NAN;
		d->ess_tail[k] = free_k ? xf_diag_ess_tail(x, m, l) : NAN;
		d->mcse_mean[k] = free_k ? xf_diag_mcse_mean(x, m, l) : NAN;
		d->mcse_sd[k] = free_k ? xf_diag_mcse_sd(x, m, l) : NAN;
	}
	free(x);
	if (bad) {
		xf_cmc_posterior_diag_free(d);
		return -1;
	}
	return 0;
}

int xf_cmc_shard_stats_load(const xf_cmc_result *res, long id, xf_cmc_shard_stats *st,
			    xf_error *err)
{
	xf_shard_draws d;
	memset(st, 0, sizeof *st);
	int got = xf_store_load(res->shard_dir, id, 0, &d, err);
	if (got <= 0)
		return got < 0 ? err->code
			       : xf_fail(err, XF_ERR_DATA, "shard %ld is missing from %s", id,
					 res->shard_dir);
	st->n_chains = d.n_chains;
	st->n_draws = d.n_draws;
	st->lp = d.logp;
	st->energy = d.energy;
	st->accept_stat = d.accept_stat;
	st->step_size = d.step_size;
	st->tree_depth = d.depth;
	st->n_leapfrog = d.n_leapfrog;
	st->diverging = d.divergent;
	d.logp = d.energy = d.accept_stat = d.step_size = NULL;
	d.depth = d.n_leapfrog = d.divergent = NULL;
	xf_shard_draws_free(&d);
	return 0;
}
