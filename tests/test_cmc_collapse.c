/* test_cmc_collapse.c — the posterior with the per-angle scaling integrated out
 * (cmc/collapse.c, adr/0086): its log density against a brute-force integral of the full
 * target over the scaling, its analytic gradient against central differences (test-only),
 * in static and laminar mode, every scaling basis the posterior uses, tempered and not;
 * the expanded draws' scaling against the conditional's mean and their log density
 * against the full target. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fit_request.h"
#include "cmc/collapse.h"
#include "synth.h"
#include "xpcsfit/cmc.h"
#include "xpcsfit/likelihood.h"

static const double truth[7] = { 1500.0, -0.8, 20.0, 0.012, -0.3, 0.0005, 2.0 };

typedef struct fixture {
	xf_dataset ds;
	xf_request req;
	xf_problem pr;
	xf_pairset ps;
	xf_lik *lik;
	xf_cmc_target t;
	int theta[64];
	double x0[64];
	xf_collapse c;
} fixture;

static void setup(fixture *f, xf_mode mode, xf_scaling_mode scaling, int n_phi, double temper)
{
	memset(f, 0, sizeof *f);
	xf_model_grid g = { mode, XF_SHEAR_HOMODYNE, 30, 0.01, 0.0054, 2e6 };
	const double phi[5] = { -30, 0, 15, 60, 90 };
	const double con[5] = { 0.3, 0.25, 0.28, 0.31, 0.29 }, off[5] = { 1, 1.01, 0.99, 1, 1.02 };
	assert_int_equal(xf_synth_dataset(&g, truth, n_phi, phi, con, off, 2e-3, 5, &f->ds), 0);
	xf_test_request(&f->req, mode, truth);
	f->req.anti_degeneracy = 1;
	f->req.per_angle_mode = scaling;
	xf_error err = { 0 };
	assert_int_equal(xf_problem_build(&f->pr, &f->req, &f->ds, &err), 0);
	assert_int_equal(f->pr.scaling->mode, scaling);
	xf_pairset_all(&f->ps, f->ds.n_frames);
	f->lik = xf_lik_create(&f->pr, &f->ps, NULL, &err);
	assert_non_null(f->lik);
	assert_int_equal(xf_cmc_target_alloc(&f->t, &f->pr), 0);
	int nt = 0;
	for (int k = 0; k < f->pr.n_full; k++)
		if (!f->pr.fixed[k])
			f->theta[nt++] = k;
	/* s₀ away from the conditional mean: the quadratic must carry it there */
	memcpy(f->x0, f->pr.start, sizeof(double) * (size_t)f->pr.n_full);
	for (int k = f->pr.n_phys; k < f->pr.n_full; k++)
		f->x0[k] += 0.01 * (f->pr.upper[k] - f->pr.lower[k]) * ((k % 3) - 1);
	f->t.lik = f->lik;
	f->t.n_points = xf_lik_points(f->lik);
	f->t.n_theta = nt;
	f->t.theta = f->theta;
	f->t.dim = nt + 1;
	f->t.temper = temper;
	f->t.sigma_scale = 3e-3;
	f->t.x_fixed = f->x0;
	assert_int_equal(xf_collapse_init(&f->c, &f->t), 0);
	assert_int_equal(f->c.dc, f->pr.n_phys + 1);
}

static void teardown(fixture *f)
{
	xf_collapse_free(&f->c);
	xf_cmc_target_free(&f->t);
	xf_lik_destroy(f->lik);
	xf_pairset_free(&f->ps);
	xf_problem_free(&f->pr);
	xf_synth_free(&f->ds);
}

