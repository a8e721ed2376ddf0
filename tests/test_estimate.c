/* The method-neutral estimate (include/xpcsfit/estimate.h, adr/0044): the NLSQ and CMC
 * converters copy names, values, uncertainties, scaling, grid, quality and timings, give
 * fixed parameters a NaN sd, borrow the draws, and name the route; the one quality-reason
 * helper stops at XF_QUALITY_MAX_REASONS; the surfaces evaluate the model on the
 * estimate's grid, not a config's. No data file needed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "surface/surfaces.h"
#include "xpcsfit/cmc.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/model.h"
#include "xpcsfit/nlsq.h"

static const xf_model_grid grid = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 8, 0.01, 0.005, 3e6 };

static void test_from_nlsq(void **state)
{
	(void)state;
	char *names[5] = { "D0", "alpha", "D_offset", "contrast", "offset" };
	double values[5] = { 1000.0, -0.5, 1.0, 0.3, 1.0 };
	double unc[5] = { 10.0, NAN, 0.1, 0.01, 0.02 };
	int fixed[5] = { 0, 1, 0, 0, 0 };
	double cov[25];
	for (int k = 0; k < 25; k++)
		cov[k] = k;
	double phi[2] = { -10.0, 20.0 }, con[2] = { 0.3, 0.31 }, off[2] = { 1.0, 1.01 };
	double con_u[2] = { 0.01, 0.02 }, off_u[2] = { 0.03, 0.04 };
	xf_nlsq_result res = { .mode = XF_MODE_STATIC,
			       .n_params = 5,
			       .names = names,
			       .values = values,
			       .uncertainties = unc,
			       .is_fixed = fixed,
			       .covariance = cov,
			       .n_phys = 3,
			       .n_phi = 2,
			       .phi_deg = phi,
			       .contrast = con,
			       .contrast_unc = con_u,
			       .offset = off,
			       .offset_unc = off_u,
			       .status = XF_STATUS_CONVERGED,
			       .cov_rank = 4,
			       .scaling_mode = XF_SCALING_INDIVIDUAL,
			       .time_load_s = 1.5,
			       .time_fit_s = 2.5,
			       .time_total_s = 4.0 };
	xf_quality_add_reason(&res.quality, "at a bound: %s", "alpha");
	res.quality.overall = XF_QUALITY_MARGINAL;
	xf_estimate e;
	xf_error err = { 0 };
	assert_int_equal(xf_estimate_from_nlsq(&res, &grid, &e, &err), 0);
	assert_int_equal(e.method, XF_METHOD_NLSQ);
	assert_int_equal(e.route, XF_POSTERIOR_ROUTE_NONE);
	assert_int_equal(e.cov_rank, 4);
	assert_int_equal(e.scaling_mode, XF_SCALING_INDIVIDUAL);
	assert_true(e.grid.gap_A == 3e6 && e.grid.n_frames == 8 && e.grid.q == 0.005);
	assert_int_equal(e.n_params, 5);
	assert_int_equal(e.n_phys, 3);
	assert_string_equal(e.names[3], "contrast");
	assert_string_equal(e.units[0], xf_param_units[0]);
	assert_string_equal(e.units[4], "1"); /* a scaling coefficient, as the files say */
	/* its words, set where it is made (adr/0125), are the tables' */
	assert_string_equal(e.words.method, "nlsq");
	assert_string_equal(e.words.mode, xf_mode_name(e.grid.mode));
	assert_string_equal(e.words.scaling, "individual");
	assert_string_equal(e.words.status, "converged");
	assert_string_equal(e.words.quality, xf_quality_level_name(e.quality.overall));
	assert_ptr_equal(e.words.route, xf_route_record_of(XF_POSTERIOR_ROUTE_NONE));
	assert_true(e.values[0] == 1000.0 && isnan(e.sd[1]) && e.is_fixed[1] == 1);
	assert_true(e.covariance && e.covariance[24] == 24.0);
	assert_int_equal(e.n_draws, 0);
	assert_null(e.median);
	assert_true(e.contrast[1] == 0.31 && e.offset_sd[0] == 0.03 && e.phi_deg[1] == 20.0);
	assert_string_equal(xf_fit_status_name(e.status), "converged");
	assert_int_equal(e.quality.overall, XF_QUALITY_MARGINAL);
	assert_string_equal(e.quality.reasons[0], "at a bound: alpha");
	assert_int_equal(e.n_stages, 3);
	assert_string_equal(e.stages[1].name, "fit");
	assert_true(e.stages[1].seconds == 2.5);
	double theta[XF_N_PHYS];
	xf_estimate_theta(&e, theta);
	assert_true(theta[0] == 1000.0 && theta[2] == 1.0 && theta[3] == 0.0);
	xf_estimate_free(&e);
	assert_null(e.values);
	xf_estimate_free(&e); /* a zeroed estimate is fine */
}

