/* test_likelihood_rings.c — the likelihood pass with a q per angle slot (adr/0064): the
 * slots of several q rings side by side share the physical parameters; contrast and
 * offset are per ring and angle under the per-angle modes applied within each ring.
 *   - the joint pass equals the sum of the single-ring passes BITWISE (χ², Jᵀr, JᵀJ, at
 *     every pass level, every per-angle mode within each ring, least squares and robust
 *     losses, pool and inline, every laminar kernel build): each ring's
 *     blocks are reduced into its own sum in block order, then the rings in ring order;
 *   - the joint JᵀJ and Jᵀr against an explicit per-point Jacobian of xf_model_c2_point at
 *     each slot's q, and Jᵀr against central differences of χ² (in this test only);
 *   - a slot_q of one value is today's problem, bitwise; slot_q that is not ring by ring
 *     is refused;
 *   - NLSQ on the joint problem recovers a shared truth with smaller sds than any ring.
 * With XF_RINGS_DUMP=path it also writes the joint problem's slots, data and model
 * values for the NumPy model (test_model_numpy.py). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "likelihood/pass_internal.h"
#include "model/kernel.h"
#include "synth.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/nlsq.h"
#include "fit_request.h"

#define MAX_RINGS 3
#define K_ANGLES  3 /* angles per ring */
#define N_FRAMES  40

static const double truth_laminar[7] = { 1500.0, -0.8, 20.0, 0.012, -0.3, 0.0005, 2.0 };
static const double ring_q[MAX_RINGS] = { 0.0054, 0.0081, 0.0123 }; /* Å⁻¹ */

typedef struct rings {
	int n_rings;
	xf_mode mode;
	xf_shear_model shear;
	xf_dataset ring[MAX_RINGS];
	xf_dataset joint; /* the slots of every ring, ring by ring */
	double slot_q[MAX_RINGS * K_ANGLES];
	xf_scaling_mode scaling; /* per-angle mode, applied within each ring */
	xf_test_fit fit;	 /* the request and NLSQ's options */
} rings;

static xf_model_grid ring_grid(const rings *r, int k)
{
	return (xf_model_grid){ r->mode, r->shear, N_FRAMES, 0.001, ring_q[k], 2e6 };
}

static void rings_make(rings *r, int n_rings, xf_mode mode, xf_shear_model shear,
		       xf_scaling_mode scaling)
{
	memset(r, 0, sizeof *r);
	r->n_rings = n_rings;
	r->scaling = scaling;
	r->mode = mode;
	r->shear = shear;
	for (int k = 0; k < n_rings; k++) {
		xf_model_grid g = ring_grid(r, k);
		double phi[K_ANGLES], con[K_ANGLES], off[K_ANGLES];
		for (int a = 0; a < K_ANGLES; a++) {
			phi[a] = -50.0 + 45.0 * a + 7.0 * k;
			con[a] = 0.28 + 0.02 * a + 0.01 * k;
			off[a] = 1.0 + 0.003 * a;
		}
		assert_int_equal(xf_synth_dataset(&g, truth_laminar, K_ANGLES, phi, con, off, 2e-3,
						  (uint64_t)(7 + k), &r->ring[k]),
				 0);
	}
	assert_int_equal(xf_synth_join(n_rings, r->ring, &r->joint, r->slot_q), 0);
	const double start[7] = { 1000.0, -0.5, 10.0, 0.01, -0.2, 0.0, 0.0 };
	xf_test_fit_init(&r->fit, mode, start);
	r->fit.req.shear_model = shear;
	r->fit.opt.per_angle_mode = scaling;
	r->fit.opt.anti_degeneracy_enable = 1;
	r->fit.opt.constant_scaling_threshold = K_ANGLES;
	r->fit.opt.fourier_order = 1; /* 3 coefficients: every ring has 3 angles */
}

