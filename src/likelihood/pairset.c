/* pairset.c — sets of frame pairs (likelihood.h): all fitted pairs, or a deterministic
 * random subsample of them. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xpcsfit/likelihood.h"
#include "xpcsfit/rng.h"

int xf_pairset_all(xf_pairset *ps, int n_frames)
{
	memset(ps, 0, sizeof *ps);
	ps->n_frames = n_frames;
	ps->n_pairs = xf_fitted_pairs((size_t)(n_frames > 0 ? n_frames : 0));
	return 0;
}

/* Bernoulli sampling with probability f in O(kept): the gaps between kept pair indices
 * are geometric, each drawn from the stream at the draw's own counter, so the set is a
 * pure function of (n_frames, n_target, seed, stream). */
int xf_pairset_sample(xf_pairset *ps, int n_frames, size_t n_target, uint64_t seed, uint32_t stream)
{
	xf_pairset_all(ps, n_frames);
	size_t n_all = ps->n_pairs;
	if (n_target >= n_all || n_all == 0)
		return 0;
	double f = (double)n_target / (double)n_all;
	/* room for the expected count plus 10 standard deviations */
	size_t cap = n_target + 10 * (size_t)sqrt((double)n_target) + 16;
	ps->pair_i = malloc(sizeof(uint32_t) * cap);
	ps->pair_j = malloc(sizeof(uint32_t) * cap);
	if (!ps->pair_i || !ps->pair_j) {
		xf_pairset_free(ps);
		return -1;
	}
	double log_miss = log1p(-f);
	size_t n = 0, row_start = 0; /* linear index of pair (i, i+1) */
	uint32_t i = 1, row_len = (uint32_t)n_frames - 2;
	double next = floor(log(xf_rng_uniform(seed, stream, 0, 0, 0)) / log_miss);
	for (uint64_t draw = 1; next < (double)n_all && n < cap; draw++) {
		size_t p = (size_t)next;
		while (p >= row_start + row_len) {
			row_start += row_len;
			i++;
			row_len--;
		}
		ps->pair_i[n] = i;
		ps->pair_j[n] = i + 1 + (uint32_t)(p - row_start);
		n++;
		next += 1.0 + floor(log(xf_rng_uniform(seed, stream, draw, 0, 0)) / log_miss);
	}
	assert(n <= cap && (n == 0 || ps->pair_j[n - 1] < (uint32_t)n_frames));
	ps->n_pairs = n;
	return 0;
}

void xf_pairset_free(xf_pairset *ps)
{
	free(ps->pair_i);
	free(ps->pair_j);
	ps->pair_i = ps->pair_j = NULL;
	ps->n_pairs = 0;
}
