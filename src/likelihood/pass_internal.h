/* pass_internal.h — the evaluator's state and the block kernels of the likelihood pass
 * (likelihood.h): pass.c drives a pass, pass_hessian.c and pass_gradient.c hold the
 * kernels of one block for the three things a caller can ask for. */
#ifndef XPCSFIT_LIKELIHOOD_PASS_INTERNAL_H
#define XPCSFIT_LIKELIHOOD_PASS_INTERNAL_H

#include <stddef.h>
#include <string.h>

#include "model/kernel.h"
#include "xpcsfit/likelihood.h"

/* What one pass computes. */
typedef enum xf_pass_level {
	XF_PASS_VALUE = 0, /* χ² and Σ g1² */
	XF_PASS_GRADIENT,  /* and b = Σ ∂c2·res */
	XF_PASS_HESSIAN,   /* and JᵀJ */
	/* χ² with the scaling sums only (per angle Σ g1⁴, Σ g1², Σ 1, Σ g1²·res, Σ res):
	 * the scaling block of JᵀJ and Jᵀr, no physical derivative (xf_lik_eval_scaling) */
	XF_PASS_SCALING,
	/* the scaling level's sums and, per angle, Σ ∂(g1²)·res, Σ g1²·∂(g1²) and Σ ∂(g1²)
	 * over the physical parameters (xf_lik_eval_collapse) */
	XF_PASS_COLLAPSE,
} xf_pass_level;

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
	/* [n_phi][7] the collapse level's Σ ∂(g1²)·res, with pc then Σ g1²·∂(g1²) and po
	 * Σ ∂(g1²) (no contrast: xf_lik_eval_collapse) */
	double *pr;
} xf_accum;

struct xf_lik {
	const xf_problem *pr;
	const xf_dataset *ds;
	const xf_pairset *ps;
	xf_pool *pool;
	size_t n_points; /* n_pairs · n_phi */
	/* blocks run ring-major (adr/0064): block b evaluates pair block b % blocks_per_ring
	 * at the slots of ring b / blocks_per_ring; n_blocks = n_rings · blocks_per_ring */
	int n_blocks, blocks_per_ring;
	int *block_i, *block_j; /* implicit pair sets: first pair of each block */
	/* evaluation workspace */
	xf_frames frames;
	double *contrast, *offset; /* [n_phi] at the current x */
	double *cos_a, *sin_a;	   /* [n_phi] cos/sin((φ0 − φ)·π/180) */
	/* laminar: [n_phi][n_frames] sin and cos of each slot's shear phase at each frame
	 * (xf_pass_prepare; pass_laminar_kernel.h takes a pair's from them, adr/0089) */
	double *phase_sin, *phase_cos;
	xf_accum *slots; /* [n_blocks + 1], the last holds the total */
	double *slot_store;
	xf_pass_level level; /* what the running pass computes */
	/* distributed passes (pass_dist.c, xf_lik_distribute): this rank's blocks, every
	 * rank's block count, the exchange buffers; dist_ranks 0: not distributed */
	int dist_ranks, dist_first, dist_count;
	int *dist_blocks;  /* [dist_ranks] blocks of each rank */
	int *dist_counts;  /* [dist_ranks] doubles each rank sends in the running pass */
	double *dist_send; /* [dist_count · slot doubles] */
	double *dist_recv; /* [n_blocks · slot doubles] */
	/* explicit pair sets (a subsample, a shard): their data gathered angle by angle in
	 * the set's pair order, [n_phi][n_pairs], so a pass reads each angle's values in
	 * order (and a run of pairs by one vector load) instead of jumping through the
	 * triangles (NULL for the set of every pair) */
	double *gathered;
	/* the point of the running pass (xf_pass_prepare): a model given by its point
	 * function reads it (pass_point.c) */
	const double *x;
	/* the model's block kernel of every linear-loss level, for this CPU (pass_kernels.c) */
	void (*model_block)(struct xf_lik *lik, int block);
	/* robust loss of the passes (xf_lik_set_loss); linear runs the kernels above */
	xf_loss loss;
	double f_scale;
	/* GPU passes (pass_gpu.c, xf_lik_use_gpu): NULL runs the blocks above */
	struct xf_gpu_ctx *gpu;
	/* values at several points in one sweep (pass_batch.c): one evaluator per point of
	 * a batch, sharing this one's data and blocks, with its own workspace and slots */
	struct xf_lik *batch;
	int n_batch;
};

/* The pairs of one block, in order: (i, j) from the explicit list, or walked row by row
 * from the block's first pair. */
typedef struct pair_cursor {
	const xf_pairset *ps;
	size_t k, end; /* explicit: list position and end */
	int i, j, n;   /* implicit: current pair, frames */
} pair_cursor;

