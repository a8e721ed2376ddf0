/* pass_dist.c — a likelihood pass spread over the ranks of a distributed run
 * (xpcsfit/dist.h, adr/0021): rank r computes the contiguous blocks
 * xf_dist_blocks(r) on its own pool, the slots of every block are exchanged (one
 * allgather of their doubles) and unpacked into lik->slots, and pass.c reduces all of
 * them in block order as in one process. A pass exchanges only what its level uses:
 * χ² and Σ g1² for a value pass; b's pieces too for a gradient; every sum for JᵀJ. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "likelihood/pass_internal.h"
#include "xpcsfit/dist.h"
#include "util/clock.h"

#define FIXED_FULL (2 + XF_N_PHYS * XF_N_PHYS + XF_N_PHYS) /* chi2, g1sq, hpp, bp */

size_t xf_pass_slot_doubles(const xf_lik *lik, xf_pass_level level)
{
	size_t n_phi = (size_t)lik->pr->n_phi;
	switch (level) {
	case XF_PASS_VALUE: return 2;
	case XF_PASS_GRADIENT: return 2 + XF_N_PHYS + 2 * n_phi;
	case XF_PASS_SCALING: return 2 + 5 * n_phi;
	default: return FIXED_FULL + n_phi * (3 * XF_N_PHYS + 5);
	}
}

static void pack(const xf_lik *lik, const xf_accum *a, double *p)
{
	size_t n_phi = (size_t)lik->pr->n_phi;
	*p++ = a->chi2;
	*p++ = a->g1sq;
	if (lik->level == XF_PASS_VALUE)
		return;
	if (lik->level == XF_PASS_SCALING) {
		memcpy(p, a->scc, sizeof(double) * 5 * n_phi); /* scc .. bo */
		return;
	}
	if (lik->level == XF_PASS_GRADIENT) {
		memcpy(p, a->bp, sizeof a->bp);
		memcpy(p + XF_N_PHYS, a->bc, sizeof(double) * 2 * n_phi); /* bc, bo */
		return;
	}
	memcpy(p, a->hpp, sizeof a->hpp);
	p += XF_N_PHYS * XF_N_PHYS;
	memcpy(p, a->bp, sizeof a->bp);
	p += XF_N_PHYS;
	memcpy(p, a->pc, sizeof(double) * n_phi * (3 * XF_N_PHYS + 5)); /* pc .. pr */
}

static void unpack(const xf_lik *lik, const double *p, xf_accum *a)
{
	size_t n_phi = (size_t)lik->pr->n_phi;
	if (lik->level != XF_PASS_HESSIAN)
		accum_clear(lik->pr, a); /* what the kernels of this level leave at zero */
	a->chi2 = *p++;
	a->g1sq = *p++;
	if (lik->level == XF_PASS_VALUE)
		return;
	if (lik->level == XF_PASS_SCALING) {
		memcpy(a->scc, p, sizeof(double) * 5 * n_phi);
		return;
	}
	if (lik->level == XF_PASS_GRADIENT) {
		memcpy(a->bp, p, sizeof a->bp);
		memcpy(a->bc, p + XF_N_PHYS, sizeof(double) * 2 * n_phi);
		return;
	}
	memcpy(a->hpp, p, sizeof a->hpp);
	p += XF_N_PHYS * XF_N_PHYS;
	memcpy(a->bp, p, sizeof a->bp);
	p += XF_N_PHYS;
	memcpy(a->pc, p, sizeof(double) * n_phi * (3 * XF_N_PHYS + 5));
}

int xf_lik_distribute(xf_lik *lik)
{
	const xf_dist *d = xf_dist_get();
	if (!d || lik->dist_ranks)
		return 0;
	/* fewer blocks than ranks (the small screening subsamples): every rank computes
	 * them all, the same blocks in the same order, which costs no more than one block
	 * and saves the exchange's latency (adr/0021). XPCSFIT_TEST_DIST_ALL=1 spreads them
	 * anyway, so that the tests see ranks without blocks. Every pair of a band load
	 * (adr/0027) is always spread: a rank holds only the data of its blocks. */
	const char *all = getenv("XPCSFIT_TEST_DIST_ALL");
	if (lik->n_blocks < d->n_ranks && !(all && all[0] == '1') &&
	    !(lik->ds->band && !lik->ps->pair_i))
		return 0;
	size_t per = xf_pass_slot_doubles(lik, XF_PASS_HESSIAN);
	if ((size_t)lik->n_blocks * per > INT_MAX) /* the allgather counts are ints */
		return -1;
	lik->dist_blocks = malloc(sizeof(int) * (size_t)d->n_ranks);
	lik->dist_counts = malloc(sizeof(int) * (size_t)d->n_ranks);
	if (!lik->dist_blocks || !lik->dist_counts)
		return -1;
	for (int r = 0; r < d->n_ranks; r++) {
		int first;
		xf_dist_blocks(lik->n_blocks, d->n_ranks, r, &first, &lik->dist_blocks[r]);
		if (r == d->rank) {
			lik->dist_first = first;
			lik->dist_count = lik->dist_blocks[r];
		}
	}
	/* at least one double each: a rank without blocks still takes part */
	lik->dist_send = malloc(sizeof(double) * per * (size_t)(lik->dist_count + 1));
	lik->dist_recv = malloc(sizeof(double) * per * (size_t)lik->n_blocks);
	if (!lik->dist_send || !lik->dist_recv)
		return -1;
	lik->dist_ranks = d->n_ranks;
	return 0;
}

typedef struct offset_ctx {
	xf_lik *lik;
	xf_block_task run_block;
} offset_ctx;

static void run_own_block(void *ctx, int b)
{
	offset_ctx *o = ctx;
	o->run_block(o->lik, o->lik->dist_first + b);
}

int xf_pass_dist_run(xf_lik *lik, xf_block_task run_block)
{
	const xf_dist *d = xf_dist_get();
	offset_ctx o = { lik, run_block };
	double t0 = xf_monotonic_s();
	if (lik->pool)
		xf_pool_run(lik->pool, lik->dist_count, run_own_block, &o);
	else
		for (int b = 0; b < lik->dist_count; b++)
			run_own_block(&o, b);
	size_t per = xf_pass_slot_doubles(lik, lik->level);
	for (int b = 0; b < lik->dist_count; b++)
		pack(lik, &lik->slots[lik->dist_first + b], lik->dist_send + (size_t)b * per);
	for (int r = 0; r < lik->dist_ranks; r++)
		lik->dist_counts[r] = (int)((size_t)lik->dist_blocks[r] * per);
	xf_dist_count((double)((size_t)lik->dist_count * per * sizeof(double)), 1);
	double t1 = xf_monotonic_s();
	if (d->allgather_doubles(d->ctx, lik->dist_send, lik->dist_recv, lik->dist_counts))
		return -1;
	xf_dist_time(t1 - t0, xf_monotonic_s() - t1);
	for (int blk = 0; blk < lik->n_blocks; blk++)
		unpack(lik, lik->dist_recv + (size_t)blk * per, &lik->slots[blk]);
	return 0;
}

void xf_pass_dist_free(xf_lik *lik)
{
	free(lik->dist_blocks);
	free(lik->dist_counts);
	free(lik->dist_send);
	free(lik->dist_recv);
}
