/* check.h — the consensus self-check (check.c, check_publish.c; cmc.md "When the
 * combination can be trusted"; adr/0039). */
#ifndef XPCSFIT_CMC_CHECK_H
#define XPCSFIT_CMC_CHECK_H

#include "cmc/run_internal.h"

#define XF_KHAT_MAX	     0.7 /* Pareto k̂ above which the importance weights are not trusted */
#define XF_ESS_REF_FRACTION  0.5 /* IS-ESS/M ≥ this × what a Gaussian target gives */
#define XF_AXIS_DEV_MAX	     0.1 /* |drop − 0.5| at ±1 sd along every axis */
#define XF_CHECK_M_MAX	     32000 /* M doubles from check_draws up to this (a count) */
#define XF_CHECK_KHAT_STABLE 0.05  /* k̂ at M/2 and M within this: stable */
#define XF_CHECK_KHAT_LOW    0.5   /* … or both k̂ at most this: far enough from 0.7 */
#define XF_CHECK_ESS_STABLE  0.10  /* IS-ESS/M at M/2 and M within this, relative */
#define XF_CHECK_ESS_SPARE   1.05  /* M grown to the ESS floor with this to spare */
#define XF_CHECK_M_STEP	     16	   /* … in whole batches of points (one sweep each) */
#define XF_ROUTE_MIN_ESS     1000  /* the route's IS-ESS and every coordinate's ESS, at least */
/* … and twice that on files up to this many points, where the points cost little: an sd
 * from an ESS of 1 000 is ±2.2 % (1 sd), and the largest of ~10 such errors reaches 5 % */
#define XF_ROUTE_SMALL_POINTS 1000000
#define XF_ROUTE_CORE	      0.8 /* the route's proposal: Gaussian core weight (adr/0045) */

/* Check the combined posterior (u_draws [g][n_theta], the combination's draws) against
 * the full-data posterior (none when K = 1 or check_draws is 0): fills res->check, and
 * when the three checks pass publishes the corrected posterior (check_publish.c).
 * Returns 0 or an error code. */
int xf_cmc_self_check(const cmc_run *r, const double *u_draws, int g, xf_cmc_result *res,
		      xf_error *err);

/* The importance-sampling core on any log target (check_is.c), shared by the consensus
 * self-check and the posterior's approximate-then-verify route (route.c): points of the t
 * proposal on N(mean, L·Lᵀ) (with c->core > 0: the defensive mixture, proposal.h) in d
 * dimensions under seed, M = m0, 2·m0, … (at most
 * xf_check_m_max(m0)) until k̂ and IS-ESS/M are stable and, when min_ess > 0, the IS-ESS
 * and every coordinate's ESS reach min_ess; PSIS; the three checks (and min_ess, gating).
 * f evaluates the target at n points u[n][d] at once (the batched pass), lp[i] = −∞ where
 * not finite; 0, or −1 out of memory. c->u [m_max][d] and c->log_w [m_max] are the
 * caller's; w [m_max] receives the normalised smoothed weights. Fills c's dim, m, m_first,
 * stable, seed, khat, ess, ess_ref, ess_coord_min, axis_*, pass_*. Returns 0, −1 out of
 * memory, or XF_ERR_INTERRUPTED. */
typedef int (*xf_check_logp)(void *ctx, int n, const double *u, double *lp);
int xf_check_m_max(int m0);
int xf_check_importance(xf_check_logp f, void *ctx, int d, const double *mean, const double *chol,
			uint64_t seed, int m0, double min_ess, double *w, xf_cmc_check *c);
/* The same on any proposal map (tmap.h; the route's rounds, adr/0078), M at most m_cap
 * (m0·2^j within it and XF_CHECK_M_MAX; c->u, c->log_w, c->log_p and w need that many).
 * A curved map's axis check runs in its base coordinates. */
struct xf_tmap;
int xf_check_importance_map(xf_check_logp f, void *ctx, const struct xf_tmap *map, uint64_t seed,
			    int m0, int m_cap, double min_ess, double *w, xf_cmc_check *c);
/* The same on any proposal (isprop.h): the map's, or the conditional-scaling one
 * (cond_scaling.h); its axis check runs along z when prop->in_z or the map is curved, and
 * the IS-ESS reference is the defensive mixture's over prop->d_mix coordinates. */
struct xf_is_prop;
int xf_check_importance_prop(xf_check_logp f, void *ctx, const struct xf_is_prop *prop,
			     uint64_t seed, int m0, int m_cap, double min_ess, double *w,
			     xf_cmc_check *c);

/* Weighted summaries of the points u[m][dim] (θ first) under weights w[m] (Σ = 1) into
 * res's mean, sd, median, q05, q95, cov and per-angle values, and res->n_draws draws
 * resampled systematically (res->draws allocated by the caller). 0, or −1 out of memory. */
int xf_cmc_publish_weighted(const cmc_run *r, xf_cmc_result *res, const double *u, int dim,
			    const double *w, int m);

/* Publish the importance-weighted posterior (weights w[check.m], Σ = 1): weighted
 * summaries, covariance and per-angle values; draws resampled systematically. The
 * consensus summaries and draws move to res->check. 0, or −1 out of memory. */
int xf_cmc_check_publish(const cmc_run *r, xf_cmc_result *res, const double *w);

#endif
