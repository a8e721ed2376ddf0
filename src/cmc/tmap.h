/* tmap.h — the importance route's proposal as a transport map (tmap.c; adr/0078): base
 * points z (the defensive t mixture of proposal.h on N(0, I)) carried to the sampler's
 * u-space by a map fitted to the previous round's weighted points, so that one proposal
 * family covers a Gaussian posterior, a skewed one and one curved along a ridge.
 *
 *   linear   u = μ + L·z                      (the Laplace or a weighted Gaussian: the
 *                                              route's first round, xf_mix_draw's points)
 *   curved   u = μ + A·y,  A = V·Λ^{1/2} (principal axes; y₀ the one the others bend
 *                                          along most, usually the widest)
 *            y₀ = split₀(z₀)                   per-axis split scales: skew
 *            y_j = a_j + b_j·y₀ + c_j·y₀² + σ_j(y₀)·(L_r·split(z_{1..}))_j   (j ≥ 1): the
 *            other axes' centre bends quadratically with the widest (a curved ridge)
 *                                             — within 3 whitened sds; beyond, along its
 *                                             tangent (tmap.c: bend_sq) — and, where the
 *                                             weights show it, their width changes along
 *                                             it: log σ_j a quadratic in y₀ within 3 sds,
 *                                             constant beyond (adr/0097)
 *            split_j(z) = c_j + a·z + b·(√(1 + z²) − 1), a, b = (s₊ ± s₋)/2: a smooth
 *                         skew, slope s₋ far below the centre and s₊ far above
 *            or, where the weights carry enough points (XF_TMAP_ESS_KNOTS), a monotone
 *            spline (GSL's Steffen) through the axis's weighted quantiles at the base's
 *            Φ(±1.5, ±1, ±0.5, 0), continued to z = ±4 and beyond by the split's s₋, s₊:
 *            the axis's whole marginal shape — a flat top (a prior-decided shelf along a
 *            ridge) as well as a skew (adr/0085)
 *
 * Every piece is triangular and monotone, so the map is a bijection with a Jacobian
 * |det A|·|det L_r|·Π split_j'(z_j)·Π σ_j(y₀) that is known at every point: log q(u) = log base(z) −
 * log|du/dz|, exact, as importance sampling needs. */
#ifndef XPCSFIT_CMC_TMAP_H
#define XPCSFIT_CMC_TMAP_H

#include <gsl/gsl_interp.h>
#include <stdint.h>

enum { XF_TMAP_LINEAR = 0, XF_TMAP_CURVED = 1 };

#define XF_TMAP_KNOTS 9 /* knots of an axis's spline (tmap.c: xf_tmap_knot_z) */

typedef struct xf_tmap {
	int d;
	int kind;	/* XF_TMAP_LINEAR or XF_TMAP_CURVED */
	double *mu;	/* [d] centre, u-space */
	double *a;	/* [d·d] row-major: linear: the lower Cholesky factor L; curved: A */
	double log_det; /* log|det A| + log|det L_r| (curved), log|det L| (linear) */
	double *cov; /* [d·d] the Gaussian part's covariance (L·Lᵀ, or the last fit's shrunk one): what the next fit shrinks towards */
	double *quad;	     /* [d·3] curved: a_j, b_j, c_j of y_j's centre (row 0 unused) */
	double *lr;	     /* [d·d] curved: lower factor of the residual covariance (rows and
			      columns 1..d−1; [0][0] = 1) */
	double *hs;	     /* [d·3] curved: log σ_j(y₀) = a + b·t + c·t², t = y₀ within
			      XF_TMAP_BEND_REACH (row 0 unused; all 0: no scale) */
	int *scaled;	     /* [d] 1: axis j's residual row is scaled by σ_j(y₀) */
	double *centre;	     /* [d] split centres, whitened units */
	double *s_lo;	     /* [d] split scales below the centre */
	double *s_hi;	     /* [d] … and above it */
	int *knotted;	     /* [d] 1: the axis is the spline through knot_v, not the split */
	double *knot_v;	     /* [d·XF_TMAP_KNOTS] the spline's values at xf_tmap_knot_z */
	gsl_interp **spline; /* [d] Steffen's spline of a knotted axis */
	double *zero, *eye;  /* [d], [d·d]: the base's N(0, I) for xf_mix_draw */
	double *work;	     /* [3·d] scratch of xf_tmap_to_u and _draw: one caller at a time */
} xf_tmap;

/* Workspace for d coordinates; 0 or −1 out of memory. */
int xf_tmap_alloc(xf_tmap *m, int d);
void xf_tmap_free(xf_tmap *m);

/* The linear map u = mean + L·z (chol: lower, row-major d×d). */
void xf_tmap_linear(xf_tmap *m, const double *mean, const double *chol);

/* Fit the curved map to n weighted points u[n][d] (w: normalised, Σ = 1). Their
 * covariance is shrunk towards the map's present one, (ess·Σ_w + κ·Σ)/(ess + κ) with
 * κ = XF_TMAP_SHRINK·d: from a few dozen effective points in 16 dimensions the weighted
 * covariance is mostly noise. The quadratic
 * bend and the split scales are fitted only where the weights carry enough points for them
 * (ess: the points' IS-ESS); what is not fitted stays Gaussian. 0, −1 out of memory, or 1
 * when the weighted covariance is not positive definite (the map is then unchanged). */
int xf_tmap_fit(xf_tmap *m, const double *u, const double *w, int n, double ess);

/* Axis j of a curved map as the spline through v [XF_TMAP_KNOTS] at xf_tmap_knot_z
 * (strictly increasing; its tails beyond the outer knots take the split's s_lo, s_hi
 * where steeper than the spline's end): 1, 0 when v is not strictly increasing and
 * finite (the axis keeps its split), −1 out of memory. */
extern const double xf_tmap_knot_z[XF_TMAP_KNOTS];
int xf_tmap_set_knots(xf_tmap *m, int j, const double *v);

/* u of base coordinates z; returns log|du/dz|. Not reentrant (m->work). */
double xf_tmap_to_u(const xf_tmap *m, const double *z, double *u);

/* Point i of the proposal (the mixture of proposal.h with Gaussian weight core, base
 * coordinates under seed, as xf_mix_draw) into u[d], its base coordinates into z[d] (may
 * be NULL); returns log q(u). Linear maps give xf_mix_draw's points bit for bit. */
double xf_tmap_draw(const xf_tmap *m, uint64_t seed, uint64_t i, double core, double *z, double *u);

#endif
