/* test_cmc_combine.c — the combination rules (cmc.md "Combination") through their records
 * (adr/0114), on shards whose draws are known: three 2-parameter Gaussian shards with
 * correlation 0.8 and a fourth far away. Checked against sums written out here:
 * - the Gaussian product's mean and covariance, (Σ W_s)⁻¹ Σ W_s μ_s and (Σ W_s)⁻¹, with
 *   W_s the inverse of each shard's draw covariance (2 × 2 inverses by hand);
 * - consensus: each combined draw is (Σ W)⁻¹ Σ_s W_s θ_{s,g}, to 1e-12;
 * - homodyne's marginal rule: independent draws (correlation within 4 standard errors of
 *   0) around the per-parameter precision-weighted means;
 * - the robust rule leaves the far shard out with its reason; plain consensus keeps it;
 * - the record says which rules carry the shards' chains over; a number that is no rule
 *   is refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cmc/cmc_internal.h"
#include "xpcsfit/rng.h"

#define NT     2
#define DRAWS  4000
#define SHARDS 4

typedef struct shard_set {
	long n;
	double *draws[SHARDS]; /* [DRAWS][NT] */
	xf_cmc_shard shards[SHARDS];
	double mean[SHARDS][NT], cov[SHARDS][NT * NT];
} shard_set;

/* Shard s: N(m_s, C_s), C_s with sds (0.5, 1.0)·(1 + 0.2 s) and correlation 0.8; its
 * u_mean and u_cov are those of its draws, as the run computes them. */
static void make_shards(shard_set *set, long n, double far)
{
	memset(set, 0, sizeof *set);
	set->n = n;
	for (long s = 0; s < n; s++) {
		double scale = 1.0 + 0.2 * (double)s, sd0 = 0.5 * scale, sd1 = 1.0 * scale;
		double m0 = 0.1 * (double)s + (s == 3 ? far : 0.0), m1 = -0.05 * (double)s;
		double *d = malloc(sizeof(double) * DRAWS * NT);
		assert_non_null(d);
		for (int g = 0; g < DRAWS; g++) {
			double z0 = xf_rng_normal(7, XF_RNG_CMC_GAUSS, (uint64_t)s, (uint64_t)g, 0);
			double z1 = xf_rng_normal(7, XF_RNG_CMC_GAUSS, (uint64_t)s, (uint64_t)g, 1);
			d[g * NT + 0] = m0 + sd0 * z0;
			d[g * NT + 1] = m1 + sd1 * (0.8 * z0 + 0.6 * z1);
		}
		double mu[NT] = { 0, 0 }, c[NT * NT] = { 0, 0, 0, 0 };
		for (int g = 0; g < DRAWS; g++)
			for (int k = 0; k < NT; k++)
				mu[k] += d[g * NT + k] / DRAWS;
		for (int g = 0; g < DRAWS; g++)
			for (int r = 0; r < NT; r++)
				for (int k = 0; k < NT; k++)
					c[r * NT + k] += (d[g * NT + r] - mu[r]) *
							 (d[g * NT + k] - mu[k]) / (DRAWS - 1);
		set->draws[s] = d;
		memcpy(set->mean[s], mu, sizeof mu);
		memcpy(set->cov[s], c, sizeof c);
		xf_cmc_shard *sh = &set->shards[s];
		sh->id = s;
		sh->kept = 1;
		sh->u_mean = set->mean[s];
		sh->u_cov = set->cov[s];
	}
}

static void free_shards(shard_set *set)
{
	for (long s = 0; s < set->n; s++)
		free(set->draws[s]);
}

static int load(void *ctx, long id, xf_shard_draws *out, xf_error *err)
{
	(void)err;
	const shard_set *set = ctx;
	if (xf_shard_draws_alloc(out, 1, DRAWS, NT))
		return XF_ERR_NOMEM;
	memcpy(out->draws, set->draws[id], sizeof(double) * DRAWS * NT);
	return 0;
}