static void rings_free(rings *r)
{
	for (int k = 0; k < r->n_rings; k++)
		xf_synth_free(&r->ring[k]);
	xf_synth_free(&r->joint);
}

/* The problem of one ring (slot_q NULL: the dataset's q) or of the joint slots. */
static void problem(const rings *r, const xf_dataset *ds, const double *slot_q, xf_problem *pr)
{
	xf_error err = { 0 };
	xf_request req = xf_test_fit_request(&r->fit);
	req.n_slot_q = slot_q ? ds->n_phi : 0;
	req.slot_q = slot_q;
	if (xf_problem_build(pr, &req, ds, &err))
		fail_msg("problem build: %s", err.msg);
	assert_int_equal(pr->scaling->mode, r->scaling);
}

/* x of the joint problem: physical values off the truth, the scaling coefficients
 * near their starts. */
static void joint_x(const xf_problem *pr, double *x)
{
	for (int m = 0; m < pr->n_phys; m++)
		x[m] = truth_laminar[m] * (m == XF_P_D0 ? 0.87 : 1.0) +
		       (m == XF_P_PHI0 ? 1.0 : 0.0);
	for (int c = pr->n_phys; c < pr->n_full; c++)
		x[c] = pr->start[c] + 0.001 * (c - pr->n_phys);
}

/* Index in the joint problem of coefficient c (of nc) of ring k's own problem, of one
 * quantity: individual counts the slots, every other mode the rings' groups. */
static int joint_coef(const xf_problem *pj, int k, int nc, int c)
{
	return (pj->scaling->mode == XF_SCALING_INDIVIDUAL ? pj->ring_first[k] : k * nc) + c;
}

/* x of ring k's own problem (nc coefficients per quantity) from the joint x. */
static void ring_x(const xf_problem *pj, const double *xj, int k, int nc, double *x)
{
	int np = pj->n_phys, nb = pj->n_basis;
	memcpy(x, xj, sizeof(double) * np);
	for (int c = 0; c < nc; c++) {
		x[np + c] = xj[np + joint_coef(pj, k, nc, c)];
		x[np + nc + c] = xj[np + nb + joint_coef(pj, k, nc, c)];
	}
}

#define NF_MAX (7 + 2 * MAX_RINGS * K_ANGLES)

static void assert_bits(double got, double want, const char *what, int k)
{
	if (memcmp(&got, &want, sizeof got))
		fail_msg("%s[%d]: joint %.17g, sum of rings %.17g", what, k, got, want);
}

