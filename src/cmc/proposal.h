/* proposal.h — the self-check's heavy-tailed proposal (proposal.c; adr/0039): a
 * multivariate Student t in u-space built on a Gaussian N(mean, L·Lᵀ), with XF_MVT_NU
 * degrees of freedom and scale matrix XF_MVT_SCALE² · L·Lᵀ. */
#ifndef XPCSFIT_CMC_PROPOSAL_H
#define XPCSFIT_CMC_PROPOSAL_H

#include <stdint.h>

#define XF_MVT_NU    5	 /* degrees of freedom: tails heavy enough for k̂ to be honest */
#define XF_MVT_SCALE 1.5 /* sd multiplier (covariance × 2.25), adr/0039 */

/* Point i of the proposal into u[d]: u = mean + s·L·z·√(ν/χ²), z_k the normal at counter
 * (i, k, 0) of stream XF_RNG_CMC_CHECK under seed, χ² = Σ_{j<ν} n_j², n_j at counter
 * (i, d + j, 0). A pure function of (seed, i): growing M keeps the first points. Returns
 * log q(u). chol: the lower Cholesky factor, row-major d×d. */
double xf_mvt_draw(uint64_t seed, uint64_t i, int d, const double *mean, const double *chol,
		   double *u);

/* log q(x) of the same proposal at any x (forward substitution with chol). */
double xf_mvt_logpdf(int d, const double *mean, const double *chol, const double *x);

/* IS-ESS/M when the target is exactly the Gaussian N(mean, L·Lᵀ) the proposal is built
 * on: 1 / E_q[w²] with w = p/q, in d dimensions (a one-dimensional integral over the
 * χ²_d radius, GSL QAGIU); the reference the self-check's ESS is judged against. */
double xf_mvt_gauss_ess_ratio(int d);

/* The defensive mixture of the posterior's importance route (adr/0045): with probability
 * core the Gaussian N(mean, L·Lᵀ) itself, else the t above (the component from counter
 * (i, d + ν, 0), the coordinates as xf_mvt_draw's). Point i into u[d]; returns
 * log q(u) = log(core·N(u) + (1 − core)·t(u)). core 0: xf_mvt_draw. */
double xf_mix_draw(uint64_t seed, uint64_t i, int d, const double *mean, const double *chol,
		   double core, double *u);
/* log q of the same mixture at squared Mahalanobis distance delta (in L·Lᵀ) from its
 * mean (core 0: the t alone). */
double xf_mix_logpdf(int d, const double *chol, double core, double delta);
/* IS-ESS/M of the mixture when the target is exactly its Gaussian (as
 * xf_mvt_gauss_ess_ratio; core 0: that). */
double xf_mix_gauss_ess_ratio(int d, double core);

#endif
