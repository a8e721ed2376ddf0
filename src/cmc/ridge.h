/* ridge.h — the importance route's proposal along a ridge (ridge.c, adr/0099).
 *
 * Where the posterior runs along one coordinate u_k far past what its Laplace
 * approximation or a fitted map can follow (D0 decided by its prior on an 11.5 M-point
 * laminar file: the other coordinates' centre and widths change along it), the rounds'
 * weighted points are too few to fit it. The ridge proposal asks the exact posterior
 * instead, on a grid of slices u_k = v_i (slice.h): each slice's maximum μ_i over the
 * other coordinates, the Gauss–Newton covariance Σ_i there, and its Laplace log mass ℓ_i.
 *
 *   u_k     = F⁻¹(Φ(z₀))  F: the piecewise-exponential density through (v_i, ℓ_i), with
 *                         exponential tails beyond the end nodes
 *   u_rest  = μ(u_k) + chol(Σ(u_k))·z_rest   μ, Σ linear between the two nodes around u_k
 *
 * z the route's base (the defensive t mixture on N(0, I)); the map is triangular and
 * monotone in z₀, so log q(u) = log base(z) − log|du/dz| is exact, with
 * log|du/dz| = log φ(z₀) − log f(u_k) + log|chol(Σ(u_k))|. */
#ifndef XPCSFIT_CMC_RIDGE_H
#define XPCSFIT_CMC_RIDGE_H

#include "cmc/isprop.h"
#include "cmc/plaw_coords.h"
#include "cmc/slice.h"

#define XF_RIDGE_NODES_MAX 64	/* slices in all */
#define XF_RIDGE_DROP	   12.0 /* a side ends where ℓ falls this far below its top */

typedef struct xf_ridge {
	int d, k, n;	       /* coordinates; the ridge's; nodes */
	double *v;	       /* [n] u_k of each node, increasing */
	double *ell;	       /* [n] log density of u_k there, normalised (F's) */
	double *mu;	       /* [n·d] each slice's maximum (coordinate k: v) */
	double *cov;	       /* [n·(d−1)²] the other coordinates' covariance there */
	double *mass_lo;       /* [n + 1] F below node i (i < n), 1 at n: the pieces' cumulative */
	double lam_lo, lam_hi; /* the tails' decay rates (per unit of u_k) */
	double *work;	       /* [(d − 1)² + 2·d] */
	long passes;	       /* passes over the data the grid took */
	xf_plaw_coords pc;     /* the coordinates the centres and covariances live in */
	double bend;	       /* how far the centres move between nodes there (choose_coords) */
} xf_ridge;

/* The grid along coordinate k from the slice through u0 (the NLSQ optimum in u-space,
 * log σ last) outward, first steps of half u_k's sd in cov_u (the Laplace covariance,
 * d × d, which with slopes — NLSQ's, may be NULL — also decides the power-law
 * coordinates). 0; 1 when no usable grid came out (fewer than 3 slices, or a slice
 * without a maximum at the centre); −1 out of memory. */
int xf_ridge_build(xf_ridge *rg, xf_slice *s, int k, const double *u0, const double *cov_u,
		   const xf_plaw_slope *slopes);
void xf_ridge_free(xf_ridge *rg);

/* A ridge from n given nodes (v [n], ℓ [n] any offset, centres mu [n·d] and the other
 * coordinates' covariances cov [n·(d − 1)²], all in u: no power-law coordinates), as
 * xf_ridge_build makes one from slices. 0; 1 when n is outside 3 … XF_RIDGE_NODES_MAX;
 * −1 out of memory. */
int xf_ridge_from_nodes(xf_ridge *rg, int d, int k, int n, const double *v, const double *ell,
			const double *mu, const double *cov);

/* u of base coordinates z; returns log|du/dz| (−∞ or NaN where z has no image). */
double xf_ridge_to_u(const xf_ridge *rg, const double *z, double *u);

/* The ridge as the route's proposal (isprop.h): draw and to_u; no refit, no restart. */
void xf_is_prop_ridge(xf_is_prop *p, xf_ridge *rg);

#endif
