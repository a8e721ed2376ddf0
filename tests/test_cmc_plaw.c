/* test_cmc_plaw.c — the power-law sampling coordinates (plaw_coords.c; adr/0082, 0083):
 * (a) u → w → u and w → u → w return their start, and the start point is a fixed point
 *     (u = w there); the test points are drawn in u (every u lies in the support);
 * (b) the analytic Jacobian matches a central difference of xf_plaw_to_u (here in the
 *     test only) and the returned log|du/dw| is the log of its determinant;
 * (c) the sampler's target over w: its gradient matches a central difference of its log
 *     density, for a non-Gaussian log density over u;
 * (d) a Gaussian carried to w: G·J = I at the mean (G = dw/du);
 * (e) which pieces apply: α fixed → identity; e's bounds not around 0 → shear only;
 *     D_offset fixed → non-centring only; laminar → both power laws;
 * (f) the ridge rule from the start's covariance: a wide, correlated A takes both pieces;
 *     spread over e-folds (the priors decide where along the ridge) the level piece
 *     only, and none where c's bounds cut that range (a wall, adr/0084; for the route's
 *     proposal within 1 sd of A, adr/0097); A and c
 *     correlated positively (another ridge than a pinned level) no level piece; the same widths
 *     uncorrelated (the prior alone) or a narrow A take none; e far from 0 in sds keeps
 *     the level piece only;
 * (g) the straightening is exact: along w_A, at the start's w_e and w_c, the level
 *     A·t_ref^e + c and the slope e·A keep their start values over decades of A;
 * (h) a start moved off A's bound (warm.c) with NLSQ's covariance: with the slope NLSQ
 *     measured (confined) the slope piece applies; read from the metric at the moved
 *     start it is not confined, and the piece was refused (small static replicate 55,
 *     adr/0091). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <lapacke.h>

#include "cmc/plaw_coords.h"

#define NF 9 /* 7 physical + contrast + offset */

static double lower[NF] = { 10, -2, -5000, 1e-5, -2, -0.1, -10, 0.05, 0.5 };
static double upper[NF] = { 2e4, 2, 5000, 1.0, 2, 0.1, 10, 0.5, 1.5 };

static void problem(xf_problem *pr, int laminar)
{
	memset(pr, 0, sizeof *pr);
	pr->n_phys = laminar ? 7 : 3;
	pr->grid.n_frames = 120;
	pr->grid.dt_s = 0.1;
	pr->lower = lower;
	pr->upper = upper;
}

/* a static layout: D0, α, D_offset, contrast, log σ */
static const int param_static[5] = { 0, 1, 2, 7, -1 };
static const double u0_static[5] = { -2.4, 0.1, -0.05, 0.3, -4.6 };
/* laminar: every physical parameter, offset, log σ */
static const int param_lam[9] = { 0, 1, 2, 3, 4, 5, 6, 8, -1 };
static const double u0_lam[9] = { -2.0, -0.3, 0.2, -3.0, 0.4, 0.1, 0.0, -0.2, -4.0 };

/* test point i in w: a point near u0 in u (inside every bound) carried to w */
static void point_near(const xf_plaw_coords *pc, const double *u0, int d, int i, double *w)
{
	double u[16];
	for (int k = 0; k < d; k++)
		u[k] = u0[k] + 0.8 * sin(1.7 * (double)(i + 1) * (double)(k + 1) + 0.3 * i);
	xf_plaw_to_w(pc, u, w);
}

static void round_trip(int laminar, const int *param, const double *u0, int d)
{
	xf_problem pr;
	problem(&pr, laminar);
	xf_plaw_coords pc;
	xf_plaw_coords_init(&pc, &pr, param, d, u0, NULL);
	assert_int_equal(pc.n, laminar ? 2 : 1);
	double w[16], u[16], w2[16];
	xf_plaw_to_u(&pc, u0, u); /* the start is a fixed point */
	for (int k = 0; k < d; k++)
		assert_true(fabs(u[k] - u0[k]) < 1e-14);
	for (int i = 0; i < 50; i++) {
		double ui[16], u2[16];
		for (int k = 0; k < d; k++)
			ui[k] = u0[k] +
				0.8 * sin(1.7 * (double)(i + 1) * (double)(k + 1) + 0.3 * i);
		xf_plaw_to_w(&pc, ui, w);
		xf_plaw_to_u(&pc, w, u2);
		for (int k = 0; k < d; k++)
			assert_true(fabs(u2[k] - ui[k]) < 1e-9 * (1.0 + fabs(ui[k])));
		xf_plaw_to_u(&pc, w, u);
		xf_plaw_to_w(&pc, u, w2);
		for (int k = 0; k < d; k++)
			assert_true(fabs(w2[k] - w[k]) < 1e-9 * (1.0 + fabs(w[k])));
	}
}

