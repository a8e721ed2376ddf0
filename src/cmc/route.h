/* route.h — the exact posterior by approximate-then-verify (route.c; cmc.md; adr/0045):
 * importance sampling from the NLSQ approximation, checked against the exact full-data
 * posterior, published when the checks pass; else the caller runs exact NUTS. */
#ifndef XPCSFIT_CMC_ROUTE_H
#define XPCSFIT_CMC_ROUTE_H

#include "cmc/check.h"
#include "cmc/run_internal.h"

#define XF_ROUTE_M0	      500   /* each round's first M, doubled while it can pass */
#define XF_ROUTE_M0_DIMS      8	    /* … per this many dimensions (16: 1 000) */
#define XF_ROUTE_ROUNDS	      8	    /* round 1: Laplace; later: the map fitted to the last */
#define XF_ROUTE_POINTS_MAX   48000 /* all rounds' points (each a pass over the data) */
#define XF_ROUTE_FIT_ESS      2.0   /* × dim: the IS-ESS a round's fit needs */
#define XF_ROUTE_KHAT_GAIN    0.02  /* progress: a failing round lowers the best k̂ by this */
#define XF_ROUTE_ESS_GAIN     0.10  /* … or raises the best IS-ESS/M by this fraction */
#define XF_ROUTE_KHAT_POLISH  0.5   /* a round passing above it is refined once more … */
#define XF_ROUTE_POLISH_W_TOP 2.0   /* … unless no weight exceeds this × the mean */
/* round k's points come from the check's stream under seed + (k − 1)·this (a fixed odd
 * constant, 2⁶⁴/φ): fresh points, a pure function of the seed */
#define XF_ROUTE_ROUND_SEED 0x9E3779B97F4A7C15ULL
/* the ridge proposal's rounds: under seed + this (adr/0099) */
#define XF_RIDGE_SEED 0xD1B54A32D192ED03ULL

/* What the route leaves besides the result: its check (moved into res->approx), why it
 * was not published, and the published draws as a one-chain shard in u-space with their
 * log target (the prior sensitivity's input). */
typedef struct xf_cmc_route_out {
	xf_cmc_check check;
	char note[192];
	xf_shard_draws draws;
	double sigma_mean, sigma_sd; /* σ's weighted posterior mean and sd */
	/* the fallback's chain starts in u-space [n_inits × dim] (route_handoff.c), set
	 * when the route fails with weights that mean something (k̂ ≤ 1); else NULL */
	double *inits;
	int n_inits;
} xf_cmc_route_out;

/* Run the route on shard 0 of r (K = 1, every pair; its noise and σ prior scale set).
 * Returns 0 when the posterior was published into res (xf_cmc_route_publish), 1 when the
 * exact NUTS fallback is needed (out->note says why; metric, cov_size values as
 * r->init_cov, receives the weighted covariance when it is usable, else is untouched),
 * or an error code. */
int xf_cmc_route_importance(cmc_run *r, xf_cmc_result *res, double *metric, xf_cmc_route_out *out,
			    xf_error *err);
void xf_cmc_route_out_free(xf_cmc_route_out *out);

/* The route's rounds of adaptive importance sampling (route_rounds.c; adr/0078), from the
 * map given (round 1: the Laplace approximation) under seed; c (its u, log_w, log_p of
 * xf_check_m_max(XF_ROUTE_M0) points) and w receive the round that is published or, when
 * none passes, the last. 0, −1 out of memory, or
 * XF_ERR_INTERRUPTED. min_ess: xf_cmc_route_min_ess. f, ctx: the target (the route's:
 * xf_full_logp_batch on the full data; tests: known densities). round_now (may be NULL)
 * follows the round, for the progress line. */
struct xf_tmap;
int xf_cmc_route_rounds(xf_check_logp f, void *ctx, struct xf_tmap *map, uint64_t seed,
			int *round_now, double min_ess, double *w, xf_cmc_check *c);
/* The same from any proposal (isprop.h; the route's: the conditional-scaling one). */
struct xf_is_prop;
int xf_cmc_route_rounds_prop(xf_check_logp f, void *ctx, const struct xf_is_prop *prop,
			     uint64_t seed, int *round_now, double min_ess, double *w,
			     xf_cmc_check *c);

/* The IS-ESS (and every coordinate's ESS) a published round must reach on a target of
 * n_points points: XF_ROUTE_MIN_ESS, doubled up to XF_ROUTE_SMALL_POINTS points. */
double xf_cmc_route_min_ess(size_t n_points);

/* One start per chain for the NUTS fallback (route_handoff.c): systematic resampling of
 * the check's points c->u by their normalised weights w, at a position of the check's
 * stream under seed, each chain on a distinct point. Sets out->inits (0), or −1 when out
 * of memory; fewer points than chains leave it NULL. */
int xf_cmc_route_handoff(const xf_cmc_check *c, const double *w, int n_chains, uint64_t seed,
			 xf_cmc_route_out *out);

/* The result record of a published importance route (result.c): layout, no shards, the
 * weighted summaries and G = chains × draws resampled draws. 0 or an error code. */
int xf_cmc_route_publish(const cmc_run *r, xf_cmc_result *res, const xf_cmc_check *c,
			 const double *w, xf_error *err);

#endif
