/* likelihood.h — the fitted problem and the one pass over its points that NLSQ, CMC, the
 * MPI driver and the CUDA backend share.
 *
 * xf_problem is the resolved, typed description of a fit, built from a problem request
 * (request.h) and the data: the mode, the model grid, the parameter layout (physical
 * parameters, then the per-angle scaling coefficients), bounds, priors, fixed parameters
 * and starts. The likelihood never sees the raw config (adr/0043).
 *
 * xf_lik evaluates the model over a set of frame pairs (every pair brings all its
 * angles): all fitted pairs, a deterministic subsample, or a CMC shard. The pairs are cut
 * into fixed blocks of XF_PAIRS_PER_BLOCK; each block's partial sums land in their own
 * slot and the slots are added in block order, so the result is bitwise the same for
 * any number of virtual devices (spec/nlsq.md "Parallelism and determinism"). */
#ifndef XPCSFIT_LIKELIHOOD_H
#define XPCSFIT_LIKELIHOOD_H

#include <stddef.h>
#include <stdint.h>
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/model.h"
#include "xpcsfit/request.h"
#include "xpcsfit/vdev.h"

/* How per-angle contrast and offset are parameterised (spec/nlsq.md): every mode is a
 * basis, contrast_a = base_a + Σ_k basis[a][k]·coef_k (the same for offset). One record
 * per mode instead of a switch on the mode in every function. */
typedef struct xf_scaling_type {
	xf_scaling_mode mode;
	const char *name;
	/* 1 when every angle has the same basis row: sums over the angles of a pair are
	 * all the assembly needs (auto, constant) */
	int shared_row;
	/* coefficients per scaling quantity */
	int (*n_coefs)(int n_phi, int fourier_order);
	/* basis row of angle a (φ in radians) */
	void (*basis_row)(int a, double phi_rad, int n_coefs, double *row);
	/* name ("contrast_003", ...), bounds, start and prior (mean, sd) of coefficient k
	 * of a quantity ("contrast" or "offset") from its scalar bound and the per-angle
	 * starts */
	void (*coef)(const char *quantity, int k, const xf_bound *bound, const double *angle_start,
		     int n_phi, char *name, size_t name_size, double *lower, double *upper,
		     double *start, double *prior_mu, double *prior_sigma);
	/* 1 when the per-angle values are held at their starts (constant) */
	int held_at_start;
} xf_scaling_type;

const xf_scaling_type *xf_scaling_type_of(xf_scaling_mode mode);

typedef struct xf_problem {
	const xf_dataset *ds;
	xf_model_grid grid;
	xf_mode mode;
	const xf_model_record *model; /* what the model has (params.h) */
	int n_phys;		      /* 3 static, 7 laminar_flow */
	int n_phi;
	const xf_scaling_type *scaling; /* the per-angle mode actually used */
	int n_basis;			/* coefficients per scaling quantity */
	double *basis;			/* [n_phi][n_basis] */
	double *base_contrast;		/* [n_phi] fixed part of the per-angle contrast */
	double *base_offset;		/* [n_phi] */
	double *quantile_contrast;	/* [n_phi] quantile estimates (nlsq.md) */
	xf_bound angle_bounds[2];	/* bounds of the per-angle contrast and offset */
	double *quantile_offset;
	int n_full;		    /* n_phys + 2·n_basis */
	char **names;		    /* [n_full] */
	double *lower, *upper;	    /* [n_full] */
	double *prior_mu;	    /* [n_full] */
	double *prior_sigma;	    /* [n_full] */
	double *scale;		    /* [n_full] bound width, for tolerances */
	int *fixed;		    /* [n_full] fixed by the request */
	double *start;		    /* [n_full] the request's start (bounds middle where none) */
	int value_given[XF_N_PHYS]; /* 1 where the request gives the start value */
	double sigma;		    /* σ (1 when not given) */
	int has_sigma;
	size_t n_points; /* fitted points of the whole data */
	/* q per angle slot (adr/0064): the slots of a joint fit are the angles of every ring
	 * side by side, ring by ring; one ring (today's fits) has every slot at grid.q */
	int n_rings;	 /* ≥ 1 */
	int *ring_first; /* [n_rings + 1] first slot of each ring, then n_phi */
	double *ring_q;	 /* [n_rings] Å⁻¹; ring_q[0] == grid.q */
	double *slot_q;	 /* [n_phi] Å⁻¹, q of the ring of each slot */
	int *slot_ring;	 /* [n_phi] ring of each slot */
} xf_problem;

/* Build the problem of req on ds: the per-angle mode used (nlsq.md: static uses
 * individual unless req->anti_degeneracy, auto shares from the threshold on, fourier
 * needs 2K+1 angles), quantile starts, bounds, starts. Errors: XF_ERR_CONFIG for a bad
 * per_angle_scaling count, XF_ERR_DATA otherwise. */
int xf_problem_build(xf_problem *pr, const xf_request *req, const xf_dataset *ds, xf_error *err);

