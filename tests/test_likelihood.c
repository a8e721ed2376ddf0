/* test_likelihood.c — the shared likelihood pass: streamed χ², JᵀJ and Jᵀr against an
 * explicit per-point Jacobian in every scaling mode, on all pairs and on subsampled pair
 * sets; pair-set sampling; the scaling type records; χ² at many points in one sweep. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "model/kernel.h"
#include "synth.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/rng.h"
#include "fit_request.h"

static const double truth_laminar[7] = { 1500.0, -0.8, 20.0, 0.012, -0.3, 0.0005, 2.0 };

/* The request of a fit of g's model from a fixed start, on g's shear model */
static void laminar_request(xf_request *req, const xf_model_grid *g)
{
	const double start[7] = { 1000.0, -0.5, 10.0, 0.01, -0.2, 0.0, 0.0 };
	xf_test_request(req, g->mode, start);
	req->shear_model = g->shear_model;
}

/* k-th pair of a pair set, the implicit one walked row by row. */
static void pair_at(const xf_pairset *ps, size_t k, size_t *i, size_t *j)
{
	if (ps->pair_i) {
		*i = ps->pair_i[k];
		*j = ps->pair_j[k];
		return;
	}
	size_t n = (size_t)ps->n_frames, row = 1;
	while (k >= n - 1 - row) {
		k -= n - 1 - row;
		row++;
	}
	*i = row;
	*j = row + 1 + k;
}

/* Explicit JᵀJ and b from per-point gradients, for comparison with the streamed sums. */
static void explicit_normal_equations(const xf_problem *pr, const xf_pairset *ps, const double *x,
				      double *chi2, double *jtj, double *b)
{
	int nf = pr->n_full, np = pr->n_phys, nb = pr->n_basis;
	double *con = malloc(2 * (size_t)pr->n_phi * sizeof *con);
	assert_non_null(con);
	double *off = con + pr->n_phi;
	xf_problem_scaling(pr, x, con, off);
	memset(jtj, 0, sizeof(double) * nf * nf);
	memset(b, 0, sizeof(double) * nf);
	*chi2 = 0.0;
	size_t n = (size_t)pr->ds->n_frames;
	for (int a = 0; a < pr->n_phi; a++)
		for (size_t k = 0; k < ps->n_pairs; k++) {
			size_t i, j;
			pair_at(ps, k, &i, &j);
			double c2, grad[9], row[64] = { 0 };
			xf_model_c2_point(&pr->grid, x, pr->ds->phi_deg[a], con[a], off[a], (int)i,
					  (int)j, &c2, grad);
			double res = pr->ds->c2[a][xf_packed_index(n, i, j)] - c2;
			for (int m = 0; m < np; m++)
				row[m] = grad[m];
			for (int m = 0; m < nb; m++) {
				row[np + m] = grad[XF_P_CONTRAST] * pr->basis[a * nb + m];
				row[np + nb + m] = pr->basis[a * nb + m];
			}
			*chi2 += res * res;
			for (int m = 0; m < nf; m++) {
				b[m] += row[m] * res;
				for (int l = 0; l < nf; l++)
					jtj[m * nf + l] += row[m] * row[l];
			}
		}
	free(con);
}

/* The streamed pass equals the explicit sums on all pairs (sample = 0) or on a sampled
 * pair set of about `sample` pairs. */