/* The joint pass at every level against the single-ring passes, bitwise. */
static void check_sum_of_rings(int n_rings, xf_mode mode, xf_shear_model shear, xf_loss loss,
			       int threads, xf_scaling_mode scaling)
{
	rings r;
	rings_make(&r, n_rings, mode, shear, scaling);
	xf_problem pj, pr[MAX_RINGS];
	problem(&r, &r.joint, r.slot_q, &pj);
	assert_int_equal(pj.n_rings, n_rings);
	{ /* the GPU pass has one q: a joint problem stays on the CPU, with one clear line */
		xf_pairset all;
		xf_pairset_all(&all, N_FRAMES);
		xf_error gerr = { 0 };
		xf_lik *g = xf_lik_create(&pj, &all, NULL, &gerr);
		assert_int_equal(xf_lik_use_gpu(g, 0, 1, &gerr), XF_ERR_CONFIG);
		assert_non_null(strstr(gerr.msg, "q rings runs on the CPU only"));
		xf_lik_destroy(g);
		xf_pairset_free(&all);
	}
	if (scaling == XF_SCALING_AUTO) { /* one contrast and offset per ring, named by it */
		assert_int_equal(pj.n_basis, n_rings);
		assert_string_equal(pj.names[pj.n_phys], "contrast_r0");
		assert_string_equal(pj.names[pj.n_full - 1],
				    n_rings == 2 ? "offset_r1" : "offset_r2");
	}
	xf_pool *pool = threads ? xf_pool_create(threads) : NULL;
	xf_pairset ps;
	xf_pairset_all(&ps, N_FRAMES);
	xf_error err = { 0 };
	xf_lik *lj = xf_lik_create(&pj, &ps, pool, &err), *lr[MAX_RINGS];
	assert_non_null(lj);
	xf_lik_set_loss(lj, loss, 0.01);
	int nf = pj.n_full, np = pj.n_phys;
	double xj[NF_MAX], xr[MAX_RINGS][NF_MAX];
	joint_x(&pj, xj);
	for (int k = 0; k < n_rings; k++) {
		problem(&r, &r.ring[k], NULL, &pr[k]);
		assert_int_equal(pr[k].n_rings, 1);
		lr[k] = xf_lik_create(&pr[k], &ps, pool, &err);
		assert_non_null(lr[k]);
		xf_lik_set_loss(lr[k], loss, 0.01);
		ring_x(&pj, xj, k, pr[k].n_basis, xr[k]);
	}
	for (int level = 0; level < 3; level++) {
		double hj[NF_MAX * NF_MAX], bj[NF_MAX], hr[NF_MAX * NF_MAX], br[NF_MAX];
		xf_lik_out oj = { 0.0, level == 2 ? hj : NULL, level ? bj : NULL, 0.0 };
		assert_int_equal(xf_lik_eval(lj, xj, &oj), 0);
		double chi2 = 0.0, bp[7] = { 0 }, hpp[49] = { 0 };
		for (int k = 0; k < n_rings; k++) {
			xf_lik_out o = { 0.0, level == 2 ? hr : NULL, level ? br : NULL, 0.0 };
			assert_int_equal(xf_lik_eval(lr[k], xr[k], &o), 0);
			chi2 += o.chi2;
			int nr = pr[k].n_full;
			for (int m = 0; m < np && level; m++) {
				bp[m] += br[m];
				for (int l = 0; l < np && level == 2; l++)
					hpp[m * np + l] += hr[m * nr + l];
			}
			/* the ring's own coefficients: the same numbers in the joint layout */
			int nc = pr[k].n_basis, nbj = pj.n_basis;
			for (int a = 0; a < 2 * nc && level; a++) {
				int cj = np + (a < nc ? joint_coef(&pj, k, nc, a)
						      : nbj + joint_coef(&pj, k, nc, a - nc));
				assert_bits(bj[cj], br[np + a], "b (scaling)", cj);
				for (int l = 0; l < 2 * nc && level == 2; l++) {
					int lj2 = np +
						  (l < nc ? joint_coef(&pj, k, nc, l)
							  : nbj + joint_coef(&pj, k, nc, l - nc));
					assert_bits(hj[cj * nf + lj2], hr[(np + a) * nr + np + l],
						    "JtJ (scaling, scaling)", cj * nf + lj2);
				}
				for (int m = 0; m < np && level == 2; m++)
					assert_bits(hj[m * nf + cj], hr[m * nr + np + a],
						    "JtJ (physical, scaling)", m * nf + cj);
			}
		}
		assert_bits(oj.chi2, chi2, "chi2", level);
		/* every build of the laminar kernel this CPU runs gives the same bits */
		void (*builds[3])(xf_lik *, int) = { xf_pass_laminar_generic, NULL, NULL };
#if defined(__x86_64__)
		__builtin_cpu_init();
		if (__builtin_cpu_supports("avx2"))
			builds[1] = xf_pass_laminar_avx2;
		if (__builtin_cpu_supports("avx512f"))
			builds[2] = xf_pass_laminar_avx512;
#endif
		void (*chosen)(xf_lik *, int) = lj->model_block;
		for (int k = 0; k < 3 && mode == XF_MODE_LAMINAR && loss == XF_LOSS_LINEAR; k++) {
			if (!builds[k])
				continue;
			double hk[NF_MAX * NF_MAX], bk[NF_MAX];
			xf_lik_out ok = { 0.0, level == 2 ? hk : NULL, level ? bk : NULL, 0.0 };
			lj->model_block = builds[k];
			assert_int_equal(xf_lik_eval(lj, xj, &ok), 0);
			assert_bits(ok.chi2, oj.chi2, "chi2 (kernel build)", k);
			if (level)
				assert_memory_equal(bk, bj, sizeof(double) * nf);
			if (level == 2)
				assert_memory_equal(hk, hj, sizeof(double) * nf * nf);
		}
		lj->model_block = chosen;
		/* the batch sweep (pass_batch.c) at this point: the same bits */
		double swept[2], xs[2 * NF_MAX];
		memcpy(xs, xj, sizeof(double) * nf);
		memcpy(xs + nf, xj, sizeof(double) * nf);
		xs[nf + XF_P_D0] *= 1.1;
		assert_int_equal(xf_lik_eval_values(lj, 2, xs, swept), 0);
		if (loss == XF_LOSS_LINEAR)
			assert_bits(swept[0], oj.chi2, "chi2 (batch sweep)", level);
		for (int m = 0; m < np && level; m++) {
			assert_bits(bj[m], bp[m], "b", m);
			for (int l = 0; l < np && level == 2; l++)
				assert_bits(hj[m * nf + l], hpp[m * np + l], "JtJ", m * nf + l);
		}
	}
	for (int k = 0; k < n_rings; k++) {
		xf_lik_destroy(lr[k]);
		xf_problem_free(&pr[k]);
	}
	xf_lik_destroy(lj);
	xf_pool_destroy(pool);
	xf_pairset_free(&ps);
	xf_problem_free(&pj);
	rings_free(&r);
}

