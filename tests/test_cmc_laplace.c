/* test_cmc_laplace.c — the initial metric where NLSQ's covariance is a ridge (laplace.c,
 * warm.c; adr/0084):
 * (a) a full-rank covariance: the result inverts C_u⁻¹ + share·diag(h), with h the
 *     prior's and the logit's curvature written out here (f = ½: h = (w/4)²/σ_p² + ½);
 * (b) a rank-deficient covariance (a ridge NLSQ's pseudo-inverse dropped): P − share·h is
 *     C_u's pseudo-inverse (P·C·P = P, C·P·C = C) and the result is positive definite;
 * (c) xf_cmc_initial_metric: a well-determined NLSQ covariance keeps its values (C in u,
 *     divided by the share; returns 0), a D0–D_offset ridge whose u-variance would be
 *     capped returns 1 with a positive definite metric that keeps the ridge's
 *     correlation (below −0.99) instead of a cap of 1 without it; a rank-deficient JᵀJ
 *     (NLSQ's pseudo-inverse: a correlation of +1 along what the data identify) returns 1
 *     with the metric along the ridge instead (correlation below −0.9);
 * (e) NLSQ fitted the scaling per angle and the posterior shares it: the physical
 *     parameters' covariances are kept (they were all dropped with the scaling's, SBC
 *     `static` replicate 32, adr/0093), the shared contrast (not NLSQ's) has none;
 * (f) the data's precision from JᵀJ itself (adr/0097): the result inverts
 *     share·(G·JᵀJ·G + diag(h)), G = dx/du; on a ridge whose two parameters differ in
 *     sensitivity (D0's column twice D_offset's) the metric's ridge runs along JᵀJ's null
 *     direction (in u here (1, 0, −1): equal variances, correlation −1);
 * (d) xf_cmc_nlsq_slopes: e·A at NLSQ's optimum and its delta-method sd, written out
 *     here, for the D(t) law (small static replicate 30's numbers: a slope pinned to
 *     ± 9 by a −0.99995 correlation); unknown without a covariance or a law. */
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

#include "cmc/cmc_internal.h"

#define NP 3 /* D0, alpha, D_offset */

static double lower[NP] = { 1.0, -2.0, -1e5 };
static double upper[NP] = { 1e5, 2.0, 1e5 };
static double prior_mu[NP] = { 50000.0, 0.0, 0.0 };
static double prior_sigma[NP] = { 24975.0, 1.0, 50000.0 };
static char *names[NP] = { "D0", "alpha", "D_offset" };
static const int theta[NP] = { 0, 1, 2 };

/* a static problem over n_full parameters (the first NP physical) */
static void problem_of(xf_problem *pr, int n_full, char **nm, double *lo, double *hi, double *mu,
		       double *sg)
{
	memset(pr, 0, sizeof *pr);
	pr->n_phys = NP;
	pr->n_full = n_full;
	pr->names = nm;
	pr->lower = lo;
	pr->upper = hi;
	pr->prior_mu = mu;
	pr->prior_sigma = sg;
}

static void problem(xf_problem *pr)
{
	problem_of(pr, NP, names, lower, upper, prior_mu, prior_sigma);
}

/* the prior's and the logit's curvature in u (the formula of laplace.c, restated) */
static double curvature(int k, double x)
{
	double w = upper[k] - lower[k], f = (x - lower[k]) / w, g = w * f * (1.0 - f);
	return g * g / (prior_sigma[k] * prior_sigma[k]) + 2.0 * f * (1.0 - f);
}

/* a·b for n × n row-major matrices */
static void matmul(int n, const double *a, const double *b, double *c)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double s = 0.0;
			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}

/* the inverse of an n × n symmetric positive definite matrix (0: fails) */
static int spd_inverse(int n, const double *a, double *inv)
{
	memcpy(inv, a, sizeof(double) * (size_t)n * n);
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, inv, n) ||
	    LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'L', n, inv, n))
		return 0;
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			inv[i * n + j] = inv[j * n + i];
	return 1;
}