static void check_pass(xf_mode mode, xf_scaling_mode scaling, int n_threads, xf_shear_model shear,
		       size_t sample)
{
	xf_model_grid g = { mode, shear, 40, 0.01, 0.0054, 2e6 };
	const double phi[5] = { -30, 0, 15, 60, 90 };
	const double con[5] = { 0.3, 0.25, 0.28, 0.31, 0.29 }, off[5] = { 1, 1.01, 0.99, 1, 1.02 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth_laminar, 5, phi, con, off, 2e-3, 7, &ds), 0);
	xf_request req;
	laminar_request(&req, &g);
	req.anti_degeneracy = 1;
	req.per_angle_mode = scaling;
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &req, &ds, &err), 0);
	assert_int_equal(pr.scaling->mode, scaling);
	xf_pool *pool = xf_pool_create(n_threads);
	xf_pairset ps;
	if (sample)
		assert_int_equal(xf_pairset_sample(&ps, ds.n_frames, sample, 3, XF_RNG_SCREEN), 0);
	else
		xf_pairset_all(&ps, ds.n_frames);
	xf_lik *lik = xf_lik_create(&pr, &ps, pool, &err);
	assert_non_null(lik);
	assert_int_equal(xf_lik_points(lik), ps.n_pairs * 5);
	int nf = pr.n_full;
	double x[64];
	memcpy(x, pr.start, sizeof(double) * nf);
	x[XF_P_D0] = 1300; /* away from the start so residuals are not noise only */
	if (mode == XF_MODE_LAMINAR)
		x[XF_P_PHI0] = 3.0;
	double chi2_ref, *h = malloc(sizeof(double) * nf * nf);
	double *h_ref = malloc(sizeof(double) * nf * nf), b[64], b_ref[64];
	xf_lik_out out = { 0.0, h, b, 0.0 };
	assert_int_equal(xf_lik_eval(lik, x, &out), 0);
	explicit_normal_equations(&pr, &ps, x, &chi2_ref, h_ref, b_ref);
	assert_true(fabs(out.chi2 - chi2_ref) <= 1e-10 * chi2_ref);
	for (int k = 0; k < nf; k++) {
		double dk = sqrt(h_ref[k * nf + k]);
		for (int l = 0; l < nf; l++) {
			double dl = sqrt(h_ref[l * nf + l]);
			if (fabs(h[k * nf + l] - h_ref[k * nf + l]) > 1e-10 * dk * dl + 1e-300)
				fail_msg("JtJ[%s,%s]: streamed %.15g explicit %.15g", pr.names[k],
					 pr.names[l], h[k * nf + l], h_ref[k * nf + l]);
		}
		if (fabs(b[k] - b_ref[k]) > 1e-9 * dk * sqrt(chi2_ref))
			fail_msg("b[%s]: streamed %.15g explicit %.15g", pr.names[k], b[k],
				 b_ref[k]);
	}
	assert_true(out.mean_g1sq > 0.0 && out.mean_g1sq <= 1.0);
	/* the lighter passes: χ² and b alone, χ² alone, the same numbers */
	double b_grad[64];
	xf_lik_out grad = { 0.0, NULL, b_grad, 0.0 }, value = { 0.0, NULL, NULL, 0.0 };
	assert_int_equal(xf_lik_eval(lik, x, &grad), 0);
	assert_int_equal(xf_lik_eval(lik, x, &value), 0);
	assert_true(fabs(grad.chi2 - out.chi2) <= 1e-12 * out.chi2);
	assert_true(fabs(value.chi2 - out.chi2) <= 1e-12 * out.chi2);
	assert_true(fabs(value.mean_g1sq - out.mean_g1sq) <= 1e-12 * out.mean_g1sq);
	for (int k = 0; k < nf; k++)
		if (fabs(b_grad[k] - b[k]) > 1e-10 * sqrt(h_ref[k * nf + k] * chi2_ref))
			fail_msg("gradient pass b[%s] %.15g, full pass %.15g", pr.names[k],
				 b_grad[k], b[k]);
	/* blocks run inline (no pool) give the same bits */
	xf_lik *inline_lik = xf_lik_create(&pr, &ps, NULL, &err);
	double b_inline[64];
	xf_lik_out inl = { 0.0, NULL, b_inline, 0.0 };
	assert_int_equal(xf_lik_eval(inline_lik, x, &inl), 0);
	assert_memory_equal(&inl.chi2, &grad.chi2, sizeof(double));
	assert_memory_equal(b_inline, b_grad, sizeof(double) * nf);
	xf_lik_destroy(inline_lik);
	free(h);
	free(h_ref);
	xf_lik_destroy(lik);
	xf_pairset_free(&ps);
	xf_pool_destroy(pool);
	xf_problem_free(&pr);
	xf_synth_free(&ds);
}

/* The laminar kernel takes sin and cos of a pair's phase from per-frame tables by the
 * difference formulas, and sinc from its series below |x| 0.25 (adr/0089). Against the
 * explicit per-point sums (libm sincos, kernel.h) at 1e-13 on χ², 1e-11 on JᵀJ and b, in
 * three regimes, each checked to hold: phases to thousands of radians; phases of ~10 rad
 * whose adjacent frames are in the series region; a gap so wide that a pair at the same strain has
 * the smoothing term of I^γ outside the table's series (the direct sincos). */
