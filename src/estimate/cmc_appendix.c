/* cmc_appendix.c — freeing what the posterior's appendix types own (cmc_appendix.h): on
 * the estimate floor, so the writers that read a shard's statistics free them without
 * calling into the method. */
#include "xpcsfit/cmc_appendix.h"

#include <stdlib.h>
#include <string.h>

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
