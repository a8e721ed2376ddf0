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
 *   - under a robust loss (Cauchy) the pass's cost, Jᵀr and JᵀJ are the weighted sums
 *     written out here (ρ and ρ' by their formulas), and NLSQ with soft_l1 recovers Γ
 *     from a matrix with outliers that bias the least-squares fit (adr/0126);
 *   - a config names the model by analysis_mode (adr/0127): its bounds are the model's
 *     own defaults unless parameter_space gives them under its parameter's name, starts
 *     and fixed values go by that name, and a built-in parameter's name is refused with
 *     the model's names listed;
 *   - the same model with a start estimator of its own (adr/0128) starts NLSQ's search
 *     from what the data show, not the request's start;
 *   - registration refuses a record without a point function, a name taken, and a
 *     parameter count out of range; the GPU refuses the model by name. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "synth.h"
#include "cli/overrides.h"
#include "cli/request_build.h"
#include "xpcsfit/config.h"
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

/* The same model with a start estimator of its own (adr/0128): Γ from the first lag at
 * which the data's g1² = exp(−2Γτ) has fallen below 1/2 */
static void toy_start(const xf_model_grid *grid, int n_lags, const double *lag_s,
		      const double *g1sq, double *theta)
{
	(void)grid;
	for (int k = 0; k < n_lags; k++)
		if (isfinite(g1sq[k]) && g1sq[k] > 0.0 && g1sq[k] < 0.5) {
			theta[0] = -log(g1sq[k]) / (2.0 * lag_s[k]);
			return;
		}
}
static xf_mode toy_estimated_mode; /* the toy's record with toy_start (setup) */

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
	xf_model_record estimated = toy;
	estimated.name = "single_exponential_estimated";
	estimated.start = toy_start;
	toy_estimated_mode = xf_model_register(&estimated); /* registration keeps a copy */
	return toy_mode == (xf_mode)-1 || toy_estimated_mode == (xf_mode)-1;
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
	assert_int_equal(xf_model_count(), (int)toy_mode + 2); /* and the estimated one */
	assert_int_equal(toy_estimated_mode, toy_mode + 1);
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
	assert_int_equal(xf_model_count(), (int)toy_mode + 2); /* none of them kept */
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

/* The toy's pass written out at Γ = 0.9·GAMMA on a matrix of seed: every fitted pair
 * 1 ≤ i < j ≤ N−1, every angle, each point's Jacobian row [con·∂(g1²), g1²·basis, basis]
 * weighted by the Cauchy loss of scale s, w = 1/(1 + z), z = (r/s)² (s = 0: least
 * squares, w = 1): the cost (Σ s²·ln(1 + z), or Σ r²), b = Σ w·r·row, JᵀJ = Σ w·row·rowᵀ,
 * and per angle the collapse level's Σ r·∂(g1²), Σ g1²·∂(g1²), Σ ∂(g1²) */
typedef struct toy_pass {
	xf_dataset ds;
	xf_problem pr;
	xf_pairset ps;
	int nf, np, nb;
	double *x, *jw, *bw, *row;
	double cost, lsq, angle[N_PHI][3];
	int down_weighted; /* points with w < 1/2 */
} toy_pass;

static void toy_pass_init(toy_pass *c, uint64_t seed, double s)
{
	memset(c, 0, sizeof *c);
	xf_request req;
	xf_error err = { 0 };
	toy_data(1e-3, seed, &c->ds, &req);
	assert_int_equal(xf_problem_build(&c->pr, &req, &c->ds, &err), 0);
	assert_true(c->pr.sigma == 1.0); /* σ unknown: the sums are in data units */
	assert_int_equal(xf_pairset_all(&c->ps, N_FRAMES), 0);
	int nf = c->nf = c->pr.n_full, np = c->np = c->pr.n_phys, nb = c->nb = c->pr.n_basis;
	c->x = malloc(sizeof(double) * nf);
	c->jw = calloc((size_t)nf * nf, sizeof(double));
	c->bw = calloc((size_t)nf, sizeof(double));
	c->row = malloc(sizeof(double) * nf);
	assert_true(c->x && c->jw && c->bw && c->row);
	memcpy(c->x, c->pr.start, sizeof(double) * nf);
	c->x[0] = 0.9 * GAMMA;
	double con[N_PHI], off[N_PHI], *row = c->row;
	xf_problem_scaling(&c->pr, c->x, con, off);
	size_t n = (size_t)N_FRAMES;
	for (int i = 1; i < N_FRAMES; i++)
		for (int j = i + 1; j < N_FRAMES; j++)
			for (int p = 0; p < N_PHI; p++) {
				double tau = DT_S * (j - i), g1 = exp(-c->x[0] * tau);
				double r = c->ds.c2[p][xf_packed_index(n, (size_t)i, (size_t)j)] -
					   (off[p] + con[p] * g1 * g1);
				double z = s > 0.0 ? (r / s) * (r / s) : 0.0, w = 1.0 / (1.0 + z);
				c->cost += s > 0.0 ? s * s * log1p(z) : r * r;
				c->lsq += r * r;
				c->down_weighted += w < 0.5;
				double d2 = 2.0 * g1 * (-tau * g1); /* ∂(g1²)/∂Γ */
				c->angle[p][0] += r * d2;
				c->angle[p][1] += g1 * g1 * d2;
				c->angle[p][2] += d2;
				row[0] = con[p] * d2;
				for (int k = 0; k < nb; k++) {
					row[np + k] = g1 * g1 * c->pr.basis[p * nb + k];
					row[np + nb + k] = c->pr.basis[p * nb + k];
				}
				for (int a = 0; a < nf; a++) {
					c->bw[a] += w * row[a] * r;
					for (int b = 0; b < nf; b++)
						c->jw[a * nf + b] += w * row[a] * row[b];
				}
			}
}

static void toy_pass_free(toy_pass *c)
{
	xf_pairset_free(&c->ps);
	free(c->x);
	free(c->jw);
	free(c->bw);
	free(c->row);
	xf_problem_free(&c->pr);
	xf_synth_free(&c->ds);
}

/* A pass's χ², b and JᵀJ against the written-out sums */
static void assert_pass_sums(const toy_pass *c, double chi2, const double *b, const double *jtj)
{
	int nf = c->nf;
	assert_true(rel(chi2, c->cost) < 1e-12);
	for (int a = 0; a < nf; a++) {
		assert_true(fabs(b[a] - c->bw[a]) < 1e-12 * (1.0 + fabs(c->bw[a])));
		for (int k = 0; k < nf; k++)
			assert_true(fabs(jtj[a * nf + k] - c->jw[a * nf + k]) <
				    1e-12 * (1.0 + fabs(c->jw[a * nf + k])));
	}
}

static void test_pass_against_sums(void **state)
{
	(void)state;
	toy_pass c;
	toy_pass_init(&c, 5, 0.0);
	assert_string_equal(c.pr.names[0], "Gamma");
	assert_int_equal(c.np, 1);
	int nf = c.nf, np = c.np, nb = c.nb;
	double *x = c.x, *jtj = calloc((size_t)nf * nf, sizeof(double));
	double *b = calloc((size_t)nf, sizeof(double)), *bg = calloc((size_t)nf, sizeof(double));
	xf_error err = { 0 };
	xf_lik *lik = xf_lik_create(&c.pr, &c.ps, NULL, &err);
	assert_non_null(lik);
	xf_lik_out out = { 0.0, jtj, b, 0.0 };
	assert_int_equal(xf_lik_eval(lik, x, &out), 0);
	assert_pass_sums(&c, out.chi2, b, jtj);
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
		for (int k = 0; k < ns; k++)
			assert_true(rel(hss[a * ns + k], jtj[(np + a) * nf + np + k]) < 1e-12);
	}
	/* the residuals (CMC's σ prior, the search for a non-finite χ²): data − model of the
	 * point function, pair by pair with the angles inside */
	size_t n_pairs = c.ps.n_pairs;
	double *res = malloc(sizeof(double) * n_pairs * N_PHI);
	assert_int_equal(xf_problem_residuals(&c.pr, &c.ps, x, res), 0);
	double rss = 0.0;
	for (size_t q = 0; q < n_pairs * N_PHI; q++)
		rss += res[q] * res[q];
	assert_true(rel(rss, c.lsq) < 1e-12);
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
			assert_true(rel(angle[p * 3 + r], c.angle[p][r]) < 1e-12);
	free(hss);
	free(bs);
	xf_lik_destroy(lik);
	free(jtj);
	free(b);
	free(bg);
	toy_pass_free(&c);
}