static void test_full_rank(void **state)
{
	(void)state;
	xf_problem pr;
	problem(&pr);
	/* the middle of every bound: f = ½ */
	double x[NP] = { 0.5 * (lower[0] + upper[0]), 0.0, 0.0 }, share = 0.5;
	double c[NP * NP] = { 0.04, 0.01, -0.02, 0.01, 0.09, 0.0, -0.02, 0.0, 0.25 };
	double out[NP * NP], p[NP * NP], prod[NP * NP];
	assert_int_equal(xf_cmc_laplace_metric(&pr, theta, NP, x, share, NULL, c, NP, out), 0);
	assert_true(spd_inverse(NP, c, p));
	for (int k = 0; k < NP; k++) {
		double w = upper[k] - lower[k];
		double h = (w / 4) * (w / 4) / (prior_sigma[k] * prior_sigma[k]) + 0.5;
		assert_true(fabs(h - curvature(k, x[k])) < 1e-12 * h);
		p[k * NP + k] += share * h;
	}
	matmul(NP, out, p, prod);
	for (int i = 0; i < NP; i++)
		for (int j = 0; j < NP; j++)
			assert_true(fabs(prod[i * NP + j] - (i == j)) < 1e-12);
}

static void test_rank_deficient(void **state)
{
	(void)state;
	xf_problem pr;
	problem(&pr);
	double x[NP] = { 3000.0, 0.01, -2700.0 }, share = 1.0;
	/* D0 and D_offset move together only along (1, −1): rank 2 of 3 */
	double c[NP * NP] = { 50.0, 0.0, -50.0, 0.0, 0.04, 0.0, -50.0, 0.0, 50.0 };
	double out[NP * NP], p[NP * NP], t1[NP * NP], t2[NP * NP];
	assert_int_equal(xf_cmc_laplace_metric(&pr, theta, NP, x, share, NULL, c, NP, out), 0);
	assert_true(spd_inverse(NP, out, p)); /* positive definite */
	for (int k = 0; k < NP; k++)
		p[k * NP + k] -= share * curvature(k, x[k]); /* C's pseudo-inverse */
	matmul(NP, p, c, t1);
	matmul(NP, t1, p, t2); /* P·C·P = P */
	for (int i = 0; i < NP * NP; i++)
		assert_true(fabs(t2[i] - p[i]) < 1e-9 * (fabs(p[i]) + 1.0));
	matmul(NP, c, p, t1);
	matmul(NP, t1, c, t2); /* C·P·C = C */
	for (int i = 0; i < NP * NP; i++)
		assert_true(fabs(t2[i] - c[i]) < 1e-9 * (fabs(c[i]) + 1.0));
}

/* an NLSQ estimate over D0, alpha, D_offset (all free) with covariance cov (physical
 * units) */
static void nlsq_result(xf_estimate *r, const double *values, double *cov)
{
	static int all_free[NP];
	memset(r, 0, sizeof *r);
	r->is_fixed = all_free;
	r->n_params = NP;
	r->n_phys = NP;
	r->names = names;
	r->values = (double *)values;
	r->covariance = cov;
}

/* du/dx of parameter k at x */
static double du_dx(int k, double x)
{
	double w = upper[k] - lower[k], f = (x - lower[k]) / w;
	return 1.0 / (w * f * (1.0 - f));
}

