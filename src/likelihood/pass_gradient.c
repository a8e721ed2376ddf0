/* pass_gradient.c — the block kernels of the lighter passes: χ² with b = Σ ∂c2·res (the
 * log density and its gradient for NUTS), and χ² alone (the self-check of a combined
 * posterior). The same per-pair structure as pass_hessian.c — the diffusion factor and
 * the shear integral once per frame pair, the angles inside — without the JᵀJ sums. */
#include <math.h>

#include "likelihood/pass_internal.h"

static void laminar_gradient(xf_lik *lik, int block)
{
	const xf_frames *f = &lik->frames;
	xf_accum *acc = &lik->slots[block];
	const size_t n = (size_t)lik->ds->n_frames;
	const int n_phi = lik->pr->n_phi, shared = lik->pr->scaling->shared_row;
	double chi2 = 0.0, g1sum = 0.0, g2r = 0.0, r = 0.0;
	int i, j;
	pair_cursor c = cursor_at(lik, block);
	accum_clear(lik->pr, acc);
	while (cursor_next(&c, &i, &j)) {
		double a[3], bq[3];
		double g1d = xf_pair_diffusion(f, i, j, a);
		double ig = xf_pair_integral(f->cg, f->dcg, i, j, bq);
		size_t idx = xf_packed_index(n, (size_t)i, (size_t)j), k = c.k - 1;
		double s_ig = f->s * ig, ur = 0.0, vr = 0.0, zr = 0.0;
		for (int p = 0; p < n_phi; p++) {
			point_terms t =
				laminar_point(lik, p, g1d, s_ig, ig, pass_data(lik, p, idx, k));
			chi2 += t.res * t.res;
			g1sum += t.g1sq;
			ur += t.u * t.res;
			vr += t.v * t.res;
			zr += t.z * t.res;
			if (shared) {
				g2r += t.g1sq * t.res;
				r += t.res;
			} else {
				acc->bc[p] += t.g1sq * t.res;
				acc->bo[p] += t.res;
			}
		}
		for (int m = 0; m < 3; m++) {
			acc->bp[m] += ur * a[m];
			acc->bp[3 + m] += vr * bq[m];
		}
		acc->bp[6] += zr;
	}
	acc->chi2 = chi2;
	acc->g1sq = g1sum;
	if (shared) {
		acc->bc[0] = g2r;
		acc->bo[0] = r;
	}
}

/* Static: g1 is the same for every angle; Σ_p u_p·res_p = 2g1²·Σ_p con_p·res_p. */
static void static_gradient(xf_lik *lik, int block)
{
	const xf_frames *f = &lik->frames;
	xf_accum *acc = &lik->slots[block];
	const size_t n = (size_t)lik->ds->n_frames;
	const int n_phi = lik->pr->n_phi;
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
		for (int p = 0; p < n_phi; p++) {
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
	if (lik->pr->mode == XF_MODE_LAMINAR)
		laminar_gradient(lik, block);
	else
		static_gradient(lik, block);
}

/* χ² and Σ g1² only. */
void xf_pass_block_value(xf_lik *lik, int block)
{
	const xf_frames *f = &lik->frames;
	xf_accum *acc = &lik->slots[block];
	const size_t n = (size_t)lik->ds->n_frames;
	const int n_phi = lik->pr->n_phi, laminar = lik->pr->mode == XF_MODE_LAMINAR;
	const xf_shear_model shear_model = lik->pr->grid.shear_model;
	double chi2 = 0.0, g1sum = 0.0;
	int i, j;
	pair_cursor c = cursor_at(lik, block);
	accum_clear(lik->pr, acc);
	while (cursor_next(&c, &i, &j)) {
		double a[3], bq[3], dfactor;
		double g1d = xf_pair_diffusion(f, i, j, a);
		double s_ig = laminar ? f->s * xf_pair_integral(f->cg, f->dcg, i, j, bq) : 0.0;
		size_t idx = xf_packed_index(n, (size_t)i, (size_t)j), k = c.k - 1;
		for (int p = 0; p < n_phi; p++) {
			double g1 = laminar ? g1d * xf_shear_factor(s_ig * lik->cos_a[p],
								    shear_model, &dfactor)
					    : g1d;
			if (g1 < XF_G1_FLOOR)
				g1 = XF_G1_FLOOR;
			double g1sq = g1 * g1;
			double res = pass_data(lik, p, idx, k) -
				     (lik->offset[p] + lik->contrast[p] * g1sq);
			chi2 += res * res;
			g1sum += g1sq;
		}
	}
	acc->chi2 = chi2;
	acc->g1sq = g1sum;
}
