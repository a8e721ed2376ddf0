/* test_dist.c — the MPI-free parts of the distribution (xpcsfit/dist.h, adr/0021): the
 * block partition (every block on exactly one rank, contiguous, in rank order, ranks
 * without blocks when there are fewer blocks than ranks), the status agreement of one
 * process, and the default virtual-device count from SLURM/OpenMP/affinity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "xpcsfit/dist.h"
#include "xpcsfit/vdev.h"

static void check_partition(int n_blocks, int n_ranks)
{
	int next = 0, min = n_blocks, max = 0;
	for (int r = 0; r < n_ranks; r++) {
		int first = -1, count = -1;
		xf_dist_blocks(n_blocks, n_ranks, r, &first, &count);
		assert_true(count >= 0);
		/* contiguous and in rank order: rank r starts where rank r−1 ended */
		assert_int_equal(first, next);
		next = first + count;
		min = count < min ? count : min;
		max = count > max ? count : max;
	}
	assert_int_equal(next, n_blocks); /* every block exactly once */
	assert_true(max - min <= 1);	  /* balanced */
}

static void test_partition(void **state)
{
	(void)state;
	static const int blocks[] = { 0, 1, 2, 3, 5, 7, 64, 1000, 4099 };
	static const int ranks[] = { 1, 2, 3, 4, 7, 64, 256 };
	for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
		for (size_t r = 0; r < sizeof ranks / sizeof ranks[0]; r++)
			check_partition(blocks[b], ranks[r]);
}

static void test_partition_fewer_blocks_than_ranks(void **state)
{
	(void)state;
	int first, count;
	/* 2 blocks on 3 ranks: ranks 0 and 1 one each, rank 2 none (it still takes part) */
	xf_dist_blocks(2, 3, 0, &first, &count);
	assert_int_equal(first, 0);
	assert_int_equal(count, 1);
	xf_dist_blocks(2, 3, 1, &first, &count);
	assert_int_equal(first, 1);
	assert_int_equal(count, 1);
	xf_dist_blocks(2, 3, 2, &first, &count);
	assert_int_equal(first, 2);
	assert_int_equal(count, 0);
	/* out of range: nothing */
	xf_dist_blocks(5, 2, 2, &first, &count);
	assert_int_equal(count, 0);
}

static void test_one_process(void **state)
{
	(void)state;
	xf_error err = { 0 };
	assert_null(xf_dist_get());
	assert_int_equal(xf_dist_rank(), 0);
	assert_int_equal(xf_dist_ranks(), 1);
	assert_true(xf_dist_is_root());
	assert_int_equal(xf_dist_agree(0, &err), 0);
	assert_int_equal(xf_dist_agree(XF_ERR_DATA, &err), XF_ERR_DATA);
	/* a hook of one rank is no distribution */
	xf_dist one = { 0 };
	one.n_ranks = 1;
	xf_dist_install(&one);
	assert_null(xf_dist_get());
	xf_dist_install(NULL);
}

static void test_thread_defaults(void **state)
{
	(void)state;
	const char *source;
	setenv("SLURM_CPUS_PER_TASK", "6", 1);
	setenv("OMP_NUM_THREADS", "3", 1);
	assert_int_equal(xf_cores_given(&source), 6);
	assert_string_equal(source, "SLURM_CPUS_PER_TASK");
	unsetenv("SLURM_CPUS_PER_TASK");
	assert_int_equal(xf_cores_given(&source), 3);
	assert_string_equal(source, "OMP_NUM_THREADS");
	setenv("OMP_NUM_THREADS", "5,2", 1); /* OpenMP's nested list: the outer level */
	assert_int_equal(xf_cores_given(&source), 5);
	setenv("OMP_NUM_THREADS", "zero", 1); /* not a count: ignored */
	int n = xf_cores_given(&source);
	assert_string_equal(source, "CPU affinity");
	assert_true(n >= 1);
	unsetenv("OMP_NUM_THREADS");
	assert_int_equal(xf_online_cores(), n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partition),
		cmocka_unit_test(test_partition_fewer_blocks_than_ranks),
		cmocka_unit_test(test_one_process),
		cmocka_unit_test(test_thread_defaults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
