/* beyond.h — does the exact posterior reach beyond its draws? (adr/0087)
 *
 * A sampler, or an importance proposal, never shows what it never visited: on a static
 * file with α ≈ −0.1 the posterior runs, thinly, up the α = 0 ridge where D0 and D_offset
 * trade one for the other, out to D0's bound — a funnel (α's width there shrinks as 1/D0)
 * that NUTS does not enter and a proposal never reaches. 1.7 % of the mass lies there,
 * enough to make D0's sd 4 233 where the draws say 473, while every diagnostic of the draws
 * is clean. The probe asks the exact posterior instead: along each sampled parameter, past
 * the draws' extreme on either side, the Laplace mass of the slice u_k = v (the maximum of
 * the log target over every other coordinate, by Newton steps with the Gauss–Newton
 * curvature, minus half the log determinant of that curvature), normalised by the draws'
 * own density at their 5 % / 95 % quantile, where the same Laplace mass is computed. */
#ifndef XPCSFIT_CMC_BEYOND_H
#define XPCSFIT_CMC_BEYOND_H

#include "cmc/run_internal.h"

/* A parameter is flagged when the mass found beyond its draws exceeds this ... */
#define XF_BEYOND_MASS 0.01
/* ... or would widen its sd by more than this factor (the 5 % for sds). */
#define XF_BEYOND_SD_RATIO 1.05

/* Probe the full-data posterior of a one-shard run (the importance route's or NUTS's
 * draws): u_draws [n][stride] in u-space, the first n_theta columns θ and, when stride >
 * n_theta, the next one log σ (else every draw takes log(sigma)). Fills res->beyond for
 * every sampled physical parameter. 0, or XF_ERR_NOMEM / a pass's error with err set. */
int xf_cmc_beyond_probe(const cmc_run *r, const double *u_draws, int n, int stride, double sigma,
			xf_cmc_result *res, xf_error *err);

/* The quality reason for parameter k, in words with the numbers. */
void xf_cmc_beyond_reason(const xf_cmc_result *res, int k, char *buf, size_t size);

void xf_cmc_beyond_free(xf_cmc_beyond *t);

#endif
