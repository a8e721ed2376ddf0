/* test_cmc_diagnostics.c — R̂, ESS and E-BFMI (cmc/diagnostics.h) against the independent
 * NumPy transcription tests/helpers/mcmc_reference.py, against cases worked by hand, for
 * their statistical behaviour on i.i.d. and AR(1) draws, and on degenerate inputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <gsl/gsl_cdf.h>

#include "cmc/diagnostics.h"

static void assert_rel(double got, double want, double rel, const char *what)
{
	double err = fabs(got - want) / fabs(want);
	if (!(err <= rel))
		fail_msg("%s: got %.17g want %.17g (rel err %.3g > %.3g)", what, got, want, err,
			 rel);
}

/* The draws of mcmc_reference.py: splitmix64, Irwin-Hall normals (12 uniforms − 6) and an
 * AR(1) recursion use integer operations and exactly rounded +, *, /, sqrt only, so both
 * sides produce the same doubles (the build has -ffp-contract=off). */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static double normal(uint64_t *state)
{
	double s = 0.0;
	for (int k = 0; k < 12; k++)
		s += (double)(splitmix64(state) >> 11) * 0x1.0p-53;
	return s - 6.0;
}

/* x_i = phi x_{i−1} + e_i, each chain started from the stationary distribution. */
static double *ar1_chains(uint64_t seed, int n_chains, int n_draws, double phi)
{
	double *out = malloc(sizeof(double) * (size_t)n_chains * n_draws);
	assert_non_null(out);
	uint64_t state = seed;
	for (int c = 0; c < n_chains; c++) {
		double x = normal(&state) / sqrt(1.0 - phi * phi);
		for (int i = 0; i < n_draws; i++) {
			x = phi * x + normal(&state);
			out[(size_t)c * n_draws + i] = x;
		}
	}
	return out;
}

typedef struct reference {
	const char *name;
	uint64_t seed;
	int n_chains, n_draws;
	double phi, first, last, sum;
	double want[5]; /* rhat, rhat_basic, ess, ess_bulk, ess_tail */
} reference;

/* Printed by `/usr/bin/python3 tests/helpers/mcmc_reference.py`. */
static const reference references[] = {
	{ "ar",
	  8,
	  4,
	  200,
	  0.6,
	  -0.9607197209471543,
	  -1.9808468434489066,
	  332.39227867552535,
	  { 1.0356361305820254, 1.035809456140326, 157.7006996208669, 158.2480332795609,
	    488.32025114867434 } },
	{ "odd",
	  2,
	  3,
	  101,
	  0.3,
	  -2.2627153376299614,
	  0.1105609523137069,
	  112.04959555762494,
	  { 1.0344678367867755, 1.0013371686407, 194.5922343158355, 167.7663429470194,
	    213.19090173317008 } },
	{ "ties",
	  3,
	  4,
	  50,
	  0.4,
	  0.0,
	  0.0,
	  -17.0,
	  { 1.1144147713970605, 1.1157156276649325, 28.603425007013044, 28.93127192004737,
	    52.6732128424275 } },
	{ "short",
	  4,
	  2,
	  9,
	  0.0,
	  -0.33475663852863935,
	  0.07725827242002037,
	  -1.47653000849018,
	  { 0.970355640535034, 0.9660711372614436, 8.0, 8.0, 8.0 } },
	{ "single",
	  5,
	  1,
	  30,
	  0.8,
	  0.1546102975237933,
	  -0.9036782156018692,
	  23.508160304279922,
	  { 1.2170135066091223, 1.0970080755580447, 6.123109266987876, 6.683026937575111,
	    16.142808336180387 } },
};
static const double ebfmi_ar_chain0 = 0.7116658501056025;

/* The data set of mcmc_reference.datasets(): AR(1) draws, transformed as there. */
static double *make_dataset(const reference *r)
{
	double *x = ar1_chains(r->seed, r->n_chains, r->n_draws, r->phi);
	for (int k = 0; k < r->n_chains * r->n_draws; k++) {
		int c = k / r->n_draws;
		if (!strcmp(r->name, "ar"))
			x[k] += 0.15 * c; /* chains off by 0.15 c */
		else if (!strcmp(r->name, "odd"))
			x[k] = x[k] * x[k] * x[k] *
			       (c == 2 ? 2.0 : 1.0); /* skewed, chain 2 wider */
		else if (!strcmp(r->name, "ties"))
			x[k] = floor(x[k] + 0.5); /* integers: ties */
	}
	return x;
}