static void test_initial_metric(void **state)
{
	(void)state;
	xf_problem pr;
	problem(&pr);
	int d = NP + 1;
	double m[(NP + 1) * (NP + 1)], share = 0.25;
	/* well determined: the u-space covariance, divided by the share */
	double x1[NP] = { 2000.0, -0.5, 10.0 };
	double c1[NP * NP] = { 400.0, 0.5, -30.0, 0.5, 0.0025, -0.01, -30.0, -0.01, 25.0 };
	xf_estimate r;
	nlsq_result(&r, x1, c1);
	assert_int_equal(xf_cmc_initial_metric(&pr, &r, theta, NP, x1, share, 1000, 1, NULL, m), 0);
	for (int i = 0; i < NP; i++)
		for (int j = 0; j < NP; j++) {
			double want = c1[i * NP + j] * du_dx(i, x1[i]) * du_dx(j, x1[j]) / share;
			assert_true(fabs(m[i * d + j] - want) < 1e-12 * fabs(want));
		}
	assert_true(fabs(m[NP * d + NP] - 1.0 / 2000.0) < 1e-15);
	/* a ridge: D0 + D_offset known to ±7, D0 alone to ±92 000 (a small static file
	 * with α ≈ 0) — D0's u-variance is far above the cap */
	double x2[NP] = { 9139.0, 0.013, -4906.0 };
	double s0 = 92169.0, s2 = 92170.0, sa = 0.131, rho = -0.999997, rae = 0.9;
	double c2[NP * NP] = { s0 * s0,	      rae * s0 * sa,  rho * s0 * s2,
			       rae * s0 * sa, sa * sa,	      -rae * s2 * sa,
			       rho * s0 * s2, -rae * s2 * sa, s2 * s2 };
	nlsq_result(&r, x2, c2);
	assert_int_equal(xf_cmc_initial_metric(&pr, &r, theta, NP, x2, 1.0, 1711, 1, NULL, m), 1);
	double l[(NP + 1) * (NP + 1)];
	memcpy(l, m, sizeof l);
	assert_int_equal(LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', d, l, d), 0);
	double corr = m[0 * d + 2] / sqrt(m[0] * m[2 * d + 2]);
	assert_true(corr < -0.99);
	assert_true(m[0] > 1.0); /* the priors, not a cap, set D0's spread in u */
	/* a rank-deficient JᵀJ (cov_rank < n_free): NLSQ's pseudo-inverse lies along the
	 * identified D0 + D_offset (correlation +1, sds of 10 %) and not across it; the
	 * metric runs along the ridge instead (negative correlation, wider than NLSQ's) */
	double x3[NP] = { 1080.0, 0.001, -191.0 }, s3 = 100.0, s3a = 0.05;
	double c3[NP * NP] = { s3 * s3, 0.0, s3 * s3, 0.0, s3a * s3a, 0.0, s3 * s3, 0.0, s3 * s3 };
	nlsq_result(&r, x3, c3);
	r.cov_rank = 3; /* of 3 free parameters */
	assert_int_equal(xf_cmc_initial_metric(&pr, &r, theta, NP, x3, 1.0, 190, 1, NULL, m), 0);
	assert_true(m[0 * d + 2] > 0.0); /* full rank claimed: NLSQ's metric as it is */
	r.cov_rank = 2;
	assert_int_equal(xf_cmc_initial_metric(&pr, &r, theta, NP, x3, 1.0, 190, 1, NULL, m), 1);
	assert_true(m[0 * d + 2] / sqrt(m[0] * m[2 * d + 2]) < -0.9);
	assert_true(m[0] > 10.0 * s3 * s3 * du_dx(0, x3[0]) * du_dx(0, x3[0]));
	nlsq_result(&r, x2, c2);
	xf_cmc_initial_metric(&pr, &r, theta, NP, x2, 1.0, 1711, 1, NULL, m);
	/* the diagonal metric of that ridge: the Laplace approximation's variances */
	double v[NP + 1];
	assert_int_equal(xf_cmc_initial_metric(&pr, &r, theta, NP, x2, 1.0, 1711, 0, NULL, v), 1);
	for (int k = 0; k < NP; k++)
		assert_true(fabs(v[k] - m[k * d + k]) < 1e-12 * m[k * d + k]);
}

static void test_nlsq_slopes(void **state)
{
	(void)state;
	xf_problem pr;
	problem(&pr);
	double x[NP] = { 127.035, 0.0352328, 411.5 };
	double sa = 6896.64, se = 1.8676, r = -0.99995;
	double c[NP * NP] = { sa * sa, r * sa * se, 0.0, r * sa * se, se * se, 0.0, 0.0, 0.0, 1.0 };
	xf_estimate res;
	nlsq_result(&res, x, c);
	int known[2];
	double q[2], sd_q[2];
	xf_cmc_nlsq_slopes(&pr, &res, known, q, sd_q);
	double var =
		x[1] * x[1] * sa * sa + x[0] * x[0] * se * se + 2.0 * x[0] * x[1] * r * sa * se;
	assert_int_equal(known[0], 1);
	assert_true(fabs(q[0] - x[0] * x[1]) < 1e-15 * fabs(q[0]));
	assert_true(fabs(sd_q[0] - sqrt(var)) < 1e-9 * sqrt(var));
	assert_true(sd_q[0] > 5.0 && sd_q[0] < 15.0); /* pinned: far below A·sd_e = 237 */
	assert_int_equal(known[1], 0);		      /* a static problem has no γ̇(t) */
	res.covariance = NULL;
	xf_cmc_nlsq_slopes(&pr, &res, known, q, sd_q);
	assert_int_equal(known[0], 0);
}

static void test_other_scaling_layout(void **state)
{
	(void)state;
	static double lo4[4] = { 1.0, -2.0, -1e5, 0.05 }, hi4[4] = { 1e5, 2.0, 1e5, 0.8 };
	static double mu4[4] = { 50000.0, 0.0, 0.0, 0.3 }, sg4[4] = { 24975.0, 1.0, 50000.0, 0.1 };
	static char *names4[4] = { "D0", "alpha", "D_offset", "contrast" };
	static char *nlsq_names[4] = { "D0", "alpha", "D_offset", "contrast_000" };
	const int theta4[4] = { 0, 1, 2, 3 };
	xf_problem pr;
	problem_of(&pr, 4, names4, lo4, hi4, mu4, sg4);
	double x[4] = { 2000.0, -0.5, 10.0, 0.3 };
	double c[16] = { 400.0, 0.5,   -30.0, 0.0, 0.5, 0.0025, -0.01, 0.0,
			 -30.0, -0.01, 25.0,  0.0, 0.0, 0.0,	0.0,   1e-4 };
	xf_estimate r;
	memset(&r, 0, sizeof r);
	static int all_free[4];
	r.n_params = 4;
	r.n_phys = NP;
	r.is_fixed = all_free;
	r.names = nlsq_names;
	r.values = x;
	r.covariance = c;
	int d = 5;
	double m[25];
	assert_int_equal(xf_cmc_initial_metric(&pr, &r, theta4, 4, x, 1.0, 1000, 1, NULL, m), 0);
	for (int i = 0; i < NP; i++)
		for (int j = 0; j < NP; j++) {
			double want = c[i * 4 + j] * du_dx(i, x[i]) * du_dx(j, x[j]);
			if (!(fabs(m[i * d + j] - want) < 1e-12 * fabs(want)))
				fail_msg("metric (%d, %d): %g, NLSQ's %g", i, j, m[i * d + j],
					 want);
		}
	for (int i = 0; i < NP; i++)
		assert_true(m[i * d + 3] == 0.0 && m[3 * d + i] == 0.0);
}

/* (f): JᵀJ of four rows; D0's column twice D_offset's, so n = (1, 0, −2) in x */
static void test_from_jtj(void **state)
{
	(void)state;
	xf_problem pr;
	problem(&pr);
	double x[NP] = { 0.5 * (lower[0] + upper[0]), 0.0, 0.0 }, share = 0.5;
	const double v[4] = { 1.0, 2.0, 0.5, 1.0 }, a[4] = { 0.3, -1.0, 2.0, 0.7 };
	double jac[4][NP], jtj[NP * NP] = { 0 }, g[NP];
	for (int i = 0; i < 4; i++) {
		jac[i][0] = 0.02 * v[i];
		jac[i][1] = 0.01 * a[i];
		jac[i][2] = 0.01 * v[i];
	}
	for (int k = 0; k < NP; k++)
		for (int l = 0; l < NP; l++)
			for (int i = 0; i < 4; i++)
				jtj[k * NP + l] += jac[i][k] * jac[i][l];
	for (int k = 0; k < NP; k++)
		g[k] = (upper[k] - lower[k]) / 4.0; /* dx/du at f = ½ */
	double out[NP * NP], p[NP * NP], prod[NP * NP];
	assert_int_equal(xf_cmc_laplace_metric(&pr, theta, NP, x, share, jtj, NULL, NP, out), 0);
	for (int k = 0; k < NP; k++)
		for (int l = 0; l < NP; l++)
			p[k * NP + l] = share * (g[k] * jtj[k * NP + l] * g[l] +
						 (k == l ? curvature(k, x[k]) : 0.0));
	matmul(NP, out, p, prod);
	for (int i = 0; i < NP; i++)
		for (int j = 0; j < NP; j++)
			assert_true(fabs(prod[i * NP + j] - (i == j)) < 1e-9);
	double corr = out[2] / sqrt(out[0] * out[8]), ratio = out[8] / out[0];
	if (!(corr < -0.999 && fabs(ratio - 1.0) < 0.01))
		fail_msg("from JtJ: corr(D0, D_offset) %.5f, var ratio %.4f; want -1 and 1", corr,
			 ratio);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_jtj),       cmocka_unit_test(test_full_rank),
		cmocka_unit_test(test_rank_deficient), cmocka_unit_test(test_initial_metric),
		cmocka_unit_test(test_nlsq_slopes),    cmocka_unit_test(test_other_scaling_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