/* Under the Cauchy loss, ρ(z) = ln(1 + z) and ρ'(z) = 1/(1 + z) of z = (r/s)², s = σ·f_scale:
 * the pass's χ² is Σ s²ρ, its b Σ ρ'·r·row and its JᵀJ Σ ρ'·row·rowᵀ (Gauss–Newton);
 * back to least squares, the bits of a likelihood that never had a loss */
static void test_pass_robust(void **state)
{
	(void)state;
	const double f_scale = 4e-3;
	toy_pass c;
	toy_pass_init(&c, 7, 1.0 * f_scale);		    /* s = σ·f_scale, σ = 1 */
	assert_true(c.down_weighted > 0 && c.cost < c.lsq); /* not least squares here */
	int nf = c.nf;
	double *jtj = calloc((size_t)nf * nf, sizeof(double)),
	       *b = calloc((size_t)nf, sizeof(double));
	double *jtj2 = calloc((size_t)nf * nf, sizeof(double)),
	       *b2 = calloc((size_t)nf, sizeof(double));
	xf_error err = { 0 };
	xf_lik *lik = xf_lik_create(&c.pr, &c.ps, NULL, &err);
	assert_non_null(lik);
	xf_lik_set_loss(lik, XF_LOSS_CAUCHY, f_scale);
	xf_lik_out out = { 0.0, jtj, b, 0.0 };
	assert_int_equal(xf_lik_eval(lik, c.x, &out), 0);
	assert_pass_sums(&c, out.chi2, b, jtj);
	xf_lik_set_loss(lik, XF_LOSS_LINEAR, 1.0);
	xf_lik *plain = xf_lik_create(&c.pr, &c.ps, NULL, &err);
	assert_non_null(plain);
	xf_lik_out o1 = { 0.0, jtj, b, 0.0 }, o2 = { 0.0, jtj2, b2, 0.0 };
	assert_int_equal(xf_lik_eval(lik, c.x, &o1), 0);
	assert_int_equal(xf_lik_eval(plain, c.x, &o2), 0);
	assert_true(o1.chi2 == o2.chi2 && rel(o1.chi2, c.lsq) < 1e-12);
	assert_memory_equal(b, b2, sizeof(double) * nf);
	assert_memory_equal(jtj, jtj2, sizeof(double) * nf * nf);
	xf_lik_destroy(plain);
	xf_lik_destroy(lik);
	free(jtj);
	free(b);
	free(jtj2);
	free(b2);
	toy_pass_free(&c);
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

/* Outliers on the short lags (one point in 16 raised by 0.02, ten times the noise) pull
 * the least-squares Γ away; soft_l1 with σ known and f_scale 1 finds Γ within 4 of its
 * standard errors, nearer the truth than least squares */
static void test_nlsq_robust_outliers(void **state)
{
	(void)state;
	const double noise = 2e-3;
	xf_dataset ds;
	xf_request req;
	toy_data(noise, 11, &ds, &req);
	size_t n = (size_t)N_FRAMES;
	int raised = 0;
	for (int i = 1; i < N_FRAMES; i++)
		for (int j = i + 1; j < N_FRAMES && j <= i + 6; j++)
			for (int p = 0; p < N_PHI; p++)
				if ((i * 7 + j * 3 + p) % 16 == 0) {
					ds.c2[p][xf_packed_index(n, (size_t)i, (size_t)j)] += 0.02;
					raised++;
				}
	assert_true(raised > 20);
	req.has_sigma = 1;
	req.sigma = noise;
	xf_nlsq_options opt;
	xf_nlsq_options_defaults(&opt);
	opt.start_search = 0;
	opt.multi_start = 0;
	xf_nlsq_result lsq, rob;
	xf_error err = { 0 };
	memset(&lsq, 0, sizeof lsq);
	memset(&rob, 0, sizeof rob);
	assert_int_equal(xf_nlsq_fit(&req, &opt, &ds, 1, NULL, NULL, &lsq, &err), 0);
	opt.loss = XF_LOSS_SOFT_L1;
	opt.f_scale = 1.0;
	assert_int_equal(xf_nlsq_fit(&req, &opt, &ds, 1, NULL, NULL, &rob, &err), 0);
	print_message("least squares Γ = %.5f ± %.5f, soft_l1 Γ = %.5f ± %.5f (truth %.1f)\n",
		      lsq.values[0], lsq.uncertainties[0], rob.values[0], rob.uncertainties[0],
		      GAMMA);
	assert_gamma_found(&rob);
	assert_true(fabs(rob.values[0] - GAMMA) < fabs(lsq.values[0] - GAMMA));
	assert_true(fabs(lsq.values[0] - GAMMA) > 4.0 * lsq.uncertainties[0]);
	xf_nlsq_result_free(&lsq);
	xf_nlsq_result_free(&rob);
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

/* With its own estimator the search starts from what the data show (Γ within 20 % of the
 * truth) instead of the request's 50 s⁻¹, and finds Γ as before (adr/0128) */
static void test_nlsq_model_start(void **state)
{
	(void)state;
	xf_dataset ds;
	xf_request req;
	toy_data(2e-3, 11, &ds, &req);
	req.mode = toy_estimated_mode;
	req.start[0] = 0.5 * (req.bounds[0].lower + req.bounds[0].upper);
	req.value_given[0] = 0;
	xf_nlsq_options opt;
	xf_nlsq_options_defaults(&opt);
	xf_nlsq_result res;
	xf_error err = { 0 };
	memset(&res, 0, sizeof res);
	assert_int_equal(xf_nlsq_fit(&req, &opt, &ds, 1, NULL, NULL, &res, &err), 0);
	print_message("estimated start Γ = %.4f (request %.2f), fit %.5f ± %.5f\n",
		      res.search.estimate[0], req.start[0], res.values[0], res.uncertainties[0]);
	assert_true(fabs(res.search.estimate[0] - GAMMA) < 0.2 * GAMMA);
	assert_gamma_found(&res);
	xf_nlsq_result_free(&res);
	/* a fixed Γ is the request's, whatever the estimator says */
	req.start[0] = 5.0;
	req.fixed[0] = 1;
	memset(&res, 0, sizeof res);
	assert_int_equal(xf_nlsq_fit(&req, &opt, &ds, 1, NULL, NULL, &res, &err), 0);
	assert_true(res.values[0] == 5.0);
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

/* Load config text from a file in XF_TMP (or /tmp); the load's status */
static int load_config(const char *text, xf_config *cfg, xf_error *err)
{
	const char *t = getenv("XF_TMP");
	char path[4096];
	if (t && t[0])
		mkdir(t, 0755); /* the test's own folder, once */
	snprintf(path, sizeof path, "%s/toy_%ld.yaml", t && t[0] ? t : "/tmp", (long)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	int rc = xf_config_load(path, cfg, err);
	remove(path);
	return rc;
}

/* --initial and --fix take a registered model's own names (the CLI's check is every
 * registered model's parameters; the config then checks them against the model named) */
static void test_overrides_name_model(void **state)
{
	(void)state;
	xf_cli_overrides ov;
	memset(&ov, 0, sizeof ov);
	assert_int_equal(xf_cli_override_option(&ov, XF_OPT_INITIAL, "Gamma=2.5"), 0);
	assert_int_equal(xf_cli_override_option(&ov, XF_OPT_FIX, "Gamma=4.5"), 0);
	assert_int_equal(xf_cli_override_option(&ov, XF_OPT_INITIAL, "Nope=1"), XF_ERR_CONFIG);
	const char *t = getenv("XF_TMP");
	char path[4096];
	snprintf(path, sizeof path, "%s/toy_ov_%ld.yaml", t && t[0] ? t : "/tmp", (long)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("analysis_mode: single_exponential\nexperimental_data: {file_path: toy.h5}\n", f);
	assert_int_equal(fclose(f), 0);
	xf_config cfg;
	xf_error err = { 0 };
	assert_int_equal(xf_config_load_with(path, ov.items, 1, &cfg, &err), 0);
	assert_true(cfg.values[0] == 2.5 && cfg.value_given[0] && !cfg.is_fixed[0]);
	xf_config_free(&cfg);
	assert_int_equal(xf_config_load_with(path, ov.items + 1, 1, &cfg, &err), 0);
	assert_true(cfg.values[0] == 4.5 && cfg.is_fixed[0]);
	xf_config_free(&cfg);
	remove(path);
	xf_cli_overrides_free(&ov);
}

static void test_config_names_model(void **state)
{
	(void)state;
	xf_config cfg;
	xf_error err = { 0 };
	/* no bounds given: the model's own (0.1 … 100 s⁻¹), not D0's */
	assert_int_equal(load_config("analysis_mode: single_exponential\n"
				     "experimental_data: {file_path: toy.h5}\n",
				     &cfg, &err),
			 0);
	assert_int_equal(cfg.mode, toy_mode);
	assert_true(cfg.bounds[0].lower == 0.1 && cfg.bounds[0].upper == 100.0);
	assert_true(cfg.bounds[XF_P_CONTRAST].upper == 1.0); /* the scaling's as ever */
	xf_config_free(&cfg);
	/* bounds, a start and a fixed value by the parameter's name */
	assert_int_equal(load_config("analysis_mode: single_exponential\n"
				     "experimental_data: {file_path: toy.h5}\n"
				     "parameter_space:\n"
				     "  bounds:\n"
				     "    - {name: Gamma, min: 0.5, max: 40.0}\n"
				     "    - {name: contrast, min: 0.05, max: 0.6}\n"
				     "initial_parameters:\n"
				     "  parameter_names: [Gamma]\n"
				     "  values: [3.0]\n",
				     &cfg, &err),
			 0);
	assert_true(cfg.bounds[0].lower == 0.5 && cfg.bounds[0].upper == 40.0);
	assert_true(cfg.bounds[XF_P_CONTRAST].upper == 0.6);
	assert_true(cfg.values[0] == 3.0 && cfg.value_given[0] && !cfg.is_fixed[0]);
	/* the request built from it fits the toy's matrix as toy_request's does */
	xf_request req, unused;
	xf_dataset ds;
	toy_data(2e-3, 9, &ds, &unused);
	xf_request_from_config(&cfg, &req);
	assert_int_equal(req.mode, toy_mode);
	req.per_angle_mode = XF_SCALING_INDIVIDUAL; /* the angles' own contrasts */
	xf_nlsq_options opt;
	xf_nlsq_options_defaults(&opt);
	opt.start_search = 0;
	opt.multi_start = 0;
	xf_nlsq_result res;
	memset(&res, 0, sizeof res);
	assert_int_equal(xf_nlsq_fit(&req, &opt, &ds, 1, NULL, NULL, &res, &err), 0);
	assert_gamma_found(&res);
	xf_nlsq_result_free(&res);
	xf_synth_free(&ds);
	xf_config_free(&cfg);
	assert_int_equal(load_config("analysis_mode: single_exponential\n"
				     "experimental_data: {file_path: toy.h5}\n"
				     "initial_parameters:\n"
				     "  fixed_parameters: {Gamma: 4.0}\n",
				     &cfg, &err),
			 0);
	assert_true(cfg.values[0] == 4.0 && cfg.is_fixed[0]);
	xf_config_free(&cfg);
	/* a built-in model's parameter is no parameter of this one */
	xf_error_clear(&err);
	assert_int_equal(load_config("analysis_mode: single_exponential\n"
				     "experimental_data: {file_path: toy.h5}\n"
				     "parameter_space:\n"
				     "  bounds:\n"
				     "    - {name: D0, min: 1.0, max: 2.0}\n",
				     &cfg, &err),
			 XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "parameter_space.bounds[0].name"));
	assert_non_null(strstr(err.msg, "one of Gamma, contrast, offset"));
	xf_error_clear(&err);
	assert_int_equal(load_config("analysis_mode: single_exponential\n"
				     "experimental_data: {file_path: toy.h5}\n"
				     "initial_parameters:\n"
				     "  parameter_names: [D0]\n"
				     "  values: [1000]\n",
				     &cfg, &err),
			 XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "one of Gamma"));
	/* the built-in names are still what a config is checked against */
	xf_error_clear(&err);
	assert_int_equal(load_config("analysis_mode: double_exponential\n"
				     "experimental_data: {file_path: toy.h5}\n",
				     &cfg, &err),
			 XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "analysis_mode"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registered),
		cmocka_unit_test(test_c2),
		cmocka_unit_test(test_pass_against_sums),
		cmocka_unit_test(test_pass_robust),
		cmocka_unit_test(test_nlsq_recovers_gamma),
		cmocka_unit_test(test_nlsq_robust_outliers),
		cmocka_unit_test(test_nlsq_defaults_search),
		cmocka_unit_test(test_nlsq_flat_bounds_refused),
		cmocka_unit_test(test_nlsq_model_start),
		cmocka_unit_test(test_config_names_model),
		cmocka_unit_test(test_overrides_name_model),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
