/* dist.h — the library's view of several processes working on one run (the MPI driver,
 * mpi/, adr/0021 and adr/0022). The library never sees MPI: the driver installs an
 * xf_dist once, before any command runs; without one the run is one process (rank 0 of
 * 1) and every function here is a no-op that returns at once.
 *
 * What is distributed: the likelihood passes of the evaluators that opt in
 * (xf_lik_distribute: NLSQ's), whose per-block slots are exchanged so that every rank
 * reduces all the blocks in block order (the same bits as one process, on every rank);
 * and CMC's shards (shard s on rank s % R), whose store images are sent to rank 0.
 * Everything else runs on every rank the same way (replicated), and only rank 0 writes
 * files. At the points where ranks can diverge (an error on one of them) the callers
 * agree on a status (xf_dist_agree) before going on. */
#ifndef XPCSFIT_DIST_H
#define XPCSFIT_DIST_H

#include <stddef.h>

#include "xpcsfit/error.h"

typedef struct xf_dist {
	int rank, n_ranks;
	void *ctx;
	/* Every rank sends counts[rank] doubles from send; every rank receives the
	 * concatenation, rank by rank, into recv (Σ counts doubles). 0 or −1. */
	int (*allgather_doubles)(void *ctx, const double *send, double *recv, const int *counts);
	/* bytes from root's buf into everyone's buf. 0 or −1. */
	int (*bcast)(void *ctx, void *buf, size_t bytes, int root);
	/* *value becomes the minimum over the ranks. 0 or −1. */
	int (*allreduce_min)(void *ctx, int *value);
	/* A message of bytes to rank dest; recv takes the next one from src into a new
	 * buffer (malloc'd, *bytes its length, NULL when empty). 0 or −1. */
	int (*send)(void *ctx, int dest, const void *buf, size_t bytes);
	int (*recv)(void *ctx, int src, void **buf, size_t *bytes);
	int (*barrier)(void *ctx);
} xf_dist;

/* Install d (copied; NULL: back to one process). Once, before any command runs. */
void xf_dist_install(const xf_dist *d);
/* The installed hook, NULL for one process. */
const xf_dist *xf_dist_get(void);
int xf_dist_rank(void);
int xf_dist_ranks(void);
/* 1 on the rank that writes files, prints and reads the CMC shard store (rank 0). */
int xf_dist_is_root(void);

/* The contiguous range of blocks of one rank: blocks [*first, *first + *count) of
 * n_blocks over n_ranks, the first n_blocks % n_ranks ranks one more. A rank may get
 * none (n_blocks < n_ranks). */
void xf_dist_blocks(int n_blocks, int n_ranks, int rank, int *first, int *count);

/* Collective: every rank passes its status (0 or an xf_status) and its error. When any
 * is not 0, every rank gets the status and the message of the lowest failing rank (into
 * err) and returns that status; else 0. A failed exchange is XF_ERR_IO. One process:
 * returns status unchanged. */
int xf_dist_agree(int status, xf_error *err);

/* Collective: every rank holds doubles [first, first + count) of an array of total, the
 * ranks' runs following each other in rank order and making the whole; afterwards every
 * rank holds all of it in buf (adr/0027). One process: nothing to do. 0 or −1. */
int xf_dist_allgather_run(double *buf, size_t first, size_t count, size_t total);
/* Collective: a computation that runs over the ranks' data in rank order, each rank
 * continuing from the state the rank before left (the same operations, in the same order,
 * as one process over the whole): rank r receives the state (bytes) from r − 1, calls
 * step(ctx, state), sends it to r + 1; the last rank's state reaches every rank. One
 * process: step once. 0 or −1. */
int xf_dist_chain(void *state, size_t bytes, void (*step)(void *ctx, void *state), void *ctx);

/* Counters of the bytes this rank sent through the hook (docs/performance.md "MPI"). */
typedef struct xf_dist_stats {
	double bytes_sent; /* payload bytes this rank contributed or sent */
	long exchanges;	   /* allgathers of likelihood slots */
	double compute_s;  /* wall time of this rank's blocks in distributed passes */
	double exchange_s; /* wall time in the slot allgathers (waiting included) */
} xf_dist_stats;
void xf_dist_stats_get(xf_dist_stats *s);
void xf_dist_count(double bytes, int exchange);
void xf_dist_time(double compute_s, double exchange_s);

#endif
