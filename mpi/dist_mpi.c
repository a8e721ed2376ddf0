/* dist_mpi.c — the library's distribution hook (xpcsfit/dist.h) on MPI_COMM_WORLD. Only
 * the main thread of a rank calls these (MPI_THREAD_FUNNELED). The default error handler
 * (MPI_ERRORS_ARE_FATAL) stays: a failed MPI call is the unrecoverable case that ends the
 * job (adr/0021). */
#include "mpi/dist_mpi.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int allgather_doubles(void *ctx, const double *send, double *recv, const int *counts)
{
	(void)ctx;
	int n, rank;
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	int *displs = malloc(sizeof(int) * (size_t)n);
	if (!displs)
		return -1;
	long long at = 0;
	for (int r = 0; r < n; r++) {
		displs[r] = (int)at;
		at += counts[r];
	}
	int rc = at > INT_MAX ? -1
			      : MPI_Allgatherv(send, counts[rank], MPI_DOUBLE, recv, counts, displs,
					       MPI_DOUBLE, MPI_COMM_WORLD) != MPI_SUCCESS;
	free(displs);
	return rc ? -1 : 0;
}

static int bcast(void *ctx, void *buf, size_t bytes, int root)
{
	(void)ctx;
	if (bytes > INT_MAX)
		return -1;
	return MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

/* Wait for a request, sleeping between tests (up to 1 ms): a rank that waits long at a
 * status agreement or with a finished shard (while rank 0 combines, or samples) leaves
 * its core to the ranks that work instead of spinning in MPI's progress loop. */
static int wait_idle(MPI_Request *req)
{
	long pause_ns = 1000;
	for (;;) {
		int done = 0;
		if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return -1;
		if (done)
			return 0;
		struct timespec ts = { 0, pause_ns };
		nanosleep(&ts, NULL);
		if (pause_ns < 1000000)
			pause_ns *= 2;
	}
}

static int allreduce_min(void *ctx, int *value)
{
	(void)ctx;
	MPI_Request req;
	if (MPI_Iallreduce(MPI_IN_PLACE, value, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req) !=
	    MPI_SUCCESS)
		return -1;
	return wait_idle(&req);
}

#define TAG_SHARD 22

static int send(void *ctx, int dest, const void *buf, size_t bytes)
{
	(void)ctx;
	if (bytes > INT_MAX)
		return -1;
	MPI_Request req;
	if (MPI_Isend(buf, (int)bytes, MPI_BYTE, dest, TAG_SHARD, MPI_COMM_WORLD, &req) !=
	    MPI_SUCCESS)
		return -1;
	return wait_idle(&req);
}

static int recv(void *ctx, int src, void **buf, size_t *bytes)
{
	(void)ctx;
	MPI_Status st;
	int n;
	*buf = NULL;
	*bytes = 0;
	long pause_ns = 1000;
	for (int found = 0; !found;) { /* MPI_Probe, sleeping as wait_idle does */
		if (MPI_Iprobe(src, TAG_SHARD, MPI_COMM_WORLD, &found, &st) != MPI_SUCCESS)
			return -1;
		struct timespec ts = { 0, pause_ns };
		if (!found)
			nanosleep(&ts, NULL);
		if (pause_ns < 1000000)
			pause_ns *= 2;
	}
	if (MPI_Get_count(&st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0)
		return -1;
	void *p = n ? malloc((size_t)n) : NULL;
	if (n && !p) {
		/* the message cannot be taken, and a rank that leaves it there would
		 * desynchronise the rest: the one case that ends the job at once */
		fprintf(stderr, "xpcsfit: error: out of memory receiving %d bytes from rank %d\n",
			n, src);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (MPI_Recv(p, n, MPI_BYTE, src, TAG_SHARD, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
	    MPI_SUCCESS) {
		free(p);
		return -1;
	}
	*buf = p;
	*bytes = (size_t)n;
	return 0;
}

static int barrier(void *ctx)
{
	(void)ctx;
	return MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

void xf_dist_mpi_hook(xf_dist *d)
{
	MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &d->n_ranks);
	d->ctx = NULL;
	d->allgather_doubles = allgather_doubles;
	d->bcast = bcast;
	d->allreduce_min = allreduce_min;
	d->send = send;
	d->recv = recv;
	d->barrier = barrier;
}
