/* test_model.c — the forward model against model.md's reference values, every partial
 * derivative against a central difference, and symmetry. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "xpcsfit/model.h"

static void assert_rel(double got, double want, double rel)
{
	double err = fabs(got - want) / fabs(want);
	if (err > rel)
		fail_msg("got %.17g want %.17g (rel err %.3g > %.3g)", got, want, err, rel);
}

static double c2_at(const xf_model_grid *g, const double *theta, double phi, double contrast,
		    double offset, int i, int j)
{
	double v;
	assert_int_equal(xf_model_c2_point(g, theta, phi, contrast, offset, i, j, &v, NULL), 0);
	return v;
}

static void test_reference_case_a(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 5, 0.1, 0.01, 2e6 };
	double theta[7] = { 1000, 0.5, 10, 0, 0, 0, 0 };
	assert_rel(c2_at(&g, theta, 0, 0.5, 1.0, 0, 0), 1.499999999995, 1e-12);
	assert_rel(c2_at(&g, theta, 0, 0.5, 1.0, 0, 1), 1.498602370606266, 1e-12);
	assert_rel(c2_at(&g, theta, 0, 0.5, 1.0, 0, 4), 1.4911826956972702, 1e-12);
	assert_rel(c2_at(&g, theta, 0, 0.5, 1.0, 1, 3), 1.4955242092743044, 1e-12);
	double a2[7] = { 1000, -1.5, 0, 0, 0, 0, 0 };
	assert_rel(c2_at(&g, a2, 0, 0.5, 1.0, 0, 1), 1.2729478141394595, 1e-12);
	assert_rel(c2_at(&g, a2, 0, 0.5, 1.0, 0, 4), 1.1922393174110146, 1e-12);
	assert_rel(c2_at(&g, a2, 0, 0.5, 1.0, 1, 4), 1.3521539786224344, 1e-12);
}

static void test_reference_case_b(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 1001, 0.001, 0.0054, 2e6 };
	double theta[7] = { 1000, 0, 0, 0.01, 0, 0, 0 };
	assert_rel(c2_at(&g, theta, 0, 0.3, 1.0, 0, 1000), 1.000003284222363, 1e-12);
	assert_rel(c2_at(&g, theta, 0, 0.3, 1.0, 0, 500), 1.000016093493354, 1e-12);
	assert_rel(c2_at(&g, theta, 0, 0.3, 1.0, 100, 900), 1.0000060362016348, 1e-12);
	assert_rel(c2_at(&g, theta, 0, 0.3, 1.0, 10, 11), 1.2999321685728102, 1e-12);
	assert_rel(c2_at(&g, theta, 45, 0.3, 1.0, 0, 1000), 1.0000003436389144, 1e-12);
	assert_rel(c2_at(&g, theta, 45, 0.3, 1.0, 10, 11), 1.2999617090409366, 1e-12);
	assert_rel(c2_at(&g, theta, 90, 0.3, 1.0, 0, 1000), 1.2913783150797273, 1e-12);
}

/* The full-matrix evaluator agrees with the point evaluator (to a few ULP: its sincos and
 * exp are SLEEF's, the point evaluator's libm's) and is symmetric. */
static void test_full_matrix_symmetric(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 60, 0.01, 0.0054, 2e6 };
	double theta[7] = { 2000, -1.3, 5, 0.02, -0.2, 0.001, 3 };
	int n = g.n_frames;
	double *m = malloc(sizeof(double) * n * n);
	assert_non_null(m);
	assert_int_equal(xf_model_c2_full(&g, theta, 30, 0.3, 1.0, m), 0);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			assert_true(m[i * n + j] == m[j * n + i]);
			if ((i * 7 + j) % 97 == 0)
				assert_rel(m[i * n + j], c2_at(&g, theta, 30, 0.3, 1.0, i, j),
					   1e-15);
		}
	/* the point evaluator is symmetric in (i, j) too */
	assert_rel(c2_at(&g, theta, 30, 0.3, 1, 40, 7), c2_at(&g, theta, 30, 0.3, 1, 7, 40), 1e-15);
	free(m);
}

/* The row evaluator gives the same bits in every build (generic, AVX2, AVX-512; whichever
 * the CPU runs) and in rows as in the full matrix, in each mode and shear model. */
