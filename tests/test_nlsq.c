/* test_nlsq.c — the NLSQ fit: streamed JᵀJ/Jᵀr against an explicit Jacobian, recovery of
 * known truths, bitwise determinism across virtual-device counts, bounds and statuses. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "synth.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/nlsq.h"
#include "fit_request.h"

static const double truth_laminar[7] = { 1500.0, -0.8, 20.0, 0.012, -0.3, 0.0005, 2.0 };

/* A laminar fit on g's geometry from a fixed start, at most 200 iterations */
static void laminar_fit(xf_test_fit *f, const xf_model_grid *g)
{
	const double start[7] = { 1000.0, -0.5, 10.0, 0.01, -0.2, 0.0, 0.0 };
	xf_test_fit_init(f, XF_MODE_LAMINAR, start);
	f->req.gap_A = g->gap_A;
	f->opt.max_iterations = 200;
}

/* Laminar data at φ = 0, 45, 90° (contrast 0.3, offset 1, noise 1e-3) on grid g. */
static void three_angle_dataset(xf_model_grid *g, int n_frames, uint64_t seed, xf_dataset *ds)
{
	*g = (xf_model_grid){ XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, n_frames, 0.01, 0.0054, 2e6 };
	const double phi[3] = { 0, 45, 90 }, con[3] = { 0.3, 0.3, 0.3 }, off[3] = { 1, 1, 1 };
	assert_int_equal(xf_synth_dataset(g, truth_laminar, 3, phi, con, off, 1e-3, seed, ds), 0);
}

/* Laminar recovery with known σ: every physical parameter within 4 reported standard
 * errors, reduced χ² within 5 % of 1; angles near the flow direction and at 90°. */
static void check_recovery(const double *truth, const double *start, xf_scaling_mode scaling)
{
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 120, 0.01, 0.0054, 2e6 };
	const double phi[6] = { -45, -2, 3, 30, 60, 90 };
	double con[6], off[6];
	for (int a = 0; a < 6; a++) {
		con[a] = 0.3;
		off[a] = 1.0;
	}
	const double noise = 1e-3;
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth, 6, phi, con, off, noise, 11, &ds), 0);
	xf_test_fit fc;
	laminar_fit(&fc, &g);
	fc.opt.has_sigma = 1;
	fc.opt.sigma = noise;
	fc.opt.per_angle_mode = scaling;
	for (int k = 0; k < 7; k++)
		fc.req.start[k] = start[k];
	xf_nlsq_result res;
	xf_error err = { 0 };
	assert_int_equal(xf_test_fit_run(&fc, &ds, 2, &res, &err), 0);
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	for (int k = 0; k < 7; k++) {
		double z = (res.values[k] - truth[k]) / res.uncertainties[k];
		if (!(fabs(z) <= 4.0))
			fail_msg("%s: fitted %.6g +/- %.3g, truth %.6g (%.1f sigma)", res.names[k],
				 res.values[k], res.uncertainties[k], truth[k], z);
	}
	if (!(fabs(res.reduced_chi_squared - 1.0) <= 0.05))
		fail_msg("reduced chi2 %.4f", res.reduced_chi_squared);
	for (int a = 0; a < 6; a++) {
		assert_true(fabs(res.contrast[a] - 0.3) <= 4 * res.contrast_unc[a]);
		assert_true(fabs(res.offset[a] - 1.0) <= 4 * res.offset_unc[a]);
	}
	assert_string_equal(xf_sigma_rule_name(res.sigma_rule), "given");
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

static void test_recovery_laminar(void **state)
{
	(void)state;
	/* α, β < 0 (as real laminar data gives) */
	const double start[7] = { 1000.0, -0.5, 10.0, 0.01, -0.2, 0.0, 0.0 };
	check_recovery(truth_laminar, start, XF_SCALING_AUTO);
	/* α, β > 0 with a visible diffusion decay, started a factor 3 off in D0 */
	const double positive[7] = { 30000.0, 0.6, 100.0, 0.02, 0.4, -0.001, -4.0 };
	const double start_pos[7] = { 10000.0, 0.3, 0.0, 0.01, 0.2, 0.0, 0.0 };
	check_recovery(positive, start_pos, XF_SCALING_INDIVIDUAL);
}

