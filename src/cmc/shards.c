/* shards.c — which frame pairs each shard holds (cmc.md "Data and shards"): the pair
 * indices shuffled by a counter-based generator keyed by (seed, XF_RNG_SHARD) and dealt
 * round-robin, so every shard holds the same pairs for every angle; sorted inside a
 * shard. A pure function of (frames, shard count, seed). */
#include <stdlib.h>
#include <string.h>

#include "cmc/cmc_internal.h"
#include "xpcsfit/rng.h"

long xf_cmc_shard_count(const xf_cmc_options *o, size_t n_points, size_t n_pairs)
{
	/* auto is the exact posterior (K = 1): on one machine K > 1 shards cost more CPU
	 * than K = 1 and are less accurate (adr/0042); sharding is what the user asks
	 * for, by count or by size */
	long k = o->num_shards;
	if (k <= 0 && o->max_points_per_shard > 0)
		k = (long)((n_points + (size_t)o->max_points_per_shard - 1) /
			   (size_t)o->max_points_per_shard);
	if (k < 1)
		k = 1;
	if ((size_t)k > n_pairs)
		k = (long)n_pairs;
	return k;
}

static int by_index(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Pair (i, j) of linear index p (rows i = 1..N−2, j = i+1..N−1), walking forward from the
 * row of the previous, smaller index. */
static void pair_of(uint32_t p, int n, uint32_t *row, size_t *row_start, uint32_t *i, uint32_t *j)
{
	while (p >= *row_start + (size_t)(n - 1 - (int)*row)) {
		*row_start += (size_t)(n - 1 - (int)*row);
		(*row)++;
	}
	*i = *row;
	*j = *row + 1 + (uint32_t)(p - *row_start);
}

size_t xf_cmc_shuffle_index(double u, size_t p)
{
	size_t r = (size_t)(u * (double)(p + 1));
	return r > p ? p : r;
}

int xf_cmc_shards_make(xf_pairset *shards, long k, int n_frames, uint64_t seed)
{
	size_t n_pairs = xf_fitted_pairs((size_t)n_frames);
	uint32_t *perm = malloc(sizeof(uint32_t) * (n_pairs ? n_pairs : 1));
	if (!perm)
		return -1;
	for (size_t p = 0; p < n_pairs; p++)
		perm[p] = (uint32_t)p;
	for (size_t p = n_pairs; p-- > 1;) { /* Fisher-Yates, keyed by position */
		size_t r = xf_cmc_shuffle_index(xf_rng_uniform(seed, XF_RNG_SHARD, p, 0, 0), p);
		uint32_t t = perm[p];
		perm[p] = perm[r];
		perm[r] = t;
	}
	int rc = 0;
	for (long s = 0; s < k && rc == 0; s++) {
		xf_pairset *ps = &shards[s];
		size_t m = 0, cap = n_pairs / (size_t)k + 1;
		memset(ps, 0, sizeof *ps);
		ps->n_frames = n_frames;
		ps->pair_i = malloc(sizeof(uint32_t) * cap);
		ps->pair_j = malloc(sizeof(uint32_t) * cap);
		if (!ps->pair_i || !ps->pair_j) {
			rc = -1;
			break;
		}
		/* dealt round-robin, then in pair order (pair_j holds the indices meanwhile) */
		for (size_t p = (size_t)s; p < n_pairs; p += (size_t)k)
			ps->pair_j[m++] = perm[p];
		qsort(ps->pair_j, m, sizeof(uint32_t), by_index);
		uint32_t row = 1;
		size_t row_start = 0;
		for (size_t q = 0; q < m; q++)
			pair_of(ps->pair_j[q], n_frames, &row, &row_start, &ps->pair_i[q],
				&ps->pair_j[q]);
		ps->n_pairs = m;
	}
	free(perm);
	return rc;
}