static void inverse2(const double *a, double *inv)
{
	double det = a[0] * a[3] - a[1] * a[2];
	inv[0] = a[3] / det;
	inv[1] = -a[1] / det;
	inv[2] = -a[2] / det;
	inv[3] = a[0] / det;
}

/* Σ W_s and Σ W_s μ_s over the first n shards, and the product's mean and covariance */
static void product(const shard_set *set, long n, double w[SHARDS][NT * NT], double *mean,
		    double *cov)
{
	double wsum[NT * NT] = { 0, 0, 0, 0 }, wmu[NT] = { 0, 0 };
	for (long s = 0; s < n; s++) {
		inverse2(set->cov[s], w[s]);
		for (int k = 0; k < NT * NT; k++)
			wsum[k] += w[s][k];
		for (int r = 0; r < NT; r++)
			for (int k = 0; k < NT; k++)
				wmu[r] += w[s][r * NT + k] * set->mean[s][k];
	}
	inverse2(wsum, cov);
	for (int r = 0; r < NT; r++)
		mean[r] = cov[r * NT] * wmu[0] + cov[r * NT + 1] * wmu[1];
}

static double rel(double a, double b)
{
	return fabs(a - b) / fmax(fabs(b), 1e-300);
}

/* xf_cmc_combine of the first n shards of set by rule, which must succeed */
static void combine(xf_combination_rule rule, shard_set *set, long n, xf_combination *out)
{
	xf_error err = { 0 };
	if (xf_cmc_combine(rule, NT, set->shards, n, load, set, 11, out, &err))
		fail_msg("combination rule %d: %s", (int)rule, err.msg);
}

static void test_gaussian_product(void **state)
{
	(void)state;
	shard_set set;
	make_shards(&set, 3, 0.0);
	double w[SHARDS][NT * NT], mean[NT], cov[NT * NT];
	product(&set, 3, w, mean, cov);
	xf_combination out;
	combine(XF_COMBINE_GAUSSIAN_PRODUCT, &set, 3, &out);
	for (int k = 0; k < NT; k++)
		assert_true(fabs(out.gp_mean[k] - mean[k]) < 1e-12);
	for (int k = 0; k < NT * NT; k++)
		assert_true(rel(out.gp_cov[k], cov[k]) < 1e-12);
	/* as many draws as a shard holds, around the product's mean */
	assert_int_equal(out.n_draws, DRAWS);
	for (int k = 0; k < NT; k++) {
		double m = 0;
		for (int g = 0; g < DRAWS; g++)
			m += out.u_draws[g * NT + k] / DRAWS;
		assert_true(fabs(m - mean[k]) < 4.0 * sqrt(cov[k * NT + k] / DRAWS));
	}
	xf_combination_free(&out);
	free_shards(&set);
}

static void test_consensus_draws(void **state)
{
	(void)state;
	shard_set set;
	make_shards(&set, 3, 0.0);
	double w[SHARDS][NT * NT], mean[NT], cov[NT * NT];
	product(&set, 3, w, mean, cov);
	xf_combination out;
	combine(XF_COMBINE_CONSENSUS, &set, 3, &out);
	assert_int_equal(out.n_draws, DRAWS);
	for (int g = 0; g < DRAWS; g += DRAWS - 1) {
		double acc[NT] = { 0, 0 };
		for (long s = 0; s < 3; s++)
			for (int r = 0; r < NT; r++)
				for (int k = 0; k < NT; k++)
					acc[r] += w[s][r * NT + k] * set.draws[s][g * NT + k];
		for (int r = 0; r < NT; r++) {
			double want = cov[r * NT] * acc[0] + cov[r * NT + 1] * acc[1];
			assert_true(fabs(out.u_draws[g * NT + r] - want) <
				    1e-12 * (1 + fabs(want)));
		}
	}
	xf_combination_free(&out);
	free_shards(&set);
}

