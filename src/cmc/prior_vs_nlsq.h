/* prior_vs_nlsq.h — each prior against the NLSQ result before sampling, and the prior
 * named when it is the cause of a failed or prior-dominated posterior (cmc.md "A prior
 * far from the data", adr/0080). */
#ifndef XPCSFIT_CMC_PRIOR_VS_NLSQ_H
#define XPCSFIT_CMC_PRIOR_VS_NLSQ_H

#include <stddef.h>

#include "cmc/run_internal.h"

/* A prior is a conflict in waiting when NLSQ's value lies this many prior sigmas from its
 * mean (its density there below e^−4.5 ≈ 1 % of its peak) ... */
#define XF_PRIOR_FAR_SD 3.0
/* ... and the Gaussian product of prior and NLSQ would move the posterior this many NLSQ
 * sds away from NLSQ's value: |x̂ − μ|·s/(s² + σ²) ≥ 1 (a wide prior far out moves it
 * little and is not flagged; a narrow one at the data is not far) */
#define XF_PRIOR_SHIFT_SD 1.0

/* Fill res->prior_vs_nlsq from the priors of r->pr and NLSQ's values and uncertainties
 * (r->nlsq), for every sampled parameter, and say one warning line per conflict in
 * waiting (console and run.log). 0, or XF_ERR_NOMEM with err set. */
int xf_cmc_compare_priors(const cmc_run *r, xf_cmc_result *res, xf_error *err);

/* The priors a user should look at, in words, for a result without a posterior or one
 * whose prior sensitivity names them: "the prior on alpha (TruncatedNormal(0.3, 0.02))
 * conflicts with the data (27 NLSQ sd away)", joined by "; ". Empty when none. Returns the
 * number named. */
int xf_cmc_prior_blame(const xf_cmc_result *res, char *buf, size_t size);

/* The quality reason of a one-shard run without a posterior (K = 1: no shard is spoken
 * of): "no posterior: NUTS did not converge: max R-hat 1.72 > 1.1 (...), ...; the prior on
 * alpha ...". */
void xf_cmc_no_posterior_reason(xf_cmc_result *res);

/* The number of sds written for a person: 2 significant digits, never an exponent
 * between 0.01 and 1e9 (27, 3.4, 0.51, 1200000). */
void xf_num_sds(double v, char *buf, size_t size);

void xf_cmc_prior_vs_nlsq_free(xf_cmc_prior_vs_nlsq *p);

#endif
