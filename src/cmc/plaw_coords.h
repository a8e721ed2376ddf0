/* plaw_coords.h — sampling coordinates for a power law with an offset (plaw_coords.c;
 * adr/0082, adr/0083).
 *
 * The model's rates are A·t^e + c twice: D(t) = D0·t^α + D_offset and, under flow,
 * γ̇(t) = γ̇0·t^β + γ̇_offset. The data pin the rate's value and log-slope near the middle
 * of the time window, t_ref = dt·√(N − 1): the level S = A·t_ref^e + c and the slope
 * e·A (·t_ref^e ≈ 1 where e is near 0). In the sampler's logit coordinates u that makes a
 * curved ridge (A and c trade along S = const) and, when e is near 0, a funnel (e's width
 * shrinks as 1/A); where the data say nothing of A one by one, the ridge runs over
 * decades of A. The coordinates w make the level and the slope linear in physical units,
 * so the thin directions keep one width and one orientation along the whole ridge:
 *
 *   u_A = w_A
 *   e   = [q₀ + A₀·(w_e − u_e0)/k_e] / A,  u_e = logit(e)   the slope e·A linear in w_e
 *   c   = S₀ + (w_c − u_c0)/k_c − A·t_ref^e, u_c = logit(c)  the level linear in w_c
 *
 * (A₀, q₀ = e₀·A₀, S₀: A, the slope and the level at the start u0; k_e, k_c: du/dx of e
 * and c there, so that u = w and du/dw = 1 on the diagonal at the start.) The logit is
 * continued by its tangent within 1e-12 of a bound's width, so the map is one-to-one
 * over all reals; where e or c would leave its bounds the density vanishes (the logit's
 * Jacobian): a bound that cuts the ridge is a wall in w, as it is in x. log|du/dw| and its
 * gradient are exact and analytic (no second derivative of the model is needed).
 *
 * A piece takes part only on a ridge: where the start's covariance gives A a relative sd
 * above XF_PLAW_RIDGE_REL_SD (a start against A's bound: an sd in u above 0.5) and A's
 * correlation with e (the slope piece, also A's sd in u below XF_PLAW_RIDGE_MAX_U_SD) or
 * c (the level piece, negatively: a pinned level trades c against A) above
 * XF_PLAW_RIDGE_CORR, and only where its e or c stays inside
 * its bounds over A's range (XF_PLAW_WALL_SD) — elsewhere the logit is straight over the
 * posterior and these coordinates only add curvature (measured on the bundled configs),
 * and where the data say nothing (the prior alone: independent in u) the slope piece would
 * make the funnel it removes on a ridge (adr/0082). The level piece needs A, e and c
 * sampled; the slope piece lo_A ≥ 0, lo_e < 0 < hi_e and e within XF_PLAW_NEAR_ZERO_SD sds
 * of 0 (a funnel is there only when e = 0 is in reach). Every other coordinate is the
 * identity. */
#ifndef XPCSFIT_CMC_PLAW_COORDS_H
#define XPCSFIT_CMC_PLAW_COORDS_H

#include "cmc/sampler.h"
#include "xpcsfit/likelihood.h"

#define XF_PLAW_MAX	     2	  /* power laws in a model: D(t) and γ̇(t) */
#define XF_PLAW_RIDGE_REL_SD 0.05 /* A's sd over |A| above which a triple takes part */
#define XF_PLAW_NEAR_ZERO_SD 10.0 /* e within this many sds of 0: non-centred */
#define XF_PLAW_RIDGE_CORR   0.9  /* |corr| of A with e (with c) that makes a ridge */
/* A's sd in u (≈ log A) below which the slope piece applies to chains that sample every
 * coordinate (above, over e-folds of A, NUTS failed in it: test_cmc_calibration's small
 * SBC files, R̂ 1.9, adr/0083; small static replicates 3 and 21 of
 * validation/fallback/replicates.py, R̂ 2.9 and 3.4 with the cap lifted, adr/0084; the
 * level piece has no such limit; nor do collapsed chains, xf_plaw_coords_init_wide) */
