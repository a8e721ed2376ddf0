/* test_cmc_ridge.c — the importance route's proposal along a ridge (ridge.c, adr/0099):
 * (a) log|du/dz| of the map through the nodes against a central-difference Jacobian of
 *     xf_ridge_to_u (here in the test only), in the grid, between its nodes and in both
 *     exponential tails;
 * (b) u_k increases with z₀ and the marginal F is a distribution: u_k at z₀ = ±8 lies in
 *     the tails, and the proposal's log density integrates to 1 over u_k (z_rest at 0,
 *     the conditional's own normaliser added back);
 * (c) the rounds on a thin curved ridge whose conditional centre bends as 0.3·v² and
 *     whose width grows along it (the shape of a ridge the fitted map cannot follow),
 *     the nodes its exact slices: the first round passes all three gates and the
 *     weighted moments match the target's known ones. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cmc/check.h"
#include "cmc/ridge.h"
#include "cmc/route.h"
#include "xpcsfit/error.h"

#define D    3
#define SD_V 2.0 /* the ridge coordinate: N(0, 2²) */

/* the target: v ~ N(0, SD_V²); u1 | v ~ N(0.3·v², s1(v)²), s1 = 0.05·(1 + 0.1·v²);
 * u2 | v ~ N(−0.5 + 0.1·v, 0.2²) */
static double s1_of(double v)
{
	return 0.05 * (1.0 + 0.1 * v * v);
}

static double log_target(const double *u)
{
	double v = u[0], s1 = s1_of(v), e1 = (u[1] - 0.3 * v * v) / s1;
	double e2 = (u[2] + 0.5 - 0.1 * v) / 0.2;
	return -0.5 * v * v / (SD_V * SD_V) - 0.5 * e1 * e1 - log(s1) - 0.5 * e2 * e2;
}

static int log_target_batch(void *ctx, int n, const double *u, double *lp)
{
	(void)ctx;
	for (int i = 0; i < n; i++)
		lp[i] = log_target(u + (size_t)i * D);
	return 0;
}

/* nodes every step in v over ±span: each slice's exact centre, covariance and log mass */
static void make_ridge(xf_ridge *rg, double span, double step)
{
	int n = (int)lround(2.0 * span / step) + 1;
	double *v = malloc(sizeof(double) * n), *ell = malloc(sizeof(double) * n);
	double *mu = malloc(sizeof(double) * n * D), *cov = calloc((size_t)n * 4, sizeof(double));
	assert_true(v && ell && mu && cov);
	for (int i = 0; i < n; i++) {
		double x = -span + step * i, s1 = s1_of(x);
		v[i] = x;
		/* the slice's mass: its height at the centre times (2π)^(1/2)·s1·0.2 */
		ell[i] = -0.5 * x * x / (SD_V * SD_V);
		mu[i * D] = x;
		mu[i * D + 1] = 0.3 * x * x;
		mu[i * D + 2] = -0.5 + 0.1 * x;
		cov[i * 4] = s1 * s1;
		cov[i * 4 + 3] = 0.04;
	}
	assert_int_equal(xf_ridge_from_nodes(rg, D, 0, n, v, ell, mu, cov), 0);
	free(v), free(ell), free(mu), free(cov);
}

static void test_jacobian(void **state)
{
	(void)state;
	xf_ridge rg;
	make_ridge(&rg, 6.0, 0.5);
	const double zs[][D] = { { 0.0, 0.3, -0.7 },  { 0.37, -1.1, 0.4 }, { -1.3, 0.9, 1.7 },
				 { 2.2, -0.2, -2.4 }, { 4.5, 0.5, 0.1 },   { -4.2, -1.0, 0.6 } };
	for (size_t p = 0; p < sizeof zs / sizeof zs[0]; p++) {
		double u[D], up[D], um[D], z[D], jac[D * D];
		double lj = xf_ridge_to_u(&rg, zs[p], u);
		for (int b = 0; b < D; b++) {
			double h = 1e-6;
			memcpy(z, zs[p], sizeof z);
			z[b] += h;
			xf_ridge_to_u(&rg, z, up);
			z[b] -= 2.0 * h;
			xf_ridge_to_u(&rg, z, um);
			for (int a = 0; a < D; a++)
				jac[a * D + b] = (up[a] - um[a]) / (2.0 * h);
		}
		/* triangular in (u_k, rest): the determinant is the diagonal's product */
		double det = jac[0] * (jac[4] * jac[8] - jac[5] * jac[7]);
		double want = log(fabs(det));
		if (!(fabs(lj - want) < 1e-5))
			fail_msg("z %g: log|du/dz| %.8f, central difference %.8f", zs[p][0], lj,
				 want);
	}
	xf_ridge_free(&rg);
}

