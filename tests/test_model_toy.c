/* test_model_toy.c — a third model that exists only here (adr/0116): a single exponential,
 * g1 = exp(−Γ·τ) with τ = (j − i)·dt the lag of frames i < j and Γ (1/s) its one
 * parameter. Its record and the one line registering it are this file's; nothing in
 * src/ names it. Through the registration alone:
 *   - the model's c2 (model.h: a point with its gradient, whole rows, the full matrix)
 *     is the formula written out here;
 *   - a likelihood pass (the point kernel, pass_point.c) gives χ², Jᵀr and JᵀJ over
 *     [Γ, contrast coefficients, offset coefficients] equal to sums over an explicit
 *     per-point Jacobian written here, to 1e-12; the gradient, value and scaling levels
 *     agree with it, and the collapse level's per-angle sums with theirs;
 *   - NLSQ (xf_nlsq_fit, start from the request) recovers Γ of a simulated matrix within
 *     4 of its standard errors and reports it under the model's own parameter name;
 *   - registration refuses a record without a point function, a name taken, and a
 *     parameter count out of range; the GPU refuses the model by name. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "synth.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/options.h"
#include "xpcsfit/request.h"

/* ---- the model: its record and its point function ---- */
static double single_exponential(const xf_model_grid *grid, const double *theta, double phi_deg,
				 int i, int j, double *dg1)
{
	(void)phi_deg; /* isotropic */
	double tau = grid->dt_s * (double)(j - i), g1 = exp(-theta[0] * tau);
	if (dg1)
		dg1[0] = -tau * g1;
	return g1;
}

/* Γ, the decay rate: its unit, bounds and the template's start and prior */
static const xf_param_def toy_params[] = {
	{ .name = "Gamma",
	  .unit = "1/s",
	  .unit_text = "1/s",
	  .lower = 0.1,
	  .upper = 100.0,
	  .template_value = 1.0,
	  .template_prior_mu = 10.0,
	  .template_prior_sigma = 25.0 },
};
static const xf_model_record toy = {
	.name = "single_exponential",
	.n_phys = 1,
	.nuts_accept_default = 0.95,
	.g1 = single_exponential,
	.params = toy_params,
};
static xf_mode toy_mode;

#define N_FRAMES 48
#define N_PHI	 3
#define DT_S	 0.01
#define GAMMA	 4.0

static const double phi_deg[N_PHI] = { -30.0, 10.0, 60.0 };
static const double contrast[N_PHI] = { 0.20, 0.25, 0.22 };
static const double offset[N_PHI] = { 1.00, 1.01, 0.99 };

static int setup(void **state)
{
	(void)state;
	toy_mode = xf_model_register(&toy); /* the registration line */
	return toy_mode == (xf_mode)-1;
}

static xf_model_grid toy_grid(void)
{
	return (xf_model_grid){ toy_mode, XF_SHEAR_HOMODYNE, N_FRAMES, DT_S, 0.005, 2e6 };
}

static void toy_request(xf_request *req)
{
	xf_request_defaults(req, toy_mode); /* Γ's bounds from the record */
	req->start[0] = 0.8 * GAMMA;
	req->value_given[0] = 1;
	req->per_angle_mode = XF_SCALING_INDIVIDUAL; /* the angles' own contrasts below */
}

/* A matrix of the toy model at Γ = GAMMA with noise of sd noise (seed), and its request */
static void toy_data(double noise, uint64_t seed, xf_dataset *ds, xf_request *req)
{
	xf_model_grid g = toy_grid();
	double theta[XF_N_PHYS] = { GAMMA };
	assert_int_equal(
		xf_synth_dataset(&g, theta, N_PHI, phi_deg, contrast, offset, noise, seed, ds), 0);
	toy_request(req);
}