/* Every function against the NumPy reference, on data sets that between them cover odd
 * lengths, one chain, ties, split chains too short for any Geyer pair, the positive
 * sequence running into the length limit, the monotone cap and the final even lag. */
static void test_matches_numpy_reference(void **state)
{
	(void)state;
	for (size_t d = 0; d < sizeof references / sizeof references[0]; d++) {
		const reference *r = &references[d];
		int total = r->n_chains * r->n_draws;
		double *x = make_dataset(r), sum = 0.0;
		for (int k = 0; k < total; k++)
			sum += x[k];
		if (x[0] != r->first || x[total - 1] != r->last || sum != r->sum)
			fail_msg("%s: the C draws differ from mcmc_reference.py's", r->name);
		double *copy = malloc(sizeof(double) * total);
		assert_non_null(copy);
		memcpy(copy, x, sizeof(double) * total);
		const double got[5] = {
			xf_diag_rhat(x, r->n_chains, r->n_draws),
			xf_diag_rhat_basic(x, r->n_chains, r->n_draws),
			xf_diag_ess(x, r->n_chains, r->n_draws),
			xf_diag_ess_bulk(x, r->n_chains, r->n_draws),
			xf_diag_ess_tail(x, r->n_chains, r->n_draws),
		};
		static const char *what[5] = { "rhat", "rhat_basic", "ess", "ess_bulk",
					       "ess_tail" };
		for (int f = 0; f < 5; f++) {
			char label[64];
			snprintf(label, sizeof label, "%s %s", r->name, what[f]);
			assert_rel(got[f], r->want[f], 1e-10, label);
		}
		assert_memory_equal(x, copy, sizeof(double) * total); /* inputs untouched */
		if (!strcmp(r->name, "ar"))
			assert_rel(xf_diag_ebfmi(x, r->n_draws), ebfmi_ar_chain0, 1e-12, "ebfmi");
		free(copy);
		free(x);
	}
}

/* Basic split R̂ worked by hand. */
static void test_rhat_by_hand(void **state)
{
	(void)state;
	/* Two identical chains whose halves {1,2,3,4}, {4,3,2,1} share the mean 2.5: B = 0,
	 * so R̂ = sqrt((n−1)/n) with n = 4. */
	const double same[16] = { 1, 2, 3, 4, 4, 3, 2, 1, 1, 2, 3, 4, 4, 3, 2, 1 };
	assert_rel(xf_diag_rhat_basic(same, 2, 8), sqrt(3.0 / 4.0), 1e-15, "identical");
	/* {1,2,3,4} twice, n_draws = 4: halves {1,2} {3,4}, means 1.5 3.5 1.5 3.5, so
	 * B/n = var(means) = 4/3, W = 1/2, R̂ = sqrt((W/2 + 4/3)/W) = sqrt(19/6). */
	const double ramp[8] = { 1, 2, 3, 4, 1, 2, 3, 4 };
	assert_rel(xf_diag_rhat_basic(ramp, 2, 4), sqrt(19.0 / 6.0), 1e-15, "ramp basic");
	/* Rank-normalised: ranks 1.5, 3.5, 5.5, 7.5 of S = 8 give z = −a, −b, b, a with
	 * a = Φ⁻¹(7.125/8.25), b = Φ⁻¹(5.125/8.25); W = (a − b)²/2, B/n = (a + b)²/3. The
	 * folded draws |x − 2.5| have equal half means, so the bulk R̂ is the larger. */
	double a = gsl_cdf_ugaussian_Pinv(7.125 / 8.25), b = gsl_cdf_ugaussian_Pinv(5.125 / 8.25);
	double w = (a - b) * (a - b) / 2.0, b_n = (a + b) * (a + b) / 3.0;
	assert_rel(xf_diag_rhat(ramp, 2, 4), sqrt((w / 2.0 + b_n) / w), 1e-14, "ramp rank");
}

/* ESS worked by hand: two chains of the period-4 pattern 1, 1, −1, −1 (16 draws). The
 * four split chains are identical: W = 8/7, B = 0, var⁺ = 1, and the biased
 * autocovariances are 1/8, −6/8, −1/8 at lags 1..3, so ρ_t = −1/7 + acov_t gives
 * ρ_1 = −1/56, ρ_2 = −25/28, ρ_3 = −15/56. P_0 = 55/56 is kept, P_1 = −65/56 stops the
 * sum, ρ_2 < 0 adds nothing: τ = −1 + 2·55/56 = 27/28, ESS = 32·28/27. */
