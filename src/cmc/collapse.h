/* collapse.h — exact NUTS on the posterior of θ and σ with the per-angle scaling
 * integrated out (collapse.c; adr/0086).
 *
 * The model is linear in every contrast and offset coefficient s, the likelihood Gaussian
 * and their priors normal, so for fixed θ and σ the log target is a quadratic in s
 * (cond_scaling.h): precision P = H_ss/σ² + diag(τ/sd²), maximum at ŝ. Its integral over
 * s is known in closed form:
 *   log p(θ, σ) = log p(θ, σ, ŝ) + (d_s/2)·log 2π − ½·log |P|
 * and so is its gradient: the partial gradient at ŝ (ŝ maximises, so its own change adds
 * nothing), minus ½·tr(P⁻¹·∂P) with ∂H_ss from the pass's per-angle sums
 * (xf_lik_angle_sums). NUTS then moves in 3 + 1 (static) or 7 + 1 (laminar) dimensions
 * instead of 3 + 2·n_phi + 1, along a ridge the scaling no longer bends, and each draw
 * gets its scaling from the exact conditional N(ŝ, P⁻¹) afterwards: the same joint
 * posterior, exactly, as long as the conditional lies inside the coefficients' bounds
 * (the integral is over all reals: a gradient evaluation where ŝ comes within
 * XF_COLLAPSE_MIN_SD of its sds of a bound is counted in near_bound, and the caller then
 * samples every coordinate instead; a draw beyond a bound is drawn again).
 *
 * An evaluation is one pass at (θ, s₀) (xf_lik_eval_collapse: the scaling sums and, per
 * angle, Σ res·∂g1², Σ g1²·∂g1², Σ ∂g1², from which the gradient at ŝ follows, since
 * the residual is linear in the scaling). The same from two passes (the scaling pass for
 * ŝ and P, then a full pass at (θ, ŝ)) is kept as the test's independent check. */
#ifndef XPCSFIT_CMC_COLLAPSE_H
#define XPCSFIT_CMC_COLLAPSE_H

#include <stdint.h>
#include "cmc/target.h"

/* The conditional mean of every sampled coefficient must lie this many conditional sds
 * inside its bounds wherever a collapsed chain goes: the mass the integral over all reals
 * adds beyond a bound is then below Φ(−8) ≈ 6e-16. */
#define XF_COLLAPSE_MIN_SD 8.0

typedef struct xf_collapse {
	xf_cmc_target *t; /* the full target: problem, pass, sampled parameters, s₀ */
	int d, dc, ds;	  /* u's coordinates, the collapsed ones (θ physical, log σ), scaling */
	int *mcol, *scol; /* [dc] u-index of each collapsed coordinate, [ds] of each scaling */
	/* workspace */
	double *x, *xq, *hs, *bs, *jtj, *b, *p, *pinv, *shat, *v, *gg, *dg, *wcc, *wco, *delta;
	double *angle; /* [n_phi·3·n_phys] xf_lik_eval_collapse's angle sums */
	double *con0, *off0, *con1, *off1; /* [n_phi] per-angle scaling at s₀ and at ŝ */
	int fused;	/* 1: one collapse pass per gradient; 0: two (the test's check) */
	double chi2_s0; /* χ² at (θ, s₀) of the last conditional */
	/* gradient evaluations whose ŝ lay within XF_COLLAPSE_MIN_SD conditional sds of a
	 * coefficient's bound, or beyond it: where the integral over all reals is not the
	 * one over the bounds (a chain that meets one is sampled again in full, run.c) */
	long near_bound;
} xf_collapse;

/* Set up over target t (its lik, x_fixed with s₀ at the scaling, and every field
 * filled). 0, −1 out of memory, 1 when no scaling coefficient is sampled. */
int xf_collapse_init(xf_collapse *c, xf_cmc_target *t);
void xf_collapse_free(xf_collapse *c);

/* The collapsed coordinates of a full point u [d] (uc [dc]). */
void xf_collapse_restrict(const xf_collapse *c, const double *u, double *uc);

/* log p(θ, σ) and its gradient at uc (xf_logp_fn). */
int xf_collapse_logp(void *ctx, const double *uc, double *logp, double *grad);

/* The smallest distance of ŝ from a bound of a sampled coefficient at uc, in conditional
 * sds (−1 where the log density is not finite there). */
double xf_collapse_margin(xf_collapse *c, const double *uc);

/* The full point of uc: its scaling drawn from the exact conditional, ε from the stream
 * XF_RNG_CMC_COLLAPSE keyed (seed; a, b, k + attempt·2¹⁶), again (attempt + 1) while a
 * coefficient falls beyond its bound. u [d]; the full log target there in *logp.
 * 0, or −1 (not finite, or no draw inside the bounds in 64 attempts). */
int xf_collapse_expand(xf_collapse *c, const double *uc, uint64_t seed, uint64_t a, uint64_t b,
		       double *u, double *logp);

#endif