static void test_sum_of_rings(void **state)
{
	(void)state;
	const xf_scaling_mode ind = XF_SCALING_INDIVIDUAL;
	check_sum_of_rings(2, XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, XF_LOSS_LINEAR, 2, ind);
	check_sum_of_rings(3, XF_MODE_LAMINAR, XF_SHEAR_PNAS2024, XF_LOSS_LINEAR, 0, ind);
	check_sum_of_rings(3, XF_MODE_STATIC, XF_SHEAR_HOMODYNE, XF_LOSS_LINEAR, 2, ind);
	check_sum_of_rings(2, XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, XF_LOSS_SOFT_L1, 2, ind);
	check_sum_of_rings(2, XF_MODE_STATIC, XF_SHEAR_HOMODYNE, XF_LOSS_CAUCHY, 0, ind);
	/* the other per-angle modes, within each ring */
	check_sum_of_rings(3, XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, XF_LOSS_LINEAR, 2,
			   XF_SCALING_AUTO);
	check_sum_of_rings(2, XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, XF_LOSS_HUBER, 0,
			   XF_SCALING_AUTO);
	check_sum_of_rings(3, XF_MODE_LAMINAR, XF_SHEAR_PNAS2024, XF_LOSS_LINEAR, 2,
			   XF_SCALING_FOURIER);
	check_sum_of_rings(2, XF_MODE_STATIC, XF_SHEAR_HOMODYNE, XF_LOSS_LINEAR, 0,
			   XF_SCALING_FOURIER);
	check_sum_of_rings(2, XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, XF_LOSS_LINEAR, 2,
			   XF_SCALING_CONSTANT);
}

/* χ² of the joint problem at x, one value pass. */
static double chi2_at(xf_lik *lik, const double *x)
{
	xf_lik_out o = { 0.0, NULL, NULL, 0.0 };
	assert_int_equal(xf_lik_eval(lik, x, &o), 0);
	return o.chi2;
}

/* The joint JᵀJ and Jᵀr against per-point gradients of xf_model_c2_point at each slot's
 * q, and Jᵀr against central differences of χ² (∂χ²/∂x = −2·Jᵀr). */