/* The posterior's (CMC's) request from NLSQ's, the one home of the "follow NLSQ" rule:
 * the per-angle mode is cmc_mode, or, when cmc_mode is XF_SCALING_FOLLOW_NLSQ, the mode
 * NLSQ used (nlsq_used) with fourier turned into individual; that mode applies as asked
 * (static too; auto at any number of angles: no anti-degeneracy or threshold fallback); σ is
 * sampled, so has_sigma is off. Everything else is nlsq_req's (src/likelihood/request.c). */
void xf_request_for_posterior(const xf_request *nlsq_req, xf_scaling_mode cmc_mode,
			      xf_scaling_mode nlsq_used, xf_request *out);
void xf_problem_free(xf_problem *pr);

/* Per-angle contrast and offset at x. */
void xf_problem_scaling(const xf_problem *pr, const double *x, double *contrast, double *offset);

/* Quantile estimates of per-angle contrast and offset (nlsq.md). */
void xf_quantile_scaling(const xf_dataset *ds, const xf_bound *contrast_bound,
			 const xf_bound *offset_bound, double *contrast, double *offset);

/* A set of frame pairs (i, j), 1 ≤ i < j ≤ N−1; each pair brings all its angles. */
typedef struct xf_pairset {
	int n_frames;
	size_t n_pairs;
	uint32_t *pair_i, *pair_j; /* NULL: every fitted pair, row by row */
} xf_pairset;

int xf_pairset_all(xf_pairset *ps, int n_frames);
/* About n_target pairs drawn without replacement, each pair kept with the same
 * probability from the (seed, stream) random stream keyed by the pair's index: a pure
 * function of its arguments. Sorted row by row. Every pair when n_target ≥ all. */
int xf_pairset_sample(xf_pairset *ps, int n_frames, size_t n_target, uint64_t seed,
		      uint32_t stream);
void xf_pairset_free(xf_pairset *ps);

/* Residuals data − model at x of every point of a pair set, pair by pair with the angles
 * inside ([n_pairs][n_phi]); x in the problem's layout. Returns 0, −1 on allocation
 * failure. (For robust noise scales: CMC's σ prior.) */
int xf_problem_residuals(const xf_problem *pr, const xf_pairset *ps, const double *x, double *res);

/* Where χ² stops being finite at x (adr/0018): a parameter value, the model at a point,
 * a stored value, or a residual whose square over σ² overflows. i, j are the window's
 * frame indices (0-based, 1 ≤ i < j ≤ N−1); the stored row is ds->first_frame + i. */
typedef enum xf_non_finite_kind {
	XF_NON_FINITE_NONE = 0,	 /* every point finite (the sum overflows, or none) */
	XF_NON_FINITE_PARAMETER, /* x[param] itself */
	XF_NON_FINITE_MODEL,	 /* the model c2 at (angle, i, j) */
	XF_NON_FINITE_DATA,	 /* the stored c2 at (angle, i, j) */
	XF_NON_FINITE_RESIDUAL,	 /* (data − model)²/σ² at (angle, i, j), or σ² underflows */
} xf_non_finite_kind;

typedef struct xf_non_finite {
	xf_non_finite_kind kind;
	int param;	    /* XF_NON_FINITE_PARAMETER: index into x */
	int angle, i, j;    /* the point, −1 when none */
	double data, model; /* c2 stored and modelled there */
	double chi2;	    /* kind NONE: χ² summed point by point (finite: χ² is fine) */
} xf_non_finite;

/* The first non-finite term of χ² at x over every fitted point, in pass order. Returns 0
 * (where filled, kind NONE when nothing is found), −1 on allocation failure. */
int xf_problem_find_non_finite(const xf_problem *pr, const double *x, xf_non_finite *where);

/* What a pass returns. */
typedef struct xf_lik_out {
	double chi2; /* Σ r², r = (data − model)/σ */
	double *jtj; /* n_full × n_full, row-major (NULL: not computed) */
	double *b;   /* n_full: −Jᵀr = Σ ∂c2·(data − model)/σ² (NULL: not computed) */
	double mean_g1sq; /* mean g1² over the points: ~0 when the model is flat (decayed) */
} xf_lik_out;

/* Evaluator of a problem over a pair set on a virtual-device pool (opaque). */
typedef struct xf_lik xf_lik;

/* The pair set and the pool must outlive the evaluator. pool NULL: the blocks run in the
 * calling thread, one after another (same sums, same bits). */
xf_lik *xf_lik_create(const xf_problem *pr, const xf_pairset *ps, xf_pool *pool, xf_error *err);
void xf_lik_destroy(xf_lik *lik);
/* Opt in to distributed passes (xpcsfit/dist.h) when a hook with more than one rank is
 * installed: each rank computes its contiguous range of blocks, the block slots are
 * exchanged and every rank reduces all of them in block order, so every rank gets the
 * bits of one process. Every rank must then make the same passes in the same order.
 * No-op for one process, and for fewer blocks than ranks (each rank computes them all).
 * 0, or −1 on allocation failure. */
