/* test_cmc_sensitivity.c — power-scaling sensitivity (sensitivity.c, adr/0040) against
 * the conjugate normal model, where the power-scaled posterior is closed-form: prior
 * N(μ0, τ²), likelihood N(ȳ, s²); raising the prior to α gives precision α/τ² + 1/s²
 * and mean (αμ0/τ² + ȳ/s²)/precision (the likelihood likewise). The CJS distance
 * between two normal CDFs is integrated numerically here, independently of the
 * implementation under test, which only sees draws and log densities. */
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

#include "cmc/sensitivity.h"

#define N_DRAWS 4000

static double cdf(double t, double m, double s, int upper)
{
	return upper ? gsl_cdf_gaussian_Q(t - m, s) : gsl_cdf_gaussian_P(t - m, s);
}

static double xlog2(double a, double b)
{
	return a > 0.0 ? a * log2(a / b) : 0.0;
}

/* normalised, symmetric CJS distance of N(m0, s0²) and N(m1, s1²) over [lo, hi]: the
 * larger over the CDFs and the survival functions (x and −x), midpoint rule on a fine
 * grid. The normalisation (the integral of P + Q) depends on the range, and the method
 * integrates between the smallest and the largest draw: so does the closed form. */
static double cjs_normals(double m0, double s0, double m1, double s1, double lo, double hi)
{
	int n = 200000;
	double h = (hi - lo) / n, best = 0.0;
	for (int upper = 0; upper < 2; upper++) {
		double num = 0.0, den = 0.0;
		for (int i = 0; i < n; i++) {
			double t = lo + (i + 0.5) * h, p = cdf(t, m0, s0, upper),
			       q = cdf(t, m1, s1, upper), m = 0.5 * (p + q);
			num += xlog2(p, m) + xlog2(q, m);
			den += p + q;
		}
		best = fmax(best, sqrt(num / den));
	}
	return best;
}

/* the closed-form sensitivity: priorsense's difference of distances at α = 1 ± ε */
static double sens_closed(double mu0, double tau, double ybar, double s, int scale_prior,
			  double eps)
{
	double p0 = 1 / (tau * tau) + 1 / (s * s), m0 = (mu0 / (tau * tau) + ybar / (s * s)) / p0;
	double d = 0.0, z_lo = gsl_cdf_ugaussian_Pinv(0.5 / N_DRAWS);
	for (int side = 0; side < 2; side++) {
		double a = side ? 1 + eps : 1 - eps;
		double pp = (scale_prior ? a : 1) / (tau * tau),
		       pl = (scale_prior ? 1 : a) / (s * s);
		double pa = pp + pl, ma = (mu0 * pp + ybar * pl) / pa;
		d += cjs_normals(m0, 1 / sqrt(p0), ma, 1 / sqrt(pa), m0 + z_lo / sqrt(p0),
				 m0 - z_lo / sqrt(p0));
	}
	return d / (2 * log2(1 + eps));
}

/* exact posterior "draws" (its quantiles at (g + ½)/n, in a scrambled order so that
 * nothing relies on sorted input) and the two log densities per draw */
static void conjugate_draws(double mu0, double tau, double ybar, double s, double *x, double *lp,
			    double *ll)
{
	double p0 = 1 / (tau * tau) + 1 / (s * s), m0 = (mu0 / (tau * tau) + ybar / (s * s)) / p0;
	for (int g = 0; g < N_DRAWS; g++) {
		int j = (int)(((long)g * 1237) % N_DRAWS); /* 1237 is prime to 4000 */
		x[g] = m0 + gsl_cdf_ugaussian_Pinv((j + 0.5) / N_DRAWS) / sqrt(p0);
		lp[g] = -0.5 * (x[g] - mu0) * (x[g] - mu0) / (tau * tau);
		ll[g] = -0.5 * (x[g] - ybar) * (x[g] - ybar) / (s * s);
	}
}

typedef struct conj_case {
	double mu0, tau, ybar, s;
	const char *diagnosis;
} conj_case;

/* data-dominated, strong prior, prior-data conflict, a vague prior: the estimate from
 * draws within 3 % (+0.002) of the closed form, and priorsense's verdict */