static void test_round_trip(void **state)
{
	(void)state;
	round_trip(0, param_static, u0_static, 5);
	round_trip(1, param_lam, u0_lam, 9);
}

static double log_det(const double *j, int d)
{
	double a[256];
	lapack_int ipiv[16];
	memcpy(a, j, sizeof(double) * (size_t)d * d);
	assert_int_equal(LAPACKE_dgetrf(LAPACK_ROW_MAJOR, d, d, a, d, ipiv), 0);
	double s = 0.0;
	for (int k = 0; k < d; k++)
		s += log(fabs(a[k * d + k]));
	return s;
}

static void jacobian_check(int laminar, const int *param, const double *u0, int d)
{
	xf_problem pr;
	problem(&pr, laminar);
	xf_plaw_coords pc;
	xf_plaw_coords_init(&pc, &pr, param, d, u0, NULL);
	for (int i = 0; i < 20; i++) {
		double w[16], jac[256], up[16], um[16], wp[16];
		point_near(&pc, u0, d, i, w);
		xf_plaw_jacobian(&pc, w, jac);
		double lj = xf_plaw_to_u(&pc, w, up);
		assert_true(fabs(lj - log_det(jac, d)) < 1e-10);
		const double h = 1e-6;
		for (int c = 0; c < d; c++) {
			memcpy(wp, w, sizeof(double) * (size_t)d);
			wp[c] = w[c] + h;
			xf_plaw_to_u(&pc, wp, up);
			wp[c] = w[c] - h;
			xf_plaw_to_u(&pc, wp, um);
			for (int r = 0; r < d; r++) {
				double fd = (up[r] - um[r]) / (2 * h), a = jac[r * d + c];
				assert_true(fabs(fd - a) < 1e-6 * (1.0 + fabs(a)));
			}
		}
	}
}

static void test_jacobian(void **state)
{
	(void)state;
	jacobian_check(0, param_static, u0_static, 5);
	jacobian_check(1, param_lam, u0_lam, 9);
}

/* a non-Gaussian log density over u: Σ −cosh(u_k − m_k) + a coupling */
static int logp_u(void *ctx, const double *u, double *lp, double *g)
{
	int d = *(const int *)ctx;
	double s = 0.0;
	for (int k = 0; k < d; k++) {
		double m = 0.1 * k;
		s -= cosh(u[k] - m);
		if (g)
			g[k] = -sinh(u[k] - m);
	}
	s -= 0.3 * u[0] * u[1];
	if (g) {
		g[0] -= 0.3 * u[1];
		g[1] -= 0.3 * u[0];
	}
	*lp = s;
	return 0;
}

static void gradient_check(int laminar, const int *param, const double *u0, int d)
{
	xf_problem pr;
	problem(&pr, laminar);
	xf_plaw_coords pc;
	xf_plaw_coords_init(&pc, &pr, param, d, u0, NULL);
	double ub[16], gb[16];
	xf_plaw_target pt = { logp_u, &d, &pc, ub, gb };
	for (int i = 0; i < 20; i++) {
		double w[16], g[16], wp[16], lp, lpp, lpm;
		point_near(&pc, u0, d, i, w);
		assert_int_equal(xf_plaw_target_logp(&pt, w, &lp, g), 0);
		const double h = 1e-6;
		for (int c = 0; c < d; c++) {
			memcpy(wp, w, sizeof(double) * (size_t)d);
			wp[c] = w[c] + h;
			xf_plaw_target_logp(&pt, wp, &lpp, NULL);
			wp[c] = w[c] - h;
			xf_plaw_target_logp(&pt, wp, &lpm, NULL);
			double fd = (lpp - lpm) / (2 * h);
			assert_true(fabs(fd - g[c]) < 1e-5 * (1.0 + fabs(g[c])));
		}
		/* the draws' log densities back in u: log p over w minus log|du/dw| */
		double draw[16], lpd = lp, lpu;
		memcpy(draw, w, sizeof(double) * (size_t)d);
		xf_plaw_draws_to_u(&pc, 1, draw, &lpd);
		logp_u(&d, draw, &lpu, NULL);
		assert_true(fabs(lpd - lpu) < 1e-10 * (1.0 + fabs(lpu)));
	}
}

