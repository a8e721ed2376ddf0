/* test_nlsq_search.c — finding the right optimum and saying honestly when it was not
 * found (docs/nlsq.md "Finding the optimum", "Status and quality"): the start estimate,
 * the wrong-minimum, flat-start and stall regressions, the cost against the direct and
 * hierarchical paths, and the convergence checks on data that cannot inform a
 * parameter. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nlsq/lm.h"
#include "nlsq/nlsq_internal.h"
#include "synth.h"
#include "xpcsfit/nlsq.h"
#include "fit_request.h"

/* Laminar data at the dt and q of homodyne's template, shear and diffusion both visible
 * within 300 frames. */
static const double truth[7] = { 8000.0, -0.4, 50.0, 0.004, -0.2, 0.0003, 1.0 };
static const double homodyne_mid_bounds[7] = { 50050.0, 0.0, 0.0, 0.2500005, 0.0, 0.0, 0.0 };

static void make_data(const double *phi, int n_phi, int n_frames, uint64_t seed, xf_dataset *ds)
{
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, n_frames, 0.001, 0.0054, 2e6 };
	double con[16], off[16];
	for (int a = 0; a < n_phi; a++) {
		con[a] = 0.3;
		off[a] = 1.0;
	}
	assert_int_equal(xf_synth_dataset(&g, truth, n_phi, phi, con, off, 2e-3, seed, ds), 0);
}

static void six_angles(xf_dataset *ds)
{
	const double phi[6] = { -5, 0, 30, 60, 88, 92 };
	make_data(phi, 6, 300, 4, ds);
}

/* A fit of the data: start values (NULL: the bounds' middles), the search, the path. */
static void case_for(xf_test_fit *fc, xf_mode mode, const double *start, int search,
		     int hierarchical)
{
	xf_test_fit_init(fc, mode, start);
	fc->opt.start_search = search;
	fc->opt.hierarchical = hierarchical;
}

static void fit(const xf_test_fit *fc, const xf_dataset *ds, xf_nlsq_result *res)
{
	xf_error err = { 0 };
	int rc = xf_test_fit_run(fc, ds, 2, res, &err);
	if (rc)
		fail_msg("fit failed: %s", err.msg);
}

/* χ² of the fit started at the truth (one direct path): the optimum of the data. */
static double optimum_chi2(xf_mode mode, const double *start, const xf_dataset *ds)
{
	xf_test_fit fc;
	xf_nlsq_result res;
	case_for(&fc, mode, start, 0, 0);
	fit(&fc, ds, &res);
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	double chi2 = res.chi_squared;
	xf_nlsq_result_free(&res);
	return chi2;
}

static int has_reason(const xf_nlsq_result *res, const char *text)
{
	for (int k = 0; k < res->quality.n_reasons; k++)
		if (strstr(res->quality.reasons[k], text))
			return 1;
	return 0;
}

/* The start estimated from the data lands near the truth: D(t) and γ̇(t) at the middle of
 * the window within 30 %, the exponents within 0.25. */
static void test_estimate(void **state)
{
	(void)state;
	xf_dataset ds;
	six_angles(&ds);
	xf_test_fit fc;
	case_for(&fc, XF_MODE_LAMINAR, NULL, 1, 0);
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &fc.req, &ds, &err), 0);
	double est[7], mean_g1sq;
	assert_int_equal(xf_nlsq_estimate_start(&pr, est, &mean_g1sq), 0);
	const double t_mid = 0.15; /* s */
	double d_true = truth[0] * pow(t_mid, truth[1]) + truth[2];
	double d_est = est[0] * pow(t_mid, est[1]) + est[2];
	double g_true = truth[3] * pow(t_mid, truth[4]) + truth[5];
	double g_est = est[3] * pow(t_mid, est[4]) + est[5];
	if (!(fabs(d_est / d_true - 1.0) < 0.3 && fabs(g_est / g_true - 1.0) < 0.3))
		fail_msg("D(%.2f s) %.4g (truth %.4g), gamma_dot %.4g (truth %.4g)", t_mid, d_est,
			 d_true, g_est, g_true);
	assert_true(fabs(est[1] - truth[1]) < 0.25 && fabs(est[4] - truth[4]) < 0.25);
	assert_true(mean_g1sq > 0.05 && mean_g1sq < 1.0);
	xf_problem_free(&pr);
	xf_synth_free(&ds);
}