static void check_phase_regime(double gap_A, double gdot0, double x_min, double x_max,
			       double *x_seen_min, double *x_seen_max)
{
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, 60, 0.01, 0.0054, gap_A };
	const double phi[4] = { -30, 0, 45, 90 };
	const double con[4] = { 0.3, 0.25, 0.28, 0.31 }, off[4] = { 1, 1.01, 0.99, 1 };
	double truth[7] = { 1500.0, -0.8, 20.0, gdot0, -0.3, 0.0, 2.0 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth, 4, phi, con, off, 2e-3, 7, &ds), 0);
	xf_request req;
	laminar_request(&req, &g);
	req.gap_A = gap_A;
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &req, &ds, &err), 0);
	xf_pairset ps;
	xf_pairset_all(&ps, ds.n_frames);
	xf_lik *lik = xf_lik_create(&pr, &ps, NULL, &err);
	assert_non_null(lik);
	int nf = pr.n_full;
	double x[64];
	memcpy(x, pr.start, sizeof(double) * nf);
	for (int k = 0; k < 7; k++)
		x[k] = truth[k];
	x[XF_P_D0] = 1300;
	/* the phases |s·I^γ·cos| of the points, from the frame integrals */
	xf_frames f;
	assert_int_equal(xf_frames_alloc(&f, ds.n_frames, 1), 0);
	xf_frames_compute(&f, &pr.grid, x);
	*x_seen_min = INFINITY;
	*x_seen_max = 0.0;
	for (int p = 0; p < 4; p++) {
		double ca = cos((x[XF_P_PHI0] - phi[p]) * XF_DEG2RAD);
		for (size_t k = 0; k < ps.n_pairs; k++) {
			size_t i, j;
			pair_at(&ps, k, &i, &j);
			double d = f.cg[i] - f.cg[j];
			double ph = fabs(f.s * sqrt(d * d + XF_INTEGRAL_EPS2) * ca);
			if (ph > 0.0)
				*x_seen_min = fmin(*x_seen_min, ph);
			*x_seen_max = fmax(*x_seen_max, ph);
		}
	}
	xf_frames_free(&f);
	if (!(*x_seen_min >= x_min && *x_seen_max <= x_max))
		fail_msg("phases %g .. %g, expected within %g .. %g", *x_seen_min, *x_seen_max,
			 x_min, x_max);
	double chi2_ref, *h = malloc(sizeof(double) * nf * nf);
	double *h_ref = malloc(sizeof(double) * nf * nf), b[64], b_ref[64];
	xf_lik_out out = { 0.0, h, b, 0.0 };
	assert_int_equal(xf_lik_eval(lik, x, &out), 0);
	explicit_normal_equations(&pr, &ps, x, &chi2_ref, h_ref, b_ref);
	if (!(fabs(out.chi2 - chi2_ref) <= 1e-13 * chi2_ref))
		fail_msg("chi2: streamed %.17g explicit %.17g", out.chi2, chi2_ref);
	for (int k = 0; k < nf; k++) {
		double dk = sqrt(h_ref[k * nf + k]);
		for (int l = 0; l < nf; l++) {
			double dl = sqrt(h_ref[l * nf + l]);
			if (fabs(h[k * nf + l] - h_ref[k * nf + l]) > 1e-11 * dk * dl + 1e-300)
				fail_msg("JtJ[%s,%s]: streamed %.15g explicit %.15g", pr.names[k],
					 pr.names[l], h[k * nf + l], h_ref[k * nf + l]);
		}
		if (fabs(b[k] - b_ref[k]) > 1e-11 * dk * sqrt(chi2_ref))
			fail_msg("b[%s]: streamed %.15g explicit %.15g", pr.names[k], b[k],
				 b_ref[k]);
	}
	free(h);
	free(h_ref);
	xf_lik_destroy(lik);
	xf_pairset_free(&ps);
	xf_problem_free(&pr);
	xf_synth_free(&ds);
}

static void test_pass_phase_tables(void **state)
{
	(void)state;
	double lo, hi;
	check_phase_regime(2e8, 0.05, 0.0, 1e4, &lo, &hi); /* phases to thousands of rad */
	assert_true(hi > 100.0);
	/* phases to ~10 rad, adjacent frames' in the series region: there sin x would come
	 * from the difference of nearly equal tables */
	check_phase_regime(2e6, 0.005, 0.0, 100.0, &lo, &hi);
	assert_true(lo < 0.01 && hi > 1.0);
	/* γ̇ at its floor: I^γ ≈ ε at every pair, e = s·ε·cos beyond 1e-3 */
	check_phase_regime(2e11, 0.0, 0.0, 1e9, &lo, &hi);
	assert_true(hi > 1.0); /* e ≈ x here: past 1e-3 at every angle but near 90° */
}

static void test_pass_laminar(void **state)
{
	(void)state;
	check_pass(XF_MODE_LAMINAR, XF_SCALING_INDIVIDUAL, 1, XF_SHEAR_HOMODYNE, 0);
	check_pass(XF_MODE_LAMINAR, XF_SCALING_AUTO, 2, XF_SHEAR_HOMODYNE, 0);
	check_pass(XF_MODE_LAMINAR, XF_SCALING_FOURIER, 3, XF_SHEAR_HOMODYNE, 0);
	check_pass(XF_MODE_LAMINAR, XF_SCALING_CONSTANT, 1, XF_SHEAR_HOMODYNE, 0);
	check_pass(XF_MODE_LAMINAR, XF_SCALING_INDIVIDUAL, 2, XF_SHEAR_PNAS2024, 0);
	check_pass(XF_MODE_LAMINAR, XF_SCALING_AUTO, 1, XF_SHEAR_PNAS2024, 0);
}

static void test_pass_static(void **state)
{
	(void)state;
	check_pass(XF_MODE_STATIC, XF_SCALING_INDIVIDUAL, 2, XF_SHEAR_HOMODYNE, 0);
	check_pass(XF_MODE_STATIC, XF_SCALING_AUTO, 1, XF_SHEAR_HOMODYNE, 0);
	check_pass(XF_MODE_STATIC, XF_SCALING_FOURIER, 1, XF_SHEAR_HOMODYNE, 0);
}

