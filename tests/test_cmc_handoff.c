/* test_cmc_handoff.c — what a failed importance route hands exact NUTS
 * (src/cmc/route_handoff.c, adr/0079): one start per chain, each one of the check's
 * points, on distinct points even when one point carries most of the weight, chosen by
 * the weights (systematic resampling) and a pure function of the seed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cmc/route.h"

#define M 10
#define D 2

/* Point i is (i, −i): its index is readable from either coordinate. */
static void make_check(xf_cmc_check *c, double *u)
{
	memset(c, 0, sizeof *c);
	for (int i = 0; i < M; i++) {
		u[i * D] = i;
		u[i * D + 1] = -i;
	}
	c->m = M;
	c->dim = D;
	c->u = u;
}

static int index_of(const double *p)
{
	int i = (int)p[0];
	assert_true(p[0] == (double)i && p[1] == -(double)i && i >= 0 && i < M);
	return i;
}

/* Equal weights on points 2, 5, 7, 9 only: the four chains start on exactly those. */
static void test_follows_weights(void **state)
{
	(void)state;
	xf_cmc_check c;
	double u[M * D], w[M] = { 0 };
	make_check(&c, u);
	w[2] = w[5] = w[7] = w[9] = 0.25;
	xf_cmc_route_out out;
	memset(&out, 0, sizeof out);
	assert_int_equal(xf_cmc_route_handoff(&c, w, 4, 42, &out), 0);
	assert_int_equal(out.n_inits, 4);
	const int want[4] = { 2, 5, 7, 9 };
	for (int g = 0; g < 4; g++)
		assert_int_equal(index_of(out.inits + g * D), want[g]);
	free(out.inits);
}

/* One point with 91 % of the weight: systematic resampling would start all four chains
 * there; each chain after the first moves on to the next unused point with weight. The
 * result is the same for the same seed. */
static void test_distinct_and_deterministic(void **state)
{
	(void)state;
	xf_cmc_check c;
	double u[M * D], w[M];
	make_check(&c, u);
	for (int i = 0; i < M; i++)
		w[i] = i == 3 ? 0.91 : 0.01;
	xf_cmc_route_out a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	assert_int_equal(xf_cmc_route_handoff(&c, w, 4, 7, &a), 0);
	assert_int_equal(xf_cmc_route_handoff(&c, w, 4, 7, &b), 0);
	assert_memory_equal(a.inits, b.inits, sizeof(double) * 4 * D);
	int seen[M] = { 0 }, on_heavy = 0;
	for (int g = 0; g < 4; g++) {
		int i = index_of(a.inits + g * D);
		assert_int_equal(seen[i], 0);
		seen[i] = 1;
		on_heavy += i == 3;
	}
	assert_int_equal(on_heavy, 1);
	free(a.inits);
	free(b.inits);
}

/* Fewer points than chains: nothing handed over (the chains start around NLSQ). */
static void test_too_few_points(void **state)
{
	(void)state;
	xf_cmc_check c;
	double u[M * D], w[M];
	make_check(&c, u);
	for (int i = 0; i < M; i++)
		w[i] = 0.1;
	xf_cmc_route_out out;
	memset(&out, 0, sizeof out);
	assert_int_equal(xf_cmc_route_handoff(&c, w, M + 1, 1, &out), 0);
	assert_null(out.inits);
	assert_int_equal(out.n_inits, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_follows_weights),
		cmocka_unit_test(test_distinct_and_deterministic),
		cmocka_unit_test(test_too_few_points),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