static void test_registered(void **state)
{
	(void)state;
	assert_true(toy_mode >= 2);
	assert_int_equal(xf_model_count(), (int)toy_mode + 1);
	const xf_model_record *m = xf_model_record_of(toy_mode);
	assert_string_equal(m->name, "single_exponential");
	assert_int_equal(m->mode, toy_mode);
	assert_int_equal(xf_mode_n_phys(toy_mode), 1);
	assert_string_equal(xf_model_param_name(m, 0), "Gamma");
	xf_mode parsed;
	assert_int_equal(xf_mode_parse("single_exponential", &parsed), 0);
	assert_int_equal(parsed, toy_mode);
	/* refusals: a name taken (its own, a built-in's), no point function, no parameters */
	assert_int_equal((int)xf_model_register(&toy), -1);
	xf_model_record bad = toy;
	bad.name = "static";
	assert_int_equal((int)xf_model_register(&bad), -1);
	bad.name = "toy_two";
	bad.g1 = NULL;
	assert_int_equal((int)xf_model_register(&bad), -1);
	bad.g1 = single_exponential;
	bad.n_phys = 0;
	assert_int_equal((int)xf_model_register(&bad), -1);
	bad.n_phys = 1;
	xf_param_def inverted = toy_params[0];
	inverted.lower = inverted.upper;
	bad.params = &inverted;
	assert_int_equal((int)xf_model_register(&bad), -1);
	inverted = toy_params[0];
	inverted.unit = NULL;
	assert_int_equal((int)xf_model_register(&bad), -1);
	assert_int_equal(xf_model_count(), (int)toy_mode + 1);
	/* its parameter table: the unit the files write and a person reads, the default
	 * bounds a request takes with homodyne's default prior, the template's values */
	assert_string_equal(xf_model_param_unit(m, 0), "1/s");
	assert_string_equal(xf_model_param_unit(m, 1), ""); /* past its parameters */
	assert_string_equal(xf_param_unit("Gamma"), "1/s");
	assert_string_equal(xf_param_unit_text("Gamma"), "1/s");
	assert_true(xf_model_param(m, 0).template_value == 1.0);
	xf_request req;
	xf_request_defaults(&req, toy_mode);
	assert_true(req.bounds[0].lower == 0.1 && req.bounds[0].upper == 100.0);
	assert_true(req.bounds[0].prior_mu == 0.5 * (0.1 + 100.0));
	assert_true(req.bounds[0].prior_sigma == 0.25 * (100.0 - 0.1));
	assert_true(req.start[0] == req.bounds[0].prior_mu);
	/* contrast and offset keep the table's bounds */
	xf_bound table[XF_N_BOUND_SLOTS];
	xf_bounds_default(table);
	assert_memory_equal(&req.bounds[XF_P_CONTRAST], &table[XF_P_CONTRAST], 2 * sizeof table[0]);
	/* a built-in model's rows are the table's */
	const xf_model_record *lam = xf_model_record_of(XF_MODE_LAMINAR);
	for (int k = 0; k < lam->n_phys; k++) {
		assert_string_equal(xf_model_param_unit(lam, k), xf_param_units[k]);
		assert_true(xf_model_param(lam, k).lower == xf_param_default_lower[k]);
	}
}

