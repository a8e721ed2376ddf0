/* test_request.c — the problem request (request.h, adr/0043): a problem built from a
 * request written by hand, with no config at all; the same problem from the request the
 * command line builds out of a config; and the one home of the "follow NLSQ" rule
 * (xf_request_for_posterior), alone and through xf_problem_build. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cli/request_build.h"
#include "synth.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/request.h"

#define N_PHI 5
static const double truth_laminar[XF_N_PHYS] = { 1500.0, -0.8, 20.0, 0.012, -0.3, 0.0005, 2.0 };
static const double start_laminar[XF_N_PHYS] = { 1000.0, -0.5, 10.0, 0.01, -0.2, 0.0, 0.0 };
static const double phi_deg[N_PHI] = { -30, 0, 15, 60, 90 };
static const double contrast[N_PHI] = { 0.3, 0.25, 0.28, 0.31, 0.29 };
static const double offset[N_PHI] = { 1, 1.01, 0.99, 1, 1.02 };

static void synth(xf_mode mode, xf_dataset *ds)
{
	xf_model_grid g = { mode, XF_SHEAR_HOMODYNE, 40, 0.01, 0.0054, 2e6 };
	assert_int_equal(
		xf_synth_dataset(&g, truth_laminar, N_PHI, phi_deg, contrast, offset, 2e-3, 7, ds),
		0);
}

/* A laminar request with the default bounds and priors, written field by field. */
static void hand_request(xf_request *req, const double *contrast_start)
{
	memset(req, 0, sizeof *req);
	req->mode = XF_MODE_LAMINAR;
	req->shear_model = XF_SHEAR_HOMODYNE;
	req->gap_A = 2e6;
	req->per_angle_mode = XF_SCALING_INDIVIDUAL;
	req->anti_degeneracy = 1;
	req->constant_scaling_threshold = 3;
	req->fourier_order = 2;
	req->has_sigma = 1;
	req->sigma = 0.002;
	for (int k = 0; k < XF_N_BOUND_SLOTS; k++) {
		xf_bound *b = &req->bounds[k];
		b->lower = xf_param_default_lower[k];
		b->upper = xf_param_default_upper[k];
		b->prior_mu = 0.5 * (b->lower + b->upper);
		b->prior_sigma = 0.25 * (b->upper - b->lower);
	}
	for (int k = 0; k < XF_N_PHYS; k++) {
		req->start[k] = start_laminar[k];
		req->value_given[k] = 1;
	}
	req->fixed[XF_P_PHI0] = 1;
	req->n_contrast_start = 1;
	req->contrast_start = contrast_start;
}

/* No config anywhere: the request alone (and the data) make the problem. */
static void test_problem_from_hand_request(void **state)
{
	(void)state;
	xf_dataset ds;
	synth(XF_MODE_LAMINAR, &ds);
	const double c0 = 0.27;
	xf_request req;
	hand_request(&req, &c0);
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &req, &ds, &err), 0);
	assert_int_equal(pr.mode, XF_MODE_LAMINAR);
	assert_int_equal(pr.n_phys, XF_N_PHYS);
	assert_int_equal(pr.scaling->mode, XF_SCALING_INDIVIDUAL);
	assert_int_equal(pr.n_basis, N_PHI);
	assert_int_equal(pr.n_full, XF_N_PHYS + 2 * N_PHI);
	/* the grid: geometry from the request, frames, dt and q from the data */
	assert_true(pr.grid.gap_A == 2e6);
	assert_int_equal(pr.grid.n_frames, ds.n_frames);
	assert_true(pr.grid.dt_s == ds.dt_s && pr.grid.q == ds.q);
	assert_true(pr.has_sigma && pr.sigma == 0.002);
	for (int k = 0; k < XF_N_PHYS; k++) {
		assert_string_equal(pr.names[k], xf_param_names[k]);
		assert_true(pr.start[k] == start_laminar[k]);
		assert_true(pr.lower[k] == xf_param_default_lower[k]);
		assert_int_equal(pr.fixed[k], k == XF_P_PHI0);
	}
	/* one contrast start for every angle; offsets from the quantile estimates */
	for (int a = 0; a < N_PHI; a++) {
		assert_true(pr.start[XF_N_PHYS + a] == c0);
		assert_true(pr.start[XF_N_PHYS + N_PHI + a] == pr.quantile_offset[a]);
	}
	xf_problem_free(&pr);
	/* a per-angle start count that fits neither 1 nor the angles is the request's error */
	req.n_contrast_start = 2;
	assert_int_equal(xf_problem_build(&pr, &req, &ds, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "per_angle_scaling.contrast"));
	xf_synth_free(&ds);
}

/* The request the command line builds from a config makes the same problem as the one
 * written by hand from the same values. */