static void test_from_cmc(void **state)
{
	(void)state;
	char *names[5] = { "D0", "alpha", "D_offset", "contrast", "offset" };
	double mean[5] = { 900.0, -0.4, 0.0, 0.3, 1.0 };
	double sd[5] = { 9.0, 0.1, 0.0, 0.01, 0.01 };
	double med[5] = { 901.0, -0.41, 0.0, 0.3, 1.0 };
	double draws[10] = { 0 };
	int fixed[5] = { 0, 0, 1, 0, 0 };
	double phi[1] = { 0.0 }, con[1] = { 0.3 }, off[1] = { 1.0 }, csd[1] = { 0.01 };
	xf_cmc_result res = { .mode = XF_MODE_STATIC,
			      .n_params = 5,
			      .n_phys = 3,
			      .names = names,
			      .is_fixed = fixed,
			      .n_draws = 2,
			      .draws = draws,
			      .mean = mean,
			      .sd = sd,
			      .median = med,
			      .q05 = med,
			      .q95 = med,
			      .n_phi = 1,
			      .phi_deg = phi,
			      .contrast = con,
			      .contrast_sd = csd,
			      .offset = off,
			      .offset_sd = csd,
			      .n_shards = 1,
			      .status = XF_STATUS_CONVERGED };
	xf_estimate e;
	xf_error err = { 0 };
	assert_int_equal(xf_estimate_from_cmc(&res, &grid, &e, &err), 0);
	assert_int_equal(e.method, XF_METHOD_CMC);
	/* a run that ended before its route: one shard is NUTS */
	assert_int_equal(e.route, XF_POSTERIOR_ROUTE_NUTS);
	assert_true(e.values[0] == 900.0 && e.sd[0] == 9.0 && isnan(e.sd[2]));
	assert_true(e.median[0] == 901.0 && e.q95[1] == -0.41);
	assert_ptr_equal(e.draws, draws); /* borrowed */
	assert_int_equal(e.n_draws, 2);
	assert_null(e.covariance);
	xf_estimate_free(&e);
	res.n_shards = 4;
	assert_int_equal(xf_estimate_from_cmc(&res, &grid, &e, &err), 0);
	assert_int_equal(e.route, XF_POSTERIOR_ROUTE_CMC);
	assert_string_equal(e.words.method, "cmc");
	assert_string_equal(e.words.route->name, "cmc");
	assert_string_equal(e.words.route->posterior, "consensus");
	xf_estimate_free(&e);
	/* the route the run recorded (adr/0045) */
	res.n_shards = 0;
	res.route = XF_POSTERIOR_ROUTE_IMPORTANCE;
	res.approx.done = 1;
	res.time_approx_s = 2.5;
	assert_int_equal(xf_estimate_from_cmc(&res, &grid, &e, &err), 0);
	assert_int_equal(e.route, XF_POSTERIOR_ROUTE_IMPORTANCE);
	assert_string_equal(xf_posterior_route_name(e.route), "importance");
	assert_string_equal(e.stages[0].name, "importance route");
	xf_estimate_free(&e);
}

static void test_quality_reasons(void **state)
{
	(void)state;
	xf_quality q = { 0 };
	for (int k = 0; k < XF_QUALITY_MAX_REASONS + 5; k++)
		xf_quality_add_reason(&q, "reason %d", k);
	assert_int_equal(q.n_reasons, XF_QUALITY_MAX_REASONS);
	assert_string_equal(q.reasons[XF_QUALITY_MAX_REASONS - 1], "reason 15");
}

/* the fitted surface is the model on the estimate's grid (its gap, q, dt), not a default */
/* Every status by the name the files carry and back; a name that is none is refused and
 * leaves the status as it was; a status out of range reads as failed. */
static void test_status_names(void **state)
{
	(void)state;
	const char *names[] = { "failed", "converged", "max_iterations", "ridge" };
	for (int k = 0; k < XF_STATUS_N; k++) {
		xf_fit_status s = XF_STATUS_N;
		assert_string_equal(xf_fit_status_name((xf_fit_status)k), names[k]);
		assert_int_equal(xf_fit_status_parse(names[k], &s), 0);
		assert_int_equal(s, k);
	}
	xf_fit_status s = XF_STATUS_CONVERGED;
	assert_int_equal(xf_fit_status_parse("Converged", &s), -1);
	assert_int_equal(xf_fit_status_parse("", &s), -1);
	assert_int_equal(xf_fit_status_parse(NULL, &s), -1);
	assert_int_equal(s, XF_STATUS_CONVERGED);
	assert_string_equal(xf_fit_status_name(XF_STATUS_N), "failed");
	/* what a zeroed result says, and which statuses are not usable */
	xf_nlsq_result zero = { 0 };
	assert_string_equal(xf_fit_status_name(zero.status), "failed");
	assert_true(xf_fit_status_failed(XF_STATUS_FAILED));
	assert_true(xf_fit_status_failed(XF_STATUS_RIDGE));
	assert_false(xf_fit_status_failed(XF_STATUS_CONVERGED));
	assert_false(xf_fit_status_failed(XF_STATUS_MAX_ITERATIONS));
}

