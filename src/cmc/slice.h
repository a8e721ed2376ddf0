/* slice.h — the exact posterior's slice u_k = v, maximised over every other coordinate
 * (slice.c): where the slice's maximum lies, its Laplace log mass, and the Gauss–Newton
 * curvature of the other coordinates there. The probe beyond the draws (beyond.c,
 * adr/0087) walks slices out past the draws' extreme; the ridge proposal (ridge.c,
 * adr/0099) lays them along a ridge to build a proposal from them. */
#ifndef XPCSFIT_CMC_SLICE_H
#define XPCSFIT_CMC_SLICE_H

#include "cmc/run_internal.h"

typedef struct xf_slice {
	xf_cmc_target t; /* the one-shard full-data target, temper 1 */
	int nt, d;	 /* sampled θ; d = nt + 1 (log σ last) */
	double *g, *b, *jtj, *h, *delta, *trial;
	long passes; /* passes over the data so far */
	int lead;    /* the start xf_slice_next tries first: the last prediction's winner */
} xf_slice;

/* The slice's workspace and its pass over every point of the run's one shard. 0, or an
 * error code with err set. */
int xf_slice_open(xf_slice *p, const cmc_run *r, xf_error *err);
void xf_slice_close(xf_slice *p);

/* x of parameter j at u (inside its bounds) */
double xf_slice_u_to_x(const xf_problem *pr, int j, double u);

/* log target (and gradient when g != NULL) at u: 0, or −1 where it has none */
int xf_slice_logp(xf_slice *p, const double *u, double *lp, double *g);

/* u moved to the maximum of the log target over every coordinate but k (Newton steps
 * with the Gauss–Newton curvature, a backtracking line search); *ell the slice's Laplace
 * log mass, log p(u) − ½·log|H|, H that curvature over the d − 1 other coordinates.
 * 0: at the maximum (the last Newton step's quadratic model's, once what that step would
 * gain is below 0.01), and p->h then holds H's lower Cholesky factor at the last point
 * evaluated, within that step (row-major, (d − 1)², the coordinates in order without k);
 * 1 when the steps did not reach it (a curved valley crawled along: *ell too low); −1
 * where the log target or H is unusable. */
int xf_slice_max(xf_slice *p, int k, double *u, double *ell);

/* The slice u_k = v from the last two maxima ua, ue (ua NULL: from the last maximum
 * moved to v): from the extrapolation that won the last prediction (p->lead) where its
 * first Newton step would gain < 0.5 (adr/0103); else from the best of three
 * extrapolations by log target, and from ue moved to v where that finds no maximum: the
 * maximum into uc [d], xf_slice_max's return value. */
int xf_slice_next(xf_slice *p, int k, const double *ua, const double *ue, double v, double *uc,
		  double *ell);

#endif