static void test_c2(void **state)
{
	(void)state;
	xf_model_grid g = toy_grid();
	double theta[XF_N_PHYS] = { GAMMA }, full[N_FRAMES * N_FRAMES], rows[3 * N_FRAMES];
	assert_int_equal(xf_model_c2_full(&g, theta, 10.0, 0.2, 1.0, full), 0);
	assert_int_equal(xf_model_c2_rows(&g, theta, 10.0, 0.2, 1.0, 5, 8, rows), 0);
	for (int i = 0; i < N_FRAMES; i++)
		for (int j = 0; j < N_FRAMES; j++) {
			double tau = DT_S * fabs((double)(j - i));
			double want = 1.0 + 0.2 * exp(-2.0 * GAMMA * tau);
			assert_true(fabs(full[i * N_FRAMES + j] - want) < 1e-15);
			if (i >= 5 && i < 8)
				assert_true(rows[(i - 5) * N_FRAMES + j] == full[i * N_FRAMES + j]);
		}
	double c2, grad[XF_N_BOUND_SLOTS];
	assert_int_equal(xf_model_c2_point(&g, theta, 10.0, 0.2, 1.0, 3, 11, &c2, grad), 0);
	double tau = 8 * DT_S, g1 = exp(-GAMMA * tau);
	assert_true(fabs(c2 - (1.0 + 0.2 * g1 * g1)) < 1e-15);
	assert_true(fabs(grad[0] - 0.2 * 2.0 * g1 * (-tau * g1)) < 1e-15);
	for (int m = 1; m < XF_N_PHYS; m++)
		assert_true(grad[m] == 0.0);
	assert_true(fabs(grad[XF_P_CONTRAST] - g1 * g1) < 1e-15);
	assert_true(grad[XF_P_OFFSET] == 1.0);
}

static double rel(double a, double b)
{
	return fabs(a - b) / fmax(fabs(b), 1e-300);
}