/* The same sums over a subsample of pairs (a screening set, a CMC shard). */
static void test_pass_subsample(void **state)
{
	(void)state;
	check_pass(XF_MODE_LAMINAR, XF_SCALING_INDIVIDUAL, 2, XF_SHEAR_HOMODYNE, 200);
	check_pass(XF_MODE_LAMINAR, XF_SCALING_AUTO, 3, XF_SHEAR_HOMODYNE, 300);
	check_pass(XF_MODE_STATIC, XF_SCALING_INDIVIDUAL, 1, XF_SHEAR_HOMODYNE, 150);
}

/* The share of the pairs (i < j, frames 1 … n − 1) whose log g1_D is clipped at −700. */
static double clipped_share(const xf_problem *pr, const double *x)
{
	xf_frames f;
	int n = pr->grid.n_frames;
	assert_int_equal(xf_frames_alloc(&f, n, 1), 0);
	xf_frames_compute(&f, &pr->grid, x);
	double clipped = 0.0, all = 0.0;
	for (int i = 1; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			double a[3];
			xf_pair_diffusion(&f, i, j, a);
			clipped += a[0] == 0.0 && a[1] == 0.0 && a[2] == 0.0;
			all += 1.0;
		}
	xf_frames_free(&f);
	return clipped / all;
}

/* Every pass level, in every scaling mode and shear model, on several blocks (all pairs
 * and a subsample), at two points (one where part of the pairs have g1_D clipped): the
 * same bits on 1, 2 and 3 threads, inline, and with each build of the laminar kernel
 * (baseline, AVX2, AVX-512 where the CPU has them; adr/0035). */
static void check_pass_bits(xf_scaling_mode scaling, xf_shear_model shear, size_t sample)
{
	xf_model_grid g = { XF_MODE_LAMINAR, shear, 200, 0.01, 0.0054, 2e6 };
	const double phi[5] = { -30, 0, 15, 60, 90 };
	const double con[5] = { 0.3, 0.25, 0.28, 0.31, 0.29 }, off[5] = { 1, 1.01, 0.99, 1, 1.02 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth_laminar, 5, phi, con, off, 2e-3, 11, &ds), 0);
	xf_request req;
	laminar_request(&req, &g);
	req.per_angle_mode = scaling;
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &req, &ds, &err), 0);
	xf_pairset ps;
	if (sample)
		assert_int_equal(xf_pairset_sample(&ps, ds.n_frames, sample, 5, XF_RNG_SCREEN), 0);
	else
		xf_pairset_all(&ps, ds.n_frames);
	assert_true(ps.n_pairs > 2 * XF_PAIRS_PER_BLOCK); /* several blocks, a partial last */
	int nf = pr.n_full;
	double x[64];
	memcpy(x, pr.start, sizeof(double) * nf);
	x[XF_P_D0] = 1300;
	x[XF_P_PHI0] = 3.0;
	double x_clip[64];
	memcpy(x_clip, x, sizeof(double) * nf);
	x_clip[XF_P_D0] = 1e8;
	double share = clipped_share(&pr, x_clip);
	if (!(share > 0.1 && share < 0.9))
		fail_msg("%.3f of the pairs clipped at the second point", share);
	/* [point][level][run]: χ², b, JᵀJ */
	enum { RUNS = 7 };
	const int threads[RUNS] = { 1, 2, 3, 0, 2, 2, 2 };
	const char *kernel[RUNS] = { NULL, NULL, NULL, NULL, "generic", "avx2", "avx512" };
	double *ref = NULL;
	size_t per_run = 2 * 3 * (1 + (size_t)nf + (size_t)nf * nf);
	ref = calloc(per_run, sizeof(double));
	double *got = calloc(per_run, sizeof(double));
	assert_non_null(ref);
	assert_non_null(got);
	for (int run = 0; run < RUNS; run++) {
		if (kernel[run])
			setenv("XPCSFIT_KERNEL", kernel[run], 1);
		else
			unsetenv("XPCSFIT_KERNEL");
		xf_pool *pool = threads[run] ? xf_pool_create(threads[run]) : NULL;
		xf_lik *lik = xf_lik_create(&pr, &ps, pool, &err);
		assert_non_null(lik);
		double *out = run == 0 ? ref : got;
		for (int level = 0; level < 2 * 3; level++) {
			double *o = out + (size_t)level * (1 + nf + (size_t)nf * nf);
			xf_lik_out lo = { 0.0, level % 3 == 0 ? o + 1 + nf : NULL,
					  level % 3 < 2 ? o + 1 : NULL, 0.0 };
			assert_int_equal(xf_lik_eval(lik, level < 3 ? x : x_clip, &lo), 0);
			o[0] = lo.chi2;
		}
		if (run > 0 && memcmp(got, ref, per_run * sizeof(double)))
			fail_msg("%s, %s, sample %zu: run %d (%d threads, kernel %s) differs",
				 xf_scaling_mode_name(scaling),
				 shear == XF_SHEAR_PNAS2024 ? "pnas2024" : "homodyne", sample, run,
				 threads[run], kernel[run] ? kernel[run] : "default");
		xf_lik_destroy(lik);
		xf_pool_destroy(pool);
	}
	unsetenv("XPCSFIT_KERNEL");
	free(ref);
	free(got);
	xf_pairset_free(&ps);
	xf_problem_free(&pr);
	xf_synth_free(&ds);
}