/* A collapsed point near the truth: θ moved off it, σ near the data's noise. */
static void point(const fixture *f, double *uc)
{
	const xf_problem *pr = &f->pr;
	for (int j = 0; j < f->c.dc - 1; j++) {
		int k = f->theta[f->c.mcol[j]];
		double x = truth[k] * (1.0 + 0.003 * (j % 2 ? 1 : -1)) + (k == 2 ? 0.5 : 0.0);
		double fr = (x - pr->lower[k]) / (pr->upper[k] - pr->lower[k]);
		uc[j] = log(fr) - log1p(-fr);
	}
	uc[f->c.dc - 1] = log(2.1e-3);
}

/* The gradient check's tolerance: the stencil's truncation (relative) and the log
 * density's rounding over 12·h (absolute) */
static double tol(double g)
{
	return 3e-6 * (fabs(g) + 1.0) + 2e-5;
}

static void check_gradient(xf_mode mode, xf_scaling_mode scaling, int n_phi, double temper)
{
	fixture f;
	setup(&f, mode, scaling, n_phi, temper);
	int dc = f.c.dc;
	double uc[16], g[16], lp, up[16];
	point(&f, uc);
	assert_int_equal(xf_collapse_logp(&f.c, uc, &lp, g), 0);
	double lp_value;
	assert_int_equal(xf_collapse_logp(&f.c, uc, &lp_value, NULL), 0);
	assert_memory_equal(&lp, &lp_value, sizeof lp); /* the value without the gradient pass */
	if (f.c.fused) { /* the one static pass and the two passes give one gradient */
		double g2[16], lp2;
		f.c.fused = 0;
		assert_int_equal(xf_collapse_logp(&f.c, uc, &lp2, g2), 0);
		f.c.fused = 1;
		assert_memory_equal(&lp, &lp2, sizeof lp);
		for (int j = 0; j < dc; j++)
			if (fabs(g2[j] - g[j]) > 1e-9 * (fabs(g[j]) + 1.0))
				fail_msg("d/du[%d]: one pass %.15g, two passes %.15g", j, g[j],
					 g2[j]);
	}
	/* the five-point stencil (error O(h⁴)) at h = 2e-3 in u: the log density carries
	 * ~1e-8 of rounding (sums of ~1e3 points at |log p| ~ 1e4), which smaller steps
	 * amplify */
	const double h = 2e-3;
	for (int j = 0; j < dc; j++) {
		double f_at[4];
		const double step[4] = { -2.0, -1.0, 1.0, 2.0 };
		for (int q = 0; q < 4; q++) {
			memcpy(up, uc, sizeof(double) * (size_t)dc);
			up[j] = uc[j] + step[q] * h;
			assert_int_equal(xf_collapse_logp(&f.c, up, &f_at[q], NULL), 0);
		}
		double fd = (8.0 * (f_at[2] - f_at[1]) - (f_at[3] - f_at[0])) / (12.0 * h);
		if (fabs(fd - g[j]) > tol(g[j]))
			fail_msg("%s %s: d/du[%d] analytic %.10g, central difference %.10g",
				 mode == XF_MODE_STATIC ? "static" : "laminar", f.pr.scaling->name,
				 j, g[j], fd);
	}
	/* the log-determinant's part (the gradient minus the full target's partial one at
	 * (θ, ŝ)) is far above the tolerance: the comparison would see it missing */
	double u[64], gf[64], lpf, largest = 0.0;
	assert_int_equal(xf_collapse_logp(&f.c, uc, &lp, NULL), 0);
	for (int j = 0; j < dc; j++)
		u[f.c.mcol[j]] = uc[j];
	for (int a = 0; a < f.c.ds; a++) {
		int k = f.theta[f.c.scol[a]];
		double fr = (f.c.shat[a] - f.pr.lower[k]) / (f.pr.upper[k] - f.pr.lower[k]);
		u[f.c.scol[a]] = log(fr) - log1p(-fr);
	}
	assert_int_equal(xf_cmc_target_logp(&f.t, u, &lpf, gf), 0);
	for (int j = 0; j < dc; j++)
		largest = fmax(largest, fabs(g[j] - gf[f.c.mcol[j]]) / tol(g[j]));
	if (!(largest > 10.0))
		fail_msg("the log-determinant's gradient is at most %.3g tolerances", largest);
	teardown(&f);
}