static inline pair_cursor cursor_at(const xf_lik *lik, int block)
{
	pair_cursor c = { lik->ps, 0, 0, 0, 0, lik->ps->n_frames };
	block %= lik->blocks_per_ring; /* the pairs of a block are the same in every ring */
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

/* The view of one block: the frame state with the w and s of its ring's q (the
 * cumulative integrals are shared, only these two scalars differ between rings) and its
 * ring's slots [*p0, *p1). For one ring: lik->frames as it is, every slot. */
static inline xf_frames block_frames(const xf_lik *lik, int block, int *p0, int *p1)
{
	const xf_problem *pr = lik->pr;
	int ring = block / lik->blocks_per_ring;
	xf_frames f = lik->frames;
	*p0 = pr->ring_first[ring];
	*p1 = pr->ring_first[ring + 1];
	if (pr->n_rings > 1)
		xf_frames_set_q(&f, &pr->grid, pr->ring_q[ring]);
	return f;
}

/* c2 of angle p at the pair with packed index idx, the k-th pair of the set (a band holds
 * the pairs of the rank's blocks, adr/0027). */
static inline double pass_data(const xf_lik *lik, int p, size_t idx, size_t k)
{
	return lik->gathered ? lik->gathered[(size_t)p * lik->ps->n_pairs + k]
			     : xf_dataset_c2(lik->ds, p, idx);
}

/* One laminar point: g1, its residual and the per-point scalars of its Jacobian row (u
 * for the diffusion parameters, v for the shear rate, z for φ0); the pair-shared factors
 * multiply them in the callers (pass_hessian.c, pass_gradient.c). */
typedef struct point_terms {
	double u, v, z, g1sq, res;
} point_terms;

static inline point_terms laminar_point(const xf_lik *lik, int p, double s, double g1d, double s_ig,
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
		double shear = two_cg1 * g1d * dfactor * s;
		t.u = two_cg1 * g1;
		t.v = shear * lik->cos_a[p];
		t.z = -shear * lik->sin_a[p] * XF_DEG2RAD * ig;
	}
	t.g1sq = g1 * g1;
	t.res = data - (lik->offset[p] + con * t.g1sq);
	return t;
}

static inline void accum_clear(const xf_problem *pr, xf_accum *a)
{
	size_t n = (size_t)pr->n_phi;
	a->chi2 = 0.0;
	a->g1sq = 0.0;
	memset(a->hpp, 0, sizeof a->hpp);
	memset(a->bp, 0, sizeof a->bp);
	memset(a->pc, 0, sizeof(double) * n * XF_N_PHYS);
	memset(a->po, 0, sizeof(double) * n * XF_N_PHYS);
	memset(a->scc, 0, sizeof(double) * n * 5); /* scc, sco, soo, bc, bo are contiguous */
	memset(a->pr, 0, sizeof(double) * n * XF_N_PHYS);
}

/* The pieces of a pass that a batch of points (pass_batch.c) runs per point: the
 * per-x workspace (frame integrals, per-angle scaling, angle cosines), one block into its
 * slot, the slots reduced in block order into total; and the slots' memory. */
void xf_pass_prepare(xf_lik *lik, const double *x);
/* The laminar phase tables of lik (phase_sin, phase_cos) for n_frames frames; 0, or -1
 * out of memory. */
int xf_pass_phase_alloc(xf_lik *lik);
void xf_pass_run_block(void *ctx, int block);
void xf_pass_reduce_slots(xf_lik *lik, xf_accum *total);
/* The scaling pass's h_ss [(2·n_basis)²] and b_s from the reduced sums (xf_lik_eval_scaling). */
void xf_pass_scaling_out(const xf_problem *pr, const xf_accum *total, double *h_ss, double *b_s);
/* Add slot a into total (every field). */
void xf_accum_add(const xf_problem *pr, xf_accum *total, const xf_accum *a);
int xf_pass_alloc_slots(xf_lik *lik);
void xf_pass_batch_free(xf_lik *lik);
/* The static kernels of the scaling and collapse levels (pass_gradient.c). */
void xf_pass_block_scaling(xf_lik *lik, int block);
void xf_pass_block_collapse(xf_lik *lik, int block);

/* Doubles of one block's slot in the exchange at a level (pass_dist.c). */
size_t xf_pass_slot_doubles(const xf_lik *lik, xf_pass_level level);
/* A distributed pass: this rank's blocks on its pool, the slots of every rank exchanged
 * into lik->slots (pass_dist.c). 0, or −1 when the exchange failed. */
int xf_pass_dist_run(xf_lik *lik, xf_block_task run_block);
void xf_pass_dist_free(xf_lik *lik);

/* The block kernels: fill slot `block` of lik with the sums of its pairs. */
void xf_pass_block_hessian(xf_lik *lik, int block);
void xf_pass_block_gradient(xf_lik *lik, int block);
void xf_pass_block_value(xf_lik *lik, int block);
/* The laminar kernel of every level (pass_laminar_kernel.h), one build per instruction
 * set, and the one for this CPU (pass_laminar.c). */
void xf_pass_laminar_generic(xf_lik *lik, int block);
void xf_pass_laminar_avx2(xf_lik *lik, int block);
void xf_pass_laminar_avx512(xf_lik *lik, int block);
typedef void (*xf_pass_block_fn)(xf_lik *lik, int block);
xf_pass_block_fn xf_pass_laminar_select(void);
/* The model's block kernel of every linear-loss level on this CPU (pass_kernels.c): its
 * written-out kernel, else the point kernel for a model given by its point function,
 * else NULL. */
xf_pass_block_fn xf_pass_kernel_of(xf_mode mode);
/* Every level of a model given by its point function (pass_point.c, adr/0116). */
void xf_pass_block_point(xf_lik *lik, int block);
/* The pass on the GPU into total (pass_gpu.c): 0, or −1 when it did not run there (the
 * GPU is then dropped, with one line on stderr, and the CPU takes this and every later
 * pass: the same sums up to the order of addition). */
int xf_pass_gpu_run(xf_lik *lik, xf_accum *total);
void xf_pass_gpu_free(xf_lik *lik);
/* Every level under a robust loss (pass_robust.c). */
void xf_pass_block_robust(xf_lik *lik, int block);

#endif