static void test_pass_bits(void **state)
{
	(void)state;
	check_pass_bits(XF_SCALING_AUTO, XF_SHEAR_HOMODYNE, 0);
	check_pass_bits(XF_SCALING_INDIVIDUAL, XF_SHEAR_HOMODYNE, 0);
	check_pass_bits(XF_SCALING_FOURIER, XF_SHEAR_PNAS2024, 0);
	check_pass_bits(XF_SCALING_CONSTANT, XF_SHEAR_HOMODYNE, 0);
	check_pass_bits(XF_SCALING_INDIVIDUAL, XF_SHEAR_PNAS2024, 9000);
	check_pass_bits(XF_SCALING_AUTO, XF_SHEAR_HOMODYNE, 9000);
}

/* Sampled pair sets: valid, sorted, without repeats, near the target count, a pure
 * function of the seed; the target at or above all pairs gives every pair. */
static void test_pairset_sample(void **state)
{
	(void)state;
	const int n = 300;
	size_t all = xf_fitted_pairs(n);
	xf_pairset a, b, c;
	assert_int_equal(xf_pairset_sample(&a, n, 5000, 11, XF_RNG_SCREEN), 0);
	assert_int_equal(xf_pairset_sample(&b, n, 5000, 11, XF_RNG_SCREEN), 0);
	assert_int_equal(xf_pairset_sample(&c, n, 5000, 12, XF_RNG_SCREEN), 0);
	assert_non_null(a.pair_i);
	/* binomial count: sd ≈ 69 */
	if (!(fabs((double)a.n_pairs - 5000.0) < 400.0))
		fail_msg("%zu pairs sampled for a target of 5000", a.n_pairs);
	assert_int_equal(a.n_pairs, b.n_pairs);
	assert_memory_equal(a.pair_i, b.pair_i, sizeof(uint32_t) * a.n_pairs);
	assert_memory_equal(a.pair_j, b.pair_j, sizeof(uint32_t) * a.n_pairs);
	size_t same = 0;
	for (size_t k = 0; k < a.n_pairs && k < c.n_pairs; k++)
		same += a.pair_i[k] == c.pair_i[k] && a.pair_j[k] == c.pair_j[k];
	assert_true(same < a.n_pairs / 2);
	/* every lag and every t1 region is represented */
	int lag_seen[300] = { 0 }, row_seen[300] = { 0 };
	for (size_t k = 0; k < a.n_pairs; k++) {
		uint32_t i = a.pair_i[k], j = a.pair_j[k];
		assert_true(i >= 1 && i < j && j <= (uint32_t)n - 1);
		if (k > 0) {
			uint32_t pi = a.pair_i[k - 1], pj = a.pair_j[k - 1];
			assert_true(pi < i || (pi == i && pj < j));
		}
		lag_seen[(j - i) / 30]++;
		row_seen[i / 30]++;
	}
	for (int q = 0; q < 9; q++)
		assert_true(lag_seen[q] > 0 && row_seen[q] > 0);
	xf_pairset_free(&a);
	xf_pairset_free(&b);
	xf_pairset_free(&c);
	assert_int_equal(xf_pairset_sample(&a, n, all, 11, XF_RNG_SCREEN), 0);
	assert_null(a.pair_i);
	assert_int_equal(a.n_pairs, all);
	xf_pairset_free(&a);
}

/* The scaling records: names, bounds and starts of each mode's coefficients. */
static void test_scaling_types(void **state)
{
	(void)state;
	xf_bound bnd = { 0.1, 0.5, 0.3, 0.1 };
	const double start[4] = { 0.2, 0.3, 0.6, 0.25 };
	char name[64];
	double lo, hi, x0, mu, sd, row[5];
	const xf_scaling_type *t = xf_scaling_type_of(XF_SCALING_INDIVIDUAL);
	assert_int_equal(t->n_coefs(4, 2), 4);
	t->coef("contrast", 2, &bnd, start, 4, name, sizeof name, &lo, &hi, &x0, &mu, &sd);
	assert_string_equal(name, "contrast_002");
	assert_true(lo == 0.1 && hi == 0.5 && x0 == 0.5); /* clipped into the bounds */
	assert_true(mu == 0.3 && sd == 0.1);		  /* every angle: the bound's prior */
	t = xf_scaling_type_of(XF_SCALING_AUTO);
	assert_int_equal(t->n_coefs(4, 2), 1);
	assert_true(t->shared_row);
	t->coef("offset", 0, &bnd, start, 4, name, sizeof name, &lo, &hi, &x0, &mu, &sd);
	assert_string_equal(name, "offset");
	assert_true(fabs(x0 - 0.3375) < 1e-15);
	t = xf_scaling_type_of(XF_SCALING_FOURIER);
	assert_int_equal(t->n_coefs(7, 2), 5);
	t->coef("contrast", 3, &bnd, start, 4, name, sizeof name, &lo, &hi, &x0, &mu, &sd);
	assert_string_equal(name, "contrast_cos2");
	assert_true(fabs(hi - 0.2) < 1e-15 && fabs(lo + 0.2) < 1e-15 && x0 == 0.0);
	assert_true(mu == 0.0 && fabs(sd - 0.1) < 1e-15); /* harmonics: centred on 0 */
	t->basis_row(0, M_PI / 3, 5, row);
	assert_true(row[0] == 1.0 && fabs(row[1] - 0.5) < 1e-15 &&
		    fabs(row[4] - sin(2 * M_PI / 3)) < 1e-15);
	t = xf_scaling_type_of(XF_SCALING_CONSTANT);
	assert_int_equal(t->n_coefs(4, 2), 0);
	assert_true(t->held_at_start);
}

