/* ridge.h — fits that end on a ridge (adr/0047): a valley of equally good fits along a
 * near-null direction of JᵀJ, such as D0·t^α + D_offset at α ≈ 0, where only D0 + D_offset
 * is seen by the data. The analysis names what the data do identify; the watcher stops an
 * optimiser run that crawls along such a valley. */
#ifndef XPCSFIT_NLSQ_RIDGE_H
#define XPCSFIT_NLSQ_RIDGE_H

#include "nlsq/nlsq_internal.h"

/* An eigen-direction of the Jacobi-scaled JᵀJ whose eigenvalue is below this fraction of
 * the largest is ill-determined. Measured (adr/0047): healthy fits ≥ 4e-6 (static, α from
 * 0.02 to 0.5, D_offset free; CHX with D_offset fixed 2.5e-3), the CHX ridge 1.6e-10, an
 * exact ridge (α = 0) 1e-16. */
#define XF_RIDGE_RATIO 1e-8
/* The crawl test looks back over this many accepted steps... */
#define XF_RIDGE_WINDOW 8
/* ...over which χ² fell by at most this many noise units (s² = χ²/(n − p))... */
#define XF_RIDGE_CRAWL_NOISE 0.5
/* ...while at least this fraction of the scaled displacement lay in the ill subspace. */
#define XF_RIDGE_ALONG 0.9
/* Where the valley leads is then probed (run.c): one run from the point where the crawl's
 * displacement, continued, meets the box; its end replaces the stop when it is better by
 * more than this many noise units (a valley that slopes on to an end where the data do
 * inform the fit, a bound, say). */
#define XF_RIDGE_AHEAD_NOISE 1.0
/* The probe's budget: measured, a far end that is better showed it within 5 iterations
 * (a static fit whose valley ends on the D0 bound), a flat valley (CHX) needs 30 to get
 * back to its floor from the straight-line far end. */
#define XF_RIDGE_PROBE_ITERATIONS (2 * XF_RIDGE_WINDOW)

/* What the data identify at x (jtj and b = −Jᵀr there) over the free parameters of
 * free_mask: id receives the combinations of parameters that the well-determined
 * directions pin down (value and sd; noise_factor scales (JᵀJ)⁺ into the covariance: s²,
 * or 1 with σ given), the parameters not identified one by one and the fix; n_combos 0
 * when no direction is ill-determined or no combination is left. *well_se receives the
 * Gauss-Newton step over the well-determined directions in standard errors (how far the
 * point is from the floor of the valley). Returns 0, or −1 when out of memory. */
int xf_ridge_identify(const xf_problem *pr, const int *free_mask, const double *x,
		      const double *jtj, const double *b, double chi2, double noise_factor,
		      xf_identified *id, double *well_se);

/* The verdict of checks.c: a fit that is not informed (or that the watcher stopped) and
 * sits on the floor of a valley whose combinations the data identify ends on a ridge:
 * res->status "ridge", quality.identified filled, its reason first. Returns 1 then. */
int xf_ridge_judge(const xf_fit_ctx *ctx, const xf_fit_point *best, xf_nlsq_result *res);

/* The crawl watcher of an optimiser run on all the data (run.c, lm.h's ridge hook). */
typedef struct xf_ridge_watch xf_ridge_watch;
xf_ridge_watch *xf_ridge_watch_create(const xf_problem *pr, const int *free_mask);
/* After every accepted step: 1 when the last XF_RIDGE_WINDOW steps crawled along an
 * ill-determined direction (the run then stops with XF_STOP_RIDGE). */
int xf_ridge_watch_step(void *watch, const double *x, double chi2, const double *jtj);
void xf_ridge_watch_free(xf_ridge_watch *w);
/* After a stop: edge (n_full) receives x moved along the displacement that fired until
 * the first free parameter meets its bound. 0, or −1 when there is no such point. */
int xf_ridge_watch_edge(const xf_ridge_watch *w, const double *x, double *edge);
/* Forget the window (a new run from another point). */
void xf_ridge_watch_reset(xf_ridge_watch *w);

#endif