static void test_rows_bits(void **state)
{
	(void)state;
	const char *kernel[] = { "generic", "avx2", NULL };
	xf_model_grid grids[] = {
		{ XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 77, 0.01, 0.0054, 2e6 },
		{ XF_MODE_LAMINAR, XF_SHEAR_PNAS2024, 77, 0.01, 0.0054, 2e6 },
		{ XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 77, 0.01, 0.0054, 2e6 },
	};
	double theta[7] = { 2000, -1.3, 5, 0.02, -0.2, 0.001, 3 };
	int n = 77;
	double *ref = malloc(sizeof(double) * n * n), *m = malloc(sizeof(double) * n * n);
	assert_non_null(ref);
	assert_non_null(m);
	for (int gi = 0; gi < 3; gi++) {
		unsetenv("XPCSFIT_KERNEL");
		assert_int_equal(xf_model_c2_full(&grids[gi], theta, 30, 0.3, 1.0, ref), 0);
		for (int k = 0; k < 3; k++) {
			if (kernel[k])
				setenv("XPCSFIT_KERNEL", kernel[k], 1);
			else
				unsetenv("XPCSFIT_KERNEL");
			assert_int_equal(xf_model_c2_full(&grids[gi], theta, 30, 0.3, 1.0, m), 0);
			assert_memory_equal(m, ref, sizeof(double) * n * n);
			/* rows 5..33 as the no-plots surface writer computes them */
			assert_int_equal(
				xf_model_c2_rows(&grids[gi], theta, 30, 0.3, 1.0, 5, 34, m), 0);
			assert_memory_equal(m, ref + 5 * n, sizeof(double) * 29 * n);
		}
	}
	unsetenv("XPCSFIT_KERNEL");
	free(ref);
	free(m);
}

/* Typical scale of parameter k: the step and the tolerance are taken relative to it, so
 * parameters that sit at 0 (alpha, phi0) get a sensible step. */
static double param_scale(const double *p, int k)
{
	static const double floor_scale[9] = { 100, 1, 100, 1e-3, 1, 1e-3, 1, 0.1, 0.1 };
	return p[k] != 0.0 ? fabs(p[k]) : floor_scale[k];
}

/* Five-point central difference of c2 with respect to parameter k (theta 0..6, 7
 * contrast, 8 offset): truncation error O(h^4), so roundoff alone limits it. */
static double central_difference(const xf_model_grid *g, const double *theta, double phi,
				 double contrast, double offset, int i, int j, int k)
{
	double p[9];
	for (int m = 0; m < 7; m++)
		p[m] = theta[m];
	p[7] = contrast;
	p[8] = offset;
	double h = 1e-4 * param_scale(p, k);
	double f[4];
	const double steps[4] = { -2, -1, 1, 2 };
	for (int s = 0; s < 4; s++) {
		double q[9];
		for (int m = 0; m < 9; m++)
			q[m] = p[m];
		q[k] += steps[s] * h;
		f[s] = c2_at(g, q, phi, q[7], q[8], i, j);
	}
	return (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * h);
}

static void check_gradient(const xf_model_grid *g, const double *theta, double phi, int i, int j)
{
	double c2, grad[9], p[9];
	assert_int_equal(xf_model_c2_point(g, theta, phi, 0.4, 1.0, i, j, &c2, grad), 0);
	for (int m = 0; m < 7; m++)
		p[m] = theta[m];
	p[7] = 0.4;
	p[8] = 1.0;
	int n_phys = g->mode == XF_MODE_LAMINAR ? 7 : 3;
	for (int k = 0; k < 9; k++) {
		if (k >= n_phys && k < 7) {
			assert_true(grad[k] == 0.0);
			continue;
		}
		double fd = central_difference(g, theta, phi, 0.4, 1.0, i, j, k);
		/* compare the change of c2 over one parameter scale: relative 1e-5 (strong
		 * shear oscillates, so the stencil's truncation error is ~1e-6 there), with an
		 * absolute floor of 1e-10 in c2 units for derivatives that are ~0 */
		double scale = param_scale(p, k);
		double err = fabs(grad[k] - fd) * scale;
		if (err > 1e-5 * fabs(fd) * scale + 1e-10)
			fail_msg("d c2/d p%d at (%d,%d) phi %.1f: analytic %.12g, central %.12g", k,
				 i, j, phi, grad[k], fd);
	}
}

static void test_gradients_static(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 50, 0.1, 0.01, 2e6 };
	const double sets[][7] = {
		{ 1000, 0.5, 10, 0, 0, 0, 0 },
		{ 500, -1.5, 0.0, 0, 0, 0, 0 }, /* α < 0 */
		{ 3000, 1.2, -50, 0, 0, 0, 0 }, /* negative offset */
	};
	int pairs[][2] = { { 1, 2 }, { 0, 7 }, { 3, 40 }, { 10, 49 }, { 20, 20 } };
	for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++)
		for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
			check_gradient(&g, sets[s], 0.0, pairs[p][0], pairs[p][1]);
}

static void test_gradients_laminar(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 80, 0.01, 0.0054, 2e6 };
	const double sets[][7] = {
		{ 1000, 0.0, 0.0, 0.01, 0.0, 0.0, 0.0 },
		{ 2000, -1.3, 5, 0.02, -0.2, 0.001, 3 }, /* α, β < 0 */
		{ 800, 0.7, -20, 0.005, 0.6, -0.002, -7 },
		{ 20000, 1.5, 100, 0.3, 1.2, 0.05, 9 }, /* strong shear, large Φ */
	};
	const double phis[] = { 0, 30, 89, 90, 135, -60, 178 };
	int pairs[][2] = { { 1, 2 }, { 2, 30 }, { 5, 79 }, { 40, 41 }, { 0, 60 } };
	for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++)
		for (size_t a = 0; a < sizeof phis / sizeof phis[0]; a++)
			for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
				check_gradient(&g, sets[s], phis[a], pairs[p][0], pairs[p][1]);
	g.shear_model = XF_SHEAR_PNAS2024;
	for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++)
		for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
			check_gradient(&g, sets[s], 20.0, pairs[p][0], pairs[p][1]);
}

