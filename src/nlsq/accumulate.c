/* accumulate.c — one pass over the fitted points: χ², JᵀJ and Jᵀr block by block.
 *
 * Why this shape: the diffusion factor and the shear integral depend on the frame pair
 * only, so they are computed once per pair and the angles are looped inside. A point's
 * Jacobian row is j = [u·a (3), v·b (3), z, g1²·B_c[a], B_o[a]] with a = ∂log g1_D and
 * b = ∂I^γ per pair and u, v, z scalars per point, so the physical block of JᵀJ needs
 * only six scalar sums over the angles of a pair (Σu², Σuv, ...) followed by one small
 * outer product per pair, and the scaling blocks need a few sums per angle. Nothing of
 * size n × p is ever built. Static mode has no shear code in its loop. */
#include <math.h>
#include <string.h>

#include "nlsq/problem.h"

/* Shared inputs of one pass. */
typedef struct pass_ctx {
	xf_problem *pr;
} pass_ctx;

static void accum_clear(const xf_problem *pr, xf_accum *a)
{
	size_t n = (size_t)pr->n_phi;
	a->chi2 = 0.0;
	memset(a->hpp, 0, sizeof a->hpp);
	memset(a->bp, 0, sizeof a->bp);
	memset(a->pc, 0, sizeof(double) * n * XF_N_PHYS);
	memset(a->po, 0, sizeof(double) * n * XF_N_PHYS);
	memset(a->scc, 0, sizeof(double) * n * 5); /* scc, sco, soo, bc, bo are contiguous */
}

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

/* Per-point scalars of the laminar Jacobian row: u (diffusion), v (shear rate), z (φ0),
 * with g1² and the residual. */
typedef struct point_terms {
	double u, v, z, g1sq, res;
} point_terms;

static inline point_terms laminar_point(const xf_problem *pr, int p, double g1d, double s_ig,
					double ig, double data)
{
	double dfactor;
	double factor = xf_shear_factor(s_ig * pr->cos_a[p], pr->grid.shear_model, &dfactor);
	double g1 = g1d * factor;
	double con = pr->contrast[p];
	point_terms t = { 0.0, 0.0, 0.0, 0.0, 0.0 };
	if (g1 < XF_G1_FLOOR) {
		g1 = XF_G1_FLOOR; /* hard floor: no derivative */
	} else {
		double two_cg1 = 2.0 * con * g1;
		double shear = two_cg1 * g1d * dfactor * pr->frames.s;
		t.u = two_cg1 * g1;
		t.v = shear * pr->cos_a[p];
		t.z = -shear * pr->sin_a[p] * XF_DEG2RAD * ig;
	}
	t.g1sq = g1 * g1;
	t.res = data - (pr->offset[p] + con * t.g1sq);
	return t;
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
	size_t idx;
} pair_info;

/* Per-angle scaling sums (individual, fourier): every angle keeps its own. The angles
 * form the outer loop so that an angle's sums stay in registers across the pairs of the
 * block and its data are read in storage order; the per-pair sums over angles go to a
 * small array instead. */