/* χ² at many points in one sweep (xf_lik_eval_values, the importance route's pass): at n
 * points (perturbed around a start; batches of XF_LIK_BATCH, a partial last batch, more
 * than two batches) each value is bit for bit the χ² of xf_lik_eval at that point, inline
 * and on a 2-thread pool, on all pairs and on a sampled pair set; a point whose χ² is
 * not finite (a NaN parameter) is +∞ there and leaves its neighbours' bits alone. The
 * same for the scaling passes (xf_lik_eval_scalings: χ², h_ss and b_s bit for bit those
 * of xf_lik_eval_scaling point by point). */
/* xf_lik_eval_scalings of pr at the first 1, 5, 16, 17 and n of x [n][n_full] against
 * xf_lik_eval_scaling point by point (bytes), and with point bad's D0 NaN: +∞ there
 * alone. */
static void check_eval_scalings(const xf_problem *pr, xf_lik *lik, double *x, int n, int bad)
{
	size_t nf = (size_t)pr->n_full, ns = 2 * (size_t)pr->n_basis;
	double *c = malloc(sizeof(double) * 2 * n), *h = malloc(sizeof(double) * 2 * n * ns * ns);
	double *b = malloc(sizeof(double) * 2 * n * ns);
	assert_true(c && h && b);
	double *c1 = c + n, *h1 = h + n * ns * ns, *b1 = b + n * ns; /* one by one */
	for (int i = 0; i < n; i++)
		assert_int_equal(
			xf_lik_eval_scaling(lik, x + i * nf, c1 + i, h1 + i * ns * ns, b1 + i * ns),
			0);
	const int counts[5] = { 1, 5, 16, 17, n };
	for (int k = 0; k < 5; k++) {
		int m = counts[k];
		assert_int_equal(xf_lik_eval_scalings(lik, m, x, c, h, b), 0);
		if (memcmp(c, c1, sizeof(double) * m) ||
		    memcmp(h, h1, sizeof(double) * m * ns * ns) ||
		    memcmp(b, b1, sizeof(double) * m * ns))
			fail_msg("%d scaling passes in sweeps differ from one by one", m);
	}
	double saved = x[bad * nf + XF_P_D0];
	x[bad * nf + XF_P_D0] = NAN;
	assert_int_equal(xf_lik_eval_scalings(lik, n, x, c, h, b), 0);
	x[bad * nf + XF_P_D0] = saved;
	assert_true(isinf(c[bad]) && c[bad] > 0.0);
	for (int i = 0; i < n; i++)
		if (i != bad && memcmp(c + i, c1 + i, sizeof(double)))
			fail_msg("next to a non-finite point: scaling pass %d differs", i);
	free(c);
	free(h);
	free(b);
}