static void test_gradient(void **state)
{
	(void)state;
	check_gradient(XF_MODE_STATIC, XF_SCALING_INDIVIDUAL, 3, 1.0);
	check_gradient(XF_MODE_STATIC, XF_SCALING_AUTO, 3, 0.25);
	check_gradient(XF_MODE_STATIC, XF_SCALING_FOURIER, 5, 1.0);
	check_gradient(XF_MODE_LAMINAR, XF_SCALING_INDIVIDUAL, 3, 0.5);
	check_gradient(XF_MODE_LAMINAR, XF_SCALING_AUTO, 4, 1.0);
}

static double log_sigmoid(double u)
{
	return u >= 0.0 ? -log1p(exp(-u)) : u - log1p(exp(u));
}

/* One angle (two coefficients): exp(collapsed log density) is the full target's integral
 * over (contrast, offset) in physical units — a tensor-product Simpson rule over ±9
 * conditional sds, brute force, one full pass per node. */
static void test_integral(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		fixture f;
		setup(&f, mode ? XF_MODE_LAMINAR : XF_MODE_STATIC, XF_SCALING_INDIVIDUAL, 1,
		      mode ? 1.0 : 0.5);
		assert_int_equal(f.c.ds, 2);
		int dc = f.c.dc, d = f.t.dim;
		double uc[16], u[32], lp_c;
		point(&f, uc);
		assert_int_equal(xf_collapse_logp(&f.c, uc, &lp_c, NULL), 0);
		/* the conditional's mean and factor (left in the workspace by the call) */
		double shat[2] = { f.c.shat[0], f.c.shat[1] };
		double l00 = f.c.p[0], l10 = f.c.p[2], l11 = f.c.p[3];
		/* s = ŝ + L⁻ᵀ z: L⁻ᵀ = [[1/l00, −l10/(l00·l11)], [0, 1/l11]] */
		double jac = 1.0 / (l00 * l11);
		const int n = 181;
		const double zmax = 9.0, hz = 2.0 * zmax / (n - 1);
		double sum = 0.0;
		for (int a = 0; a < n; a++)
			for (int b = 0; b < n; b++) {
				double z0 = -zmax + a * hz, z1 = -zmax + b * hz;
				double s1 = shat[1] + z1 / l11;
				double s0 = shat[0] + (z0 - l10 * (s1 - shat[1])) / l00;
				double s[2] = { s0, s1 };
				for (int j = 0; j < dc; j++)
					u[f.c.mcol[j]] = uc[j];
				double correction = 0.0;
				for (int i = 0; i < 2; i++) {
					int k = f.theta[f.c.scol[i]];
					double lo = f.pr.lower[k], hi = f.pr.upper[k];
					double fr = (s[i] - lo) / (hi - lo);
					double ui = log(fr) - log1p(-fr);
					u[f.c.scol[i]] = ui;
					/* the full target's log|dx/du| of this coordinate, tempered */
					correction += f.t.temper * (log(hi - lo) + log_sigmoid(ui) +
								    log_sigmoid(-ui));
				}
				double lp;
				assert_int_equal(xf_cmc_target_logp(&f.t, u, &lp, NULL), 0);
				double wa = (a == 0 || a == n - 1) ? 1 : (a % 2 ? 4 : 2);
				double wb = (b == 0 || b == n - 1) ? 1 : (b % 2 ? 4 : 2);
				sum += wa * wb * exp(lp - correction - lp_c);
			}
		double integral = sum * (hz / 3.0) * (hz / 3.0) * jac;
		if (fabs(integral - 1.0) > 1e-6)
			fail_msg("%s: ∫ full target ds / collapsed density = %.10g",
				 mode ? "laminar" : "static", integral);
		(void)d;
		teardown(&f);
	}
}

