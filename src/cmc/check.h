/* check.h — the consensus self-check (check.c; cmc.md "When the combination can be
 * trusted"). */
#ifndef XPCSFIT_CMC_CHECK_H
#define XPCSFIT_CMC_CHECK_H

#include "cmc/run_internal.h"

#define XF_KHAT_MAX 0.7 /* Pareto k̂ above which the importance weights are not trusted */

/* Check the combined posterior (u_draws [g][n_theta], the combination's draws) against
 * the full-data posterior with optimization.cmc.combination.check_draws points (none when
 * K = 1 or 0 points): fills res->check, and when k̂ ≤ XF_KHAT_MAX replaces the reported
 * summaries, covariance and per-angle values with the PSIS-weighted ones (the consensus
 * summaries kept in res->check). Returns 0 or an error code. */
int xf_cmc_self_check(const cmc_run *r, const double *u_draws, int g, xf_cmc_result *res,
		      xf_error *err);

#endif
