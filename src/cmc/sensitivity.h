/* sensitivity.h — prior sensitivity of a posterior (cmc.md "Prior sensitivity on every
 * result", adr/0040): power-scaling of the prior and of the likelihood through Pareto-
 * smoothed importance sampling on the draws (Kallioinen, Paananen, Bürkner, Vehtari,
 * Statistics and Computing 2023), and the posterior against the NLSQ estimate. */
#ifndef XPCSFIT_CMC_SENSITIVITY_H
#define XPCSFIT_CMC_SENSITIVITY_H

#include "cmc/run_internal.h"

#define XF_PSENS_THRESHOLD 0.05 /* priorsense's: a sensitivity above it is worth a look */
/* priorsense calls "conflict" any prior and likelihood that both matter, also when they
 * agree (a prior as strong as the data, centred where they are: SBC draws its truths from
 * such priors). A conflict here also needs the two to disagree: what the data say (NLSQ's
 * value, or where NLSQ has none the data alone as the posterior without its prior,
 * xf_data_alone) and the prior's centre further apart than this many sds of their
 * difference, √(sd² + σ²): a prior whose truth it generated passes 99.7 % of the time
 * (at 2: 34 of 500 SBC replicates named a conflict, adr/0095) */
#define XF_PRIOR_AGREE_Z  3.0
#define XF_PSENS_ALPHA	  0.01 /* power-scaling by α = 1 ± this */
#define XF_PRIOR_GAP_MAX  2.0  /* |posterior − NLSQ| / max(sd, NLSQ sd) above: a gap */
#define XF_PRIOR_PULL_MIN 2.0  /* prior log-density gained by the gap above: a pull */

/* What the data alone say of a parameter whose marginal posterior is mean ± sd under a
 * normal prior N(mu0, sigma0²), both taken as Gaussians: the precisions add, so the data's
 * is 1/sd² − 1/σ0² and their centre (mean/sd² − mu0/σ0²)/that. 0, or −1 where the
 * posterior is not narrower than the prior (the data's width is not measurable). */
int xf_data_alone(double mean, double sd, double mu0, double sigma0, double *data, double *data_sd);

/* The cumulative Jensen–Shannon distance (Nguyen & Vreeken 2015, normalised and made
 * symmetric as in priorsense) between the marginal of x[n] (stride apart) with equal
 * weights and the same draws with the normalised weights w[n]; the larger of x and −x
 * (so the distance does not depend on the sign of the parameter). In [0, 1]. */
double xf_cjs_dist(const double *x, int stride, int n, const double *w);

/* Power-scaling sensitivity of columns cols[0..n_cols−1] of draws [n][stride] to the
 * component whose log density per draw is log_comp[n]: for α = 1 − ε and 1 + ε the
 * importance weights exp((α − 1)·log_comp), Pareto-smoothed, and the CJS distance of
 * each weighted marginal from the unweighted one; sens = (d₋ + d₊)/(2·log₂(1 + ε)),
 * priorsense's derivative. *khat: the larger Pareto k̂ of the two weightings. 0, or −1
 * when out of memory. */
int xf_powerscale_sensitivity(const double *draws, int n, int stride, const int *cols, int n_cols,
			      const double *log_comp, double eps, double *sens, double *khat);

/* priorsense's diagnosis from the two sensitivities: "prior-data conflict" (both above
 * the threshold), "strong prior / weak likelihood" (prior only), "-" (neither, or the
 * likelihood only: the data decide). lik NaN: not measured (the prior alone decides). */
xf_prior_diagnosis xf_psens_diagnosis(double prior, double lik);

/* Fill res->sensitivity for the result of run r (after the self-check: res->draws and
 * the summaries are the published ones). K = 1: the shard's draws give the log
 * likelihood per draw (its stored log target less the prior and σ terms); K > 1: the
 * prior is power-scaled on the combined draws and the likelihood is not measured. 0, or
 * an error code. */
int xf_cmc_prior_check(const cmc_run *r, xf_cmc_result *res, xf_shard_loader load, void *ctx,
		       xf_error *err);

/* The quality reason of parameter k of res->sensitivity (flagged[k] set) into buf. */
void xf_cmc_sensitivity_reason(const xf_cmc_result *res, int k, char *buf, size_t size);

void xf_cmc_sensitivity_free(xf_cmc_sensitivity *s);

#endif