static void check_gradient(xf_mode mode)
{
	rings r;
	rings_make(&r, 3, mode, XF_SHEAR_HOMODYNE, XF_SCALING_INDIVIDUAL);
	xf_problem pj;
	problem(&r, &r.joint, r.slot_q, &pj);
	xf_pairset ps;
	xf_pairset_all(&ps, N_FRAMES);
	xf_error err = { 0 };
	xf_lik *lik = xf_lik_create(&pj, &ps, NULL, &err);
	assert_non_null(lik);
	int nf = pj.n_full, np = pj.n_phys;
	double x[NF_MAX], h[NF_MAX * NF_MAX], b[NF_MAX];
	joint_x(&pj, x);
	xf_lik_out o = { 0.0, h, b, 0.0 };
	assert_int_equal(xf_lik_eval(lik, x, &o), 0);
	/* explicit per-point sums, each slot on a grid at its own q */
	double chi2 = 0.0, he[NF_MAX * NF_MAX] = { 0 }, be[NF_MAX] = { 0 };
	for (int s = 0; s < pj.n_phi; s++) {
		xf_model_grid g = pj.grid;
		g.q = pj.slot_q[s];
		double con = x[np + s], off = x[np + pj.n_phi + s];
		for (int i = 1; i < N_FRAMES; i++)
			for (int j = i + 1; j < N_FRAMES; j++) {
				double c2, grad[9], row[NF_MAX] = { 0 };
				assert_int_equal(xf_model_c2_point(&g, x, pj.ds->phi_deg[s], con,
								   off, i, j, &c2, grad),
						 0);
				double res = pj.ds->c2[s][xf_packed_index(N_FRAMES, i, j)] - c2;
				memcpy(row, grad, sizeof(double) * np);
				row[np + s] = grad[XF_P_CONTRAST];
				row[np + pj.n_phi + s] = 1.0;
				chi2 += res * res;
				for (int m = 0; m < nf; m++) {
					be[m] += row[m] * res;
					for (int l = 0; l < nf; l++)
						he[m * nf + l] += row[m] * row[l];
				}
			}
	}
	assert_true(fabs(o.chi2 - chi2) <= 1e-10 * chi2);
	for (int m = 0; m < nf; m++) {
		double dm = sqrt(he[m * nf + m]);
		if (fabs(b[m] - be[m]) > 1e-9 * dm * sqrt(chi2))
			fail_msg("b[%s]: pass %.15g, explicit %.15g", pj.names[m], b[m], be[m]);
		for (int l = 0; l < nf; l++)
			if (fabs(h[m * nf + l] - he[m * nf + l]) >
			    1e-10 * dm * sqrt(he[l * nf + l]) + 1e-300)
				fail_msg("JtJ[%s,%s]: pass %.15g, explicit %.15g", pj.names[m],
					 pj.names[l], h[m * nf + l], he[m * nf + l]);
	}
	/* central differences of χ², physical parameters (the test's check only) */
	for (int m = 0; m < np; m++) {
		double step = 1e-5 * (fabs(x[m]) > 1e-3 ? fabs(x[m]) : 1e-3);
		double xp[NF_MAX], xm[NF_MAX];
		memcpy(xp, x, sizeof x);
		memcpy(xm, x, sizeof x);
		xp[m] += step;
		xm[m] -= step;
		double fd = (chi2_at(lik, xp) - chi2_at(lik, xm)) / (2.0 * step);
		double an = -2.0 * b[m], scale = 2.0 * sqrt(he[m * nf + m] * chi2);
		if (fabs(fd - an) > 1e-5 * scale)
			fail_msg("d chi2 / d %s: analytic %.10g, central difference %.10g",
				 pj.names[m], an, fd);
	}
	xf_lik_destroy(lik);
	xf_pairset_free(&ps);
	xf_problem_free(&pj);
	rings_free(&r);
}

static void test_gradient(void **state)
{
	(void)state;
	check_gradient(XF_MODE_LAMINAR);
	check_gradient(XF_MODE_STATIC);
}