static void test_gradient(void **state)
{
	(void)state;
	gradient_check(0, param_static, u0_static, 5);
	gradient_check(1, param_lam, u0_lam, 9);
}

static void test_gauss_to_w(void **state)
{
	(void)state;
	xf_problem pr;
	problem(&pr, 1);
	int d = 9;
	xf_plaw_coords pc;
	xf_plaw_coords_init(&pc, &pr, param_lam, d, u0_lam, NULL);
	double mean[9], cov[81], mean_u[9];
	double w3[9];
	point_near(&pc, u0_lam, d, 3, w3);
	xf_plaw_to_u(&pc, w3, mean_u);
	memcpy(mean, mean_u, sizeof mean);
	for (int r = 0; r < d; r++)
		for (int c = 0; c < d; c++)
			cov[r * d + c] = (r == c ? 1.0 : 0.0) + 0.1 * (r == c + 1 || c == r + 1);
	assert_int_equal(xf_plaw_gauss_to_w(&pc, mean, cov), 0);
	double back[9], jac[81];
	xf_plaw_to_u(&pc, mean, back);
	for (int k = 0; k < d; k++)
		assert_true(fabs(back[k] - mean_u[k]) < 1e-11);
	/* J·cov_w·Jᵀ = cov (the original) */
	xf_plaw_jacobian(&pc, mean, jac);
	for (int r = 0; r < d; r++)
		for (int c = 0; c < d; c++) {
			double s = 0.0;
			for (int a = 0; a < d; a++)
				for (int b = 0; b < d; b++)
					s += jac[r * d + a] * cov[a * d + b] * jac[c * d + b];
			double want = (r == c ? 1.0 : 0.0) + 0.1 * (r == c + 1 || c == r + 1);
			assert_true(fabs(s - want) < 1e-9);
		}
}

static void test_which_pieces(void **state)
{
	(void)state;
	xf_problem pr;
	problem(&pr, 0);
	xf_plaw_coords pc;
	const int no_alpha[4] = { 0, 2, 7, -1 };
	const double u4[4] = { -2.0, 0.1, 0.2, -4.0 };
	xf_plaw_coords_init(&pc, &pr, no_alpha, 4, u4, NULL);
	assert_int_equal(pc.n, 0); /* α fixed: nothing to straighten */
	const int no_offset[4] = { 0, 1, 7, -1 };
	xf_plaw_coords_init(&pc, &pr, no_offset, 4, u4, NULL);
	assert_int_equal(pc.n, 1);
	assert_int_equal(pc.tr[0].noncentre, 1);
	assert_int_equal(pc.tr[0].c, -1);
	double lo1 = lower[1];
	lower[1] = 0.1; /* α > 0 only: no e = 0 to pivot on, the shear alone */
	xf_plaw_coords_init(&pc, &pr, param_static, 5, u0_static, NULL);
	lower[1] = lo1;
	assert_int_equal(pc.n, 1);
	assert_int_equal(pc.tr[0].noncentre, 0);
	assert_int_equal(pc.tr[0].c, 2);
	double w[5] = { -1.0, 0.5, 0.2, 0.3, -4.0 }, u[5];
	assert_true(fabs(xf_plaw_to_u(&pc, u0_static, u)) < 1e-12); /* unit Jacobian at the start */
	xf_plaw_to_u(&pc, w, u);
	assert_true(u[1] == w[1]); /* the level piece alone leaves e alone */
}

/* a static covariance in u over (D0, α, D_offset, contrast, log σ): sds sd[], D0's
 * correlation r with α and −r with D_offset */
