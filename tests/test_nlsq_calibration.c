/* test_nlsq_calibration.c — are the reported uncertainties honest? Fit 30 independent
 * noise realisations of one laminar truth with known σ and check that the pulls
 * z = (fit − truth)/uncertainty have mean ≈ 0 and standard deviation ≈ 1 for every
 * physical parameter, and that the reduced χ² averages to 1. The seeds are fixed, so
 * the check is deterministic. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "synth.h"
#include "xpcsfit/nlsq.h"
#include "fit_request.h"

#define N_REALISATIONS 30

static void test_pull_distribution(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 70, 0.001, 0.0054, 2e6 };
	const double truth[7] = { 1500, -1.1, 10, 0.015, -0.3, 0.0005, 1.5 };
	const double start[7] = { 1000, -0.6, 0, 0.01, 0, 0, 0 };
	const double phi[4] = { -30, 0, 45, 90 }, con[4] = { 0.3, 0.3, 0.3, 0.3 };
	const double off[4] = { 1, 1, 1, 1 };
	const double noise = 1e-3;
	double sum_z[7] = { 0 }, sum_z2[7] = { 0 }, sum_red = 0.0;
	for (int r = 0; r < N_REALISATIONS; r++) {
		xf_dataset ds;
		assert_int_equal(xf_synth_dataset(&g, truth, 4, phi, con, off, noise, 100 + r, &ds),
				 0);
		xf_request req; /* σ given: the data's noise */
		xf_nlsq_options opt;
		xf_test_request(&req, XF_MODE_LAMINAR, start);
		xf_nlsq_options_defaults(&opt);
		req.has_sigma = opt.has_sigma = 1;
		req.sigma = opt.sigma = noise;
		xf_nlsq_result res;
		xf_error err = { 0 };
		assert_int_equal(xf_nlsq_fit(&req, &opt, &ds, 2, NULL, NULL, &res, &err), 0);
		assert_string_equal(xf_fit_status_name(res.status), "converged");
		for (int k = 0; k < 7; k++) {
			double z = (res.values[k] - truth[k]) / res.uncertainties[k];
			sum_z[k] += z;
			sum_z2[k] += z * z;
		}
		sum_red += res.reduced_chi_squared;
		xf_nlsq_result_free(&res);
		xf_dataset_free(&ds);
	}
	for (int k = 0; k < 7; k++) {
		double mean = sum_z[k] / N_REALISATIONS;
		double sd = sqrt((sum_z2[k] - N_REALISATIONS * mean * mean) / (N_REALISATIONS - 1));
		/* 30 draws: the sd of a standard normal sample is known to ±0.13 (1σ), the
		 * mean to ±0.18; the bounds are about ±2.5σ */
		if (!(fabs(mean) < 0.5 && sd > 0.67 && sd < 1.33))
			fail_msg("%s: pull mean %.2f sd %.2f", xf_param_names[k], mean, sd);
	}
	double red = sum_red / N_REALISATIONS;
	if (!(fabs(red - 1.0) < 0.02))
		fail_msg("mean reduced chi2 %.4f", red);
}

int main(void)
{
	xf_log_set_stderr(0, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pull_distribution),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
