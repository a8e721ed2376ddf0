/* pass.c — one pass over the points of a pair set: χ², JᵀJ and Jᵀr block by block.
 *
 * Why this shape: the diffusion factor and the shear integral depend on the frame pair
 * only, so they are computed once per pair and the angles are looped inside. A point's
 * Jacobian row is j = [u·a (3), v·b (3), z, g1²·B_c[a], B_o[a]] with a = ∂log g1_D and
 * b = ∂I^γ per pair and u, v, z scalars per point, so the physical block of JᵀJ needs
 * only six scalar sums over the angles of a pair (Σu², Σuv, ...) followed by one small
 * outer product per pair, and the scaling blocks need a few sums per angle. Nothing of
 * size n × p is ever built. Static mode has no shear code in its loop. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/kernel.h"
#include "xpcsfit/likelihood.h"

/* Partial sums of one block; the caller reduces blocks in order. With the per-point
 * Jacobian row j = [u·∂logg1D (3), v·∂I^γ (3), z, g1²·B_c, B_o] the per-angle parts
 * collapse to a few scalars per angle. */
typedef struct xf_accum {
	double chi2;			   /* Σ res² (σ = 1) */
	double g1sq;			   /* Σ g1² */
	double hpp[XF_N_PHYS * XF_N_PHYS]; /* Σ j_p j_pᵀ, physical block */
	double bp[XF_N_PHYS];		   /* Σ j_p res */
	double *pc;			   /* [n_phi][7] Σ j_p g1² */
	double *po;			   /* [n_phi][7] Σ j_p */
	double *scc, *sco, *soo;	   /* [n_phi] Σ g1⁴, Σ g1², Σ 1 */
	double *bc, *bo;		   /* [n_phi] Σ g1² res, Σ res */
} xf_accum;

struct xf_lik {
	const xf_problem *pr;
	const xf_dataset *ds;
	const xf_pairset *ps;
	xf_pool *pool;
	size_t n_points; /* n_pairs · n_phi */
	int n_blocks;
	int *block_i, *block_j; /* implicit pair sets: first pair of each block */
	/* evaluation workspace */
	xf_frames frames;
	double *contrast, *offset; /* [n_phi] at the current x */
	double *cos_a, *sin_a;	   /* [n_phi] cos/sin((φ0 − φ)·π/180) */
	xf_accum *slots;	   /* [n_blocks + 1], the last holds the total */
	double *slot_store;
};

/* The pairs of one block, in order: (i, j) from the explicit list, or walked row by row
 * from the block's first pair. */
typedef struct pair_cursor {
	const xf_pairset *ps;
	size_t k, end; /* explicit: list position and end */
	int i, j, n;   /* implicit: current pair, frames */
} pair_cursor;

static pair_cursor cursor_at(const xf_lik *lik, int block)
{
	pair_cursor c = { lik->ps, 0, 0, 0, 0, lik->ps->n_frames };
	size_t first = (size_t)block * XF_PAIRS_PER_BLOCK;
	c.k = first;
	c.end = first + XF_PAIRS_PER_BLOCK < lik->ps->n_pairs ? first + XF_PAIRS_PER_BLOCK
							      : lik->ps->n_pairs;
	if (!lik->ps->pair_i) {
		c.i = lik->block_i[block];
		c.j = lik->block_j[block];
	}
	return c;
}

/* Next pair of the block into (i, j); 0 when the block is done. */
static inline int cursor_next(pair_cursor *c, int *i, int *j)
{
	if (c->k >= c->end)
		return 0;
	if (c->ps->pair_i) {
		*i = (int)c->ps->pair_i[c->k];
		*j = (int)c->ps->pair_j[c->k];
	} else {
		*i = c->i;
		*j = c->j;
		if (++c->j == c->n) {
			c->i++;
			c->j = c->i + 1;
		}
	}
	c->k++;
	return 1;
}