static void check_eval_values(xf_mode mode, size_t sample)
{
	xf_model_grid g = { mode, XF_SHEAR_HOMODYNE, 200, 0.01, 0.0054, 2e6 };
	const double phi[5] = { -30, 0, 15, 60, 90 };
	const double con[5] = { 0.3, 0.25, 0.28, 0.31, 0.29 }, off[5] = { 1, 1.01, 0.99, 1, 1.02 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth_laminar, 5, phi, con, off, 2e-3, 13, &ds), 0);
	xf_request req;
	laminar_request(&req, &g);
	req.per_angle_mode = XF_SCALING_INDIVIDUAL;
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &req, &ds, &err), 0);
	xf_pairset ps;
	if (sample)
		assert_int_equal(xf_pairset_sample(&ps, ds.n_frames, sample, 9, XF_RNG_SCREEN), 0);
	else
		xf_pairset_all(&ps, ds.n_frames);
	assert_true(ps.n_pairs > 2 * XF_PAIRS_PER_BLOCK); /* several blocks, a partial last */
	int nf = pr.n_full;
	enum { MAX_N = 40 };
	double *x = malloc(sizeof(double) * MAX_N * nf);
	assert_non_null(x);
	/* deterministic perturbations of a few percent around the start, each parameter
	 * kept inside its bounds */
	for (int i = 0; i < MAX_N; i++)
		for (int k = 0; k < nf; k++) {
			double v = pr.start[k], w = pr.upper[k] - pr.lower[k];
			double u = sin(1.7 * (i + 1) + 0.9 * (k + 1)); /* in [−1, 1] */
			v += 0.03 * u * (isfinite(w) ? w : fabs(v) + 1.0);
			if (v < pr.lower[k])
				v = pr.lower[k];
			if (v > pr.upper[k])
				v = pr.upper[k];
			x[(size_t)i * nf + k] = v;
		}
	for (int i = 0; i < MAX_N; i++)
		x[(size_t)i * nf + XF_P_D0] = 900.0 + 25.0 * i; /* distinct χ² at every point */
	const int counts[5] = { 1, 5, 16, 17, 40 };
	const int threads[2] = { 0, 2 };
	double ref[MAX_N], got[MAX_N];
	for (int run = 0; run < 2; run++) {
		xf_pool *pool = threads[run] ? xf_pool_create(threads[run]) : NULL;
		xf_lik *lik = xf_lik_create(&pr, &ps, pool, &err);
		assert_non_null(lik);
		for (int i = 0; i < MAX_N; i++) {
			xf_lik_out out = { 0.0, NULL, NULL, 0.0 };
			assert_int_equal(xf_lik_eval(lik, x + (size_t)i * nf, &out), 0);
			ref[i] = out.chi2;
			assert_true(isfinite(ref[i]) && ref[i] > 0.0);
			if (i > 0 && ref[i] == ref[i - 1])
				fail_msg("points %d and %d have the same chi2 %.17g", i - 1, i,
					 ref[i]);
		}
		for (int c = 0; c < 5; c++) {
			int n = counts[c];
			for (int i = 0; i < MAX_N; i++)
				got[i] = NAN;
			assert_int_equal(xf_lik_eval_values(lik, n, x, got), 0);
			for (int i = 0; i < n; i++)
				if (memcmp(&got[i], &ref[i], sizeof(double)))
					fail_msg("%s, sample %zu, %d threads, n %d: point %d chi2 "
						 "%.17g, one pass %.17g",
						 mode == XF_MODE_STATIC ? "static" : "laminar",
						 sample, threads[run], n, i, got[i], ref[i]);
			for (int i = n; i < MAX_N; i++)
				assert_true(isnan(got[i])); /* nothing written past n */
		}
		/* a NaN parameter at point 7 of 17: +∞ there, the others unchanged */
		double saved = x[7 * (size_t)nf + XF_P_D0];
		x[7 * (size_t)nf + XF_P_D0] = NAN;
		xf_lik_out out = { 0.0, NULL, NULL, 0.0 };
		assert_int_equal(xf_lik_eval(lik, x + 7 * (size_t)nf, &out), -1);
		assert_int_equal(xf_lik_eval_values(lik, 17, x, got), 0);
		assert_true(isinf(got[7]) && got[7] > 0.0);
		for (int i = 0; i < 17; i++)
			if (i != 7 && memcmp(&got[i], &ref[i], sizeof(double)))
				fail_msg(
					"next to a non-finite point: point %d chi2 %.17g, one pass "
					"%.17g",
					i, got[i], ref[i]);
		x[7 * (size_t)nf + XF_P_D0] = saved;
		check_eval_scalings(&pr, lik, x, MAX_N, 7);
		xf_lik_destroy(lik);
		xf_pool_destroy(pool);
	}
	free(x);
	xf_pairset_free(&ps);
	xf_problem_free(&pr);
	xf_synth_free(&ds);
}

static void test_eval_values(void **state)
{
	(void)state;
	check_eval_values(XF_MODE_STATIC, 0);
	check_eval_values(XF_MODE_LAMINAR, 0);
	check_eval_values(XF_MODE_STATIC, 12000);
	check_eval_values(XF_MODE_LAMINAR, 12000);
}

/* The scaling pass (xf_lik_eval_scaling, the posterior's conditional of the scaling,
 * cmc/cond_scaling.c): its χ² and its blocks of JᵀJ and b are those of the full pass
 * (1e-13 relative), and χ² is exactly the quadratic they give in the scaling
 * coefficients — χ²(s₀ + Δ) = χ²(s₀) − 2Δᵀb_s + ΔᵀH_ssΔ by a values pass at s₀ + Δ
 * (1e-9 relative) — in every scaling mode of both models, inline and on 2 threads. */