static void test_marginal(void **state)
{
	(void)state;
	xf_ridge rg;
	make_ridge(&rg, 6.0, 0.5);
	double prev = -INFINITY, u[D], z[D] = { 0 };
	for (double z0 = -8.0; z0 <= 8.0; z0 += 0.25) {
		z[0] = z0;
		assert_true(isfinite(xf_ridge_to_u(&rg, z, u)));
		assert_true(u[0] > prev);
		prev = u[0];
	}
	z[0] = 8.0;
	xf_ridge_to_u(&rg, z, u);
	assert_true(u[0] > 6.0);
	z[0] = -8.0;
	xf_ridge_to_u(&rg, z, u);
	assert_true(u[0] < -6.0);
	/* ∫ f(u_k) du_k = ∫ φ(z₀) dz₀ over the map: f = φ(z₀)/(du_k/dz₀), so the integral of f
	 * over a fine grid in u_k, through the inverse, is 1 */
	double total = 0.0, last_u = NAN, last_f = NAN;
	for (double z0 = -9.0; z0 <= 9.0; z0 += 0.001) {
		z[0] = z0;
		double lj = xf_ridge_to_u(&rg, z, u);
		/* log f = log φ(z₀) − log du_k/dz₀; the rest's log|L| at z_rest = 0 */
		double ll = log(rg.work[0]) + log(rg.work[3]); /* L, the last call's */
		double f = exp(-0.5 * z0 * z0 - 0.5 * log(2.0 * M_PI) - (lj - ll));
		if (!isnan(last_u))
			total += 0.5 * (f + last_f) * (u[0] - last_u);
		last_u = u[0];
		last_f = f;
	}
	if (!(fabs(total - 1.0) < 1e-3))
		fail_msg("the marginal integrates to %.6f", total);
	xf_ridge_free(&rg);
}

static void test_rounds(void **state)
{
	(void)state;
	xf_ridge rg;
	make_ridge(&rg, 9.0, 0.5);
	int m_max = xf_check_m_max(XF_ROUTE_M0);
	xf_cmc_check c;
	memset(&c, 0, sizeof c);
	c.u = malloc(sizeof(double) * (size_t)m_max * D);
	c.log_w = malloc(sizeof(double) * (size_t)m_max);
	c.log_p = malloc(sizeof(double) * (size_t)m_max);
	double *w = malloc(sizeof(double) * (size_t)m_max);
	assert_true(c.u && c.log_w && c.log_p && w);
	xf_is_prop p;
	xf_is_prop_ridge(&p, &rg);
	assert_int_equal(
		xf_cmc_route_rounds_prop(log_target_batch, NULL, &p, 7, NULL, 2000.0, w, &c), 0);
	printf("  rounds %d: M %d, k-hat %.3f, IS-ESS %.0f, axis dev %.3f (axis %d)\n", c.rounds,
	       c.m, c.khat, c.ess, c.axis_dev, c.axis);
	assert_true(c.pass_khat && c.pass_ess && c.pass_axis);
	assert_int_equal(c.rounds, 1);
	/* E[v] = 0, sd 2; E[u1] = 0.3·E[v²] = 1.2; E[u2] = −0.5 */
	double m0 = 0.0, s0 = 0.0, m1 = 0.0, m2 = 0.0;
	for (int i = 0; i < c.m; i++) {
		m0 += w[i] * c.u[(size_t)i * D];
		s0 += w[i] * c.u[(size_t)i * D] * c.u[(size_t)i * D];
		m1 += w[i] * c.u[(size_t)i * D + 1];
		m2 += w[i] * c.u[(size_t)i * D + 2];
	}
	s0 = sqrt(s0 - m0 * m0);
	if (!(fabs(m0) < 0.1 && fabs(s0 - SD_V) < 0.1 && fabs(m1 - 1.2) < 0.1 &&
	      fabs(m2 + 0.5) < 0.03))
		fail_msg("weighted moments: v %.3f sd %.3f, u1 %.3f, u2 %.3f", m0, s0, m1, m2);
	free(c.u), free(c.log_w), free(c.log_p), free(w);
	xf_ridge_free(&rg);
}

int main(void)
{
	xf_log_set_stderr(1, getenv("XF_TEST_VERBOSE") != NULL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jacobian),
		cmocka_unit_test(test_marginal),
		cmocka_unit_test(test_rounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