static void accum_clear(const xf_problem *pr, xf_accum *a)
{
	size_t n = (size_t)pr->n_phi;
	a->chi2 = 0.0;
	a->g1sq = 0.0;
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

static inline point_terms laminar_point(const xf_lik *lik, int p, double g1d, double s_ig,
					double ig, double data)
{
	double dfactor;
	double factor = xf_shear_factor(s_ig * lik->cos_a[p], lik->pr->grid.shear_model, &dfactor);
	double g1 = g1d * factor;
	double con = lik->contrast[p];
	point_terms t = { 0.0, 0.0, 0.0, 0.0, 0.0 };
	if (g1 < XF_G1_FLOOR) {
		g1 = XF_G1_FLOOR; /* hard floor: no derivative */
	} else {
		double two_cg1 = 2.0 * con * g1;
		double shear = two_cg1 * g1d * dfactor * lik->frames.s;
		t.u = two_cg1 * g1;
		t.v = shear * lik->cos_a[p];
		t.z = -shear * lik->sin_a[p] * XF_DEG2RAD * ig;
	}
	t.g1sq = g1 * g1;
	t.res = data - (lik->offset[p] + con * t.g1sq);
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
static void laminar_block_per_angle(const xf_lik *lik, xf_accum *acc, const pair_info *pi,
				    int n_pairs, pair_sums *sums)
{
	const double s = lik->frames.s;
	for (int k = 0; k < n_pairs; k++)
		sums[k] = (pair_sums){ 0 };
	for (int p = 0; p < lik->pr->n_phi; p++) {
		const double *data = lik->ds->c2[p];
		double pc[XF_N_PHYS] = { 0 }, po[XF_N_PHYS] = { 0 };
		double chi2 = 0, scc = 0, sco = 0, soo = 0, bc = 0, bo = 0;
		for (int k = 0; k < n_pairs; k++) {
			const pair_info *q = &pi[k];
			point_terms t =
				laminar_point(lik, p, q->g1d, s * q->ig, q->ig, data[q->idx]);
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
		point_terms t = laminar_point(lik, p, q->g1d, s_ig, q->ig, lik->ds->c2[p][q->idx]);
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
		size_t idx = xf_packed_index(n, (size_t)i, (size_t)j);
		double con_res = 0.0;
		for (int p = 0; p < n_phi; p++) {
			double res = ds->c2[p][idx] - (lik->offset[p] + lik->contrast[p] * g1sq);
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

static void run_block(void *ctx, int block)
{
	xf_lik *lik = ctx;
	if (lik->pr->mode == XF_MODE_LAMINAR)
		laminar_block(lik, block);
	else
		static_block(lik, block);
}

/* Reduce the block slots in block order into the total. */
static void reduce_slots(xf_lik *lik, xf_accum *total)
{
	size_t n_phi = (size_t)lik->pr->n_phi;
	accum_clear(lik->pr, total);
	for (int blk = 0; blk < lik->n_blocks; blk++) {
		const xf_accum *a = &lik->slots[blk];
		total->chi2 += a->chi2;
		total->g1sq += a->g1sq;
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

int xf_lik_eval(xf_lik *lik, const double *x, xf_lik_out *out)
{
	const xf_problem *pr = lik->pr;
	xf_frames_compute(&lik->frames, &pr->grid, x);
	xf_problem_scaling(pr, x, lik->contrast, lik->offset);
	if (pr->mode == XF_MODE_LAMINAR)
		for (int p = 0; p < pr->n_phi; p++) {
			double angle = (x[XF_P_PHI0] - lik->ds->phi_deg[p]) * XF_DEG2RAD;
			lik->cos_a[p] = cos(angle);
			lik->sin_a[p] = sin(angle);
		}
	xf_pool_run(lik->pool, lik->n_blocks, run_block, lik);
	xf_accum *total = &lik->slots[lik->n_blocks];
	reduce_slots(lik, total);
	out->chi2 = total->chi2 / (pr->sigma * pr->sigma);
	out->mean_g1sq = lik->n_points ? total->g1sq / (double)lik->n_points : 0.0;
	if (!isfinite(out->chi2))
		return -1;
	if (out->jtj)
		assemble(pr, total, out->jtj, out->b);
	return 0;
}

/* First pair of each block of an implicit (all pairs) set, walking the rows. */
static int make_blocks(xf_lik *lik)
{
	size_t n = (size_t)lik->ps->n_frames;
	lik->n_blocks = (int)((lik->ps->n_pairs + XF_PAIRS_PER_BLOCK - 1) / XF_PAIRS_PER_BLOCK);
	if (lik->ps->pair_i)
		return 0;
	lik->block_i = malloc(sizeof(int) * (size_t)(lik->n_blocks + 1));
	lik->block_j = malloc(sizeof(int) * (size_t)(lik->n_blocks + 1));
	if (!lik->block_i || !lik->block_j)
		return -1;
	size_t pair = 0;
	int blk = 0;
	for (size_t i = 1; i + 1 < n && blk < lik->n_blocks; i++) {
		size_t row = n - 1 - i; /* pairs (i, i+1..n−1) */
		while (blk < lik->n_blocks && (size_t)blk * XF_PAIRS_PER_BLOCK < pair + row) {
			size_t offset = (size_t)blk * XF_PAIRS_PER_BLOCK - pair;
			lik->block_i[blk] = (int)i;
			lik->block_j[blk] = (int)(i + 1 + offset);
			blk++;
		}
		pair += row;
	}
	return 0;
}

static int alloc_slots(xf_lik *lik)
{
	size_t n_phi = (size_t)lik->pr->n_phi;
	size_t per_slot = n_phi * (2 * XF_N_PHYS + 5);
	size_t n_slots = (size_t)lik->n_blocks + 1; /* + the total */
	lik->slots = calloc(n_slots, sizeof(xf_accum));
	lik->slot_store = malloc(sizeof(double) * per_slot * n_slots);
	if (!lik->slots || !lik->slot_store)
		return -1;
	for (size_t s = 0; s < n_slots; s++) {
		double *p = lik->slot_store + s * per_slot;
		xf_accum *a = &lik->slots[s];
		a->pc = p;
		a->po = p + n_phi * XF_N_PHYS;
		a->scc = p + n_phi * 2 * XF_N_PHYS; /* scc, sco, soo, bc, bo are contiguous */
		a->sco = a->scc + n_phi;
		a->soo = a->sco + n_phi;
		a->bc = a->soo + n_phi;
		a->bo = a->bc + n_phi;
	}
	return 0;
}

xf_lik *xf_lik_create(const xf_problem *pr, const xf_pairset *ps, xf_pool *pool, xf_error *err)
{
	if (ps->n_pairs == 0 || ps->n_frames != pr->ds->n_frames) {
		xf_fail(err, XF_EXIT_DATA, "no frame pairs to evaluate (%zu pairs of %d frames)",
			ps->n_pairs, ps->n_frames);
		return NULL;
	}
	xf_lik *lik = calloc(1, sizeof *lik);
	if (!lik) {
		xf_fail(err, XF_EXIT_DATA, "out of memory setting up the likelihood");
		return NULL;
	}
	size_t na = (size_t)pr->n_phi;
	lik->pr = pr;
	lik->ds = pr->ds;
	lik->ps = ps;
	lik->pool = pool;
	lik->n_points = ps->n_pairs * na;
	lik->contrast = malloc(sizeof(double) * na);
	lik->offset = malloc(sizeof(double) * na);
	lik->cos_a = malloc(sizeof(double) * na);
	lik->sin_a = malloc(sizeof(double) * na);
	if (!lik->contrast || !lik->offset || !lik->cos_a || !lik->sin_a || make_blocks(lik) ||
	    alloc_slots(lik) ||
	    xf_frames_alloc(&lik->frames, pr->ds->n_frames, pr->mode == XF_MODE_LAMINAR)) {
		xf_lik_destroy(lik);
		xf_fail(err, XF_EXIT_DATA,
			"out of memory setting up the likelihood (%d angles, %zu pairs)", pr->n_phi,
			ps->n_pairs);
		return NULL;
	}
	return lik;
}

void xf_lik_destroy(xf_lik *lik)
{
	if (!lik)
		return;
	free(lik->contrast);
	free(lik->offset);
	free(lik->cos_a);
	free(lik->sin_a);
	free(lik->block_i);
	free(lik->block_j);
	free(lik->slots);
	free(lik->slot_store);
	xf_frames_free(&lik->frames);
	free(lik);
}

size_t xf_lik_points(const xf_lik *lik)
{
	return lik->n_points;
}
