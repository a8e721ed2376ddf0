/* The CUDA backend's arithmetic built for the host (kernel.h, src/gpu/slot.h, gpu_ref.c):
 * bit for bit the CPU scalar model at single points, and the production pass's sums in
 * another order (docs/gpu.md). No device needed; what needs one is xpcsfit-gpu validate. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpu/gpu.h"
#include "gpu/slot.h"
#include "synth.h"
#include "xpcsfit/likelihood.h"
#include "fit_request.h"

static const double theta[7] = { 1200.0, -0.8, 3.0, 0.02, -0.3, 0.001, 10.0 };

/* xf_point_row and xf_pair_g1 against xf_model_c2_point: the same bits. */
static void check_points(xf_mode mode, xf_shear_model shear)
{
	xf_model_grid g = { mode, shear, 60, 0.01, 0.0054, 2e6 };
	xf_frames f;
	assert_int_equal(xf_frames_alloc(&f, g.n_frames, mode == XF_MODE_LAMINAR), 0);
	xf_frames_compute(&f, &g, theta);
	const double phi[3] = { -40.0, 10.0, 95.0 }, con = 0.27, off = 1.01, data = 1.2;
	for (int a = 0; a < 3; a++) {
		double ang = (theta[XF_P_PHI0] - phi[a]) * XF_DEG2RAD;
		for (int i = 1; i < g.n_frames; i += 7)
			for (int j = i + 1; j < g.n_frames; j += 5) {
				double c2, grad[9], jrow[7], g1sq;
				assert_int_equal(xf_model_c2_point(&g, theta, phi[a], con, off, i,
								   j, &c2, grad),
						 0);
				double res = xf_point_row(&f, mode, shear, cos(ang), sin(ang), con,
							  off, i, j, data, jrow, &g1sq);
				double g1 =
					xf_pair_g1(&f, mode, shear, cos(ang), sin(ang), i, j, NULL);
				assert_memory_equal(jrow, grad, sizeof jrow);
				assert_true(g1sq == grad[XF_P_CONTRAST]);
				assert_true(off + con * g1 * g1 == c2);
				assert_true(data - res == c2 || fabs(data - res - c2) < 1e-15);
			}
	}
	xf_frames_free(&f);
}

static void test_points_bitwise(void **state)
{
	(void)state;
	check_points(XF_MODE_STATIC, XF_SHEAR_HOMODYNE);
	check_points(XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE);
	check_points(XF_MODE_LAMINAR, XF_SHEAR_PNAS2024);
}

