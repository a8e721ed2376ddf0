/* cmc_internal.h — the pieces of consensus Monte Carlo (cmc.md, docs/cmc.md): shard
 * membership, the shard store, per-shard diagnostics and summaries, the combination and
 * the self-check. The driver (run.c) puts them together; include/xpcsfit/cmc.h is what
 * the rest of the program sees. */
#ifndef XPCSFIT_CMC_INTERNAL_H
#define XPCSFIT_CMC_INTERNAL_H

#include <stdint.h>
#include "cmc/sampler.h"
#include "cmc/target.h"
#include "xpcsfit/cmc.h"

/* K from num_shards, or ceil(n_points / max_points_per_shard); 1 (the exact posterior)
 * when both are auto; at most one pair each. */
long xf_cmc_shard_count(const xf_cmc_options *o, size_t n_points, size_t n_pairs);
/* The K shards' pair sets (shards.c). 0, or −1 on allocation failure (the sets made so
 * far are left for the caller to free). */
int xf_cmc_shards_make(xf_pairset *shards, long k, int n_frames, uint64_t seed);
/* The Fisher-Yates swap partner of position p, in 0..p, from a uniform u: ⌊u·(p+1)⌋,
 * clamped, because xf_rng_uniform returns exactly 1.0 when its top 53 bits are all ones
 * ((2⁵³ − 1 + ½)·2⁻⁵³ rounds up), which would index p + 1 — past the array at the first
 * step. The clamp changes no membership but that one (issue 22, item 8). */
size_t xf_cmc_shuffle_index(double u, size_t p);

/* What a shard's sampling produced: every chain's draws in the sampler's space (the
 * sampled parameters, then log σ) and the sampler's per-draw statistics. This is what
 * the shard store keeps; everything else is recomputed from it. */
typedef struct xf_shard_draws {
	int n_chains, n_draws, dim;
	double *draws;			     /* [chains][draws][dim] */
	double *logp, *energy;		     /* [chains][draws] */
	double *accept_stat;		     /* [chains][draws] */
	int *depth, *n_leapfrog, *divergent; /* [chains][draws] */
	double *step_size;		     /* [chains] */
	long grad_evals;		     /* warmup included, every chain */
	int warmup_divergent;
	double sigma_scale; /* the σ prior's scale */
	double noise;	    /* 1.4826·MAD of the shard's NLSQ residuals */
	int failed;	    /* 1: a chain's start was not finite after the retries */
	char reason[160];
	/* [chains] XF_CHAIN_*: a shard is whole only when no chain is pending (an
	 * interrupted chain leaves zeros in its slots, adr/0038) */
	unsigned char *chain_status;
} xf_shard_draws;

enum { XF_CHAIN_PENDING = 0, XF_CHAIN_DONE = 1, XF_CHAIN_FAILED = 2 };

int xf_shard_draws_alloc(xf_shard_draws *s, int n_chains, int n_draws, int dim);
void xf_shard_draws_free(xf_shard_draws *s);

/* The shard store (store.c): <dir>/shard_<id>.bin, written atomically. A file is reused
 * by --resume only when its input hash matches and every chain in it completed or failed
 * with a reason; saving a shard with a pending chain is refused (XF_ERR_DATA). */
int xf_store_save(const char *dir, long id, uint64_t hash, const xf_shard_draws *s, xf_error *err);
/* The file image of a shard (malloc'd, *len bytes) and writing one (atomically): what an
 * MPI rank sends to rank 0, which saves it (run_dist.c). */
int xf_store_image(long id, uint64_t hash, const xf_shard_draws *s, unsigned char **image,
		   size_t *len, xf_error *err);
int xf_store_save_image(const char *dir, long id, const unsigned char *image, size_t len,
			xf_error *err);
/* 1 when a matching file was loaded, 0 when there is none (or it does not match), −1 on
 * a read error (err set). */
int xf_store_load(const char *dir, long id, uint64_t hash, xf_shard_draws *s, xf_error *err);
/* 1 when a file image is a whole shard with this hash (hash 0: any), else 0: what rank 0
 * checks before it saves an image another rank sent (run_dist.c). */
int xf_store_image_whole(const unsigned char *image, size_t len, uint64_t hash);

/* Sample shard `id` alone of the K that req, o and ds define (its chains on n_threads
 * devices, the shard saved in shard_dir) and summarise it into *out (free with
 * xf_cmc_shard_free): what one shard costs, for benchmarks and extrapolation, without
 * sampling the other K − 1. *n_shards receives K. Returns 0 or an error code. */
void xf_cmc_shard_free(xf_cmc_shard *s);
int xf_cmc_sample_one(const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
		      const xf_estimate *nlsq, int n_threads, const char *shard_dir, long id,
		      long *n_shards, xf_cmc_shard *out, xf_error *err);

/* Pareto-smoothed importance sampling (psis.c). log_w holds n log importance ratios;
 * they are replaced by smoothed, normalised log-weights (Σ exp = 1). Returns k̂, the
 * shape of the generalized Pareto fitted to the largest ratios (≤ 0.7: the weighted
 * estimates can be trusted), INFINITY when it cannot be fitted. */
double xf_psis(double *log_w, int n);
/* The generalized Pareto fit (Zhang & Stephens 2009, PSIS's prior on k) to x[n] > 0
 * sorted ascending: shape k and scale σ. 0, or −1 when it cannot be fitted. */
int xf_gpd_fit(const double *x, int n, double *k, double *sigma);

