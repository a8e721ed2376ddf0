/* target.h — the posterior of one shard in the sampler's unconstrained space (cmc.md
 * "Model per shard"): every bounded parameter x = lo + (hi − lo)·sigmoid(u), the shard's
 * noise σ = exp(u_σ) as the last coordinate. Log target of shard s =
 *   (1/K)·Σ_k [log TN(x_k; μ_k, s_k) + log |dx_k/du_k|]      (priors tempered)
 *   + log HalfNormal(σ; scale) + u_σ                          (σ: shard-local, untempered)
 *   − n·log σ − χ²_s/(2σ²) − (n/2)·log 2π                     (Gaussian likelihood)
 * with χ²_s and its gradient from one likelihood pass over the shard's points. */
#ifndef XPCSFIT_CMC_TARGET_H
#define XPCSFIT_CMC_TARGET_H

#include <stddef.h>
#include "xpcsfit/likelihood.h"

typedef struct xf_cmc_target {
	const xf_problem *pr;  /* the CMC layout (σ = 1 in the pass) */
	xf_lik *lik;	       /* the shard's pass */
	size_t n_points;       /* points of the shard */
	int n_theta;	       /* sampled parameters of pr (the free ones) */
	const int *theta;      /* [n_theta] their index in pr's layout */
	int dim;	       /* n_theta + 1 */
	double temper;	       /* prior exponent 1/K */
	double sigma_scale;    /* HalfNormal scale of σ */
	const double *x_fixed; /* [n_full] values of the parameters not sampled */
	double *x, *b;	       /* [n_full] workspace */
	long evals;	       /* log-density evaluations */
	long *evals_total;     /* NULL, or a run's count of them for its progress (atomic) */
} xf_cmc_target;

/* Workspace for a target over pr; the caller fills the other fields. 0 or −1. */
int xf_cmc_target_alloc(xf_cmc_target *t, const xf_problem *pr);
void xf_cmc_target_free(xf_cmc_target *t);

/* The parts of the log target, for callers that compute χ² themselves (many points in
 * one sweep, route.c): the prior terms of θ at u (untempered: priors and the log-Jacobian),
 * filling x_full [n_full] with the physical point; and the whole log target from them and
 * χ² at x_full (NaN where not finite). xf_cmc_target_logp is these two around one pass. */
double xf_cmc_target_prior(const xf_cmc_target *t, const double *u, double *x_full);
double xf_cmc_target_combine(const xf_cmc_target *t, const double *u, double prior, double chi2);

/* The log target (and with grad != NULL its gradient over u) from a pass the caller ran
 * at the physical point xf_cmc_target_prior filled (t->x): χ² and b = Jᵀr over x_full
 * (a JᵀJ pass gives both). 0, or −1 where the log target is not finite. */
int xf_cmc_target_from_pass(const xf_cmc_target *t, const double *u, double prior, double chi2,
			    const double *b, double *logp, double *grad);

/* log target and its gradient at u (xf_logp_fn). */
int xf_cmc_target_logp(void *ctx, const double *u, double *logp, double *grad);

/* u (dim values) → the full physical parameter vector (n_full) and σ. */
void xf_cmc_to_physical(const xf_cmc_target *t, const double *u, double *x_full, double *sigma);
/* θ's coordinates of u only (n_theta values) → physical values of those parameters. */
void xf_cmc_theta_physical(const xf_problem *pr, const int *theta, int n_theta, const double *u,
			   double *x_theta);
/* The inverse: u of a physical point inside the bounds, and log σ. */
void xf_cmc_to_u(const xf_cmc_target *t, const double *x_full, double sigma, double *u);
/* dx/du of parameter k at u_k (for covariances between the spaces). */
double xf_cmc_dx_du(const xf_problem *pr, int k, double u_k);

/* The full-data posterior at many points at once (full_batch.c): the log target of t
 * (its pass over every pair, temper 1) at n points of dim coordinates — θ and log σ
 * (dim = n_theta + 1), or θ alone with log σ held at log_sigma (dim = n_theta) — through
 * the batched values pass (xf_lik_eval_values), in chunks between which an interruption
 * is seen and progress told. spread: the points are shared among the MPI ranks
 * (contiguous runs, gathered in rank order; every rank must call with the same points):
 * each value is a pure function of its point, so the bytes do not depend on the ranks. */
typedef struct xf_full_batch {
	xf_cmc_target *t;
	int dim;
	double log_sigma;
	int spread;
	/* called after each chunk with the points done so far of this call (may be NULL) */
	void (*tick)(void *ctx, long done, long total);
	void *tick_ctx;
} xf_full_batch;

/* xf_check_logp over an xf_full_batch: lp[i] = log target at u[i] (−∞ where not finite).
 * 0, or −1 out of memory (or a failed rank exchange). */
int xf_full_logp_batch(void *ctx, int n, const double *u, double *lp);

#endif