static void test_ess_by_hand(void **state)
{
	(void)state;
	double x[32];
	for (int k = 0; k < 32; k++)
		x[k] = (k % 4) < 2 ? 1.0 : -1.0;
	const double want = 32.0 * 28.0 / 27.0;
	assert_rel(xf_diag_ess(x, 2, 16), want, 1e-12, "ess");
	/* two values: rank normalisation is an affine map of them, same ESS */
	assert_rel(xf_diag_ess_bulk(x, 2, 16), want, 1e-12, "ess_bulk");
	/* q05 = −1: I(x ≤ −1) = (1 − x)/2, same ESS; q95 = 1: I ≡ 1 has no ESS and is
	 * skipped */
	assert_rel(xf_diag_ess_tail(x, 2, 16), want, 1e-12, "ess_tail");
	/* R̂: identical split chains, sqrt(7/8); the folded draws |x − 0| ≡ 1 are skipped */
	assert_rel(xf_diag_rhat(x, 2, 16), sqrt(7.0 / 8.0), 1e-15, "rhat");
	/* split chains of ≤ 5 draws keep no Geyer pair: τ = 2 as in Stan, ESS = S/2 */
	assert_rel(xf_diag_ess(x, 4, 8), 16.0, 1e-15, "short ess");
}

static void test_ebfmi_by_hand(void **state)
{
	(void)state;
	/* mean 2.5, Σ(E − Ē)² = 5; jumps 1, 1, 1 → 3/5; jumps 2, −1, 2 → 9/5 */
	assert_rel(xf_diag_ebfmi((const double[]){ 1, 2, 3, 4 }, 4), 0.6, 1e-15, "ramp");
	assert_rel(xf_diag_ebfmi((const double[]){ 1, 3, 2, 4 }, 4), 1.8, 1e-15, "zigzag");
}

/* 4 chains of n i.i.d. normal draws (seed fixed: every number below is deterministic). */
static double *iid(uint64_t seed, int n)
{
	return ar1_chains(seed, 4, n, 0.0);
}

static void test_rhat_flags_disagreeing_chains(void **state)
{
	(void)state;
	const int n = 1000;
	double *x = iid(11, n);
	for (int i = 0; i < n; i++)
		x[3 * n + i] += 3.0; /* one chain 3 sd away */
	assert_true(xf_diag_rhat(x, 4, n) > 1.1);
	assert_true(xf_diag_rhat_basic(x, 4, n) > 1.1);
	free(x);
	/* same means, one chain 3 times wider: only the folded R̂ sees it */
	x = iid(12, n);
	for (int i = 0; i < n; i++)
		x[3 * n + i] *= 3.0;
	double folded = xf_diag_rhat(x, 4, n), basic = xf_diag_rhat_basic(x, 4, n);
	if (!(folded > 1.05 && basic < 1.02))
		fail_msg("wide chain: rhat %.4f (want > 1.05), basic %.4f (want < 1.02)", folded,
			 basic);
	free(x);
	/* one chain drifting by 4 sd: its halves disagree, which only splitting reveals */
	x = iid(13, n);
	for (int i = 0; i < n; i++)
		x[i] += 4.0 * i / n;
	assert_true(xf_diag_rhat_basic(x, 1, n) > 1.1);
	assert_true(xf_diag_rhat(x, 1, n) > 1.1);
	free(x);
}

static void test_rhat_passes_mixed_chains(void **state)
{
	(void)state;
	const int n = 5000;
	double *x = iid(21, n);
	double r = xf_diag_rhat(x, 4, n), rb = xf_diag_rhat_basic(x, 4, n);
	if (!(r < 1.01 && rb < 1.01 && r > 0.99 && rb > 0.99))
		fail_msg("i.i.d. chains: rhat %.5f, basic %.5f, want within 0.01 of 1", r, rb);
	free(x);
}

static void test_ess_iid_and_ar1(void **state)
{
	(void)state;
	const int n = 5000;
	double *x = iid(31, n);
	const double total = 4.0 * n;
	assert_rel(xf_diag_ess(x, 4, n), total, 0.10, "iid ess");
	assert_rel(xf_diag_ess_bulk(x, 4, n), total, 0.10, "iid ess_bulk");
	assert_rel(xf_diag_ess_tail(x, 4, n), total, 0.10, "iid ess_tail");
	free(x);
	/* AR(1): the mean's ESS is S (1 − φ)/(1 + φ) */
	const int m = 10000;
	const double phi = 0.9, expect = 4.0 * m * (1 - phi) / (1 + phi);
	x = ar1_chains(32, 4, m, phi);
	assert_rel(xf_diag_ess(x, 4, m), expect, 0.20, "ar1 ess");
	assert_rel(xf_diag_ess_bulk(x, 4, m), expect, 0.20, "ar1 ess_bulk");
	/* indicators of a Gaussian AR(1) forget faster than the draws themselves */
	double tail = xf_diag_ess_tail(x, 4, m);
	if (!(tail > expect && tail < 0.5 * 4.0 * m))
		fail_msg("ar1 ess_tail %.1f, want between %.1f and %.1f", tail, expect, 2.0 * m);
	free(x);
}

