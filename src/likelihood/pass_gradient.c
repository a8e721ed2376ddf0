/* pass_gradient.c — the static block kernels of the lighter passes: χ² with
 * b = Σ ∂c2·res (the log density and its gradient for NUTS), and χ² alone (the
 * self-check of a combined posterior). The same per-pair structure as pass_hessian.c —
 * the diffusion factor once per frame pair, the angles inside — without the JᵀJ sums.
 * The laminar kernels of every level are in pass_laminar_kernel.h. */
#include <math.h>

#include "likelihood/pass_internal.h"

/* Static: g1 is the same for every angle; Σ_p u_p·res_p = 2g1²·Σ_p con_p·res_p. */
static void static_gradient(xf_lik *lik, int block)
{
	int p0, p1;
	const xf_frames fr = block_frames(lik, block, &p0, &p1), *f = &fr;
	xf_accum *acc = &lik->slots[block];
	const size_t n = (size_t)lik->ds->n_frames;
	const int n_phi = p1 - p0; /* the slots of the block's ring */
	double chi2 = 0.0, g1sum = 0.0;
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
		double g1sq = g1 * g1, con_res = 0.0;
		size_t idx = xf_packed_index(n, (size_t)i, (size_t)j), k = c.k - 1;
		for (int p = p0; p < p1; p++) {
			double res = pass_data(lik, p, idx, k) -
				     (lik->offset[p] + lik->contrast[p] * g1sq);
			chi2 += res * res;
			con_res += lik->contrast[p] * res;
			acc->bc[p] += g1sq * res;
			acc->bo[p] += res;
		}
		g1sum += g1sq * n_phi;
		double ur = 2.0 * g1sq * con_res;
		for (int m = 0; m < 3; m++)
			acc->bp[m] += ur * a[m];
	}
	acc->chi2 = chi2;
	acc->g1sq = g1sum;
}

void xf_pass_block_gradient(xf_lik *lik, int block)
{
	static_gradient(lik, block);
}

/* χ² and Σ g1² only. */
void xf_pass_block_value(xf_lik *lik, int block)
{
	int p0, p1;
	const xf_frames fr = block_frames(lik, block, &p0, &p1), *f = &fr;
	xf_accum *acc = &lik->slots[block];
	const size_t n = (size_t)lik->ds->n_frames;
	double chi2 = 0.0, g1sum = 0.0;
	int i, j;
	pair_cursor c = cursor_at(lik, block);
	accum_clear(lik->pr, acc);
	while (cursor_next(&c, &i, &j)) {
		double a[3];
		double g1 = xf_pair_diffusion(f, i, j, a);
		if (g1 < XF_G1_FLOOR)
			g1 = XF_G1_FLOOR;
		double g1sq = g1 * g1;
		size_t idx = xf_packed_index(n, (size_t)i, (size_t)j), k = c.k - 1;
		for (int p = p0; p < p1; p++) {
			double res = pass_data(lik, p, idx, k) -
				     (lik->offset[p] + lik->contrast[p] * g1sq);
			chi2 += res * res;
			g1sum += g1sq;
		}
	}
	acc->chi2 = chi2;
	acc->g1sq = g1sum;
}

/* χ² with the scaling sums only (XF_PASS_SCALING): per pair g1², per angle its residual;
 * g1 is the same for every angle, so Σ g1⁴, Σ g1² and the count are pair sums. */
void xf_pass_block_scaling(xf_lik *lik, int block)
{
	int p0, p1;
	const xf_frames fr = block_frames(lik, block, &p0, &p1), *f = &fr;
	xf_accum *acc = &lik->slots[block];
	const size_t n = (size_t)lik->ds->n_frames;
	const int n_phi = p1 - p0;
	double chi2 = 0.0, t4 = 0.0, t2 = 0.0, count = 0.0;
	int i, j;
	pair_cursor c = cursor_at(lik, block);
	accum_clear(lik->pr, acc);
	while (cursor_next(&c, &i, &j)) {
		double a[3];
		double g1 = xf_pair_diffusion(f, i, j, a);
		if (g1 < XF_G1_FLOOR)
			g1 = XF_G1_FLOOR;
		double g1sq = g1 * g1;
		size_t idx = xf_packed_index(n, (size_t)i, (size_t)j), k = c.k - 1;
		for (int p = p0; p < p1; p++) {
			double res = pass_data(lik, p, idx, k) -
				     (lik->offset[p] + lik->contrast[p] * g1sq);
			chi2 += res * res;
			acc->bc[p] += g1sq * res;
			acc->bo[p] += res;
		}
		t4 += g1sq * g1sq;
		t2 += g1sq;
		count += 1.0;
	}
	acc->chi2 = chi2;
	acc->g1sq = t2 * n_phi;
	for (int p = p0; p < p1; p++) {
		acc->scc[p] = t4;
		acc->sco[p] = t2;
		acc->soo[p] = count;
	}
}