/* A value and its index, sorted by value with ties in index order (deterministic):
 * PSIS's tail and the sensitivity's weighted CDFs (qsort comparator). */
typedef struct xf_ranked {
	double v;
	int i;
} xf_ranked;
int xf_cmp_ranked(const void *a, const void *b);

/* FNV-1a over bytes, chained (the input hash of a shard). */
uint64_t xf_hash_bytes(uint64_t h, const void *data, size_t n);
#define XF_HASH_SEED 1469598103934665603ULL

/* Diagnostics and summaries of one shard from its draws (summary.c): R̂, ESS, E-BFMI,
 * divergences, depth saturation, physical means and sds, u-space moments, and the mean
 * and covariance of θ in u-space that the combination uses. */
int xf_shard_summarize(const xf_problem *pr, const int *theta, int n_theta, const xf_shard_draws *s,
		       int max_depth, xf_cmc_shard *out);

/* The NLSQ warm start (warm.c): NLSQ's values in pr's layout into x_nlsq (the point of
 * the noise estimate), and the chains' start x: the same, except that a value on a
 * bound is moved 1 % of the width inside. */
void xf_cmc_warm_start(const xf_problem *pr, const xf_estimate *nlsq, double *x_nlsq, double *x);
/* The slope e·A of each power law (A = D0, γ̇0; e = α, β) at NLSQ's optimum and its sd
 * from NLSQ's covariance, linearised there (plaw_coords.h's xf_plaw_slope, one per law:
 * out [2]); known 0 where NLSQ has no finite value or covariance of A and e. */
void xf_cmc_nlsq_slopes(const xf_problem *pr, const xf_estimate *nlsq, int *known, double *q,
			double *sd_q);
/* The initial metric in the sampler's space: NLSQ's covariance through du/dx at the
 * start, divided by the shard's share of the data; log σ last with variance 1/(2n).
 * d = n_theta + 1; cov is d×d (dense) or d. Where NLSQ's covariance is a ridge that the
 * metric's cap would strip of its correlations, the Laplace approximation with the priors
 * instead (laplace.c), its data precision from jtj (n_full², JᵀJ/σ̂² at x_start over
 * every point; NULL: NLSQ's covariance); then 1 is returned, else 0. */
int xf_cmc_initial_metric(const xf_problem *pr, const xf_estimate *nlsq, const int *theta,
			  int n_theta, const double *x_start, double share, size_t n_points,
			  int dense, const double *jtj, double *cov);
/* The Laplace approximation's covariance of θ in u at x_start (laplace.c, adr/0084): the
 * data's precision — jtj (n_full², JᵀJ/σ̂² in x at x_start) carried to u, or where jtj is
 * NULL the pseudo-inverse of cov_u (NLSQ's covariance in u, divided by share) — plus the
 * priors' and the transform's curvature, both at weight share, inverted; out and cov_u
 * have leading dimension ld, only their n_theta × n_theta block is read or written. 0 or
 * −1. */
int xf_cmc_laplace_metric(const xf_problem *pr, const int *theta, int n_theta,
			  const double *x_start, double share, const double *jtj,
			  const double *cov_u, int ld, double *out);
/* use_nlsq_informed_priors: μ = NLSQ value, s = clip(width_factor × NLSQ uncertainty,
 * 1 %…50 % of the bound width). Returns how many priors changed. */
int xf_cmc_informed_priors(xf_problem *pr, const xf_estimate *nlsq, double width_factor);

/* The combination (combine.c). A loader brings one shard's draws back (from the
 * store); the combined posterior is in the sampler's space of θ. */
typedef int (*xf_shard_loader)(void *ctx, long id, xf_shard_draws *s, xf_error *err);

typedef struct xf_combination {
	int n_theta, n_draws;	  /* G combined draws */
	double *u_draws;	  /* [G][n_theta] */
	double *gp_mean, *gp_cov; /* the Gaussian product of the kept shards */
} xf_combination;

void xf_combination_free(xf_combination *c);

/* A combination rule's record (combine.c, adr/0114): what xf_cmc_combine and the
 * posterior's diagnostics ask of a rule instead of which one it is. */
typedef struct xf_combine_job xf_combine_job;
typedef struct xf_combine_record {
	xf_combination_rule rule;
	int screens_outliers; /* shards whose mean is an outlier are left out first */
	/* 1: the combined draws are the shards' own draws, reweighted (consensus), so the
	 * shards' chains carry over; 0: independent draws of a Gaussian */
	int from_shard_draws;
	int (*draw)(const xf_combine_job *job, xf_error *err);
} xf_combine_record;

/* The record of a rule; NULL for a number that is none. */
const xf_combine_record *xf_combine_record_of(xf_combination_rule rule);

/* Combine the kept shards (shards[s].kept) with `method` (cmc.md "Combination":
 * consensus_mc, robust_consensus_mc, gaussian_product, homodyne_marginal): the robust
 * rule first excludes shards whose mean is an outlier (modified z-score > 3.5 in any
 * parameter), a shard whose covariance cannot be inverted is excluded; both with their
 * reason. Shards are always taken in id order. Returns 0, or an error code (err set) —
 * XF_ERR_DATA when no shard is left. */
int xf_cmc_combine(xf_combination_rule rule, int n_theta, xf_cmc_shard *shards, long n_shards,
		   xf_shard_loader load, void *load_ctx, uint64_t seed, xf_combination *out,
		   xf_error *err);

#endif