/* Rank-based diagnostics depend on the order of the draws only. */
static void test_rank_invariance(void **state)
{
	(void)state;
	const int n = 300;
	double *x = ar1_chains(41, 4, n, 0.5), *ex = malloc(sizeof(double) * 4 * n);
	assert_non_null(ex);
	for (int k = 0; k < 4 * n; k++)
		ex[k] = exp(x[k]);
	assert_true(xf_diag_ess_bulk(x, 4, n) == xf_diag_ess_bulk(ex, 4, n));
	assert_true(xf_diag_ess_tail(x, 4, n) == xf_diag_ess_tail(ex, 4, n));
	/* the plain ESS is not rank-based: exp changes it */
	assert_true(xf_diag_ess(x, 4, n) != xf_diag_ess(ex, 4, n));
	free(ex);
	free(x);
}

typedef double (*diag_fn)(const double *, int, int);
static const diag_fn all_fns[5] = { xf_diag_rhat, xf_diag_rhat_basic, xf_diag_ess, xf_diag_ess_bulk,
				    xf_diag_ess_tail };

static void assert_all_nan(const double *x, int n_chains, int n_draws, const char *what)
{
	for (int f = 0; f < 5; f++) {
		double v = all_fns[f](x, n_chains, n_draws);
		if (!isnan(v))
			fail_msg("%s: function %d gave %.17g, want NAN", what, f, v);
	}
}

static void test_degenerate_inputs(void **state)
{
	(void)state;
	double x[40];
	for (int k = 0; k < 40; k++)
		x[k] = 0.1 * (k % 7) + 0.01 * k; /* varied draws: valid in themselves */
	for (int f = 0; f < 5; f++)
		assert_false(isnan(all_fns[f](x, 4, 10)));
	assert_all_nan(NULL, 4, 10, "NULL");
	assert_all_nan(x, 0, 10, "no chains");
	assert_all_nan(x, 4, 3, "3 draws");
	assert_all_nan(x, 4, 0, "0 draws");
	assert_all_nan(x, -1, 10, "negative chains");
	x[17] = NAN;
	assert_all_nan(x, 4, 10, "a NaN draw");
	x[17] = INFINITY;
	assert_all_nan(x, 4, 10, "an inf draw");
	for (int k = 0; k < 40; k++)
		x[k] = 0.1; /* 0.1 · 10 / 10 rounds: constancy must be checked exactly */
	assert_all_nan(x, 4, 10, "constant");
	/* chains stuck at different values: R̂ is infinite, not undefined */
	for (int k = 0; k < 40; k++)
		x[k] = k / 10;
	assert_true(xf_diag_rhat_basic(x, 4, 10) == INFINITY);
	assert_true(xf_diag_rhat(x, 4, 10) == INFINITY);
	/* E-BFMI */
	const double e[5] = { 3, 1, 4, 1, 5 };
	assert_false(isnan(xf_diag_ebfmi(e, 5)));
	assert_true(isnan(xf_diag_ebfmi(e, 3)));
	assert_true(isnan(xf_diag_ebfmi(NULL, 5)));
	assert_true(isnan(xf_diag_ebfmi((const double[]){ 2, 2, 2, 2, 2 }, 5)));
	assert_true(isnan(xf_diag_ebfmi((const double[]){ 3, 1, NAN, 1, 5 }, 5)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_numpy_reference),
		cmocka_unit_test(test_rhat_by_hand),
		cmocka_unit_test(test_ess_by_hand),
		cmocka_unit_test(test_ebfmi_by_hand),
		cmocka_unit_test(test_rhat_flags_disagreeing_chains),
		cmocka_unit_test(test_rhat_passes_mixed_chains),
		cmocka_unit_test(test_ess_iid_and_ar1),
		cmocka_unit_test(test_rank_invariance),
		cmocka_unit_test(test_degenerate_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