/* The collapse level (XF_PASS_COLLAPSE): the scaling level's sums, the same arithmetic in
 * the same order (so χ², H_ss and b_s are the bits of xf_lik_eval_scaling), and per angle
 * Σ res·∂(g1²)/∂x_m in pr[p][m], Σ g1²·∂(g1²)/∂x_m in pc[p][m] and Σ ∂(g1²)/∂x_m in
 * po[p][m], with ∂(g1²) = 2·g1²·a: the gradient of the posterior with the scaling
 * integrated out at any scaling from one pass at s₀ (cmc/collapse.c). */
#define XF_COLLAPSE_CHUNK 64 /* pairs whose Σ res·∂g1² is summed angle by angle */

void xf_pass_block_collapse(xf_lik *lik, int block)
{
	int p0, p1;
	const xf_frames fr = block_frames(lik, block, &p0, &p1), *f = &fr;
	xf_accum *acc = &lik->slots[block];
	const size_t n = (size_t)lik->ds->n_frames;
	const int n_phi = p1 - p0;
	double chi2 = 0.0, t4 = 0.0, t2 = 0.0, count = 0.0;
	double t4a[3] = { 0, 0, 0 }, t2a[3] = { 0, 0, 0 };
	double ga[3][XF_COLLAPSE_CHUNK], gq[XF_COLLAPSE_CHUNK];
	size_t iq[XF_COLLAPSE_CHUNK], kq[XF_COLLAPSE_CHUNK];
	int i, j, more = 1;
	pair_cursor c = cursor_at(lik, block);
	accum_clear(lik->pr, acc);
	while (more) {
		int nq = 0;
		/* the scaling level's sums pair by pair (its order: the same bits) */
		while (nq < XF_COLLAPSE_CHUNK && (more = cursor_next(&c, &i, &j))) {
			double a[3];
			double g1 = xf_pair_diffusion(f, i, j, a);
			if (g1 < XF_G1_FLOOR) {
				g1 = XF_G1_FLOOR;
				a[0] = a[1] = a[2] = 0.0;
			}
			double g1sq = g1 * g1;
			size_t idx = xf_packed_index(n, (size_t)i, (size_t)j), k = c.k - 1;
			for (int p = p0; p < p1; p++) {
				double res = pass_data(lik, p, idx, k) -
					     (lik->offset[p] + lik->contrast[p] * g1sq);
				chi2 += res * res;
				acc->bc[p] += g1sq * res;
				acc->bo[p] += res;
			}
			for (int m = 0; m < 3; m++) {
				t4a[m] += g1sq * g1sq * a[m];
				t2a[m] += g1sq * a[m];
				ga[m][nq] = g1sq * a[m];
			}
			gq[nq] = g1sq;
			iq[nq] = idx;
			kq[nq] = k;
			t4 += g1sq * g1sq;
			t2 += g1sq;
			count += 1.0;
			nq++;
		}
		/* Σ res·g1²·a per angle over the chunk, in registers (the residuals again) */
		for (int p = p0; p < p1; p++) {
			double r0 = 0.0, r1 = 0.0, r2 = 0.0;
			const double off = lik->offset[p], con = lik->contrast[p];
			for (int q = 0; q < nq; q++) {
				double res = pass_data(lik, p, iq[q], kq[q]) - (off + con * gq[q]);
				r0 += res * ga[0][q];
				r1 += res * ga[1][q];
				r2 += res * ga[2][q];
			}
			double *pr = acc->pr + (size_t)p * XF_N_PHYS;
			pr[0] += r0;
			pr[1] += r1;
			pr[2] += r2;
		}
	}
	acc->chi2 = chi2;
	acc->g1sq = t2 * n_phi;
	for (int p = p0; p < p1; p++) {
		for (int m = 0; m < 3; m++) {
			acc->pr[(size_t)p * XF_N_PHYS + m] *= 2.0;
			acc->pc[(size_t)p * XF_N_PHYS + m] = 2.0 * t4a[m];
			acc->po[(size_t)p * XF_N_PHYS + m] = 2.0 * t2a[m];
		}
		acc->scc[p] = t4;
		acc->sco[p] = t2;
		acc->soo[p] = count;
	}
}