/* Expanded draws: the scaling's mean over many draws is ŝ (within 5 standard errors), the
 * log density is the full target's at that point, and the draw is a pure function of its
 * key. */
static void test_expand(void **state)
{
	(void)state;
	fixture f;
	setup(&f, XF_MODE_STATIC, XF_SCALING_INDIVIDUAL, 3, 1.0);
	int d = f.t.dim, ds = f.c.ds;
	double uc[16], u[32], u2[32], lp, lp_full, lp_c, mean[16] = { 0 };
	point(&f, uc);
	assert_int_equal(xf_collapse_logp(&f.c, uc, &lp_c, NULL), 0);
	assert_true(xf_collapse_margin(&f.c, uc) > XF_COLLAPSE_MIN_SD);
	double shat[16], sd[16];
	memcpy(shat, f.c.shat, sizeof(double) * (size_t)ds);
	const int n = 2000;
	for (int i = 0; i < n; i++) {
		assert_int_equal(xf_collapse_expand(&f.c, uc, 42, 0, (uint64_t)i, u, &lp), 0);
		if (i < 5) {
			assert_int_equal(xf_cmc_target_logp(&f.t, u, &lp_full, NULL), 0);
			if (fabs(lp - lp_full) > 1e-9 * fabs(lp_full))
				fail_msg("expanded log density %.15g, full target %.15g", lp,
					 lp_full);
			assert_int_equal(xf_collapse_expand(&f.c, uc, 42, 0, (uint64_t)i, u2, &lp),
					 0);
			assert_memory_equal(u, u2, sizeof(double) * (size_t)d);
		}
		double x[64], sigma;
		xf_cmc_to_physical(&f.t, u, x, &sigma);
		for (int a = 0; a < ds; a++)
			mean[a] += x[f.theta[f.c.scol[a]]] / n;
	}
	/* the conditional sds from P⁻¹'s diagonal */
	assert_true(xf_collapse_margin(&f.c, uc) > 0.0);
	for (int a = 0; a < ds; a++) {
		sd[a] = sqrt(f.c.pinv[(size_t)a * ds + a]);
		if (fabs(mean[a] - shat[a]) > 5.0 * sd[a] / sqrt((double)n))
			fail_msg("coefficient %d: mean of draws %.10g, conditional mean %.10g "
				 "(sd %.3g)",
				 a, mean[a], shat[a], sd[a]);
	}
	teardown(&f);
}

/* A coefficient whose bound lies within XF_COLLAPSE_MIN_SD conditional sds of ŝ is
 * counted (the chain is then sampled in full, run.c); one far from its bounds is not, and
 * ŝ beyond a bound has no density. */
static void test_near_bound(void **state)
{
	(void)state;
	fixture f;
	setup(&f, XF_MODE_STATIC, XF_SCALING_INDIVIDUAL, 3, 1.0);
	double uc[16], g[16], lp;
	point(&f, uc);
	assert_int_equal(xf_collapse_logp(&f.c, uc, &lp, g), 0);
	assert_int_equal(f.c.near_bound, 0);
	int ds = f.c.ds, a = ds - 1, k = f.theta[f.c.scol[a]];
	double sd = sqrt(f.c.pinv[(size_t)a * ds + a]), shat = f.c.shat[a];
	double lower = f.pr.lower[k];
	f.pr.lower[k] = shat - 3.0 * sd; /* inside, but 3 sds from the bound */
	assert_int_equal(xf_collapse_logp(&f.c, uc, &lp, g), 0);
	assert_int_equal(f.c.near_bound, 1);
	f.pr.lower[k] = shat + sd; /* ŝ beyond the bound */
	assert_int_not_equal(xf_collapse_logp(&f.c, uc, &lp, g), 0);
	assert_int_equal(f.c.near_bound, 2);
	f.pr.lower[k] = lower;
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gradient),
		cmocka_unit_test(test_integral),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_near_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