static void cov_static(double *cov, const double *sd, double r)
{
	memset(cov, 0, sizeof(double) * 25);
	for (int k = 0; k < 5; k++)
		cov[k * 5 + k] = sd[k] * sd[k];
	cov[0 * 5 + 1] = cov[1 * 5 + 0] = r * sd[0] * sd[1];
	cov[0 * 5 + 2] = cov[2 * 5 + 0] = -r * sd[0] * sd[2];
	cov[1 * 5 + 2] = cov[2 * 5 + 1] = -r * sd[1] * sd[2];
}

static void test_ridge_rule(void **state)
{
	(void)state;
	xf_problem pr;
	problem(&pr, 0);
	xf_plaw_coords pc;
	double cov[25];
	/* u0_static: D0 ≈ 1660 (dD0/du ≈ 1 520), α ≈ 0.1 (dα/du ≈ 1) */
	const double wide[5] = { 0.3, 0.05, 0.02, 0.01, 0.01 }; /* D0 ± 27 %, α ± 0.05 */
	cov_static(cov, wide, 0.98);
	xf_plaw_coords_init(&pc, &pr, param_static, 5, u0_static, cov);
	assert_int_equal(pc.n, 1);
	assert_int_equal(pc.tr[0].noncentre, 1);
	assert_int_equal(pc.tr[0].c, 2);
	cov_static(cov, wide, -0.98); /* A and c correlated positively: not a pinned level */
	xf_plaw_coords_init(&pc, &pr, param_static, 5, u0_static, cov);
	assert_int_equal(pc.n, 1);
	assert_int_equal(pc.tr[0].noncentre, 1);
	assert_int_equal(pc.tr[0].c, -1);
	cov_static(cov, wide, 0.0); /* the prior alone: independent */
	xf_plaw_coords_init(&pc, &pr, param_static, 5, u0_static, cov);
	assert_int_equal(pc.n, 0);
	const double e_folds[5] = { 3.0, 0.5, 0.2, 0.01,
				    0.01 }; /* D0 over e-folds: priors decide where */
	cov_static(cov, e_folds, 0.98);
	/* D0 up to ~19 500 within 2 sds: c = S − D0·t_ref^α leaves [−5 000, 5 000], a wall */
	xf_plaw_coords_init(&pc, &pr, param_static, 5, u0_static, cov);
	assert_int_equal(pc.n, 0);
	lower[2] = -1e5; /* the default bounds of D_offset: no wall */
	upper[2] = 1e5;
	xf_plaw_coords_init(&pc, &pr, param_static, 5, u0_static, cov);
	lower[2] = -5000;
	upper[2] = 5000;
	assert_int_equal(pc.n, 1);
	assert_int_equal(pc.tr[0].noncentre, 0); /* the slope piece needs A confined */
	assert_int_equal(pc.tr[0].c, 2);
	/* D0's sd 1 in u: the wall ~1.4 sds up, inside the chains' 2 sds, outside the
	 * route's 1 (its draws beyond a wall get weight 0, adr/0097) */
	const double one_fold[5] = { 1.0, 0.5, 0.2, 0.01, 0.01 };
	cov_static(cov, one_fold, 0.98);
	xf_plaw_coords_init_at(&pc, &pr, param_static, 5, u0_static, cov, NULL, XF_PLAW_WIDE);
	assert_true(pc.n == 0 || pc.tr[0].c == -1);
	xf_plaw_coords_init_at(&pc, &pr, param_static, 5, u0_static, cov, NULL, XF_PLAW_ROUTE);
	assert_int_equal(pc.n, 1);
	assert_int_equal(pc.tr[0].c, 2);
	const double narrow[5] = { 0.02, 0.05, 0.02, 0.01, 0.01 }; /* D0 ± 2 % */
	cov_static(cov, narrow, 0.98);
	xf_plaw_coords_init(&pc, &pr, param_static, 5, u0_static, cov);
	assert_int_equal(pc.n, 0);
	const double tight_e[5] = { 0.3, 0.005, 0.02, 0.01, 0.01 }; /* α 0.1 ± 0.005: 20 sds */
	cov_static(cov, tight_e, 0.98);
	xf_plaw_coords_init(&pc, &pr, param_static, 5, u0_static, cov);
	assert_int_equal(pc.n, 1);
	assert_int_equal(pc.tr[0].noncentre, 0);
	assert_int_equal(pc.tr[0].c, 2);
}

