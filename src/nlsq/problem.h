/* problem.h — the NLSQ problem: parameter layout (physical parameters plus per-angle
 * scaling coefficients), the fixed point-blocks and the fused accumulation of χ², JᵀJ and
 * Jᵀr over the packed upper triangle, never materialising the n × p Jacobian. */
#ifndef XPCSFIT_NLSQ_PROBLEM_H
#define XPCSFIT_NLSQ_PROBLEM_H

#include <stddef.h>
#include "model/kernel.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/vdev.h"

/* Pairs per block: fixed, independent of the thread count, so the order of every sum
 * is the same whatever evaluates it (spec/nlsq.md "Parallelism and determinism"). */
#define XF_PAIRS_PER_BLOCK 4096

/* Partial sums of one block; the caller reduces blocks in order. With the per-point
 * Jacobian row j = [u·∂logg1D (3), v·∂I^γ (3), z, g1²·B_c, B_o] the per-angle parts
 * collapse to a few scalars per angle (see accumulate.c). */
typedef struct xf_accum {
	double chi2;			   /* Σ res² (σ = 1) */
	double hpp[XF_N_PHYS * XF_N_PHYS]; /* Σ j_p j_pᵀ, physical block */
	double bp[XF_N_PHYS];		   /* Σ j_p res */
	double *pc;			   /* [n_phi][7] Σ j_p g1² */
	double *po;			   /* [n_phi][7] Σ j_p */
	double *scc, *sco, *soo;	   /* [n_phi] Σ g1⁴, Σ g1², Σ 1 */
	double *bc, *bo;		   /* [n_phi] Σ g1² res, Σ res */
} xf_accum;

typedef struct xf_problem {
	const xf_dataset *ds;
	xf_model_grid grid;
	int n_phys; /* 3 static, 7 laminar_flow */
	int n_phi;
	xf_scaling_mode scaling;   /* mode actually used */
	int n_basis;		   /* coefficients per scaling quantity */
	double *basis;		   /* [n_phi][n_basis] */
	double *base_contrast;	   /* [n_phi] fixed part of the per-angle contrast */
	double *base_offset;	   /* [n_phi] */
	double *quantile_contrast; /* [n_phi] quantile estimates (nlsq.md) */
	double *quantile_offset;
	int n_full;	       /* n_phys + 2·n_basis */
	char **names;	       /* [n_full] */
	double *lower, *upper; /* [n_full] */
	double *scale;	       /* [n_full] typical magnitude, for tolerances */
	int *fixed;	       /* [n_full] fixed by the config */
	double *start;	       /* [n_full] the user's start */
	double sigma;	       /* σ (1 when not given) */
	int has_sigma;
	/* blocks of pairs (i, j), 1 ≤ i < j ≤ N−1, enumerated row by row */
	size_t n_pairs;
	int n_blocks;
	int *block_i, *block_j; /* first pair of each block */
	xf_pool *pool;
	/* evaluation workspace */
	xf_frames frames;
	double *contrast, *offset; /* [n_phi] at the current x */
	double *cos_a, *sin_a;	   /* [n_phi] cos/sin((φ0 − φ)·π/180) */
	xf_accum *slots;	   /* [n_blocks] */
	double *slot_store;
} xf_problem;

int xf_problem_init(xf_problem *pr, const xf_config *cfg, const xf_dataset *ds, int n_threads,
		    xf_error *err);
void xf_problem_free(xf_problem *pr);

/* Per-angle contrast and offset at x. */
void xf_problem_scaling(const xf_problem *pr, const double *x, double *contrast, double *offset);

/* χ², JᵀJ (n_full², row-major) and b = −Jᵀr = Σ ∂c2·res/σ² at x. Returns 0, or −1 when
 * χ² is not finite. */
int xf_problem_eval(xf_problem *pr, const double *x, double *chi2, double *jtj, double *b);

/* Quantile estimates of per-angle contrast and offset (nlsq.md). */
void xf_quantile_scaling(const xf_dataset *ds, const xf_bound *contrast_bound,
			 const xf_bound *offset_bound, double *contrast, double *offset);

#endif