static void test_conjugate_normal(void **state)
{
	(void)state;
	const conj_case cases[] = {
		{ 0.0, 1.0, 0.2, 0.1, "-" },
		{ 0.0, 0.3, 0.3, 3.0, "strong prior / weak likelihood" },
		{ 0.0, 1.0, 5.0, 1.0, "prior-data conflict" },
		{ 0.0, 10.0, 2.0, 0.5, "-" },
	};
	double *x = malloc(sizeof(double) * N_DRAWS), *lp = malloc(sizeof(double) * N_DRAWS),
	       *ll = malloc(sizeof(double) * N_DRAWS);
	int col = 0;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		const conj_case *k = &cases[c];
		conjugate_draws(k->mu0, k->tau, k->ybar, k->s, x, lp, ll);
		double sp, sl, khat;
		assert_int_equal(
			xf_powerscale_sensitivity(x, N_DRAWS, 1, &col, 1, lp, 0.01, &sp, &khat), 0);
		assert_true(khat < 0.5);
		assert_int_equal(
			xf_powerscale_sensitivity(x, N_DRAWS, 1, &col, 1, ll, 0.01, &sl, &khat), 0);
		double ep = sens_closed(k->mu0, k->tau, k->ybar, k->s, 1, 0.01);
		double el = sens_closed(k->mu0, k->tau, k->ybar, k->s, 0, 0.01);
		printf("case %zu: prior %.4f (closed %.4f), likelihood %.4f (closed %.4f)\n", c, sp,
		       ep, sl, el);
		if (!(fabs(sp - ep) < 0.03 * ep + 0.002 && fabs(sl - el) < 0.03 * el + 0.002))
			fail_msg("case %zu: prior %.4f vs %.4f, likelihood %.4f vs %.4f", c, sp, ep,
				 sl, el);
		assert_string_equal(xf_prior_diagnosis_name(xf_psens_diagnosis(sp, sl)),
				    k->diagnosis);
	}
	free(x);
	free(lp);
	free(ll);
}

/* The data alone from a posterior and its prior (xf_data_alone): the conjugate normal's
 * closed form back to its data (prior N(1, 0.5²), data 2.6 ± 0.3 → posterior
 * (1/0.25 + 1/0.09)⁻¹ …), and no answer where the posterior is not narrower than the
 * prior. */
static void test_data_alone(void **state)
{
	(void)state;
	double mu0 = 1.0, s0 = 0.5, y = 2.6, sy = 0.3;
	double prec = 1.0 / (s0 * s0) + 1.0 / (sy * sy);
	double m = (mu0 / (s0 * s0) + y / (sy * sy)) / prec, sd = 1.0 / sqrt(prec);
	double v, vs;
	assert_int_equal(xf_data_alone(m, sd, mu0, s0, &v, &vs), 0);
	assert_true(fabs(v - y) < 1e-12 && fabs(vs - sy) < 1e-12);
	assert_int_equal(xf_data_alone(m, s0, mu0, s0, &v, &vs), -1);
	assert_true(isnan(v) && isnan(vs));
	assert_int_equal(xf_data_alone(m, 2.0 * s0, mu0, s0, &v, &vs), -1);
}

/* equal weights: distance 0; the distance is the same for x and −x, and grows with the
 * tilt of the weights */
static void test_cjs_properties(void **state)
{
	(void)state;
	double *x = malloc(sizeof(double) * N_DRAWS), *neg = malloc(sizeof(double) * N_DRAWS),
	       *w = malloc(sizeof(double) * N_DRAWS);
	for (int g = 0; g < N_DRAWS; g++) {
		x[g] = gsl_cdf_ugaussian_Pinv((g + 0.5) / N_DRAWS);
		neg[g] = -x[g];
		w[g] = 1.0 / N_DRAWS;
	}
	assert_true(xf_cjs_dist(x, 1, N_DRAWS, w) < 1e-7);
	double prev = 0.0;
	for (int t = 1; t <= 3; t++) {
		double sum = 0.0;
		for (int g = 0; g < N_DRAWS; g++)
			sum += (w[g] = exp(0.1 * t * x[g]));
		for (int g = 0; g < N_DRAWS; g++)
			w[g] /= sum;
		double d = xf_cjs_dist(x, 1, N_DRAWS, w), dn = xf_cjs_dist(neg, 1, N_DRAWS, w);
		assert_true(d > prev && d < 1.0);
		assert_true(fabs(d - dn) < 1e-12);
		/* an exponential tilt of N(0,1) by e^{λx} is N(λ, 1) */
		double closed = cjs_normals(0.0, 1.0, 0.1 * t, 1.0, x[0], x[N_DRAWS - 1]);
		if (!(fabs(d - closed) < 0.05 * closed))
			fail_msg("tilt %.1f: %.5f vs closed form %.5f", 0.1 * t, d, closed);
		prev = d;
	}
	free(x);
	free(neg);
	free(w);
}

/* the diagnosis when the likelihood could not be measured (K > 1) */
static void test_diagnosis(void **state)
{
	(void)state;
	assert_int_equal(xf_psens_diagnosis(0.2, NAN), XF_PRIOR_DIAG_UNMEASURED);
	assert_string_equal(xf_prior_diagnosis_name(XF_PRIOR_DIAG_UNMEASURED),
			    "prior sensitive (likelihood not measured)");
	assert_int_equal(xf_psens_diagnosis(0.01, NAN), XF_PRIOR_DIAG_NONE);
	assert_int_equal(xf_psens_diagnosis(0.01, 0.3), XF_PRIOR_DIAG_NONE);
	assert_string_equal(xf_prior_diagnosis_name(XF_PRIOR_DIAG_NONE), "-");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cjs_properties),
		cmocka_unit_test(test_data_alone),
		cmocka_unit_test(test_conjugate_normal),
		cmocka_unit_test(test_diagnosis),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