static void test_slope_at_nlsq(void **state)
{
	(void)state;
	xf_problem pr;
	problem(&pr, 0);
	/* NLSQ at D0's lower bound 10 with α −0.05: the slope e·A = −0.5 pinned (e rises
	 * 0.005 per unit of A there), A ± 140 and α ± 0.7 correlated by 0.9998 (q ± 0.14);
	 * the start moved 1 % of the width inside, to D0 = 209.9 (dD0/du ≈ 197.9) */
	const xf_plaw_slope nlsq[XF_PLAW_MAX] = { { 1, -0.5, 0.14 }, { 0, 0.0, 0.0 } };
	double u0[5] = { log(0.01 / 0.99), log(1.95 / 2.05), log(5100.0 / 4900.0), 0.3, -4.6 };
	const double sd[5] = { 140.0 / 197.9, 0.7 / 0.999, 140.0 / 2499.0, 0.01, 0.01 };
	const double r[3][3] = { { 1.0, 0.9998, -0.99 },
				 { 0.9998, 1.0, -0.99 },
				 { -0.99, -0.99, 1.0 } };
	double cov[25] = { 0 };
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 5; j++)
			cov[i * 5 + j] = i < 3 && j < 3 ? r[i][j] * sd[i] * sd[j]
					 : i == j	? sd[i] * sd[i]
							: 0.0;
	xf_plaw_coords pc;
	/* read at the moved start: e·A = −10.5 ± 140, up to 4.6 at A's low end: refused */
	xf_plaw_coords_init(&pc, &pr, param_static, 5, u0, cov);
	assert_int_equal(pc.n, 1);
	assert_int_equal(pc.tr[0].noncentre, 0);
	assert_int_equal(pc.tr[0].c, 2);
	xf_plaw_coords_init_at(&pc, &pr, param_static, 5, u0, cov, nlsq, XF_PLAW_CHAINS);
	assert_int_equal(pc.n, 1);
	assert_int_equal(pc.tr[0].noncentre, 1);
	assert_int_equal(pc.tr[0].c, 2);
	xf_plaw_coords_init_at(&pc, &pr, param_static, 5, u0, cov, nlsq,
			       XF_PLAW_WIDE); /* wide: too */
	assert_int_equal(pc.tr[0].noncentre, 1);
	char buf[64];
	xf_plaw_describe(&pc, buf, sizeof buf);
	assert_string_equal(buf, "D(t) level and slope");
}

static double x_of(double lo, double hi, double u)
{
	return lo + (hi - lo) / (1.0 + exp(-u));
}

static void test_straight(void **state)
{
	(void)state;
	xf_problem pr;
	problem(&pr, 0);
	xf_plaw_coords pc;
	xf_plaw_coords_init(&pc, &pr, param_static, 5, u0_static, NULL);
	assert_int_equal(pc.n, 1);
	double t_ref = 0.1 * sqrt(119.0);
	double a0 = x_of(lower[0], upper[0], u0_static[0]);
	double e0 = x_of(lower[1], upper[1], u0_static[1]);
	double s0 = a0 * pow(t_ref, e0) + x_of(lower[2], upper[2], u0_static[2]);
	/* D0 from 144 to 5 000 (e and c stay inside their bounds) */
	for (double wa = -5.0; wa <= -1.0; wa += 0.25) {
		double w[5], u[5];
		memcpy(w, u0_static, sizeof w);
		w[0] = wa;
		xf_plaw_to_u(&pc, w, u);
		double a = x_of(lower[0], upper[0], u[0]), e = x_of(lower[1], upper[1], u[1]);
		double c = x_of(lower[2], upper[2], u[2]);
		assert_true(fabs(e * a - e0 * a0) < 1e-9 * fabs(e0 * a0));
		assert_true(fabs(a * pow(t_ref, e) + c - s0) < 1e-9 * fabs(s0));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_jacobian),
		cmocka_unit_test(test_gradient),     cmocka_unit_test(test_gauss_to_w),
		cmocka_unit_test(test_which_pieces), cmocka_unit_test(test_ridge_rule),
		cmocka_unit_test(test_straight),     cmocka_unit_test(test_slope_at_nlsq),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
