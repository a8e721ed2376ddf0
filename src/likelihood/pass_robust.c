/* pass_robust.c — the block kernel of every pass level under a robust loss (adr/0033):
 * each point's cost is s²ρ(z) instead of r², its Jᵀr and JᵀJ terms are weighted by
 * ρ'(z) (IRLS; the gradient stays exact). The weights differ from point to point, so the
 * algebraic shortcuts of the least-squares kernels (static: g1 shared by the angles; a
 * pair's sums over angles) do not apply: this kernel forms each point's Jacobian row
 * [u·a, v·b, z] and adds it, in the same fixed pair and angle order, to the same block
 * sums the assembly in pass.c reads. The least-squares kernels stay untouched (linear
 * gives the same bits as before). */
#include <math.h>

#include "likelihood/loss.h"
#include "likelihood/pass_internal.h"

/* One point's Jacobian-row terms: u, v, z times the pair's a and b. */
typedef struct robust_point {
	double jp[XF_N_PHYS]; /* physical part of the row */
	double g1sq, res;
} robust_point;

static robust_point point_at(const xf_lik *lik, int p, int laminar, double s, double g1d,
			     double s_ig, double ig, const double a[3], const double b[3],
			     double data)
{
	robust_point rp = { { 0 }, 0.0, 0.0 };
	if (laminar) {
		point_terms t = laminar_point(lik, p, s, g1d, s_ig, ig, data);
		for (int m = 0; m < 3; m++) {
			rp.jp[m] = t.u * a[m];
			rp.jp[3 + m] = t.v * b[m];
		}
		rp.jp[6] = t.z;
		rp.g1sq = t.g1sq;
		rp.res = t.res;
		return rp;
	}
	/* static: u = 2·con·g1², a zeroed below the floor by the caller */
	double g1 = g1d < XF_G1_FLOOR ? XF_G1_FLOOR : g1d;
	rp.g1sq = g1 * g1;
	double u = 2.0 * lik->contrast[p] * rp.g1sq;
	for (int m = 0; m < 3; m++)
		rp.jp[m] = u * a[m];
	rp.res = data - (lik->offset[p] + lik->contrast[p] * rp.g1sq);
	return rp;
}

static void add_point(xf_accum *acc, xf_pass_level level, int slot, int n_phys,
		      const robust_point *rp, const xf_loss_point *w)
{
	acc->chi2 += w->cost;
	acc->g1sq += rp->g1sq;
	if (level == XF_PASS_VALUE)
		return;
	double wr = w->w_grad * rp->res;
	for (int m = 0; m < n_phys; m++)
		acc->bp[m] += rp->jp[m] * wr;
	acc->bc[slot] += rp->g1sq * wr;
	acc->bo[slot] += wr;
	if (level != XF_PASS_HESSIAN)
		return;
	double wh = w->w_hess;
	for (int m = 0; m < n_phys; m++) {
		double wj = wh * rp->jp[m];
		for (int l = m; l < n_phys; l++)
			acc->hpp[m * XF_N_PHYS + l] += wj * rp->jp[l];
		acc->pc[(size_t)slot * XF_N_PHYS + m] += wj * rp->g1sq;
		acc->po[(size_t)slot * XF_N_PHYS + m] += wj;
	}
	acc->scc[slot] += wh * rp->g1sq * rp->g1sq;
	acc->sco[slot] += wh * rp->g1sq;
	acc->soo[slot] += wh;
}

void xf_pass_block_robust(xf_lik *lik, int block)
{
	int p0, p1;
	const xf_frames fr = block_frames(lik, block, &p0, &p1), *f = &fr;
	xf_accum *acc = &lik->slots[block];
	const size_t n = (size_t)lik->ds->n_frames;
	const int n_phys = lik->pr->n_phys;
	const int laminar = lik->pr->model->shear;
	const int shared = lik->pr->scaling->shared_row;
	const double s = lik->pr->sigma * lik->f_scale;
	int i, j;
	pair_cursor c = cursor_at(lik, block);
	accum_clear(lik->pr, acc);
	while (cursor_next(&c, &i, &j)) {
		double a[3], b[3] = { 0, 0, 0 }, ig = 0.0;
		double g1d = xf_pair_diffusion(f, i, j, a);
		if (laminar)
			ig = xf_pair_integral(f->cg, f->dcg, i, j, b);
		else if (g1d < XF_G1_FLOOR)
			a[0] = a[1] = a[2] = 0.0; /* hard floor: no derivative */
		size_t idx = xf_packed_index(n, (size_t)i, (size_t)j), k = c.k - 1;
		for (int p = p0; p < p1; p++) {
			robust_point rp = point_at(lik, p, laminar, f->s, g1d, f->s * ig, ig, a, b,
						   pass_data(lik, p, idx, k));
			xf_loss_point w = xf_loss_point_of(lik->loss, s, rp.res);
			add_point(acc, lik->level, shared ? p0 : p, n_phys, &rp, &w);
		}
	}
}
