/* pass_hessian.c — the static block kernel of a full pass: χ², JᵀJ and Jᵀr (NLSQ). The
 * laminar one, for every level, is pass_laminar_kernel.h.
 *
 * Why this shape: the diffusion factor depends on the frame pair only, so it is computed
 * once per pair and the angles are looped inside. A point's Jacobian row is
 * j = [u·a (3), g1²·B_c[a], B_o[a]] with a = ∂log g1_D per pair and u a scalar per point,
 * so the physical block of JᵀJ needs one scalar sum over the angles of a pair followed by
 * one small outer product per pair, and the scaling blocks need a few sums per angle.
 * Nothing of size n × p is ever built. */
#include <math.h>

#include "likelihood/pass_internal.h"

/* Static: g1 is the same for every angle, so the per-angle scaling sums are the pair
 * sums times the angle's contrast; only the residual is per angle. */
static void static_block(xf_lik *lik, int block)
{
	const xf_dataset *ds = lik->ds;
	int p0, p1;
	const xf_frames fr = block_frames(lik, block, &p0, &p1), *f = &fr;
	xf_accum *acc = &lik->slots[block];
	const int n_phi = p1 - p0; /* the slots of the block's ring */
	const size_t n = (size_t)ds->n_frames;
	double sum_con2 = 0.0;
	for (int p = p0; p < p1; p++)
		sum_con2 += lik->contrast[p] * lik->contrast[p];
	double t4a[3] = { 0, 0, 0 }, t2a[3] = { 0, 0, 0 }, t4 = 0.0, t2 = 0.0, count = 0.0;
	int i, j;
	pair_cursor c = cursor_at(lik, block);
	accum_clear(lik->pr, acc);
	while (cursor_next(&c, &i, &j)) {
		double a[3];
		double g1 = xf_pair_diffusion(f, i, j, a);
		if (g1 < XF_G1_FLOOR) {
			g1 = XF_G1_FLOOR;
			a[0] = a[1] = a[2] = 0.0;
		}
		double g1sq = g1 * g1;
		size_t idx = xf_packed_index(n, (size_t)i, (size_t)j), pos = c.k - 1;
		double con_res = 0.0;
		for (int p = p0; p < p1; p++) {
			double res = pass_data(lik, p, idx, pos) -
				     (lik->offset[p] + lik->contrast[p] * g1sq);
			acc->chi2 += res * res;
			con_res += lik->contrast[p] * res;
			acc->bc[p] += g1sq * res;
			acc->bo[p] += res;
		}
		/* u_p = 2·con_p·g1², so Σu² = 4g1⁴Σcon² and Σu·res = 2g1²Σcon·res */
		double uu = 4.0 * g1sq * g1sq * sum_con2, ur = 2.0 * g1sq * con_res;
		for (int m = 0; m < 3; m++) {
			for (int l = 0; l < 3; l++)
				acc->hpp[m * XF_N_PHYS + l] += uu * a[m] * a[l];
			acc->bp[m] += ur * a[m];
			t4a[m] += g1sq * g1sq * a[m];
			t2a[m] += g1sq * a[m];
		}
		t4 += g1sq * g1sq;
		t2 += g1sq;
		count += 1.0;
	}
	acc->g1sq = t2 * n_phi;
	for (int p = p0; p < p1; p++) {
		double two_con = 2.0 * lik->contrast[p];
		for (int m = 0; m < 3; m++) {
			acc->pc[(size_t)p * XF_N_PHYS + m] = two_con * t4a[m];
			acc->po[(size_t)p * XF_N_PHYS + m] = two_con * t2a[m];
		}
		acc->scc[p] = t4;
		acc->sco[p] = t2;
		acc->soo[p] = count;
	}
}

void xf_pass_block_hessian(xf_lik *lik, int block)
{
	static_block(lik, block);
}