/* The reference's sums (the kernels' order) against the production pass. */
static void check_sums(xf_mode mode)
{
	xf_dataset ds;
	assert_int_equal(xf_synth_benchmark(50, 3, &ds), 0);
	const double truth[7] = XF_BENCH_TRUTH;
	xf_request req;
	xf_test_request(&req, mode, truth);
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &req, &ds, &err), 0);
	xf_pairset ps;
	xf_pairset_all(&ps, ds.n_frames);
	xf_lik *lik = xf_lik_create(&pr, &ps, NULL, &err);
	assert_non_null(lik);
	int nf = pr.n_full, na = pr.n_phi;
	double *x = malloc(sizeof(double) * (size_t)nf);
	memcpy(x, pr.start, sizeof(double) * (size_t)nf);
	x[XF_P_D0] *= 1.3;
	double *jtj = calloc((size_t)nf * nf + nf, sizeof(double));
	xf_lik_out out = { 0, jtj, jtj + (size_t)nf * nf, 0 };
	assert_int_equal(xf_lik_eval(lik, x, &out), 0);
	/* the backend's inputs, as pass.c and pass_gpu.c make them */
	size_t n = (size_t)ds.n_frames, np = xf_fitted_pairs(n), k = 0;
	uint32_t *pi = malloc(sizeof(uint32_t) * np), *pj = malloc(sizeof(uint32_t) * np);
	double *c2 = malloc(sizeof(double) * np * (size_t)na);
	for (size_t i = 1; i + 1 < n; i++)
		for (size_t j = i + 1; j < n; j++, k++) {
			pi[k] = (uint32_t)i;
			pj[k] = (uint32_t)j;
			for (int p = 0; p < na; p++)
				c2[k * (size_t)na + (size_t)p] =
					xf_dataset_c2(&ds, p, xf_packed_index(n, i, j));
		}
	xf_gpu_data d = { pr.mode, pr.grid.shear_model, (int)n, na, np, pi, pj, c2 };
	xf_frames f;
	assert_int_equal(xf_frames_alloc(&f, (int)n, mode == XF_MODE_LAMINAR), 0);
	xf_frames_compute(&f, &pr.grid, x);
	double con[8], off[8], cs[8], sn[8];
	xf_problem_scaling(&pr, x, con, off);
	for (int p = 0; p < na; p++) {
		double a =
			mode == XF_MODE_LAMINAR ? (x[XF_P_PHI0] - ds.phi_deg[p]) * XF_DEG2RAD : 0.0;
		cs[p] = cos(a);
		sn[p] = sin(a);
	}
	xf_gpu_params prm = { &f, con, off, cs, sn };
	double *total = malloc(sizeof(double) * (size_t)xf_gpu_total_doubles(na));
	xf_gpu_ref_accumulate(&d, &prm, XF_GPU_HESSIAN, 0, xf_gpu_blocks(np), total);
	double chi2 = total[XF_SLOT_CHI2] / (pr.sigma * pr.sigma);
	assert_true(fabs(chi2 - out.chi2) <= 1e-12 * out.chi2);
	/* JᵀJ's physical block and b's physical part (the scaling part is assembled from
	 * the per-angle sums by the same pass.c code on both paths) */
	double w = 1.0 / (pr.sigma * pr.sigma), scale = 0.0, dmax = 0.0;
	for (int m = 0; m < pr.n_phys; m++)
		for (int l = m; l < pr.n_phys; l++) {
			double a = total[XF_SLOT_HPP + m * XF_N_PHYS + l] * w, b = jtj[m * nf + l];
			scale = fmax(scale, fabs(b));
			dmax = fmax(dmax, fabs(a - b));
		}
	assert_true(dmax <= 1e-12 * scale);
	for (int m = 0; m < pr.n_phys; m++) {
		double a = total[XF_SLOT_BP + m] * w, b = out.b[m];
		assert_true(fabs(a - b) <= 1e-10 * fabs(b) + 1e-12 * scale);
	}
	/* and the kernels' own order is a pure function of its inputs */
	double *again = malloc(sizeof(double) * (size_t)xf_gpu_total_doubles(na));
	xf_gpu_ref_accumulate(&d, &prm, XF_GPU_HESSIAN, 0, xf_gpu_blocks(np), again);
	assert_memory_equal(total, again, sizeof(double) * (size_t)xf_gpu_total_doubles(na));
	free(again);
	free(total);
	xf_frames_free(&f);
	free(pi);
	free(pj);
	free(c2);
	free(jtj);
	free(x);
	xf_lik_destroy(lik);
	xf_problem_free(&pr);
	xf_synth_free(&ds);
}

static void test_sums_match_pass(void **state)
{
	(void)state;
	check_sums(XF_MODE_STATIC);
	check_sums(XF_MODE_LAMINAR);
}

/* A build without a device (or without CUDA) refuses the GPU cleanly. */
static void test_no_device_refusal(void **state)
{
	(void)state;
	if (xf_gpu_device_count() > 0)
		skip();
	char msg[200] = "";
	int dev = 0;
	double score = 1.0;
	uint32_t p0 = 1, p1 = 2;
	double c2 = 1.0;
	xf_gpu_data d = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 3, 1, 1, &p0, &p1, &c2 };
	assert_null(xf_gpu_create(&d, &dev, &score, 1, 0, msg, sizeof msg));
	assert_true(strlen(msg) > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_points_bitwise),
		cmocka_unit_test(test_sums_match_pass),
		cmocka_unit_test(test_no_device_refusal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
