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
} xf_cmc_target;

/* Workspace for a target over pr; the caller fills the other fields. 0 or −1. */
int xf_cmc_target_alloc(xf_cmc_target *t, const xf_problem *pr);
void xf_cmc_target_free(xf_cmc_target *t);

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

#endif
