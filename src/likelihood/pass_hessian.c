/* pass_hessian.c — the block kernel of a full pass: χ², JᵀJ and Jᵀr (NLSQ).
 *
 * Why this shape: the diffusion factor and the shear integral depend on the frame pair
 * only, so they are computed once per pair and the angles are looped inside. A point's
 * Jacobian row is j = [u·a (3), v·b (3), z, g1²·B_c[a], B_o[a]] with a = ∂log g1_D and
 * b = ∂I^γ per pair and u, v, z scalars per point, so the physical block of JᵀJ needs
 * only six scalar sums over the angles of a pair (Σu², Σuv, ...) followed by one small
 * outer product per pair, and the scaling blocks need a few sums per angle. Nothing of
 * size n × p is ever built. Static mode has no shear code in its loop. */
#include <math.h>

#include "likelihood/pass_internal.h"

/* Pair-level physical sums of one pair, added to the block's JᵀJ and Jᵀr. */
typedef struct pair_sums {
	double uu, uv, uz, vv, vz, zz, ur, vr, zr;
} pair_sums;

static void add_pair_outer(xf_accum *acc, const double a[3], const double b[3], const pair_sums *s)
{
	double *h = acc->hpp;
	for (int m = 0; m < 3; m++) {
		for (int l = 0; l < 3; l++) {
			h[m * XF_N_PHYS + l] += s->uu * a[m] * a[l];
			h[m * XF_N_PHYS + 3 + l] += s->uv * a[m] * b[l];
			h[(3 + m) * XF_N_PHYS + 3 + l] += s->vv * b[m] * b[l];
		}
		h[m * XF_N_PHYS + 6] += s->uz * a[m];
		h[(3 + m) * XF_N_PHYS + 6] += s->vz * b[m];
		acc->bp[m] += s->ur * a[m];
		acc->bp[3 + m] += s->vr * b[m];
	}
	h[6 * XF_N_PHYS + 6] += s->zz;
	acc->bp[6] += s->zr;
}

static inline void add_point_sums(pair_sums *s, const point_terms *t)
{
	s->uu += t->u * t->u;
	s->uv += t->u * t->v;
	s->uz += t->u * t->z;
	s->vv += t->v * t->v;
	s->vz += t->v * t->z;
	s->zz += t->z * t->z;
	s->ur += t->u * t->res;
	s->vr += t->v * t->res;
	s->zr += t->z * t->res;
}

/* Per-pair quantities of a block, computed once and reused by every angle. */
typedef struct pair_info {
	double g1d, ig;
	double a[3], b[3];
	size_t idx, pos; /* packed index, place in the pair set */
} pair_info;

/* Per-angle scaling sums (individual, fourier): every angle keeps its own. The angles
 * form the outer loop so that an angle's sums stay in registers across the pairs of the
 * block and its data are read in storage order; the per-pair sums over angles go to a
 * small array instead. */
static void laminar_block_per_angle(const xf_lik *lik, xf_accum *acc, const pair_info *pi,
				    int n_pairs, pair_sums *sums)
{
	const double s = lik->frames.s;
	for (int k = 0; k < n_pairs; k++)
		sums[k] = (pair_sums){ 0 };
	for (int p = 0; p < lik->pr->n_phi; p++) {

		double pc[XF_N_PHYS] = { 0 }, po[XF_N_PHYS] = { 0 };
		double chi2 = 0, scc = 0, sco = 0, soo = 0, bc = 0, bo = 0;
		for (int k = 0; k < n_pairs; k++) {
			const pair_info *q = &pi[k];
			point_terms t = laminar_point(lik, p, q->g1d, s * q->ig, q->ig,
						      pass_data(lik, p, q->idx, q->pos));
			chi2 += t.res * t.res;
			add_point_sums(&sums[k], &t);
			double ug = t.u * t.g1sq, vg = t.v * t.g1sq;
			for (int m = 0; m < 3; m++) {
				pc[m] += q->a[m] * ug;
				po[m] += q->a[m] * t.u;
				pc[3 + m] += q->b[m] * vg;
				po[3 + m] += q->b[m] * t.v;
			}
			pc[6] += t.z * t.g1sq;
			po[6] += t.z;
			scc += t.g1sq * t.g1sq;
			sco += t.g1sq;
			soo += 1.0;
			bc += t.g1sq * t.res;
			bo += t.res;
		}
		acc->chi2 += chi2;
		acc->g1sq += sco;
		for (int m = 0; m < XF_N_PHYS; m++) {
			acc->pc[(size_t)p * XF_N_PHYS + m] += pc[m];
			acc->po[(size_t)p * XF_N_PHYS + m] += po[m];
		}
		acc->scc[p] += scc;
		acc->sco[p] += sco;
		acc->soo[p] += soo;
		acc->bc[p] += bc;
		acc->bo[p] += bo;
	}
	for (int k = 0; k < n_pairs; k++)
		add_pair_outer(acc, pi[k].a, pi[k].b, &sums[k]);
}