/* slot_q of one value is today's problem, bitwise; slots of a ring not side by side and a
 * count that is not one per slot are refused. */
static void test_one_ring_and_refusals(void **state)
{
	(void)state;
	rings r;
	rings_make(&r, 2, XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, XF_SCALING_INDIVIDUAL);
	double same[K_ANGLES];
	for (int a = 0; a < K_ANGLES; a++)
		same[a] = r.ring[0].q;
	xf_problem p0, p1;
	problem(&r, &r.ring[0], NULL, &p0);
	problem(&r, &r.ring[0], same, &p1);
	assert_int_equal(p1.n_rings, 1);
	xf_pairset ps;
	xf_pairset_all(&ps, N_FRAMES);
	xf_error err = { 0 };
	xf_lik *l0 = xf_lik_create(&p0, &ps, NULL, &err), *l1 = xf_lik_create(&p1, &ps, NULL, &err);
	double x[NF_MAX], h0[NF_MAX * NF_MAX], h1[NF_MAX * NF_MAX], b0[NF_MAX], b1[NF_MAX];
	memcpy(x, p0.start, sizeof(double) * p0.n_full);
	xf_lik_out o0 = { 0.0, h0, b0, 0.0 }, o1 = { 0.0, h1, b1, 0.0 };
	assert_int_equal(xf_lik_eval(l0, x, &o0), 0);
	assert_int_equal(xf_lik_eval(l1, x, &o1), 0);
	assert_memory_equal(&o0.chi2, &o1.chi2, sizeof(double));
	assert_memory_equal(b0, b1, sizeof(double) * p0.n_full);
	assert_memory_equal(h0, h1, sizeof(double) * p0.n_full * p0.n_full);
	xf_lik_destroy(l0);
	xf_lik_destroy(l1);
	xf_problem_free(&p0);
	xf_problem_free(&p1);
	xf_pairset_free(&ps);
	/* q of ring 0 again after ring 1: refused */
	double back[2 * K_ANGLES];
	memcpy(back, r.slot_q, sizeof back);
	back[2 * K_ANGLES - 1] = ring_q[0];
	xf_request req = xf_test_fit_request(&r.fit);
	req.n_slot_q = 2 * K_ANGLES;
	req.slot_q = back;
	xf_problem pb;
	assert_int_equal(xf_problem_build(&pb, &req, &r.joint, &err), XF_ERR_DATA);
	assert_non_null(strstr(err.msg, "not side by side"));
	req.n_slot_q = 2;
	err = (xf_error){ 0 };
	assert_int_equal(xf_problem_build(&pb, &req, &r.joint, &err), XF_ERR_DATA);
	assert_non_null(strstr(err.msg, "q values given"));
	rings_free(&r);
}

/* For the NumPy model (test_model_numpy.py): per slot q, φ, contrast, offset; the
 * physical values; then per slot and fitted pair i j data model; the pass's χ² and Jᵀr. */