static void test_request_from_config_matches(void **state)
{
	(void)state;
	xf_dataset ds;
	synth(XF_MODE_LAMINAR, &ds);
	double c0 = 0.27;
	xf_config cfg;
	xf_config_defaults(&cfg);
	cfg.mode = XF_MODE_LAMINAR;
	cfg.gap_A = 2e6;
	cfg.nlsq.per_angle_mode = XF_SCALING_INDIVIDUAL;
	cfg.nlsq.anti_degeneracy_enable = 1;
	cfg.nlsq.has_sigma = 1;
	cfg.nlsq.sigma = 0.002;
	for (int k = 0; k < XF_N_PHYS; k++) {
		cfg.values[k] = start_laminar[k];
		cfg.value_given[k] = 1;
	}
	cfg.is_fixed[XF_P_PHI0] = 1;
	cfg.n_contrast_start = 1;
	cfg.contrast_start = &c0;
	xf_request from_cfg, by_hand;
	xf_request_from_config(&cfg, &from_cfg);
	hand_request(&by_hand, &c0);
	xf_problem a, b;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&a, &from_cfg, &ds, &err), 0);
	assert_int_equal(xf_problem_build(&b, &by_hand, &ds, &err), 0);
	assert_int_equal(a.n_full, b.n_full);
	assert_ptr_equal(a.scaling, b.scaling);
	size_t bytes = sizeof(double) * (size_t)a.n_full;
	assert_memory_equal(a.start, b.start, bytes);
	assert_memory_equal(a.lower, b.lower, bytes);
	assert_memory_equal(a.upper, b.upper, bytes);
	assert_memory_equal(a.prior_mu, b.prior_mu, bytes);
	assert_memory_equal(a.prior_sigma, b.prior_sigma, bytes);
	assert_memory_equal(a.fixed, b.fixed, sizeof(int) * (size_t)a.n_full);
	xf_problem_free(&a);
	xf_problem_free(&b);
	cfg.contrast_start = NULL; /* borrowed from the stack, not the config's to free */
	cfg.n_contrast_start = 0;
	xf_config_free(&cfg);
	xf_synth_free(&ds);
}

/* The follow-NLSQ rule in its one home: absent → NLSQ's mode, fourier → individual; an
 * explicit mode stays; σ is sampled; the rest is NLSQ's request. */
static void test_follow_nlsq_rule(void **state)
{
	(void)state;
	const double c0 = 0.27;
	xf_request nlsq, post;
	hand_request(&nlsq, &c0);
	nlsq.anti_degeneracy = 0;
	nlsq.constant_scaling_threshold = 3;
	static const struct {
		xf_scaling_mode asked, nlsq_used, expect;
	} rule[] = {
		{ XF_SCALING_FOLLOW_NLSQ, XF_SCALING_AUTO, XF_SCALING_AUTO },
		{ XF_SCALING_FOLLOW_NLSQ, XF_SCALING_INDIVIDUAL, XF_SCALING_INDIVIDUAL },
		{ XF_SCALING_FOLLOW_NLSQ, XF_SCALING_CONSTANT, XF_SCALING_CONSTANT },
		{ XF_SCALING_FOLLOW_NLSQ, XF_SCALING_FOURIER, XF_SCALING_INDIVIDUAL },
		{ XF_SCALING_FOURIER, XF_SCALING_AUTO, XF_SCALING_FOURIER },
		{ XF_SCALING_CONSTANT, XF_SCALING_INDIVIDUAL, XF_SCALING_CONSTANT },
	};
	for (size_t r = 0; r < sizeof rule / sizeof rule[0]; r++) {
		xf_request_for_posterior(&nlsq, rule[r].asked, rule[r].nlsq_used, &post);
		assert_int_equal(post.per_angle_mode, rule[r].expect);
		assert_int_equal(post.anti_degeneracy, 1);
		assert_int_equal(post.constant_scaling_threshold, 1);
		assert_int_equal(post.has_sigma, 0);
		/* everything else is NLSQ's */
		assert_int_equal(post.mode, nlsq.mode);
		assert_true(post.gap_A == nlsq.gap_A);
		assert_int_equal(post.fourier_order, nlsq.fourier_order);
		assert_memory_equal(post.bounds, nlsq.bounds, sizeof nlsq.bounds);
		assert_memory_equal(post.start, nlsq.start, sizeof nlsq.start);
		assert_memory_equal(post.fixed, nlsq.fixed, sizeof nlsq.fixed);
		assert_ptr_equal(post.contrast_start, nlsq.contrast_start);
	}
}

/* Through the builder: static with anti-degeneracy off fits individual in NLSQ; the
 * posterior asked for auto shares one contrast/offset however few the angles, σ = 1. */
static void test_posterior_problem(void **state)
{
	(void)state;
	xf_dataset ds;
	synth(XF_MODE_STATIC, &ds);
	xf_request nlsq, post;
	hand_request(&nlsq, NULL);
	nlsq.mode = XF_MODE_STATIC;
	nlsq.fixed[XF_P_PHI0] = 0;
	nlsq.n_contrast_start = 0;
	nlsq.per_angle_mode = XF_SCALING_AUTO;
	nlsq.anti_degeneracy = 0;
	nlsq.constant_scaling_threshold = N_PHI + 1; /* auto would fall back too */
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &nlsq, &ds, &err), 0);
	assert_int_equal(pr.scaling->mode, XF_SCALING_INDIVIDUAL);
	assert_true(pr.has_sigma);
	xf_problem_free(&pr);
	xf_request_for_posterior(&nlsq, XF_SCALING_AUTO, XF_SCALING_INDIVIDUAL, &post);
	assert_int_equal(xf_problem_build(&pr, &post, &ds, &err), 0);
	assert_int_equal(pr.scaling->mode, XF_SCALING_AUTO);
	assert_int_equal(pr.n_full, 3 + 2);
	assert_false(pr.has_sigma);
	assert_true(pr.sigma == 1.0);
	xf_problem_free(&pr);
	xf_synth_free(&ds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_problem_from_hand_request),
		cmocka_unit_test(test_request_from_config_matches),
		cmocka_unit_test(test_follow_nlsq_rule),
		cmocka_unit_test(test_posterior_problem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
