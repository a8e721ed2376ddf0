/* cond_scaling.h — the importance route's proposal with the per-angle scaling drawn from
 * its exact conditional (cond_scaling.c; adr/0081).
 *
 * The model is linear in every contrast and offset coefficient (c2 = offset + contrast·g1²,
 * each a basis row times the coefficients), the likelihood Gaussian and their priors
 * normal, so given the physical parameters θ and σ the coefficients s have a normal
 * posterior (cut at their bounds):
 *   precision P = H_ss/σ² + diag(1/sd²),  P·ŝ = (H_ss·s₀ + b_s)/σ² + μ/sd²
 * with H_ss and b_s the scaling block of JᵀJ and Jᵀr from one pass at (θ, s₀) — exact,
 * since χ² is quadratic in s. The transport map (tmap.h) covers θ and log σ only; s is
 * ŝ + L⁻ᵀ·ε (P = L·Lᵀ, ε ~ N(0, I)), so a point's weight is the marginal posterior of
 * (θ, σ) over the map's density, whatever the number of angles: 3 + 1 (static) or 7 + 1
 * (laminar) dimensions to fit instead of 3 + 2·n_phi + 1. A draw beyond a coefficient's
 * bound has weight 0. Every value is a pure function of (seed, point): ε comes from the
 * check's stream, counter (i, k, 1). */
#ifndef XPCSFIT_CMC_COND_SCALING_H
#define XPCSFIT_CMC_COND_SCALING_H

#include "cmc/isprop.h"
#include "cmc/plaw_coords.h"
#include "cmc/target.h"
#include "cmc/tmap.h"

typedef struct xf_cond_scaling {
	xf_cmc_target *t;  /* the target: its problem, pass, sampled parameters, fixed values */
	xf_tmap map;	   /* over the map's coordinates w: θ's physical ones, then log σ, */
	xf_plaw_coords pc; /* in the power-law coordinates (plaw_coords.h): um = C(w) */
	int d, d_m, d_s;   /* u's coordinates, the map's, the scaling ones */
	int *mcol;	   /* [d_m] u-index of each map coordinate */
	int *scol;	   /* [d_s] u-index of each scaling coordinate */
	double *u0;	   /* [d] u of x0 (σ̂ at d − 1) */
	double *lap_cov;   /* [d_m·d_m] the Laplace approximation's covariance on the map's */
	/* workspace */
	/* per point of a sweep (XF_LIK_BATCH): θ with the scaling at s₀, its pass's χ², the
	 * scaling block of JᵀJ and b (xf_lik_eval_scalings), σ and the map's log|du/dz| */
	double *x, *chi2, *jtj, *b, *sigma, *lj;
	double *xq, *delta, *u, *um, *wm, *p, *rhs, *v, *fit_u;
	int fit_n;
	long passes; /* scaling passes made */
	/* progress over a batch of draws (may be NULL): points done of total */
	void (*tick)(void *ctx, long done, long total);
	void *tick_ctx;
} xf_cond_scaling;

/* The conditional of the sampled scaling coefficients (u-columns scol [ds] of t) given θ
 * and σ, at x (n_full: θ, the scaling at s₀) from the scaling pass's h_ss and b_s:
 * P = H_ss/σ² + diag(τ/sd²) into p [ds·ds] and rhs = (H_ss·s₀ + b_s)/σ² + τ·μ/sd² into
 * rhs [ds] (τ: the prior's temper), so that the conditional mean is P⁻¹·rhs. */
void xf_scaling_conditional(const xf_cmc_target *t, const int *scol, int ds, const double *x,
			    const double *h_ss, const double *b_s, double sigma, double *p,
			    double *rhs);

/* Sampled scaling coordinates of t (those whose parameter index is ≥ n_phys). */
int xf_cond_scaling_count(const xf_cmc_target *t);

/* Set up on target t from the Laplace approximation in u-space (mean [d], cov [d·d]): the
 * map starts as its marginal on θ's physical coordinates and log σ. slope: the slopes
 * NLSQ measured (plaw_coords.h; NULL: read from cov). 0, −1 out of memory, 1 when that
 * block is not positive definite. */
int xf_cond_scaling_init(xf_cond_scaling *cs, xf_cmc_target *t, const xf_plaw_slope *slope,
			 const double *mean, const double *cov);
void xf_cond_scaling_free(xf_cond_scaling *cs);

/* The proposal record (isprop.h) over cs. */
void xf_cond_scaling_prop(xf_cond_scaling *cs, xf_is_prop *p);

#endif