/* The same fit with 1, 2, 3 and 8 virtual devices gives the same bits. */
static void test_determinism_threads(void **state)
{
	(void)state;
	xf_model_grid g;
	xf_dataset ds;
	three_angle_dataset(&g, 150, 5, &ds);
	assert_true(ds.n_points > 3 * XF_PAIRS_PER_BLOCK); /* several blocks */
	xf_test_fit fc;
	laminar_fit(&fc, &g);
	const int threads[4] = { 1, 2, 3, 8 };
	xf_nlsq_result ref;
	xf_error err = { 0 };
	assert_int_equal(xf_test_fit_run(&fc, &ds, 1, &ref, &err), 0);
	for (int t = 1; t < 4; t++) {
		xf_nlsq_result res;
		assert_int_equal(xf_test_fit_run(&fc, &ds, threads[t], &res, &err), 0);
		assert_int_equal(res.iterations, ref.iterations);
		assert_memory_equal(&res.chi_squared, &ref.chi_squared, sizeof(double));
		assert_memory_equal(res.values, ref.values, sizeof(double) * ref.n_params);
		assert_memory_equal(res.covariance, ref.covariance,
				    sizeof(double) * ref.n_params * ref.n_params);
		xf_nlsq_result_free(&res);
	}
	xf_nlsq_result_free(&ref);
	xf_synth_free(&ds);
}

/* Tight bounds: the solution sits on the bound, never beyond it, and is reported. A
 * one-iteration budget is never "converged". Fixed parameters stay put. */
static void test_bounds_and_status(void **state)
{
	(void)state;
	xf_model_grid g;
	xf_dataset ds;
	three_angle_dataset(&g, 60, 3, &ds);
	xf_test_fit fc;
	laminar_fit(&fc, &g);
	fc.req.bounds[XF_P_D0].upper = 1200.0; /* truth 1500 lies outside */
	fc.req.fixed[XF_P_PHI0] = 1;
	fc.req.start[XF_P_PHI0] = 2.0;
	xf_nlsq_result res;
	xf_error err = { 0 };
	assert_int_equal(xf_test_fit_run(&fc, &ds, 2, &res, &err), 0);
	for (int k = 0; k < res.n_phys; k++) {
		assert_true(res.values[k] >= fc.req.bounds[k].lower);
		assert_true(res.values[k] <= fc.req.bounds[k].upper);
	}
	assert_true(res.values[XF_P_D0] == 1200.0);
	int found = 0;
	for (int k = 0; k < res.n_at_bounds; k++)
		found |= !strcmp(res.at_bounds[k], "D0");
	assert_true(found);
	assert_true(res.values[XF_P_PHI0] == 2.0 && res.is_fixed[XF_P_PHI0]);
	assert_true(isnan(res.uncertainties[XF_P_PHI0]));
	assert_int_equal(res.n_free, res.n_params - 1);
	xf_nlsq_result_free(&res);

	/* the budget caps iterations on all the data; a single path, no screening */
	fc.req.bounds[XF_P_D0].upper = 1e5;
	fc.opt.max_iterations = 1;
	fc.opt.hierarchical = 0;
	fc.opt.start_search = 0;
	assert_int_equal(xf_test_fit_run(&fc, &ds, 1, &res, &err), 0);
	assert_string_equal(xf_fit_status_name(res.status), "max_iterations");
	assert_string_equal(res.stop_reason, "max_iterations");
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* Static fit with unknown σ: the residual-variance rule and D0/alpha recovery. */
static void test_static_residual_variance(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 100, 0.1, 0.01, 2e6 };
	const double truth[7] = { 2000, 0.3, 50, 0, 0, 0, 0 };
	const double phi[2] = { 0, 90 }, con[2] = { 0.2, 0.25 }, off[2] = { 1.0, 1.02 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth, 2, phi, con, off, 2e-3, 9, &ds), 0);
	const double start[7] = { 1000.0, 0.0, 0.0 }; /* static: the first 3 */
	xf_test_fit fc;
	xf_test_fit_init(&fc, XF_MODE_STATIC, start);
	xf_nlsq_result res;
	xf_error err = { 0 };
	assert_int_equal(xf_test_fit_run(&fc, &ds, 2, &res, &err), 0);
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	assert_string_equal(xf_sigma_rule_name(res.sigma_rule), "residual_variance");
	assert_int_equal(res.n_params, 3 + 4); /* individual scaling for static */
	assert_true(fabs(res.residual_sd - 2e-3) < 1e-4);
	for (int k = 0; k < 3; k++)
		assert_true(fabs(res.values[k] - truth[k]) <= 4 * res.uncertainties[k]);
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* Regression: from the middle of the bounds (D0 = 50050, decay within two frames) the
 * first LM step used to jump D_offset so far negative that every rate sat on its floor:
 * a flat model with zero derivatives that the fit could never leave. */
