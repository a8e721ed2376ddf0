/* test_cmc_store.c — the shard store's completeness rule (adr/0038) and the shuffle index
 * of the shard memberships (issue 22): a whole shard round-trips bit for bit; a file with
 * a chain that neither completed nor failed is absent to xf_store_load (so --resume runs
 * the shard again), as is one of the older XFSHARD1 layout and one with a flipped byte;
 * saving a shard with a pending chain is refused; rank 0's image check says the same. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "cmc/cmc_internal.h"
#include "xpcsfit/rng.h"

#define CHAINS 3
#define DRAWS  50
#define DIM    4
#define HASH   0x1234abcdULL

static char dir[4096];

/* A shard with distinct, non-zero values in every slot; chain c's status as given. */
static void fill(xf_shard_draws *s, const unsigned char *status)
{
	assert_int_equal(xf_shard_draws_alloc(s, CHAINS, DRAWS, DIM), 0);
	size_t n = (size_t)CHAINS * DRAWS;
	for (size_t k = 0; k < n * DIM; k++)
		s->draws[k] = 0.5 + (double)k;
	for (size_t k = 0; k < n; k++) {
		s->logp[k] = -1.0 - (double)k;
		s->energy[k] = 2.0 + (double)k;
		s->accept_stat[k] = 0.8;
		s->depth[k] = 3;
		s->n_leapfrog[k] = 7;
		s->divergent[k] = (int)(k % 17 == 0);
	}
	for (int c = 0; c < CHAINS; c++) {
		s->step_size[c] = 0.1 * (c + 1);
		s->chain_status[c] = status[c];
	}
	s->grad_evals = 12345;
	s->warmup_divergent = 2;
	s->sigma_scale = 0.03;
	s->noise = 0.02;
}

static int setup(void **state)
{
	(void)state;
	const char *t = getenv("XF_TMP");
	snprintf(dir, sizeof dir, "%s/shards", t ? t : "/tmp/xf_test_cmc_store");
	char cmd[8400];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s' && rm -f '%s'/shard_*.bin", dir, dir);
	return system(cmd);
}

static void same(const xf_shard_draws *a, const xf_shard_draws *b)
{
	size_t n = (size_t)CHAINS * DRAWS;
	assert_int_equal(b->n_chains, CHAINS);
	assert_int_equal(b->n_draws, DRAWS);
	assert_int_equal(b->dim, DIM);
	assert_memory_equal(a->draws, b->draws, sizeof(double) * n * DIM);
	assert_memory_equal(a->logp, b->logp, sizeof(double) * n);
	assert_memory_equal(a->energy, b->energy, sizeof(double) * n);
	assert_memory_equal(a->divergent, b->divergent, sizeof(int) * n);
	assert_memory_equal(a->step_size, b->step_size, sizeof(double) * CHAINS);
	assert_memory_equal(a->chain_status, b->chain_status, CHAINS);
	assert_int_equal(a->grad_evals, b->grad_evals);
	assert_int_equal(a->failed, b->failed);
	assert_string_equal(a->reason, b->reason);
}

static void test_whole_shard_round_trips(void **state)
{
	(void)state;
	const unsigned char done[CHAINS] = { XF_CHAIN_DONE, XF_CHAIN_DONE, XF_CHAIN_DONE };
	xf_shard_draws s, back;
	xf_error err = { 0 };
	fill(&s, done);
	assert_int_equal(xf_store_save(dir, 1, HASH, &s, &err), 0);
	assert_int_equal(xf_store_load(dir, 1, HASH, &back, &err), 1);
	same(&s, &back);
	xf_shard_draws_free(&back);
	/* another input hash: absent */
	assert_int_equal(xf_store_load(dir, 1, HASH + 1, &back, &err), 0);
	xf_shard_draws_free(&s);
}

/* A chain that failed with its reason is a finished chain: the shard is kept (and then
 * excluded as failed by the diagnostics, not run again). */
static void test_failed_chain_is_whole(void **state)
{
	(void)state;
	const unsigned char st[CHAINS] = { XF_CHAIN_DONE, XF_CHAIN_FAILED, XF_CHAIN_DONE };
	xf_shard_draws s, back;
	xf_error err = { 0 };
	fill(&s, st);
	s.failed = 1;
	snprintf(s.reason, sizeof s.reason, "the log density is not finite");
	assert_int_equal(xf_store_save(dir, 2, HASH, &s, &err), 0);
	assert_int_equal(xf_store_load(dir, 2, HASH, &back, &err), 1);
	same(&s, &back);
	xf_shard_draws_free(&back);
	xf_shard_draws_free(&s);
}

/* What issue 22 saw: chains 0 and 1 done, chain 2 interrupted (its slots zero). Saving is
 * refused; an image written anyway (an older build, another rank) is absent to load. */