#define XF_PLAW_RIDGE_MAX_U_SD 2.0
/* A piece applies only where e (the slope piece) or c (the level piece) stays inside its
 * bounds while A moves this many of its sds in u either side of the start: a bound that
 * cuts the ridge is a wall in w (adr/0084) */
#define XF_PLAW_WALL_SD 2.0
/* … for the importance route's proposal: a draw beyond a wall has density 0 and weight 0,
 * so a wall past 1 sd wastes at most ~16 % of the draws, where a curved ridge left
 * without its piece wastes nearly all (the 23 × 1000 α ≈ −0.02 laminar file: D_offset's
 * bound cuts D0's ridge 1.6 sds up; without the level piece IS-ESS 1 of 500, adr/0097) */
#define XF_PLAW_WALL_SD_ROUTE 1.0

typedef struct xf_plaw_triple {
	int law;	     /* 0: D(t), 1: γ̇(t) */
	int a, e, c;	     /* coordinate of A, e and c (c: −1 when not sampled) */
	double lo[3], hi[3]; /* bounds of A, e, c */
	int noncentre;	     /* 1: the slope piece (e·A linear in w_e) */
	double a0;	     /* A at the start */
	double ue0, ke, q0;  /* the slope piece: u_e, du_e/de and e·A at the start */
	double uc0, kc, s0;  /* the level piece: u_c, du_c/dc and A·t_ref^e + c there */
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
/* The same with the slope piece also where A spreads over e-folds: for a proposal whose
 * draws are checked against the exact posterior (the importance route: its gates judge
 * draw by draw, adr/0084), and for NUTS chains with the per-angle scaling integrated out
 * (adr/0086), whose ridge the scaling no longer bends: there the funnel the slope piece
 * removes is what NUTS could not cross (small static replicate 43, one angle, α 0.07,
 * D0 decided by its prior: R̂ 1.26 after 613 s, 6.4 M passes with the cap; R̂ 1.005 in
 * 14 s with it lifted, adr/0088). Chains that sample every coordinate keep the cap. */
void xf_plaw_coords_init_wide(xf_plaw_coords *pc, const xf_problem *pr, const int *param, int d,
			      const double *u0, const double *cov);
/* The slope e·A that the data pin, as NLSQ measured it: its value at NLSQ's optimum and
 * its linearised sd from NLSQ's covariance (warm.c), one per power law (D(t), γ̇(t));
 * known 0 where NLSQ gave no finite covariance of A and e. */
typedef struct xf_plaw_slope {
	int known;
	double q, sd_q;
} xf_plaw_slope;

/* Who uses the coordinates: chains that sample every coordinate (the cap on A's sd in u
 * for the slope piece), chains with the scaling integrated out (_wide: no cap), or the
 * importance route's proposal (no cap, and walls tested at XF_PLAW_WALL_SD_ROUTE). */
enum { XF_PLAW_CHAINS = 0, XF_PLAW_WIDE = 1, XF_PLAW_ROUTE = 2 };
/* Any of the three (use: XF_PLAW_*) with the slopes NLSQ measured (slope
 * [XF_PLAW_MAX], NULL: read from u0 and cov) deciding whether e = q/A stays inside e's
 * bounds. cov is the chains' initial metric: where the start was moved off A's bound it
 * holds NLSQ's widths at another A, and where A's variance was capped its correlations at
 * another width — the slope read from it there is not the one the data pin (adr/0091). */
void xf_plaw_coords_init_at(xf_plaw_coords *pc, const xf_problem *pr, const int *param, int d,
			    const double *u0, const double *cov, const xf_plaw_slope *slope,
			    int use);

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
/* The pieces in use, for run.log: e.g. "D(t) level and slope" or "none". */
void xf_plaw_describe(const xf_plaw_coords *pc, char *buf, size_t size);

#endif
