/* ring_consistency.h — do the q rings of a joint fit share its physical parameters?
 * (adr/0074, which replaced adr/0066's per-parameter sd distances).
 *
 * Each ring is judged as a whole: the χ² increase when it must share the physical
 * parameters of the other rings, against the χ² of the others and its own fit with
 * everything free: excess_k = χ²(A) − χ²(A∖k) − χ²(k alone), in noise units. With the
 * rings sharing their parameters it is a likelihood-ratio statistic, chi-square with as
 * many degrees of freedom as ring k gains when let go (its free physical parameters, and
 * its scaling where the set shared it). The ring with the largest excess
 * is removed when its p-value is below XF_RING_FALSE_ALARM / (rings compared), and the
 * rest are judged again, until they agree or two are left. */
#ifndef XPCSFIT_NLSQ_RING_CONSISTENCY_H
#define XPCSFIT_NLSQ_RING_CONSISTENCY_H

#include "xpcsfit/error.h"
#include "xpcsfit/nlsq.h"

/* The family-wise false-alarm rate of one round of the check (Bonferroni over its rings):
 * measured on rings that share one truth (adr/0074). */
#define XF_RING_FALSE_ALARM 1e-4

/* One ring's verdict. */
typedef struct xf_ring_test {
	double excess;	/* χ² increase on sharing, noise units (≥ 0); NAN: not compared */
	int df;		/* its degrees of freedom: the parameters the ring gains when let go */
	double p_value; /* chi-square upper tail of excess */
	double z;     /* diagnostic: largest |Δ|/sqrt(sd_ring² + sd_others²) of the last round */
	int param;    /* its parameter (−1: none) */
	int compared; /* 1: judged at least once */
	int flagged;  /* 1: removed as disagreeing with the others */
	int round;    /* round it was flagged in (1-based), 0 otherwise */
} xf_ring_test;

/* Fit the rings with use[k] set (several: jointly, shared physical parameters). */
typedef int (*xf_ring_fit_fn)(void *ctx, const int *use, xf_nlsq_result *res, xf_error *err);

/* The check over the rings with active[k] set (their own fits own[k] usable); active is
 * updated (flagged rings cleared), test[k] filled. Returns 0 or the error's code. */
int xf_ring_consistency(int n, const xf_nlsq_result *own, int *active, xf_ring_fit_fn fit,
			void *ctx, xf_ring_test *test, xf_error *err);

/* The upper tail P(X > x) of a chi-square with df (≥ 1) degrees of freedom; exact
 * (closed form for integer df). */
double xf_chi2_upper_tail(double x, int df);

/* The largest |Δ|/sqrt(sd_a² + sd_b²) over the physical parameters free in both fits;
 * *which its parameter (−1: none comparable). */
double xf_ring_max_sd(const xf_nlsq_result *a, const xf_nlsq_result *b, int *which);

#endif