static void test_marginal_product(void **state)
{
	(void)state;
	shard_set set;
	make_shards(&set, 3, 0.0);
	xf_combination out;
	combine(XF_COMBINE_MARGINAL_PRODUCT, &set, 3, &out);
	double m[NT] = { 0, 0 }, want[NT], var[NT];
	for (int k = 0; k < NT; k++) {
		double pw = 0, pwm = 0;
		for (long s = 0; s < 3; s++) {
			double p = 1.0 / set.cov[s][k * NT + k];
			pw += p;
			pwm += p * set.mean[s][k];
		}
		want[k] = pwm / pw;
		var[k] = 1.0 / pw;
		for (int g = 0; g < DRAWS; g++)
			m[k] += out.u_draws[g * NT + k] / DRAWS;
		assert_true(fabs(m[k] - want[k]) < 4.0 * sqrt(var[k] / DRAWS));
	}
	double c01 = 0;
	for (int g = 0; g < DRAWS; g++)
		c01 += (out.u_draws[g * NT] - m[0]) * (out.u_draws[g * NT + 1] - m[1]) / DRAWS;
	double corr = c01 / sqrt(var[0] * var[1]);
	assert_true(fabs(corr) < 4.0 / sqrt(DRAWS)); /* the shards' 0.8 is not carried */
	xf_combination_free(&out);
	free_shards(&set);
}

static void test_robust_screens_far_shard(void **state)
{
	(void)state;
	shard_set set;
	make_shards(&set, SHARDS, 40.0);
	xf_combination out;
	combine(XF_COMBINE_ROBUST_CONSENSUS, &set, SHARDS, &out);
	for (long s = 0; s < 3; s++)
		assert_int_equal(set.shards[s].kept, 1);
	assert_int_equal(set.shards[3].kept, 0);
	assert_non_null(strstr(set.shards[3].reason, "outlier mean"));
	double w[SHARDS][NT * NT], mean[NT], cov[NT * NT];
	product(&set, 3, w, mean, cov);
	for (int k = 0; k < NT; k++)
		assert_true(fabs(out.gp_mean[k] - mean[k]) < 1e-12);
	xf_combination_free(&out);
	/* plain consensus keeps every shard */
	for (long s = 0; s < SHARDS; s++)
		set.shards[s].kept = 1;
	combine(XF_COMBINE_CONSENSUS, &set, SHARDS, &out);
	for (long s = 0; s < SHARDS; s++)
		assert_int_equal(set.shards[s].kept, 1);
	xf_combination_free(&out);
	free_shards(&set);
}

static void test_records(void **state)
{
	(void)state;
	for (int r = 0; r < XF_COMBINE_N; r++) {
		const xf_combine_record *rec = xf_combine_record_of((xf_combination_rule)r);
		assert_non_null(rec);
		assert_int_equal(rec->rule, r);
		assert_non_null(rec->draw);
		int consensus = r == XF_COMBINE_CONSENSUS || r == XF_COMBINE_ROBUST_CONSENSUS;
		assert_int_equal(rec->from_shard_draws, consensus);
		assert_int_equal(rec->screens_outliers, r == XF_COMBINE_ROBUST_CONSENSUS);
	}
	assert_null(xf_combine_record_of(XF_COMBINE_N));
	shard_set set;
	make_shards(&set, 3, 0.0);
	xf_combination out;
	xf_error err = { 0 };
	assert_int_not_equal(
		xf_cmc_combine(XF_COMBINE_N, NT, set.shards, 3, load, &set, 11, &out, &err), 0);
	assert_non_null(strstr(err.msg, "combination rule"));
	free_shards(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gaussian_product),
		cmocka_unit_test(test_consensus_draws),
		cmocka_unit_test(test_marginal_product),
		cmocka_unit_test(test_robust_screens_far_shard),
		cmocka_unit_test(test_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