static void test_pass_against_sums(void **state)
{
	(void)state;
	xf_dataset ds;
	xf_request req;
	toy_data(1e-3, 5, &ds, &req);
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &req, &ds, &err), 0);
	assert_string_equal(pr.names[0], "Gamma");
	int nf = pr.n_full, np = pr.n_phys, nb = pr.n_basis;
	assert_int_equal(np, 1);
	double *x = malloc(sizeof(double) * nf), *jtj = calloc((size_t)nf * nf, sizeof(double));
	double *b = calloc((size_t)nf, sizeof(double)),
	       *jw = calloc((size_t)nf * nf, sizeof(double));
	double *bw = calloc((size_t)nf, sizeof(double)), *row = malloc(sizeof(double) * nf);
	double *bg = calloc((size_t)nf, sizeof(double)), con[N_PHI], off[N_PHI];
	assert_non_null(x);
	memcpy(x, pr.start, sizeof(double) * nf);
	x[0] = 0.9 * GAMMA;
	xf_problem_scaling(&pr, x, con, off);
	/* the sums written out: every fitted pair 1 ≤ i < j ≤ N−1, every angle; per angle
	 * Σ r·∂(g1²), Σ g1²·∂(g1²), Σ ∂(g1²) for the collapse level */
	double chi2 = 0.0, sums[N_PHI][3] = { { 0 } };
	size_t n = (size_t)N_FRAMES;
	for (int i = 1; i < N_FRAMES; i++)
		for (int j = i + 1; j < N_FRAMES; j++)
			for (int p = 0; p < N_PHI; p++) {
				double tau = DT_S * (j - i), g1 = exp(-x[0] * tau);
				double r = ds.c2[p][xf_packed_index(n, (size_t)i, (size_t)j)] -
					   (off[p] + con[p] * g1 * g1);
				chi2 += r * r;
				double d2 = 2.0 * g1 * (-tau * g1); /* ∂(g1²)/∂Γ */
				sums[p][0] += r * d2;
				sums[p][1] += g1 * g1 * d2;
				sums[p][2] += d2;
				row[0] = con[p] * d2;
				for (int k = 0; k < nb; k++) {
					row[np + k] = g1 * g1 * pr.basis[p * nb + k];
					row[np + nb + k] = pr.basis[p * nb + k];
				}
				for (int a = 0; a < nf; a++) {
					bw[a] += row[a] * r;
					for (int c = 0; c < nf; c++)
						jw[a * nf + c] += row[a] * row[c];
				}
			}
	xf_pairset ps;
	assert_int_equal(xf_pairset_all(&ps, N_FRAMES), 0);
	xf_lik *lik = xf_lik_create(&pr, &ps, NULL, &err);
	assert_non_null(lik);
	xf_lik_out out = { 0.0, jtj, b, 0.0 };
	assert_int_equal(xf_lik_eval(lik, x, &out), 0);
	assert_true(rel(out.chi2, chi2) < 1e-12);
	for (int a = 0; a < nf; a++) {
		assert_true(fabs(b[a] - bw[a]) < 1e-12 * (1.0 + fabs(bw[a])));
		for (int c = 0; c < nf; c++)
			assert_true(rel(jtj[a * nf + c], jw[a * nf + c]) < 1e-12);
	}
	/* the lighter levels: the same χ² and b */
	xf_lik_out og = { 0.0, NULL, bg, 0.0 }, ov = { 0.0, NULL, NULL, 0.0 };
	assert_int_equal(xf_lik_eval(lik, x, &og), 0);
	assert_int_equal(xf_lik_eval(lik, x, &ov), 0);
	assert_true(og.chi2 == out.chi2 && ov.chi2 == out.chi2);
	assert_memory_equal(bg, b, sizeof(double) * nf);
	/* the scaling level: JᵀJ's scaling block and its part of b */
	int ns = 2 * nb;
	double *hss = malloc(sizeof(double) * ns * ns), *bs = malloc(sizeof(double) * ns), c2s;
	assert_int_equal(xf_lik_eval_scaling(lik, x, &c2s, hss, bs), 0);
	assert_true(c2s == out.chi2);
	for (int a = 0; a < ns; a++) {
		assert_true(fabs(bs[a] - b[np + a]) < 1e-12 * (1.0 + fabs(b[np + a])));
		for (int c = 0; c < ns; c++)
			assert_true(rel(hss[a * ns + c], jtj[(np + a) * nf + np + c]) < 1e-12);
	}
	/* the residuals (CMC's σ prior, the search for a non-finite χ²): data − model of the
	 * point function, pair by pair with the angles inside */
	size_t n_pairs = ps.n_pairs;
	double *res = malloc(sizeof(double) * n_pairs * N_PHI);
	assert_int_equal(xf_problem_residuals(&pr, &ps, x, res), 0);
	double rss = 0.0;
	for (size_t q = 0; q < n_pairs * N_PHI; q++)
		rss += res[q] * res[q];
	assert_true(rel(rss, chi2) < 1e-12);
	free(res);
	/* the GPU has the written-out kernels only: refused, the model named */
	xf_error gpu_err = { 0 };
	assert_int_equal(xf_lik_use_gpu(lik, 0, 1, &gpu_err), XF_ERR_CONFIG);
	assert_non_null(strstr(gpu_err.msg, "single_exponential"));
	/* the collapse level: the scaling level's bits and the angles' sums */
	double angle[N_PHI * 3];
	assert_int_equal(xf_lik_eval_collapse(lik, x, &c2s, hss, bs, angle), 0);
	assert_true(c2s == out.chi2);
	for (int p = 0; p < N_PHI; p++)
		for (int r = 0; r < 3; r++)
			assert_true(rel(angle[p * 3 + r], sums[p][r]) < 1e-12);
	free(hss);
	free(bs);
	xf_lik_destroy(lik);
	xf_pairset_free(&ps);
	free(x);
	free(jtj);
	free(b);
	free(jw);
	free(bw);
	free(bg);
	free(row);
	xf_problem_free(&pr);
	xf_synth_free(&ds);
}

/* A converged fit with Γ's standard error under 5 % and Γ within 4 of them of the truth */
static void assert_gamma_found(const xf_nlsq_result *res)
{
	assert_int_equal(res->status, XF_STATUS_CONVERGED);
	double sd = res->uncertainties[0];
	assert_true(sd > 0.0 && sd < 0.05 * GAMMA);
	assert_true(fabs(res->values[0] - GAMMA) < 4.0 * sd);
}