static void check_eval_scaling(xf_mode mode, xf_scaling_mode smode)
{
	xf_model_grid g = { mode, XF_SHEAR_HOMODYNE, 120, 0.01, 0.0054, 2e6 };
	const double phi[5] = { -30, 0, 15, 60, 90 };
	const double con[5] = { 0.3, 0.25, 0.28, 0.31, 0.29 }, off[5] = { 1, 1.01, 0.99, 1, 1.02 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth_laminar, 5, phi, con, off, 2e-3, 13, &ds), 0);
	xf_request req;
	laminar_request(&req, &g);
	req.per_angle_mode = smode;
	xf_problem pr;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&pr, &req, &ds, &err), 0);
	xf_pairset ps;
	xf_pairset_all(&ps, ds.n_frames);
	int nf = pr.n_full, np = pr.n_phys, ns = 2 * pr.n_basis;
	assert_true(ns >= 2);
	double *x = malloc(sizeof(double) * nf), *x2 = malloc(sizeof(double) * nf);
	double *jtj = malloc(sizeof(double) * nf * nf), *b = malloc(sizeof(double) * nf);
	double *h = malloc(sizeof(double) * ns * ns), *bs = malloc(sizeof(double) * ns);
	assert_true(x && x2 && jtj && b && h && bs);
	for (int k = 0; k < nf; k++) /* off the optimum: b is not 0 */
		x[k] = pr.start[k] + 0.02 * (pr.upper[k] - pr.lower[k]) * sin(1.3 * k + 0.4);
	for (int run = 0; run < 2; run++) {
		xf_pool *pool = run ? xf_pool_create(2) : NULL;
		xf_lik *lik = xf_lik_create(&pr, &ps, pool, &err);
		assert_non_null(lik);
		xf_lik_out out = { 0.0, jtj, b, 0.0 };
		assert_int_equal(xf_lik_eval(lik, x, &out), 0);
		double chi2;
		assert_int_equal(xf_lik_eval_scaling(lik, x, &chi2, h, bs), 0);
		assert_true(fabs(chi2 - out.chi2) <= 1e-13 * out.chi2);
		for (int a = 0; a < ns; a++) {
			double ref_b = b[np + a];
			if (!(fabs(bs[a] - ref_b) <= 1e-13 * (fabs(ref_b) + 1e-300) + 1e-300))
				fail_msg("b_s[%d] %.17g, full pass %.17g", a, bs[a], ref_b);
			for (int c = 0; c < ns; c++) {
				double ref_h = jtj[(size_t)(np + a) * nf + np + c];
				if (!(fabs(h[a * ns + c] - ref_h) <= 1e-13 * fabs(ref_h) + 1e-300))
					fail_msg("H_ss[%d][%d] %.17g, full pass %.17g", a, c,
						 h[a * ns + c], ref_h);
			}
		}
		/* χ² is the quadratic in the scaling coefficients */
		double delta[64];
		assert_true(ns <= 64);
		memcpy(x2, x, sizeof(double) * nf);
		for (int a = 0; a < ns; a++) {
			delta[a] = 0.01 * cos(0.7 * a + 0.2);
			x2[np + a] += delta[a];
		}
		double quad = chi2;
		for (int a = 0; a < ns; a++) {
			quad -= 2.0 * delta[a] * bs[a];
			for (int c = 0; c < ns; c++)
				quad += delta[a] * h[a * ns + c] * delta[c];
		}
		xf_lik_out o2 = { 0.0, NULL, NULL, 0.0 };
		assert_int_equal(xf_lik_eval(lik, x2, &o2), 0);
		if (!(fabs(o2.chi2 - quad) <= 1e-9 * o2.chi2))
			fail_msg("chi2 at s0 + delta %.17g, quadratic %.17g", o2.chi2, quad);
		assert_true(fabs(o2.chi2 - chi2) > 1e-6 * chi2); /* Δ moves χ² */
		xf_lik_destroy(lik);
		xf_pool_destroy(pool);
	}
	free(x);
	free(x2);
	free(jtj);
	free(b);
	free(h);
	free(bs);
	xf_pairset_free(&ps);
	xf_problem_free(&pr);
	xf_synth_free(&ds);
}

static void test_eval_scaling(void **state)
{
	(void)state;
	check_eval_scaling(XF_MODE_STATIC, XF_SCALING_INDIVIDUAL);
	check_eval_scaling(XF_MODE_STATIC, XF_SCALING_AUTO);
	check_eval_scaling(XF_MODE_LAMINAR, XF_SCALING_INDIVIDUAL);
	check_eval_scaling(XF_MODE_LAMINAR, XF_SCALING_AUTO);
	check_eval_scaling(XF_MODE_LAMINAR, XF_SCALING_FOURIER);
}

int main(void)
{
	xf_log_set_stderr(1, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pass_laminar),	  cmocka_unit_test(test_pass_static),
		cmocka_unit_test(test_pass_subsample),	  cmocka_unit_test(test_pairset_sample),
		cmocka_unit_test(test_scaling_types),	  cmocka_unit_test(test_pass_bits),
		cmocka_unit_test(test_eval_values),	  cmocka_unit_test(test_eval_scaling),
		cmocka_unit_test(test_pass_phase_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
