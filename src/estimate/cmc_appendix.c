/* cmc_appendix.c — the posterior's appendix types (cmc_appendix.h) on the estimate floor:
 * the names its verdicts have in the files, and freeing what they own, so the writers
 * neither compare strings nor call into the method. */
#include "xpcsfit/cmc_appendix.h"

#include <stdlib.h>
#include <string.h>

const char *xf_prior_diagnosis_name(xf_prior_diagnosis d)
{
	switch (d) {
	case XF_PRIOR_DIAG_UNMEASURED: return "prior sensitive (likelihood not measured)";
	case XF_PRIOR_DIAG_CONFLICT: return "prior-data conflict";
	case XF_PRIOR_DIAG_STRONG: return "strong prior / weak likelihood";
	case XF_PRIOR_DIAG_AGREEING: return "informative prior, agreeing with the data";
	case XF_PRIOR_DIAG_PULLS: return "prior pulls the posterior away from NLSQ";
	case XF_PRIOR_DIAG_NONE: break;
	}
	return "-";
}

const char *xf_chain_layout_name(xf_chain_layout l)
{
	switch (l) {
	case XF_CHAINS_CONSENSUS: return "consensus_chains";
	case XF_CHAINS_RESAMPLED: return "resampled";
	case XF_CHAINS_INDEPENDENT: return "independent";
	case XF_CHAINS_POOLED: return "pooled";
	case XF_CHAINS_NUTS: break;
	}
	return "nuts_chains";
}

void xf_cmc_posterior_diag_free(xf_cmc_posterior_diag *d)
{
	free(d->rhat);
	free(d->ess_bulk);
	free(d->ess_tail);
	free(d->mcse_mean);
	free(d->mcse_sd);
	d->rhat = d->ess_bulk = d->ess_tail = d->mcse_mean = d->mcse_sd = NULL;
}

void xf_cmc_shard_stats_free(xf_cmc_shard_stats *st)
{
	free(st->lp);
	free(st->energy);
	free(st->accept_stat);
	free(st->step_size);
	free(st->tree_depth);
	free(st->n_leapfrog);
	free(st->diverging);
	memset(st, 0, sizeof *st);
}
