/* plaw_coords.h — sampling coordinates for a power law with an offset (plaw_coords.c;
 * adr/0082).
 *
 * The model's rates are A·t^e + c twice: D(t) = D0·t^α + D_offset and, under flow,
 * γ̇(t) = γ̇0·t^β + γ̇_offset. The data pin the rate's value and log-slope near the middle
 * of the time window, t_ref = dt·√(N − 1): the level S = A·t_ref^e + c and the slope
 * e·A·t_ref^e. In the sampler's logit coordinates u that makes a curved ridge (A and c
 * trade along S = const, nonlinear in u_A) and, when e is near 0, a funnel (e's width
 * shrinks as 1/A). The coordinates w here straighten both, as a smooth bijection of the
 * whole space onto u with a known Jacobian:
 *
 *   u_A = w_A
 *   u_e = p + (w_e − p)·exp(a₀ − w_A)          non-centred: w_e − p ∝ e·A (for A well
 *                                               inside its bounds), the slope (p: u of
 *                                               e = 0; a₀: u_A at the start)
 *   u_c = w_c − k·(P(u_A, u_e) − P₀)           sheared: w_c ∝ the level S (P = A·t_ref^e,
 *                                               k = du_c/dc at the start, P₀ P there)
 *   log|du/dw| = Σ over the triples (a₀ − w_A)
 *
 * At the start point u = w. A piece takes part only on a ridge: where the start's
 * covariance gives A a relative sd above XF_PLAW_RIDGE_REL_SD (but an sd in u below
 * XF_PLAW_RIDGE_MAX_U_SD) and A's correlation with e
 * (non-centring) or c (shear) above XF_PLAW_RIDGE_CORR — elsewhere the logit is straight
 * over the posterior and these coordinates only add curvature (measured on the bundled
 * configs), and where the data say nothing (the prior alone: independent in u) the
 * non-centring would make the funnel it removes on a ridge (adr/0082). The shear needs
 * A, e and c sampled; the non-centring lo_A ≥ 0, lo_e < 0 < hi_e and e within
 * XF_PLAW_NEAR_ZERO_SD sds of 0 (a funnel is there only when e = 0 is in reach). Every
 * other coordinate is the identity. */
#ifndef XPCSFIT_CMC_PLAW_COORDS_H
#define XPCSFIT_CMC_PLAW_COORDS_H

#include "cmc/sampler.h"
#include "xpcsfit/likelihood.h"

#define XF_PLAW_MAX	     2	  /* power laws in a model: D(t) and γ̇(t) */
#define XF_PLAW_RIDGE_REL_SD 0.05 /* A's sd over |A| above which a triple takes part */
#define XF_PLAW_NEAR_ZERO_SD 10.0 /* e within this many sds of 0: non-centred */
#define XF_PLAW_RIDGE_CORR   0.9  /* |corr| of A with e (with c) that makes a ridge */
/* A's sd in u (≈ log A) below which the data still confine A (above: the priors and
 * bounds shape the posterior, not the ridge; the SBC's small files) */
#define XF_PLAW_RIDGE_MAX_U_SD 2.0

typedef struct xf_plaw_triple {
	int a, e, c;	     /* coordinate of A, e and c (c: −1 when not sampled) */
	double lo[3], hi[3]; /* bounds of A, e, c */
	int noncentre;	     /* 1: u_e is non-centred on A */
	double a0, p;	     /* u_A at the start; u of e = 0 */
	double k, p0;	     /* the shear: du_c/dc at the start, P there */
	double ln_tref;	     /* log t_ref, t_ref in s */
} xf_plaw_triple;

typedef struct xf_plaw_coords {
	int d; /* coordinates */
	int n; /* triples in use (0: w = u) */
	xf_plaw_triple tr[XF_PLAW_MAX];
} xf_plaw_coords;

/* The coordinates over d values whose coordinate j is parameter param[j] of pr (−1: not
 * a parameter, e.g. log σ), centred at the start point u0 [d], with the start's u-space
 * covariance cov [d·d] deciding where they apply (NULL: wherever the parameters allow). */
void xf_plaw_coords_init(xf_plaw_coords *pc, const xf_problem *pr, const int *param, int d,
			 const double *u0, const double *cov);

/* w → u (may alias); returns log|du/dw|. */
double xf_plaw_to_u(const xf_plaw_coords *pc, const double *w, double *u);
/* u → w (may alias). */
void xf_plaw_to_w(const xf_plaw_coords *pc, const double *u, double *w);
/* The Jacobian du/dw at w, row-major d×d. */
void xf_plaw_jacobian(const xf_plaw_coords *pc, const double *w, double *jac);
/* ∇ over w of a log density in w built from one in u: (du/dw)ᵀ·grad_u + ∇ log|du/dw|
 * (grad_w may alias grad_u). */
void xf_plaw_grad_to_w(const xf_plaw_coords *pc, const double *w, const double *grad_u,
		       double *grad_w);
/* A Gaussian in u (mean, cov [d·d], full) carried to w by the linearisation at the mean:
 * mean_w = to_w(mean), cov_w = G·cov·Gᵀ with G = dw/du there (both in place). 0, or −1
 * out of memory. */
int xf_plaw_gauss_to_w(const xf_plaw_coords *pc, double *mean, double *cov);

/* A log density over u (logp, ctx) seen over w, for the sampler: log p(C(w)) + log|du/dw|
 * and its gradient. u and g: [d] workspace. */
typedef struct xf_plaw_target {
	xf_logp_fn logp;
	void *ctx;
	const xf_plaw_coords *pc;
	double *u, *g;
} xf_plaw_target;
int xf_plaw_target_logp(void *ctx, const double *w, double *logp, double *grad);
/* n draws [n·d] sampled in w back to u in place, their log densities to u's (logp [n]). */
void xf_plaw_draws_to_u(const xf_plaw_coords *pc, int n, double *draws, double *logp);

#endif