static void test_pending_chain_is_rejected(void **state)
{
	(void)state;
	const unsigned char st[CHAINS] = { XF_CHAIN_DONE, XF_CHAIN_DONE, XF_CHAIN_PENDING };
	const unsigned char done[CHAINS] = { XF_CHAIN_DONE, XF_CHAIN_DONE, XF_CHAIN_DONE };
	xf_shard_draws s, back;
	xf_error err = { 0 };
	fill(&s, st);
	assert_int_equal(xf_store_save(dir, 3, HASH, &s, &err), XF_ERR_DATA);
	assert_non_null(strstr(err.msg, "chain 2"));
	char path[4200];
	snprintf(path, sizeof path, "%s/shard_%06d.bin", dir, 3);
	struct stat sb;
	assert_int_not_equal(stat(path, &sb), 0); /* nothing written */

	/* the image of a whole shard with chain 2's status byte set back to pending and the
	 * checksum made right again: a well-formed file of an incomplete shard */
	unsigned char *img;
	size_t len;
	memset(&err, 0, sizeof err);
	memcpy(s.chain_status, done, CHAINS);
	assert_int_equal(xf_store_image(3, HASH, &s, &img, &len, &err), 0);
	assert_int_equal(xf_store_image_whole(img, len, HASH), 1);
	assert_int_equal(xf_store_image_whole(img, len, HASH + 1), 0);
	size_t at = 8 + 8 + 16 + 8 + 4 + 8 + 8 + sizeof s.reason + 8 * CHAINS + 2;
	assert_int_equal(img[at], XF_CHAIN_DONE);
	img[at] = XF_CHAIN_PENDING;
	uint64_t check = xf_hash_bytes(XF_HASH_SEED, img, len - 8);
	memcpy(img + len - 8, &check, 8);
	assert_int_equal(xf_store_image_whole(img, len, HASH), 0);
	assert_int_equal(xf_store_save_image(dir, 3, img, len, &err), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(xf_store_load(dir, 3, HASH, &back, &err), 0);
	assert_int_equal(err.code, 0);

	/* a status byte that is no status at all: absent too */
	img[at] = 7;
	check = xf_hash_bytes(XF_HASH_SEED, img, len - 8);
	memcpy(img + len - 8, &check, 8);
	assert_int_equal(xf_store_save_image(dir, 3, img, len, &err), 0);
	assert_int_equal(xf_store_load(dir, 3, HASH, &back, &err), 0);

	/* the older layout, otherwise valid: absent (re-run, never misread) */
	img[at] = XF_CHAIN_DONE;
	memcpy(img, "XFSHARD1", 8);
	check = xf_hash_bytes(XF_HASH_SEED, img, len - 8);
	memcpy(img + len - 8, &check, 8);
	assert_int_equal(xf_store_save_image(dir, 3, img, len, &err), 0);
	assert_int_equal(xf_store_load(dir, 3, HASH, &back, &err), 0);

	/* a flipped byte in the draws: absent */
	memcpy(img, "XFSHARD2", 8);
	check = xf_hash_bytes(XF_HASH_SEED, img, len - 8);
	memcpy(img + len - 8, &check, 8);
	assert_int_equal(xf_store_image_whole(img, len, HASH), 1);
	img[at + 100] ^= 1;
	assert_int_equal(xf_store_image_whole(img, len, HASH), 0);
	free(img);
	xf_shard_draws_free(&s);
}

/* u = 1 exactly: the uniform of a Philox output whose top 53 bits are all ones. The
 * index stays in 0..p, and elsewhere equals ⌊u·(p+1)⌋ (the memberships are unchanged). */
static void test_shuffle_index(void **state)
{
	(void)state;
	double top = ((double)((UINT64_MAX) >> 11) + 0.5) * 0x1.0p-53;
	assert_true(top == 1.0); /* what made the unclamped index p + 1 possible */
	const size_t ps[5] = { 0, 1, 2, 1000, 123456789 };
	for (int k = 0; k < 5; k++) {
		size_t p = ps[k];
		assert_int_equal(xf_cmc_shuffle_index(1.0, p), p);
		assert_int_equal(xf_cmc_shuffle_index(nextafter(1.0, 0.0), p), p);
		assert_int_equal(xf_cmc_shuffle_index(0.0, p), 0);
		for (int j = 0; j < 1000; j++) {
			double u = xf_rng_uniform(7, XF_RNG_SHARD, (uint64_t)j, 1, 0);
			assert_int_equal(xf_cmc_shuffle_index(u, p), (size_t)(u * (double)(p + 1)));
		}
	}
}

/* The shards are a partition of the fitted pairs, for several K. */
static void test_shards_partition(void **state)
{
	(void)state;
	const int n_frames = 40;
	size_t n_pairs = xf_fitted_pairs((size_t)n_frames);
	for (long k = 1; k <= 7; k += 3) {
		xf_pairset *sets = calloc((size_t)k, sizeof *sets);
		unsigned char *seen = calloc((size_t)n_frames * n_frames, 1);
		assert_int_equal(xf_cmc_shards_make(sets, k, n_frames, 99), 0);
		size_t total = 0;
		for (long s = 0; s < k; s++) {
			for (size_t q = 0; q < sets[s].n_pairs; q++) {
				uint32_t i = sets[s].pair_i[q], j = sets[s].pair_j[q];
				assert_true(i >= 1 && i < j && j < (uint32_t)n_frames);
				assert_int_equal(seen[i * n_frames + j]++, 0);
			}
			total += sets[s].n_pairs;
			xf_pairset_free(&sets[s]);
		}
		assert_int_equal(total, n_pairs);
		free(seen);
		free(sets);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_shard_round_trips),
		cmocka_unit_test(test_failed_chain_is_whole),
		cmocka_unit_test(test_pending_chain_is_rejected),
		cmocka_unit_test(test_shuffle_index),
		cmocka_unit_test(test_shards_partition),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