/* One contrast and offset shared by all angles (auto) or none free (constant): the
 * assembly only needs the sums over angles, so they are formed per pair in registers
 * and land in angle slot 0 (the basis row of every angle is 1). */
static void laminar_pair_shared(const xf_lik *lik, xf_accum *acc, const pair_info *q)
{
	const int n_phi = lik->pr->n_phi;
	double s_ig = lik->frames.s * q->ig;
	double ug = 0, u = 0, vg = 0, v = 0, zg = 0, z = 0, g4 = 0, g2 = 0, g2r = 0, r = 0;
	pair_sums s = { 0 };
	for (int p = 0; p < n_phi; p++) {
		point_terms t = laminar_point(lik, p, q->g1d, s_ig, q->ig,
					      pass_data(lik, p, q->idx, q->pos));
		acc->chi2 += t.res * t.res;
		add_point_sums(&s, &t);
		ug += t.u * t.g1sq;
		u += t.u;
		vg += t.v * t.g1sq;
		v += t.v;
		zg += t.z * t.g1sq;
		z += t.z;
		g4 += t.g1sq * t.g1sq;
		g2 += t.g1sq;
		g2r += t.g1sq * t.res;
		r += t.res;
	}
	for (int m = 0; m < 3; m++) {
		acc->pc[m] += q->a[m] * ug;
		acc->po[m] += q->a[m] * u;
		acc->pc[3 + m] += q->b[m] * vg;
		acc->po[3 + m] += q->b[m] * v;
	}
	acc->pc[6] += zg;
	acc->po[6] += z;
	acc->scc[0] += g4;
	acc->sco[0] += g2;
	acc->g1sq += g2;
	acc->soo[0] += n_phi;
	acc->bc[0] += g2r;
	acc->bo[0] += r;
	add_pair_outer(acc, q->a, q->b, &s);
}

static void laminar_block(xf_lik *lik, int block)
{
	const xf_frames *f = &lik->frames;
	xf_accum *acc = &lik->slots[block];
	const size_t n = (size_t)lik->ds->n_frames;
	const int shared = lik->pr->scaling->shared_row;
	/* ~0.4 MB on the worker's stack: the pairs of one block */
	pair_info pi[XF_PAIRS_PER_BLOCK];
	pair_sums sums[XF_PAIRS_PER_BLOCK];
	int n_pairs = 0, i, j;
	pair_cursor c = cursor_at(lik, block);
	accum_clear(lik->pr, acc);
	for (; cursor_next(&c, &i, &j); n_pairs++) {
		pair_info *q = &pi[n_pairs];
		q->g1d = xf_pair_diffusion(f, i, j, q->a);
		q->ig = xf_pair_integral(f->cg, f->dcg, i, j, q->b);
		q->idx = xf_packed_index(n, (size_t)i, (size_t)j);
		q->pos = c.k - 1;
		if (shared)
			laminar_pair_shared(lik, acc, q);
	}
	if (!shared)
		laminar_block_per_angle(lik, acc, pi, n_pairs, sums);
}

/* Static: g1 is the same for every angle, so the per-angle scaling sums are the pair
 * sums times the angle's contrast; only the residual is per angle. */
static void static_block(xf_lik *lik, int block)
{
	const xf_dataset *ds = lik->ds;
	const xf_frames *f = &lik->frames;
	xf_accum *acc = &lik->slots[block];
	const int n_phi = lik->pr->n_phi;
	const size_t n = (size_t)ds->n_frames;
	double sum_con2 = 0.0;
	for (int p = 0; p < n_phi; p++)
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
		for (int p = 0; p < n_phi; p++) {
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
	for (int p = 0; p < n_phi; p++) {
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
	if (lik->pr->mode == XF_MODE_LAMINAR)
		laminar_block(lik, block);
	else
		static_block(lik, block);
}