int xf_lik_distribute(xf_lik *lik);
/* Robust loss of the following passes (adr/0033; NLSQ only, CMC's likelihood stays
 * Gaussian): χ² becomes Σ s²ρ((r/s)²) with s = σ·f_scale, b = Σ ρ'·∂c2·r/σ² (the exact
 * gradient of half that cost), JᵀJ weighted by ρ' (IRLS). Linear (the default
 * of a new evaluator) keeps the least-squares kernels bit for bit. */
void xf_lik_set_loss(xf_lik *lik, xf_loss loss, double f_scale);
/* Run the following passes of lik on up to max_devices GPUs (docs/gpu.md): its pairs and
 * data are uploaded now; each pass sends the per-frame integrals and per-angle scalars
 * and fetches one total of the sums. The sums are those of the CPU pass added in another
 * fixed order (agreement at the 1e-12 relative level, not bit for bit); fp32 evaluates
 * the points in float (the measured option). Least squares in one process only. If a
 * pass fails on a device, it and every later pass run on the CPU (one line on stderr).
 * 0, or the error code (XF_ERR_CONFIG: no device, a CPU-only build, no memory there). */
int xf_lik_use_gpu(xf_lik *lik, int fp32, int max_devices, xf_error *err);
/* Points of the evaluator's pair set: n_pairs · n_phi. */
size_t xf_lik_points(const xf_lik *lik);

/* One pass at x (n_full values): χ² always; b too when out->b is not NULL; JᵀJ and b when
 * out->jtj is not NULL. A pass that computes less is cheaper (NUTS needs χ² and b, a
 * self-check χ² alone). Returns 0, or −1 when χ² is not finite. */
int xf_lik_eval(xf_lik *lik, const double *x, xf_lik_out *out);

/* The scaling pass (xf_lik_eval_scaling, the same bits of χ², h_ss and b_s) with, per
 * angle slot p, angle[p·3·n_phys + r·n_phys + m] for r = 0, 1, 2: Σ res·∂(g1²)/∂x_m,
 * Σ g1²·∂(g1²)/∂x_m and Σ ∂(g1²)/∂x_m over the angle's points (over σ²): everything the
 * posterior with the scaling integrated out needs for its gradient at any scaling, from
 * one pass (cmc/collapse.c). Gaussian loss, on the CPU. 0, −1 when χ² is not finite, 1
 * where it does not apply (a robust loss, an evaluator on a GPU: xf_lik_eval_scaling and
 * a full pass with xf_lik_angle_sums give the same quantities). */
int xf_lik_eval_collapse(xf_lik *lik, const double *x, double *chi2, double *h_ss, double *b_s,
			 double *angle);

/* The per-angle sums of the last full pass (xf_lik_eval with out->jtj), before the
 * basis and the angle's contrast: gg[p·n_phys + m] = Σ g1²·∂(g1²)/∂x_m and dg[...] =
 * Σ ∂(g1²)/∂x_m over the points of angle slot p, over σ² (the physical × scaling blocks
 * of JᵀJ are Σ_p basis[p][k]·contrast_p·gg_p and ·dg_p). The posterior with the scaling
 * integrated out reads them (cmc/collapse.c). 0, or −1 where an angle's contrast is 0. */
int xf_lik_angle_sums(const xf_lik *lik, double *gg, double *dg);

/* χ² with the scaling block of JᵀJ, h_ss [(2·n_basis)²], and of b, b_s [2·n_basis], over
 * [contrast coefficients, offset coefficients] at x: the same values as xf_lik_eval's
 * block of them, without the physical derivatives (about a values pass: the posterior's
 * conditional of the scaling, cmc/cond_scaling.c). Gaussian loss only; on a GPU
 * evaluator (xf_lik_use_gpu) a JᵀJ pass there gives them. 0, or −1 when χ² is not
 * finite (or a robust loss is set). */
int xf_lik_eval_scaling(xf_lik *lik, const double *x, double *chi2, double *h_ss, double *b_s);

/* χ² alone at n points x[n][n_full], in one sweep over the data: every block of pairs is
 * evaluated at each point before the next block, so its data are read from memory once
 * for up to XF_LIK_BATCH points (the posterior's importance sampling, many points per
 * pass). chi2[i] is bit for bit what xf_lik_eval gives at x[i] (its own slots, the same
 * block order), +∞ where that is not finite. Distributed or GPU evaluators take the points
 * one by one. 0, or −1 out of memory. */
#define XF_LIK_BATCH 16
int xf_lik_eval_values(xf_lik *lik, int n, const double *x, double *chi2);

/* The scaling pass (xf_lik_eval_scaling) at n points x[n][n_full] in one sweep over the
 * data, as xf_lik_eval_values: chi2[i], h_ss[i·(2·n_basis)²…] and b_s[i·2·n_basis…] bit
 * for bit what xf_lik_eval_scaling gives at x[i]; chi2[i] = +∞ where that fails (h_ss and
 * b_s then unset). Gaussian loss only (−1 otherwise); a GPU evaluator takes the points one
 * by one. 0, or −1 out of memory. */
int xf_lik_eval_scalings(xf_lik *lik, int n, const double *x, double *chi2, double *h_ss,
			 double *b_s);

#endif
