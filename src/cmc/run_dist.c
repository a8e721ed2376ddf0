/* run_dist.c — CMC over the ranks of an MPI run (adr/0022): shard s is sampled by rank
 * s % R, on that rank's virtual devices (one shard, the exact posterior: by every rank
 * together, each likelihood pass split over the ranks, adr/0045); the finished shards of ranks 1..R−1 travel to
 * rank 0 as their store images (messages: no shared folder needed) and rank 0 saves
 * them in its store, so that its diagnostics, self-check and combination read the same
 * files as one process does. Chains are keyed by (seed, shard, chain) only, so the
 * draws do not depend on which rank ran them. */
#include <stdlib.h>

#include "cmc/run_internal.h"

int xf_cmc_dist_assign(cmc_run *r, xf_error *err)
{
	const xf_dist *d = r->dist;
	if (!d)
		return 0;
	unsigned char *resumed = calloc((size_t)r->n_shards, 1);
	int rc = resumed ? 0
			 : xf_fail(err, XF_ERR_NOMEM, "out of memory for %ld shards", r->n_shards);
	if ((rc = xf_dist_agree(rc, err))) {
		free(resumed);
		return rc;
	}
	for (long s = 0; s < r->n_shards; s++)
		resumed[s] = (unsigned char)r->jobs[s].resumed;
	if (d->bcast(d->ctx, resumed, (size_t)r->n_shards, 0)) {
		free(resumed);
		return xf_fail(err, XF_ERR_IO, "could not share the resumed shards (MPI)");
	}
	r->shards_resumed = 0;
	for (long s = 0; s < r->n_shards; s++) {
		shard_job *job = &r->jobs[s];
		job->resumed = resumed[s];
		r->shards_resumed += job->resumed;
		/* one shard (the exact posterior): every rank runs its chains in step, each
		 * pass split over the ranks (xf_lik_distribute); else shard s on rank s % R */
		job->remote = !r->dist_exact && s % d->n_ranks != d->rank;
	}
	r->shards_done = r->shards_resumed;
	free(resumed);
	return 0;
}

/* Rank 0: the shards of the other ranks, in shard order (each rank sends its own in
 * that order, and messages between two ranks keep their order); an empty message is a
 * shard that did not finish (finished: each chain completed or failed with its reason).
 * Every message is taken even after an error. */
static int receive(cmc_run *r, xf_error *err)
{
	const xf_dist *d = r->dist;
	long n_got = 0;
	double bytes = 0.0;
	for (long s = 0; s < r->n_shards; s++) {
		int src = (int)(s % d->n_ranks);
		if (src == 0 || r->jobs[s].resumed)
			continue;
		void *buf = NULL;
		size_t len = 0;
		if (d->recv(d->ctx, src, &buf, &len)) {
			xf_fail(err, XF_ERR_IO, "could not receive shard %ld from rank %d (MPI)", s,
				src);
			continue;
		}
		/* the same rule as the store's load (adr/0038): an image that is not a whole
		 * shard of these inputs is not saved, and the shard runs again on --resume */
		if (len > 0 && !err->code && !xf_store_image_whole(buf, len, r->jobs[s].hash))
			xf_warn("cmc: shard %ld from rank %d is not whole: not kept", s, src);
		else if (len > 0 && !err->code) {
			xf_store_save_image(r->dir, s, buf, len, err);
			r->shards_done++;
			n_got++;
			bytes += (double)len;
		}
		free(buf);
	}
	xf_info("cmc: %ld shards received from %d other ranks, %.0f bytes (%.0f a shard)", n_got,
		d->n_ranks - 1, bytes, n_got ? bytes / (double)n_got : 0.0);
	return err->code;
}

int xf_cmc_dist_gather(cmc_run *r, xf_error *err)
{
	const xf_dist *d = r->dist;
	if (!d)
		return 0;
	if (d->rank == 0)
		return receive(r, err);
	for (long s = d->rank; s < r->n_shards; s += d->n_ranks) {
		shard_job *job = &r->jobs[s];
		if (job->resumed)
			continue;
		if (d->send(d->ctx, 0, job->image, job->image_len) && !err->code)
			xf_fail(err, XF_ERR_IO, "could not send shard %ld to rank 0 (MPI)", s);
		xf_dist_count((double)job->image_len, 0);
		free(job->image);
		job->image = NULL;
	}
	return err->code;
}