static void laminar_block_per_angle(const xf_problem *pr, xf_accum *acc, const pair_info *pi,
				    int n_pairs, pair_sums *sums)
{
	for (int k = 0; k < n_pairs; k++)
		sums[k] = (pair_sums){ 0 };
	for (int p = 0; p < pr->n_phi; p++) {
		const double *data = pr->ds->c2[p];
		double pc[XF_N_PHYS] = { 0 }, po[XF_N_PHYS] = { 0 };
		double chi2 = 0, scc = 0, sco = 0, soo = 0, bc = 0, bo = 0;
		for (int k = 0; k < n_pairs; k++) {
			const pair_info *q = &pi[k];
			point_terms t = laminar_point(pr, p, q->g1d, pr->frames.s * q->ig, q->ig,
						      data[q->idx]);
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
static void laminar_pair_shared(const xf_problem *pr, xf_accum *acc, size_t idx, double g1d,
				const double a[3], double ig, const double b[3], pair_sums *s)
{
	double s_ig = pr->frames.s * ig;
	double ug = 0, u = 0, vg = 0, v = 0, zg = 0, z = 0, g4 = 0, g2 = 0, g2r = 0, r = 0;
	for (int p = 0; p < pr->n_phi; p++) {
		point_terms t = laminar_point(pr, p, g1d, s_ig, ig, pr->ds->c2[p][idx]);
		acc->chi2 += t.res * t.res;
		add_point_sums(s, &t);
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
		acc->pc[m] += a[m] * ug;
		acc->po[m] += a[m] * u;
		acc->pc[3 + m] += b[m] * vg;
		acc->po[3 + m] += b[m] * v;
	}
	acc->pc[6] += zg;
	acc->po[6] += z;
	acc->scc[0] += g4;
	acc->sco[0] += g2;
	acc->soo[0] += pr->n_phi;
	acc->bc[0] += g2r;
	acc->bo[0] += r;
}

static void laminar_block(xf_problem *pr, int block)
{
	const xf_frames *f = &pr->frames;
	xf_accum *acc = &pr->slots[block];
	const size_t n = (size_t)pr->ds->n_frames;
	const int shared = pr->scaling == XF_SCALING_AUTO || pr->scaling == XF_SCALING_CONSTANT;
	int i = pr->block_i[block], j = pr->block_j[block];
	/* ~0.4 MB on the worker's stack: the pairs of one block */
	pair_info pi[XF_PAIRS_PER_BLOCK];
	pair_sums sums[XF_PAIRS_PER_BLOCK];
	int n_pairs = 0;
	accum_clear(pr, acc);
	for (; n_pairs < XF_PAIRS_PER_BLOCK && i < (int)n - 1; n_pairs++) {
		pair_info *q = &pi[n_pairs];
		q->g1d = xf_pair_diffusion(f, i, j, q->a);
		q->ig = xf_pair_integral(f->cg, f->dcg, i, j, q->b);
		q->idx = xf_packed_index(n, (size_t)i, (size_t)j);
		if (shared) {
			pair_sums s = { 0 };
			laminar_pair_shared(pr, acc, q->idx, q->g1d, q->a, q->ig, q->b, &s);
			add_pair_outer(acc, q->a, q->b, &s);
		}
		if (++j == (int)n) {
			i++;
			j = i + 1;
		}
	}
	if (!shared)
		laminar_block_per_angle(pr, acc, pi, n_pairs, sums);
}

/* Static: g1 is the same for every angle, so the per-angle scaling sums are the pair
 * sums times the angle's contrast; only the residual is per angle. */
static void static_block(xf_problem *pr, int block)
{
	const xf_dataset *ds = pr->ds;
	const xf_frames *f = &pr->frames;
	xf_accum *acc = &pr->slots[block];
	const int n_phi = pr->n_phi;
	const size_t n = (size_t)ds->n_frames;
	int i = pr->block_i[block], j = pr->block_j[block];
	double sum_con2 = 0.0;
	for (int p = 0; p < n_phi; p++)
		sum_con2 += pr->contrast[p] * pr->contrast[p];
	double t4a[3] = { 0, 0, 0 }, t2a[3] = { 0, 0, 0 }, t4 = 0.0, t2 = 0.0, count = 0.0;
	accum_clear(pr, acc);
	for (int k = 0; k < XF_PAIRS_PER_BLOCK && i < (int)n - 1; k++) {
		double a[3];
		double g1 = xf_pair_diffusion(f, i, j, a);
		if (g1 < XF_G1_FLOOR) {
			g1 = XF_G1_FLOOR;
			a[0] = a[1] = a[2] = 0.0;
		}
		double g1sq = g1 * g1;
		size_t idx = xf_packed_index(n, (size_t)i, (size_t)j);
		double con_res = 0.0;
		for (int p = 0; p < n_phi; p++) {
			double res = ds->c2[p][idx] - (pr->offset[p] + pr->contrast[p] * g1sq);
			acc->chi2 += res * res;
			con_res += pr->contrast[p] * res;
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
		if (++j == (int)n) {
			i++;
			j = i + 1;
		}
	}
	for (int p = 0; p < n_phi; p++) {
		double two_con = 2.0 * pr->contrast[p];
		for (int m = 0; m < 3; m++) {
			acc->pc[(size_t)p * XF_N_PHYS + m] = two_con * t4a[m];
			acc->po[(size_t)p * XF_N_PHYS + m] = two_con * t2a[m];
		}
		acc->scc[p] = t4;
		acc->sco[p] = t2;
		acc->soo[p] = count;
	}
}

static void run_block(void *ctx, int block)
{
	pass_ctx *c = ctx;
	if (c->pr->grid.mode == XF_MODE_LAMINAR)
		laminar_block(c->pr, block);
	else
		static_block(c->pr, block);
}

void xf_problem_scaling(const xf_problem *pr, const double *x, double *contrast, double *offset)
{
	const double *cc = x + pr->n_phys, *oc = x + pr->n_phys + pr->n_basis;
	for (int p = 0; p < pr->n_phi; p++) {
		double c = pr->base_contrast[p], o = pr->base_offset[p];
		const double *row = pr->basis + (size_t)p * pr->n_basis;
		for (int k = 0; k < pr->n_basis; k++) {
			c += row[k] * cc[k];
			o += row[k] * oc[k];
		}
		contrast[p] = c;
		offset[p] = o;
	}
}

/* Reduce the block slots in block order into the first slot's sums. */
static void reduce_slots(xf_problem *pr, xf_accum *total)
{
	size_t n_phi = (size_t)pr->n_phi;
	accum_clear(pr, total);
	for (int blk = 0; blk < pr->n_blocks; blk++) {
		const xf_accum *a = &pr->slots[blk];
		total->chi2 += a->chi2;
		for (int m = 0; m < XF_N_PHYS * XF_N_PHYS; m++)
			total->hpp[m] += a->hpp[m];
		for (int m = 0; m < XF_N_PHYS; m++)
			total->bp[m] += a->bp[m];
		for (size_t m = 0; m < n_phi * XF_N_PHYS; m++) {
			total->pc[m] += a->pc[m];
			total->po[m] += a->po[m];
		}
		for (size_t m = 0; m < n_phi * 5; m++)
			total->scc[m] += a->scc[m];
	}
}

/* Assemble the full JᵀJ and b over [physical, contrast coefs, offset coefs]. */
static void assemble(const xf_problem *pr, const xf_accum *t, double *jtj, double *b)
{
	int np = pr->n_phys, nb = pr->n_basis, nf = pr->n_full;
	double w = 1.0 / (pr->sigma * pr->sigma);
	memset(jtj, 0, sizeof(double) * (size_t)nf * nf);
	for (int m = 0; m < np; m++) {
		for (int l = m; l < np; l++)
			jtj[m * nf + l] = t->hpp[m * XF_N_PHYS + l] * w;
		b[m] = t->bp[m] * w;
	}
	for (int k = 0; k < nb; k++) {
		int ck = np + k, ok = np + nb + k;
		double bc = 0.0, bo = 0.0;
		for (int p = 0; p < pr->n_phi; p++) {
			double bpk = pr->basis[(size_t)p * nb + k];
			bc += bpk * t->bc[p];
			bo += bpk * t->bo[p];
			for (int m = 0; m < np; m++) {
				jtj[m * nf + ck] += bpk * t->pc[(size_t)p * XF_N_PHYS + m] * w;
				jtj[m * nf + ok] += bpk * t->po[(size_t)p * XF_N_PHYS + m] * w;
			}
			for (int l = 0; l < nb; l++) {
				double bb = bpk * pr->basis[(size_t)p * nb + l] * w;
				if (l >= k) {
					jtj[ck * nf + np + l] += bb * t->scc[p];
					jtj[ok * nf + np + nb + l] += bb * t->soo[p];
				}
				jtj[ck * nf + np + nb + l] += bb * t->sco[p];
			}
		}
		b[ck] = bc * w;
		b[ok] = bo * w;
	}
	/* mirror the upper triangle */
	for (int m = 0; m < nf; m++)
		for (int l = m + 1; l < nf; l++)
			jtj[l * nf + m] = jtj[m * nf + l];
}

int xf_problem_eval(xf_problem *pr, const double *x, double *chi2, double *jtj, double *b)
{
	xf_frames_compute(&pr->frames, &pr->grid, x);
	xf_problem_scaling(pr, x, pr->contrast, pr->offset);
	if (pr->grid.mode == XF_MODE_LAMINAR)
		for (int p = 0; p < pr->n_phi; p++) {
			double angle = (x[XF_P_PHI0] - pr->ds->phi_deg[p]) * XF_DEG2RAD;
			pr->cos_a[p] = cos(angle);
			pr->sin_a[p] = sin(angle);
		}
	pass_ctx ctx = { pr };
	xf_pool_run(pr->pool, pr->n_blocks, run_block, &ctx);
	/* the slot after the last block holds the total */
	xf_accum *total = &pr->slots[pr->n_blocks];
	reduce_slots(pr, total);
	*chi2 = total->chi2 / (pr->sigma * pr->sigma);
	if (!isfinite(*chi2))
		return -1;
	if (jtj)
		assemble(pr, total, jtj, b);
	return 0;
}