static void test_nlsq_recovers_gamma(void **state)
{
	(void)state;
	xf_dataset ds;
	xf_request req;
	toy_data(2e-3, 9, &ds, &req);
	xf_nlsq_options opt;
	xf_nlsq_options_defaults(&opt);
	opt.start_search = 0; /* one path from the request's near start */
	opt.multi_start = 0;
	xf_nlsq_result res;
	xf_error err = { 0 };
	memset(&res, 0, sizeof res);
	assert_int_equal(xf_nlsq_fit(&req, &opt, &ds, 1, NULL, NULL, &res, &err), 0);
	assert_gamma_found(&res);
	assert_int_equal(res.n_phys, 1);
	assert_string_equal(res.names[0], "Gamma");
	for (int p = 0; p < N_PHI; p++)
		assert_true(fabs(res.contrast[p] - contrast[p]) < 0.01);
	/* the estimate carries the model's unit for Γ and its name; the scaling is
	 * dimensionless */
	xf_model_grid g = toy_grid();
	xf_estimate est;
	assert_int_equal(xf_estimate_from_nlsq(&res, &g, &est, &err), 0);
	assert_string_equal(est.units[0], "1/s");
	assert_string_equal(est.units[1], "1");
	assert_string_equal(est.words.mode, "single_exponential");
	xf_estimate_free(&est);
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* At NLSQ's shipped defaults (the search on, adr/0123): no estimator, so the search
 * starts from the request's start — here the middle of Γ's bounds, 50 s⁻¹, a decade above
 * the truth — and Γ's spread over its bounds; it must find Γ = 4 s⁻¹ as the single path
 * from a near start does. */
static void test_nlsq_defaults_search(void **state)
{
	(void)state;
	xf_dataset ds;
	xf_request req;
	toy_data(2e-3, 11, &ds, &req);
	req.start[0] = 0.5 * (req.bounds[0].lower + req.bounds[0].upper);
	req.value_given[0] = 0;
	xf_nlsq_options opt;
	xf_nlsq_options_defaults(&opt);
	assert_true(opt.start_search);
	xf_nlsq_result res;
	xf_error err = { 0 };
	memset(&res, 0, sizeof res);
	assert_int_equal(xf_nlsq_fit(&req, &opt, &ds, 1, NULL, NULL, &res, &err), 0);
	assert_gamma_found(&res);
	/* its start is the request's, not the built-in estimator's D0 put in Γ's place, and
	 * the screened starts are it and Γ's 2S + 1 points over its bounds */
	assert_true(res.search.estimate[0] == req.start[0]);
	assert_int_equal(res.search.n_candidates, 1 + 2 * opt.search_spread + 1);
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

/* Bounds where the model is flat everywhere (Γ ≥ 1e4 s⁻¹ decorrelates within a frame of
 * 0.01 s): every start is dropped, and the refusal names the model and its parameter,
 * not the built-in models' D0 and their move to slower rates (adr/0123). */
static void test_nlsq_flat_bounds_refused(void **state)
{
	(void)state;
	xf_dataset ds;
	xf_request req;
	toy_data(2e-3, 13, &ds, &req);
	req.bounds[0] = (xf_bound){ 1e4, 1e5, 5.5e4, 2.25e4 };
	req.start[0] = 5e4;
	req.value_given[0] = 0;
	xf_nlsq_options opt;
	xf_nlsq_options_defaults(&opt);
	xf_nlsq_result res;
	xf_error err = { 0 };
	memset(&res, 0, sizeof res);
	assert_int_equal(xf_nlsq_fit(&req, &opt, &ds, 1, NULL, NULL, &res, &err), XF_ERR_DATA);
	assert_non_null(strstr(err.msg, "model single_exponential is flat"));
	assert_non_null(strstr(err.msg, "bounds of Gamma"));
	assert_null(strstr(err.msg, "D0"));
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registered),
		cmocka_unit_test(test_c2),
		cmocka_unit_test(test_pass_against_sums),
		cmocka_unit_test(test_nlsq_recovers_gamma),
		cmocka_unit_test(test_nlsq_defaults_search),
		cmocka_unit_test(test_nlsq_flat_bounds_refused),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
