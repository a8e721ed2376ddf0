/* dist.c — the installed process-distribution hook and what the library builds on it
 * (xpcsfit/dist.h): the block partition, the status agreement, byte counters. No MPI
 * here: the driver (mpi/) fills the hook. */
#include "xpcsfit/dist.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static xf_dist installed;
static int have_dist;
static xf_dist_stats stats;

void xf_dist_install(const xf_dist *d)
{
	have_dist = d != NULL && d->n_ranks > 1;
	if (d)
		installed = *d;
	else
		memset(&installed, 0, sizeof installed);
}

const xf_dist *xf_dist_get(void)
{
	return have_dist ? &installed : NULL;
}

int xf_dist_rank(void)
{
	return have_dist ? installed.rank : 0;
}

int xf_dist_ranks(void)
{
	return have_dist ? installed.n_ranks : 1;
}

int xf_dist_is_root(void)
{
	return xf_dist_rank() == 0;
}

void xf_dist_blocks(int n_blocks, int n_ranks, int rank, int *first, int *count)
{
	if (n_ranks < 1 || n_blocks < 0 || rank < 0 || rank >= n_ranks) {
		*first = 0;
		*count = 0;
		return;
	}
	int base = n_blocks / n_ranks, extra = n_blocks % n_ranks;
	*count = base + (rank < extra);
	*first = rank * base + (rank < extra ? rank : extra);
}

/* The message of the first failing rank travels with its status. */
typedef struct agreed {
	int code;
	char msg[sizeof(((xf_error *)0)->msg)];
} agreed;

int xf_dist_agree(int status, xf_error *err)
{
	const xf_dist *d = xf_dist_get();
	if (!d)
		return status;
	int first = status ? d->rank : d->n_ranks;
	if (d->allreduce_min(d->ctx, &first))
		return xf_fail(err, XF_ERR_IO, "the ranks could not agree on a status (MPI)");
	if (first >= d->n_ranks)
		return 0;
	agreed a;
	memset(&a, 0, sizeof a);
	if (d->rank == first) {
		a.code = status;
		if (err && err->code)
			memcpy(a.msg, err->msg, sizeof a.msg);
		else
			strcpy(a.msg, xf_status_message(status));
	}
	if (d->bcast(d->ctx, &a, sizeof a, first))
		return xf_fail(err, XF_ERR_IO, "the ranks could not share an error (MPI)");
	a.msg[sizeof a.msg - 1] = '\0';
	if (err) {
		err->code = a.code;
		memcpy(err->msg, a.msg, sizeof err->msg);
	}
	return a.code;
}

void xf_dist_stats_get(xf_dist_stats *s)
{
	*s = stats;
}

void xf_dist_count(double bytes, int exchange)
{
	stats.bytes_sent += bytes;
	stats.exchanges += exchange;
}

void xf_dist_time(double compute_s, double exchange_s)
{
	stats.compute_s += compute_s;
	stats.exchange_s += exchange_s;
}

int xf_dist_allgather_run(double *buf, size_t first, size_t count, size_t total)
{
	const xf_dist *d = xf_dist_get();
	if (!d)
		return 0;
	if (total > INT_MAX || count > total)
		return -1;
	size_t n = (size_t)d->n_ranks;
	int *counts = calloc(n, sizeof(int));
	double *mine = malloc(sizeof(double) * (count ? count : 1));
	double *all = calloc(n > total ? n : total, sizeof(double));
	int rc = counts && mine && all ? 0 : -1;
	if (!rc) {
		for (size_t r = 0; r < n; r++)
			counts[r] = 1;
		mine[0] = (double)count;
		rc = d->allgather_doubles(d->ctx, mine, all, counts);
	}
	size_t sum = 0;
	for (size_t r = 0; !rc && r < n; r++) {
		counts[r] = (int)all[r];
		sum += (size_t)counts[r];
	}
	if (!rc && sum != total)
		rc = -1; /* every rank sees the same counts: every rank fails alike */
	if (!rc) {
		if (count)
			memcpy(mine, buf + first, sizeof(double) * count);
		rc = d->allgather_doubles(d->ctx, mine, all, counts);
	}
	if (!rc)
		memcpy(buf, all, sizeof(double) * total);
	free(counts);
	free(mine);
	free(all);
	return rc;
}

int xf_dist_chain(void *state, size_t bytes, void (*step)(void *ctx, void *state), void *ctx)
{
	const xf_dist *d = xf_dist_get();
	if (!d) {
		step(ctx, state);
		return 0;
	}
	int rc = 0;
	if (d->rank > 0) {
		void *in = NULL;
		size_t got = 0;
		rc = d->recv(d->ctx, d->rank - 1, &in, &got);
		if (!rc && got == bytes)
			memcpy(state, in, bytes);
		else
			rc = -1;
		free(in);
	}
	/* a failed receive still passes the state on: the ranks after it must not wait */
	if (!rc)
		step(ctx, state);
	if (d->rank + 1 < d->n_ranks && d->send(d->ctx, d->rank + 1, state, bytes))
		rc = -1;
	if (d->bcast(d->ctx, state, bytes, d->n_ranks - 1))
		rc = -1;
	return rc;
}