static void test_surface_uses_grid(void **state)
{
	(void)state;
	enum { N = 8 };
	double phi[1] = { 30.0 };
	xf_dataset ds = { 0 };
	ds.n_phi = 1;
	ds.n_frames = N;
	ds.phi_deg = phi;
	char *names[9] = { "D0",	   "alpha",    "D_offset",
			   "gamma_dot_t0", "beta",     "gamma_dot_t_offset",
			   "phi0",	   "contrast", "offset" };
	double values[9] = { 1000.0, -0.5, 0.0, 0.01, 0.0, 0.0, 0.0, 0.3, 1.0 };
	int fixed[9] = { 0 };
	double con[1] = { 0.3 }, off[1] = { 1.0 };
	xf_nlsq_result res = { .mode = XF_MODE_LAMINAR,
			       .n_params = 9,
			       .names = names,
			       .values = values,
			       .is_fixed = fixed,
			       .n_phys = 7,
			       .n_phi = 1,
			       .phi_deg = phi,
			       .contrast = con,
			       .offset = off };
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, N, 0.1, 0.005, 2e6 };
	xf_estimate e;
	xf_error err = { 0 };
	assert_int_equal(xf_estimate_from_nlsq(&res, &g, &e, &err), 0);
	double *a = malloc(sizeof(double) * N * N), *b = malloc(sizeof(double) * N * N);
	double *want = malloc(sizeof(double) * N * N);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(want);
	assert_int_equal(xf_surface_fit(&e, &ds, 0, a), 0);
	assert_int_equal(xf_model_c2_full(&g, values, 30.0, 0.3, 1.0, want), 0);
	assert_memory_equal(a, want, sizeof(double) * N * N);
	e.grid.gap_A = 4e6; /* another gap: another shear term */
	assert_int_equal(xf_surface_fit(&e, &ds, 0, b), 0);
	assert_true(memcmp(a, b, sizeof(double) * N * N) != 0);
	free(a);
	free(b);
	free(want);
	xf_estimate_free(&e);
}

/* The routes' records (adr/0120): the words results.h5 and parameters.json write for each
 * route (docs/outputs.md), the importance route alone published from weighted points,
 * consensus alone correctable, and no route's record for a value that is no route. */
static void test_route_records(void **state)
{
	(void)state;
	static const struct {
		xf_posterior_route route;
		const char *name, *posterior, *corrected;
		int from_points;
	} want[] = {
		{ XF_POSTERIOR_ROUTE_IMPORTANCE, "importance", "importance_sampled_exact", NULL,
		  1 },
		{ XF_POSTERIOR_ROUTE_NUTS, "nuts", "exact_nuts", NULL, 0 },
		{ XF_POSTERIOR_ROUTE_CMC, "cmc", "consensus", "importance_weighted", 0 },
	};
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
		const xf_route_record *r = xf_route_record_of(want[k].route);
		assert_int_equal(r->route, want[k].route);
		assert_string_equal(r->name, want[k].name);
		assert_string_equal(xf_posterior_route_name(want[k].route), want[k].name);
		assert_string_equal(r->posterior, want[k].posterior);
		if (want[k].corrected)
			assert_string_equal(r->posterior_corrected, want[k].corrected);
		else
			assert_null(r->posterior_corrected);
		assert_int_equal(r->from_importance_points, want[k].from_points);
	}
	const xf_route_record *none = xf_route_record_of(XF_POSTERIOR_ROUTE_NONE);
	assert_int_equal(none->route, XF_POSTERIOR_ROUTE_NONE);
	assert_string_equal(none->name, "");
	assert_ptr_equal(xf_route_record_of((xf_posterior_route)99), none);
	assert_ptr_equal(xf_route_record_of((xf_posterior_route)-1), none);
	/* the asked-for routes, as configs spell them (optimization.cmc.route) */
	assert_string_equal(xf_cmc_route_names[XF_CMC_ROUTE_AUTO], "auto");
	assert_string_equal(xf_cmc_route_names[XF_CMC_ROUTE_NUTS], "nuts");
	assert_null(xf_cmc_route_names[XF_CMC_ROUTE_N]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_nlsq),	  cmocka_unit_test(test_from_cmc),
		cmocka_unit_test(test_quality_reasons),	  cmocka_unit_test(test_status_names),
		cmocka_unit_test(test_surface_uses_grid), cmocka_unit_test(test_route_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