/* Floors and clips are hard: the derivative is exactly 0 where they are active. */
static void test_floors_and_clips(void **state)
{
	(void)state;
	double c2, grad[9];
	/* D_offset drives the rate below the floor everywhere: D = 1e-10, no dependence */
	xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 20, 0.1, 0.01, 2e6 };
	double floored[7] = { 100, 0.5, -1e5, 0, 0, 0, 0 };
	assert_int_equal(xf_model_c2_point(&g, floored, 0, 0.5, 1.0, 2, 9, &c2, grad), 0);
	assert_true(grad[0] == 0.0 && grad[1] == 0.0 && grad[2] == 0.0);
	check_gradient(&g, floored, 0, 2, 9);
	/* log g1_D clipped at −700 (huge q): derivative 0, c2 = offset + contrast·e^-1400 */
	xf_model_grid big = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 20, 1.0, 5.0, 2e6 };
	double theta[7] = { 1e5, 1.0, 1e5, 0, 0, 0, 0 };
	assert_int_equal(xf_model_c2_point(&big, theta, 0, 0.5, 1.0, 1, 19, &c2, grad), 0);
	assert_true(grad[0] == 0.0 && grad[1] == 0.0 && grad[2] == 0.0);
	assert_rel(c2, 1.0 + 0.5 * 1e-20, 1e-15); /* g1 floored at 1e-10 */
	/* shear zero crossing (sinc = 0): g1 floored, all physical derivatives 0 */
	xf_model_grid lg = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 3, 1.0, 0.01, 2e6 };
	/* choose γ̇0 so Φ(0,2) = π exactly at φ = φ0: s·I^γ = π with I^γ ≈ 2 γ̇0 */
	double s = 0.01 * 2e6 * 1.0 / (2 * M_PI);
	double gdot = M_PI / (2.0 * s);
	double th[7] = { 100, 0, 0, gdot, 0, 0, 0 };
	assert_int_equal(xf_model_c2_point(&lg, th, 0.0, 0.5, 1.0, 0, 2, &c2, grad), 0);
	assert_rel(c2, 1.0 + 0.5 * 1e-20, 1e-9);
	for (int k = 0; k < 7; k++)
		assert_true(grad[k] == 0.0);
	/* Taylor branch of sinc near Φ = 0 (φ = 90° from the flow) is smooth */
	check_gradient(&lg, (double[]){ 100, 0, 0, 1e-8, 0, 1e-9, 0 }, 0.0, 0, 2);
	/* t = 0 floor with a negative exponent: finite everywhere */
	double neg[7] = { 1000, -2.0, 0, 0.1, -2.0, 0, 0 };
	xf_model_grid lg2 = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 10, 0.01, 0.0054, 2e6 };
	assert_int_equal(xf_model_c2_point(&lg2, neg, 45, 0.5, 1.0, 0, 9, &c2, grad), 0);
	assert_true(isfinite(c2));
	for (int k = 0; k < 9; k++)
		assert_true(isfinite(grad[k]));
	check_gradient(&lg2, neg, 45, 0, 9);
}

/* pnas2024 shear model: c2 = offset + contrast·exp(−q²dt I^D)·[sin(x)/x]², x = πΦ. */
static void test_pnas_form(void **state)
{
	(void)state;
	xf_model_grid h = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 101, 0.001, 0.0054, 2e6 };
	xf_model_grid p = h;
	p.shear_model = XF_SHEAR_PNAS2024;
	double theta[7] = { 1000, 0, 0, 0.01, 0, 0, 0 };
	double ch, cp;
	assert_int_equal(xf_model_c2_point(&h, theta, 90, 0.3, 1.0, 0, 100, &ch, NULL), 0);
	assert_int_equal(xf_model_c2_point(&p, theta, 90, 0.3, 1.0, 0, 100, &cp, NULL), 0);
	assert_rel(cp, ch, 1e-14); /* no shear at 90°: both forms are the diffusion term */
	assert_int_equal(xf_model_c2_point(&p, theta, 0, 0.3, 1.0, 0, 100, &cp, NULL), 0);
	/* by hand: I^γ = 100 grid steps of 0.01, I^D = 100 steps of 1000 */
	double x = 0.5 * 0.0054 * 2e6 * 0.001 * (0.01 * 100);
	double sinc = sin(x) / x;
	double want = 1.0 + 0.3 * exp(-0.0054 * 0.0054 * 0.001 * 1000 * 100) * sinc * sinc;
	assert_rel(cp, want, 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reference_case_a),
		cmocka_unit_test(test_reference_case_b),
		cmocka_unit_test(test_full_matrix_symmetric),
		cmocka_unit_test(test_rows_bits),
		cmocka_unit_test(test_gradients_static),
		cmocka_unit_test(test_gradients_laminar),
		cmocka_unit_test(test_floors_and_clips),
		cmocka_unit_test(test_pnas_form),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
