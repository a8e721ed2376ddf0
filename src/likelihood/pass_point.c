/* pass_point.c — the block kernel of a model given by its point function (adr/0116):
 * every level from g1 and ∂g1/∂θ point by point, in the sums the written-out kernels
 * fill (pass_internal.h's xf_accum), so pass.c assembles χ², Jᵀr and JᵀJ the same way.
 * Slower than those kernels (one call per point, nothing shared between angles or
 * pairs): what a new model runs on before it earns a kernel of its own. Sums in pair
 * order, angles inside: a block's sums do not depend on the thread count. Under a robust
 * loss each point's cost is s²ρ(z) and its gradient and Gauss–Newton terms are weighted
 * by ρ'(z), as pass_robust.c does for the written-out models (adr/0126); the least-
 * squares sums are the same bits as without the weights (a weight of 1 is exact). */
#include "likelihood/loss.h"
#include "likelihood/pass_internal.h"

void xf_pass_block_point(xf_lik *lik, int block)
{
	const xf_problem *pr = lik->pr;
	const xf_model_record *model = pr->model;
	const int n_phys = pr->n_phys, level = lik->level;
	const int physical =
		level == XF_PASS_GRADIENT || level == XF_PASS_HESSIAN || level == XF_PASS_COLLAPSE;
	const int scaling_sums =
		level == XF_PASS_HESSIAN || level == XF_PASS_SCALING || level == XF_PASS_COLLAPSE;
	const size_t n = (size_t)lik->ds->n_frames;
	const int robust = lik->loss != XF_LOSS_LINEAR;
	const double s = pr->sigma * lik->f_scale;
	int p0, p1, i, j;
	(void)block_frames(lik, block, &p0, &p1);
	xf_model_grid grid = pr->grid;
	grid.q = pr->ring_q[block / lik->blocks_per_ring]; /* the block's ring (adr/0064) */
	xf_accum *acc = &lik->slots[block];
	pair_cursor c = cursor_at(lik, block);
	accum_clear(pr, acc);
	while (cursor_next(&c, &i, &j)) {
		size_t idx = xf_packed_index(n, (size_t)i, (size_t)j), k = c.k - 1;
		for (int p = p0; p < p1; p++) {
			double dg1[XF_N_PHYS] = { 0 }, d2[XF_N_PHYS];
			double g1 = model->g1(&grid, lik->x, lik->ds->phi_deg[p], i, j,
					      physical ? dg1 : NULL);
			if (g1 < XF_G1_FLOOR) { /* the kernels' hard floor: no derivative */
				g1 = XF_G1_FLOOR;
				for (int m = 0; m < n_phys; m++)
					dg1[m] = 0.0;
			}
			const double g1sq = g1 * g1, con = lik->contrast[p];
			const double res =
				pass_data(lik, p, idx, k) - (lik->offset[p] + con * g1sq);
			/* the point's share: its cost and the weights of its r and JᵀJ terms */
			double cost = res * res, w_grad = 1.0, w_hess = 1.0;
			if (robust) {
				xf_loss_point w = xf_loss_point_of(lik->loss, s, res);
				cost = w.cost;
				w_grad = w.w_grad;
				w_hess = w.w_hess;
			}
			acc->chi2 += cost;
			acc->g1sq += g1sq;
			if (level == XF_PASS_VALUE)
				continue;
			const double wr = w_grad * res;
			acc->bc[p] += g1sq * wr;
			acc->bo[p] += wr;
			if (scaling_sums) {
				acc->scc[p] += w_hess * g1sq * g1sq;
				acc->sco[p] += w_hess * g1sq;
				acc->soo[p] += w_hess;
			}
			if (!physical)
				continue;
			for (int m = 0; m < n_phys; m++)
				d2[m] = 2.0 * g1 * dg1[m]; /* ∂(g1²)/∂θ_m */
			double *pc = acc->pc + (size_t)p * XF_N_PHYS,
			       *po = acc->po + (size_t)p * XF_N_PHYS;
			if (level == XF_PASS_COLLAPSE) { /* no contrast: xf_lik_eval_collapse */
				double *prr = acc->pr + (size_t)p * XF_N_PHYS;
				for (int m = 0; m < n_phys; m++) {
					prr[m] += res * d2[m];
					pc[m] += g1sq * d2[m];
					po[m] += d2[m];
				}
				continue;
			}
			/* the point's Jacobian row over the physical parameters: con·∂(g1²) */
			for (int m = 0; m < n_phys; m++) {
				double jm = con * d2[m];
				acc->bp[m] += jm * wr;
				if (level != XF_PASS_HESSIAN)
					continue;
				double wj = w_hess * jm;
				for (int l = 0; l < n_phys; l++)
					acc->hpp[m * XF_N_PHYS + l] += wj * con * d2[l];
				pc[m] += wj * g1sq;
				po[m] += wj;
			}
		}
	}
}