/* Static data: D(t) from every angle. */
static void test_estimate_static(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 120, 0.1, 0.01, 2e6 };
	const double th[7] = { 2000, 0.3, 50, 0, 0, 0, 0 };
	const double phi[2] = { 0, 90 }, con[2] = { 0.2, 0.25 }, off[2] = { 1.0, 1.02 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, th, 2, phi, con, off, 2e-3, 9, &ds), 0);
	xf_test_fit fc;
	case_for(&fc, XF_MODE_STATIC, NULL, 1, 0);
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &fc.req, &ds, &err), 0);
	double est[7], mean_g1sq;
	assert_int_equal(xf_nlsq_estimate_start(&pr, est, &mean_g1sq), 0);
	double d_true = th[0] * pow(3.0, th[1]) + th[2], d_est = est[0] * pow(3.0, est[1]) + est[2];
	if (!(fabs(d_est / d_true - 1.0) < 0.3))
		fail_msg("D(3 s) %.4g, truth %.4g", d_est, d_true);
	xf_problem_free(&pr);
	xf_synth_free(&ds);
}

/* Regression (wrong minimum): from homodyne's template values with γ̇0 a decade high
 * (0.1 1/s) one local path ends in another minimum, χ² 29× the optimum, with α pinned
 * on its bound: it must not say converged there. Since adr/0046 the restarts from inside
 * the bounds take the single path off that bound to the optimum (converged, quality
 * marginal: a single start); the default search from the same start reaches the optimum
 * without them and says converged, quality good. */