static void dump_for_numpy(const char *path)
{
	rings r;
	rings_make(&r, 3, XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, XF_SCALING_INDIVIDUAL);
	xf_problem pj;
	problem(&r, &r.joint, r.slot_q, &pj);
	xf_pairset ps;
	xf_pairset_all(&ps, N_FRAMES);
	xf_error err = { 0 };
	xf_lik *lik = xf_lik_create(&pj, &ps, NULL, &err);
	int nf = pj.n_full, np = pj.n_phys, n = pj.n_phi;
	double x[NF_MAX], b[NF_MAX];
	joint_x(&pj, x);
	xf_lik_out o = { 0.0, NULL, b, 0.0 };
	assert_int_equal(xf_lik_eval(lik, x, &o), 0);
	double *res = malloc(sizeof(double) * ps.n_pairs * n);
	assert_int_equal(xf_problem_residuals(&pj, &ps, x, res), 0);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "frames %d dt %.17g gap %.17g slots %d\ntheta", N_FRAMES, pj.grid.dt_s,
		pj.grid.gap_A, n);
	for (int m = 0; m < np; m++)
		fprintf(f, " %.17g", x[m]);
	fprintf(f, "\n");
	for (int s = 0; s < n; s++)
		fprintf(f, "slot %.17g %.17g %.17g %.17g\n", pj.slot_q[s], pj.ds->phi_deg[s],
			x[np + s], x[np + n + s]);
	fprintf(f, "chi2 %.17g\nb", o.chi2);
	for (int m = 0; m < nf; m++)
		fprintf(f, " %.17g", b[m]);
	fprintf(f, "\n");
	size_t k = 0;
	for (int i = 1; i < N_FRAMES; i++)
		for (int j = i + 1; j < N_FRAMES; j++, k++)
			for (int s = 0; s < n; s++) {
				double d = pj.ds->c2[s][xf_packed_index(N_FRAMES, i, j)];
				fprintf(f, "%d %d %d %.17g %.17g\n", s, i, j, d,
					d - res[k * n + s]);
			}
	assert_int_equal(fclose(f), 0);
	free(res);
	xf_lik_destroy(lik);
	xf_pairset_free(&ps);
	xf_problem_free(&pj);
	rings_free(&r);
}

/* NLSQ on the joint problem (library level: the CLI's joint mode is another change):
 * three rings with a shared truth; the joint fit recovers it, and its sd of each
 * physical parameter is below the best single ring's. */
static void check_joint_fit(xf_mode mode)
{
	rings r;
	rings_make(&r, 3, mode, XF_SHEAR_HOMODYNE, XF_SCALING_INDIVIDUAL);
	xf_request req = xf_test_fit_request(&r.fit);
	xf_error err = { 0 };
	xf_nlsq_result joint, one[MAX_RINGS];
	for (int k = 0; k < 3; k++)
		if (xf_nlsq_fit(&req, &r.fit.opt, &r.ring[k], 1, NULL, NULL, &one[k], &err))
			fail_msg("ring %d fit: %s", k, err.msg);
	req.n_slot_q = r.joint.n_phi;
	req.slot_q = r.slot_q;
	if (xf_nlsq_fit(&req, &r.fit.opt, &r.joint, 2, NULL, NULL, &joint, &err))
		fail_msg("joint fit: %s", err.msg);
	assert_false(xf_fit_status_failed(joint.status));
	for (int m = 0; m < joint.n_phys; m++) {
		double best = INFINITY;
		for (int k = 0; k < 3; k++)
			best = one[k].uncertainties[m] < best ? one[k].uncertainties[m] : best;
		double sd = joint.uncertainties[m], z = (joint.values[m] - truth_laminar[m]) / sd;
		printf("joint %-18s %12.6g +/- %-10.3g (truth %g, %+.2f sd), best ring sd %.3g, "
		       "ratio %.2f\n",
		       joint.names[m], joint.values[m], sd, truth_laminar[m], z, best, sd / best);
		if (!(fabs(z) < 5.0 && sd < best))
			fail_msg("joint %s: %g +/- %g, truth %g, best single-ring sd %g",
				 joint.names[m], joint.values[m], sd, truth_laminar[m], best);
	}
	xf_nlsq_result_free(&joint);
	for (int k = 0; k < 3; k++)
		xf_nlsq_result_free(&one[k]);
	rings_free(&r);
}

static void test_joint_fit(void **state)
{
	(void)state;
	check_joint_fit(XF_MODE_STATIC);
	check_joint_fit(XF_MODE_LAMINAR);
}

int main(void)
{
	xf_log_set_stderr(1, 0);
	const char *dump = getenv("XF_RINGS_DUMP");
	if (dump) {
		dump_for_numpy(dump);
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sum_of_rings),
		cmocka_unit_test(test_gradient),
		cmocka_unit_test(test_one_ring_and_refusals),
		cmocka_unit_test(test_joint_fit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