static void test_no_floor_trap_from_middle_start(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 100, 0.1, 0.01, 2e6 };
	const double truth[7] = { 2000, 0.3, 50, 0, 0, 0, 0 };
	const double phi[2] = { 0, 90 }, con[2] = { 0.2, 0.25 }, off[2] = { 1.0, 1.02 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth, 2, phi, con, off, 2e-3, 9, &ds), 0);
	xf_test_fit fc; /* no start values: the middle of the bounds */
	xf_test_fit_init(&fc, XF_MODE_STATIC, NULL);
	xf_nlsq_result res;
	xf_error err = { 0 };
	assert_int_equal(xf_test_fit_run(&fc, &ds, 1, &res, &err), 0);
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	assert_true(fabs(res.residual_sd - 2e-3) < 1e-4);
	for (int k = 0; k < 3; k++)
		assert_true(fabs(res.values[k] - truth[k]) <= 4 * res.uncertainties[k]);
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* Regression: a short window (70 frames) that never decays to the baseline gives poor
 * quantile starts (contrast 0.06, offset 1.24 at 90°); the hierarchical stage then
 * pulled D_offset, gamma_dot_t0 and beta onto bounds and the fit stayed at χ² ≈ 74×
 * the noise. The direct fallback must reach the noise level. */
static void test_hierarchical_bad_scaling_start(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 70, 0.001, 0.0054, 2e6 };
	const double truth[7] = { 1500, -1.1, 10, 0.015, -0.3, 0.0005, 1.5 };
	const double phi[3] = { 0, 45, 90 }, con[3] = { 0.3, 0.3, 0.3 }, off[3] = { 1, 1, 1 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth, 3, phi, con, off, 1e-3, 3, &ds), 0);
	xf_test_fit fc;
	laminar_fit(&fc, &g);
	const double start[7] = { 1000, -0.6, 0.0, 0.01, 0.0, 0.0, 0.0 };
	for (int k = 0; k < 7; k++)
		fc.req.start[k] = start[k];
	fc.opt.per_angle_mode = XF_SCALING_INDIVIDUAL;
	fc.opt.has_sigma = 1;
	fc.opt.sigma = 1e-3;
	xf_nlsq_result res;
	xf_error err = { 0 };
	assert_int_equal(xf_test_fit_run(&fc, &ds, 2, &res, &err), 0);
	if (!(res.reduced_chi_squared < 1.1))
		fail_msg("reduced chi2 %.3f: stuck in a wrong minimum", res.reduced_chi_squared);
	assert_int_equal(res.n_at_bounds, 0);
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* Fourier scaling: contrast and offset that vary smoothly with φ (inside the order-2
 * series) are recovered per angle, and the physics with them. */
static void test_fourier_recovery(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 90, 0.001, 0.0054, 2e6 };
	const double phi[7] = { -80, -45, -10, 0, 30, 60, 90 };
	double con[7], off[7];
	for (int a = 0; a < 7; a++) {
		double r = phi[a] * M_PI / 180.0;
		con[a] = 0.3 + 0.03 * cos(r) - 0.01 * sin(2 * r);
		off[a] = 1.0 + 0.005 * sin(r);
	}
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth_laminar, 7, phi, con, off, 1e-3, 21, &ds), 0);
	xf_test_fit fc;
	laminar_fit(&fc, &g);
	fc.opt.per_angle_mode = XF_SCALING_FOURIER;
	fc.opt.has_sigma = 1;
	fc.opt.sigma = 1e-3;
	xf_nlsq_result res;
	xf_error err = { 0 };
	assert_int_equal(xf_test_fit_run(&fc, &ds, 2, &res, &err), 0);
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	assert_int_equal(res.n_params, 7 + 2 * 5);
	assert_string_equal(res.names[7], "contrast_c0");
	for (int a = 0; a < 7; a++) {
		if (!(fabs(res.contrast[a] - con[a]) <= 4 * res.contrast_unc[a]))
			fail_msg("contrast at %g deg: %.5f +/- %.2g, truth %.5f", phi[a],
				 res.contrast[a], res.contrast_unc[a], con[a]);
		assert_true(fabs(res.offset[a] - off[a]) <= 4 * res.offset_unc[a]);
	}
	for (int k = 0; k < 7; k++)
		assert_true(fabs(res.values[k] - truth_laminar[k]) <= 4 * res.uncertainties[k]);
	assert_true(fabs(res.reduced_chi_squared - 1.0) < 0.05);
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* Multi-start adds n − 1 Latin-hypercube starts to the screened ones, is deterministic
 * for a seed and keeps the best χ². */