static void test_wrong_minimum(void **state)
{
	(void)state;
	xf_dataset ds;
	six_angles(&ds);
	double best = optimum_chi2(XF_MODE_LAMINAR, truth, &ds);
	const double start[7] = { 1000.0, 0.5, 10.0, 0.1, 0.5, 0.0, 0.0 };
	xf_test_fit fc;
	xf_nlsq_result res;
	case_for(&fc, XF_MODE_LAMINAR, start, 0, 0);
	fit(&fc, &ds, &res);
	/* the trap is real (a restart off its bound lowered χ²), and left */
	assert_true(res.search.n_bound_improved >= 1);
	if (!(res.chi_squared <= best * (1 + 1e-6)))
		fail_msg("single path ended at chi2 %.10g, optimum %.10g", res.chi_squared, best);
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	assert_int_equal(res.quality.overall, XF_QUALITY_MARGINAL);
	assert_true(has_reason(&res, "single start"));
	xf_nlsq_result_free(&res);
	fc.opt.start_search = 1;
	fit(&fc, &ds, &res);
	if (!(res.chi_squared <= best * (1 + 1e-6)))
		fail_msg("search ended at chi2 %.10g, optimum %.10g", res.chi_squared, best);
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	assert_int_equal(res.quality.overall, XF_QUALITY_GOOD);
	assert_true(res.quality.distance_se <= XF_CONVERGED_SE);
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* Regression (flat start): homodyne's mid-bounds start (γ̇0 = 0.25 1/s) on data without
 * angles near 90° decorrelates everything within a few frames. The search sees it as
 * flat, moves it and reaches the optimum. */
static void test_flat_start(void **state)
{
	(void)state;
	const double phi[3] = { 0, 20, 45 };
	xf_dataset ds;
	make_data(phi, 3, 300, 5, &ds);
	double best = optimum_chi2(XF_MODE_LAMINAR, truth, &ds);
	xf_test_fit fc;
	xf_nlsq_result res;
	case_for(&fc, XF_MODE_LAMINAR, homodyne_mid_bounds, 1, 1);
	fit(&fc, &ds, &res);
	assert_true(res.search.n_replaced >= 1);
	if (!(res.chi_squared <= best * (1 + 1e-6)))
		fail_msg("chi2 %.10g, optimum %.10g", res.chi_squared, best);
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* values: null: the estimate and the spread reach the optimum with few iterations on all
 * the data, the same bits for 1 and 3 virtual devices. */
static void test_values_null(void **state)
{
	(void)state;
	xf_dataset ds;
	six_angles(&ds);
	double best = optimum_chi2(XF_MODE_LAMINAR, truth, &ds);
	xf_test_fit fc;
	xf_nlsq_result a, b;
	xf_error err = { 0 };
	case_for(&fc, XF_MODE_LAMINAR, NULL, 1, 1);
	assert_int_equal(xf_test_fit_run(&fc, &ds, 1, &a, &err), 0);
	assert_int_equal(xf_test_fit_run(&fc, &ds, 3, &b, &err), 0);
	assert_true(a.chi_squared <= best * (1 + 1e-6));
	assert_string_equal(xf_fit_status_name(a.status), "converged");
	assert_true(a.iterations <= 10);
	assert_memory_equal(a.values, b.values, sizeof(double) * a.n_params);
	assert_memory_equal(&a.search.pass_equivalents, &b.search.pass_equivalents, sizeof(double));
	assert_string_equal(a.search.chosen, b.search.chosen);
	xf_nlsq_result_free(&a);
	xf_nlsq_result_free(&b);
	xf_synth_free(&ds);
}

/* Iterations on all the data: never more than 1.5× the better of the direct and the
 * hierarchical path from the same start, wherever those reach the optimum. */
static void test_iterations_against_paths(void **state)
{
	(void)state;
	xf_dataset ds;
	six_angles(&ds);
	double best = optimum_chi2(XF_MODE_LAMINAR, truth, &ds);
	const double starts[3][7] = {
		{ 10000, -0.3, 0, 0.005, -0.1, 0, 0 },
		{ 1000, 0.5, 10, 0.01, 0.5, 0, 0 }, /* homodyne's template values */
		{ 5000, 0, 0, 0.05, -1, 0, 5 },
	};
	for (int s = 0; s < 3; s++) {
		int paths = 1 << 30;
		for (int h = 0; h < 2; h++) {
			xf_test_fit fc;
			xf_nlsq_result res;
			case_for(&fc, XF_MODE_LAMINAR, starts[s], 0, h);
			fit(&fc, &ds, &res);
			if (res.chi_squared <= best * (1 + 1e-6) && res.iterations < paths)
				paths = res.iterations;
			xf_nlsq_result_free(&res);
		}
		xf_test_fit fc;
		xf_nlsq_result res;
		case_for(&fc, XF_MODE_LAMINAR, starts[s], 1, 1);
		fit(&fc, &ds, &res);
		assert_true(res.chi_squared <= best * (1 + 1e-6));
		if (!(res.iterations <= 1.5 * paths))
			fail_msg("start %d: %d iterations, the better path %d", s, res.iterations,
				 paths);
		xf_nlsq_result_free(&res);
	}
	xf_synth_free(&ds);
}

/* The stall test on fixed numbers: χ² barely moved and λ grew 1000-fold, or sits high. */
static void test_stall_rule(void **state)
{
	(void)state;
	assert_true(xf_lm_stalled(100.0, 1e-3, 100.0 - 1e-4, 1.0));
	assert_true(xf_lm_stalled(100.0, 10.0, 100.0 - 1e-4, 2e3));
	assert_false(xf_lm_stalled(100.0, 1e-3, 99.0, 1.0));   /* χ² moved */
	assert_false(xf_lm_stalled(100.0, 1e-3, 100.0, 2e-3)); /* λ fine */
}

/* A smooth bowl whose minimum lies off a plateau the start sits on: every step that
 * leaves the plateau is refused, the steps that stay on it shrink towards its edge, λ
 * climbs while χ² barely moves. The solver stops as stalled long before its budget,
 * and never calls that converged. */
typedef struct toy {
	int calls;
} toy;

static int staircase_eval(void *ctx, const double *x, double *chi2, double *jtj, double *b)
{
	toy *t = ctx;
	t->calls++;
	double u = x[0] - 3.0,
	       v = x[1] +
		   1.0; /* the smooth part's model is exact; everything beyond 0.5 from x0 = 10 is lifted */
	double stair = fabs(x[0] - 10.0) < 0.5 ? 0.0 : 1e3;
	*chi2 = u * u + v * v + 100.0 + stair;
	if (jtj) {
		jtj[0] = 1.0;
		jtj[1] = jtj[2] = 0.0;
		jtj[3] = 1.0;
		b[0] = -u;
		b[1] = -v;
	}
	return 0;
}

static void test_stall_stop(void **state)
{
	(void)state;
	const double lower[2] = { -100, -100 }, upper[2] = { 100, 100 }, scale[2] = { 200, 200 };
	const int mask[2] = { 1, 1 };
	xf_lm_setup s = { .n = 2,
			  .lower = lower,
			  .upper = upper,
			  .scale = scale,
			  .free_mask = mask,
			  .max_iterations = 500,
			  .xtol = 1e-12,
			  .gtol = 1e-12,
			  .ftol = 1e-12,
			  .stall_window = 8 };
	double x[2] = { 10.1, 0.0 }, jtj[4], b[2];
	toy t = { 0 };
	xf_lm_outcome out;
	assert_int_equal(xf_lm_solve(&s, staircase_eval, &t, x, jtj, b, &out), 0);
	assert_int_equal(out.stop, XF_STOP_STALLED);
	assert_true(out.iterations < 50);
	assert_true(fabs(x[0] - 10.0) < 0.5); /* still on the plateau */
}

/* A nearly degenerate linear pair against a bound (issue 26): χ² = A(c + o − 1.3)² +
 * ε(c − o + 1.6)² + 100, c in [0, 1], o in [0, 2] — a ring's contrast and offset when its
 * correlation barely decays (c2 ≈ offset + contrast). The free optimum has c = −0.15, so
 * the bounded one sits on c = 0 with o ≈ 1.3. From c = 0.3, o = 1.0 on the valley floor
 * the damped step crosses c's bound; clipping c alone kept o's full move, left the floor
 * (χ² up by A·0.0225), was refused, and λ climbed until the steps crept. The crossing
 * parameter is now moved to its bound and the step over the rest solved again: the
 * solver lands on the bounded optimum in a few steps. */
typedef struct pair_toy {
	double a, eps;
} pair_toy;

static int pair_eval(void *ctx, const double *x, double *chi2, double *jtj, double *b)
{
	const pair_toy *t = ctx;
	double r1 = x[0] + x[1] - 1.3, r2 = x[0] - x[1] + 1.6;
	*chi2 = t->a * r1 * r1 + t->eps * r2 * r2 + 100.0;
	if (jtj) {
		jtj[0] = jtj[3] = t->a + t->eps;
		jtj[1] = jtj[2] = t->a - t->eps;
		b[0] = -(t->a * r1 + t->eps * r2);
		b[1] = -(t->a * r1 - t->eps * r2);
	}
	return 0;
}

static void test_bound_in_degenerate_pair(void **state)
{
	(void)state;
	const double lower[2] = { 0, 0 }, upper[2] = { 1, 2 }, scale[2] = { 1, 2 };
	const int mask[2] = { 1, 1 };
	xf_lm_setup s = { .n = 2,
			  .lower = lower,
			  .upper = upper,
			  .scale = scale,
			  .free_mask = mask,
			  .max_iterations = 200,
			  .xtol = 1e-15,
			  .gtol = 1e-15,
			  .ftol = 1e-14,
			  .lambda0 = 1e-6 };
	pair_toy t = { 1e4, 1e-4 };
	double x[2] = { 0.3, 1.0 }, jtj[4], b[2];
	xf_lm_outcome out;
	assert_int_equal(xf_lm_solve(&s, pair_eval, &t, x, jtj, b, &out), 0);
	/* bounded optimum: c = 0, o = (1.3 A + 1.6 ε) / (A + ε) */
	double o_opt = (1.3 * t.a + 1.6 * t.eps) / (t.a + t.eps);
	assert_true(x[0] == 0.0);
	assert_true(fabs(x[1] - o_opt) < 1e-9);
	assert_true(out.iterations <= 10);
	assert_true(out.stop == XF_STOP_FTOL || out.stop == XF_STOP_GTOL ||
		    out.stop == XF_STOP_XTOL);
}

/* Regression (stall) on the model: from D0 at its lower bound, α = 2, β = −2 and γ̇0 = 0.5
 * the direct path runs into a region where damping climbs by orders of magnitude while
 * χ² (thousands of times the optimum) barely moves; the path is stopped as stalled
 * within a few dozen iterations (test_stall_stop has the rule). The polish of the end
 * point has no stall stop (adr/0054): it crawls on to the optimum, converged, where it
 * once ended `failed` at χ² above 10× the optimum; the hierarchical path and the
 * default search reach the optimum too. */
static void test_stall_model(void **state)
{
	(void)state;
	xf_dataset ds;
	six_angles(&ds);
	double best = optimum_chi2(XF_MODE_LAMINAR, truth, &ds);
	const double start[7] = { 100, 2.0, 0.0, 0.5, -2.0, 0.0, 0.0 };
	xf_test_fit fc;
	xf_nlsq_result res;
	case_for(&fc, XF_MODE_LAMINAR, start, 0, 0);
	fit(&fc, &ds, &res);
	assert_true(res.chi_squared <= best * (1 + 1e-6));
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	xf_nlsq_result_free(&res);
	fc.opt.hierarchical = 1;
	fit(&fc, &ds, &res);
	assert_true(res.chi_squared <= best * (1 + 1e-6));
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	xf_nlsq_result_free(&res);
	fc.opt.start_search = 1;
	fit(&fc, &ds, &res);
	assert_true(res.chi_squared <= best * (1 + 1e-6));
	assert_string_equal(xf_fit_status_name(res.status), "converged");
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* Rank deficiency: with beta fixed at 0 the shear rate is γ̇0 + γ̇_offset, and the data
 * cannot tell the two apart. A ridge (adr/0047), not converged: both named, no uncertainty
 * claimed for either, their sum identified with an sd, and the fix named. */
static void test_rank_deficient(void **state)
{
	(void)state;
	xf_dataset ds;
	six_angles(&ds);
	xf_test_fit fc;
	xf_nlsq_result res;
	case_for(&fc, XF_MODE_LAMINAR, truth, 1, 1);
	fc.req.fixed[XF_P_BETA] = 1;
	fc.req.start[XF_P_BETA] = 0.0;
	fit(&fc, &ds, &res);
	assert_string_equal(xf_fit_status_name(res.status), "ridge");
	assert_true(xf_fit_status_failed(res.status));
	assert_int_equal(res.quality.overall, XF_QUALITY_POOR);
	assert_true(has_reason(&res, "rank deficient"));
	const xf_identified *id = &res.quality.identified;
	assert_int_equal(id->n_combos, 1);
	assert_string_equal(id->combo[0].text, "gamma_dot_t0 + gamma_dot_t_offset");
	assert_true(fabs(id->combo[0].value - (res.values[XF_P_GAMMA_DOT_T0] +
					       res.values[XF_P_GAMMA_DOT_T_OFFSET])) < 1e-12);
	assert_true(id->combo[0].sd > 0.0 && id->combo[0].sd < 1e-2 * id->combo[0].value);
	assert_int_equal(id->n_not_identified, 2);
	assert_string_equal(id->fix, "--fix gamma_dot_t_offset=0");
	assert_true(strncmp(res.quality.reasons[0], "ridge: the data identify", 24) == 0);
	assert_true(has_reason(&res, "gamma_dot_t0") && has_reason(&res, "gamma_dot_t_offset"));
	assert_true(isnan(res.uncertainties[XF_P_GAMMA_DOT_T0]));
	assert_true(isnan(res.uncertainties[XF_P_GAMMA_DOT_T_OFFSET]));
	assert_true(isfinite(res.uncertainties[XF_P_D0]));
	assert_false(res.quality.all_informed);
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* A parameter the data cannot see: every angle perpendicular to the flow with φ0 fixed
 * at 0, so the shear phase is exactly 0 and the shear rates do not change the model. */
static void test_not_informed(void **state)
{
	(void)state;
	const double phi[2] = { 90, -90 };
	xf_dataset ds;
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 200, 0.001, 0.0054, 2e6 };
	const double th[7] = { 8000, -0.4, 50, 0.004, -0.2, 0.0003, 0.0 };
	const double con[2] = { 0.3, 0.3 }, off[2] = { 1, 1 };
	assert_int_equal(xf_synth_dataset(&g, th, 2, phi, con, off, 2e-3, 6, &ds), 0);
	xf_test_fit fc;
	xf_nlsq_result res;
	case_for(&fc, XF_MODE_LAMINAR, th, 1, 1);
	fc.req.fixed[XF_P_PHI0] = 1;
	fit(&fc, &ds, &res);
	assert_string_equal(xf_fit_status_name(res.status), "failed");
	assert_true(has_reason(&res, "not informed by the data: gamma_dot_t0"));
	assert_false(res.quality.all_informed);
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

int main(void)
{
	xf_log_set_stderr(1, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimate),
		cmocka_unit_test(test_estimate_static),
		cmocka_unit_test(test_wrong_minimum),
		cmocka_unit_test(test_flat_start),
		cmocka_unit_test(test_values_null),
		cmocka_unit_test(test_iterations_against_paths),
		cmocka_unit_test(test_stall_rule),
		cmocka_unit_test(test_stall_stop),
		cmocka_unit_test(test_bound_in_degenerate_pair),
		cmocka_unit_test(test_stall_model),
		cmocka_unit_test(test_rank_deficient),
		cmocka_unit_test(test_not_informed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
