/* lm.h — bounded Levenberg-Marquardt on a streamed JᵀJ (the optimiser of adr/0004). */
#ifndef XPCSFIT_NLSQ_LM_H
#define XPCSFIT_NLSQ_LM_H

#include "xpcsfit/nlsq.h"

/* χ², JᵀJ (n×n) and b = −Jᵀr at x; returns 0, or nonzero when χ² is not finite. */
typedef int (*xf_lm_eval_fn)(void *ctx, const double *x, double *chi2, double *jtj, double *b);

typedef struct xf_lm_setup {
	int n;		      /* parameters */
	const double *lower;  /* [n] */
	const double *upper;  /* [n] */
	const double *scale;  /* [n] typical magnitude (bound width) */
	const int *free_mask; /* [n] 1 = varied */
	int max_iterations;   /* trial steps allowed (each costs one pass) */
	double xtol, gtol, ftol;
	xf_nlsq_progress_fn progress;
	void *progress_ctx;
	const char *phase;
} xf_lm_setup;

typedef struct xf_lm_outcome {
	int iterations;		 /* trial steps evaluated */
	const char *stop_reason; /* xtol gtol ftol max_iterations singular non_finite */
	double chi2;		 /* at the returned x */
} xf_lm_outcome;

/* Minimise from x (in/out, clipped into the bounds first). jtj/b receive the values at
 * the returned x. Returns 0 when the start could be evaluated, −1 otherwise. */
int xf_lm_solve(const xf_lm_setup *s, xf_lm_eval_fn eval, void *ctx, double *x, double *jtj,
		double *b, xf_lm_outcome *out);

#endif