static void test_multi_start(void **state)
{
	(void)state;
	xf_model_grid g;
	xf_dataset ds;
	three_angle_dataset(&g, 50, 2, &ds);
	xf_test_fit fc;
	laminar_fit(&fc, &g);
	fc.opt.multi_start = 1;
	fc.opt.n_starts = 4;
	fc.opt.max_iterations = 60;
	xf_nlsq_result a, b, single;
	xf_error err = { 0 };
	assert_int_equal(xf_test_fit_run(&fc, &ds, 2, &a, &err), 0);
	assert_int_equal(xf_test_fit_run(&fc, &ds, 1, &b, &err), 0);
	assert_memory_equal(a.values, b.values, sizeof(double) * a.n_params);
	fc.opt.multi_start = 0;
	assert_int_equal(xf_test_fit_run(&fc, &ds, 1, &single, &err), 0);
	assert_int_equal(a.n_starts_run, single.n_starts_run + 3);
	assert_true(a.chi_squared <= single.chi_squared * (1 + 1e-12));
	xf_nlsq_result_free(&a);
	xf_nlsq_result_free(&b);
	xf_nlsq_result_free(&single);
	xf_synth_free(&ds);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sort-based NumPy 'linear' percentile, independent of the quickselect in quantile.c. */
static double sorted_percentile(double *v, size_t n, double q)
{
	qsort(v, n, sizeof(double), cmp_double);
	double h = (double)(n - 1) * q / 100.0;
	size_t lo = (size_t)h;
	return lo + 1 < n ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[n - 1];
}

/* Quantile starts (nlsq.md) against a brute-force computation over explicit lag arrays;
 * the noisy data has ties removed by construction, rounded data has many ties. */
static void test_quantile_estimates(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 57, 0.1, 0.01, 2e6 };
	const double truth[7] = { 3000, 0.2, 10, 0, 0, 0, 0 };
	const double phi[2] = { 0, 90 }, con[2] = { 0.2, 0.3 }, off[2] = { 1.0, 1.05 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth, 2, phi, con, off, 5e-3, 4, &ds), 0);
	size_t n = 57, n_pairs = xf_fitted_pairs(n);
	/* round the second angle to 3 decimals: many ties */
	for (size_t k = 0; k < xf_packed_size(n); k++)
		ds.c2[1][k] = round(ds.c2[1][k] * 1000.0) / 1000.0;
	xf_bound cb = { 0, 1, 0.5, 0.25 }, ob = { 0.5, 1.5, 1, 0.25 };
	double qc[2], qo[2];
	xf_quantile_scaling(&ds, &cb, &ob, qc, qo);
	double *lag = malloc(sizeof(double) * n_pairs), *vals = malloc(sizeof(double) * n_pairs);
	size_t m = 0;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			lag[m++] = (double)(j - i);
	double *lag_sorted = malloc(sizeof(double) * n_pairs);
	memcpy(lag_sorted, lag, sizeof(double) * n_pairs);
	double lag80 = sorted_percentile(lag_sorted, n_pairs, 80.0);
	memcpy(lag_sorted, lag, sizeof(double) * n_pairs);
	double lag20 = sorted_percentile(lag_sorted, n_pairs, 20.0);
	for (int a = 0; a < 2; a++) {
		size_t k = 0, nv = 0;
		for (size_t i = 1; i < n; i++)
			for (size_t j = i + 1; j < n; j++, k++)
				if (lag[k] >= lag80)
					vals[nv++] = ds.c2[a][xf_packed_index(n, i, j)];
		double want_off = sorted_percentile(vals, nv, 10.0);
		k = nv = 0;
		for (size_t i = 1; i < n; i++)
			for (size_t j = i + 1; j < n; j++, k++)
				if (lag[k] <= lag20)
					vals[nv++] = ds.c2[a][xf_packed_index(n, i, j)];
		double want_con = sorted_percentile(vals, nv, 90.0) - want_off;
		assert_true(fabs(qo[a] - want_off) < 1e-15);
		assert_true(fabs(qc[a] - want_con) < 1e-14);
	}
	free(lag);
	free(lag_sorted);
	free(vals);
	xf_synth_free(&ds);
}

int main(void)
{
	xf_log_set_stderr(0, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recovery_laminar),
		cmocka_unit_test(test_determinism_threads),
		cmocka_unit_test(test_bounds_and_status),
		cmocka_unit_test(test_static_residual_variance),
		cmocka_unit_test(test_multi_start),
		cmocka_unit_test(test_no_floor_trap_from_middle_start),
		cmocka_unit_test(test_hierarchical_bad_scaling_start),
		cmocka_unit_test(test_fourier_recovery),
		cmocka_unit_test(test_quantile_estimates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
