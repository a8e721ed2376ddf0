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
	/* trials between the two ends of the stall test (xf_lm_stalled); 0 turns it off */
	int stall_window;
	double lambda0; /* initial damping (0: the default, 1e-3); small near the optimum */
	/* Optional watcher, asked before every trial with the current point, its χ² and the
	 * reduction a full Gauss-Newton step predicts (NAN when H is singular): nonzero
	 * stops the run with XF_STOP_WORSE (a search path racing better end points). */
	int (*watch)(void *watch_ctx, const double *x, double chi2, double gn_reduction);
	void *watch_ctx;
	/* Optional ridge watcher (nlsq/ridge.h), told every accepted point with JᵀJ there:
	 * nonzero stops the run with XF_STOP_RIDGE (a crawl along a valley). */
	int (*ridge)(void *ridge_ctx, const double *x, double chi2, const double *jtj);
	void *ridge_ctx;
	xf_nlsq_progress_fn progress;
	void *progress_ctx;
	const char *phase;
	int screening; /* passed on in xf_nlsq_progress */
} xf_lm_setup;

typedef struct xf_lm_outcome {
	int iterations;	     /* trial steps evaluated */
	xf_stop_reason stop; /* why the solver stopped */
	double chi2;	     /* at the returned x */
	double lambda;	     /* damping at the end */
} xf_lm_outcome;

/* Minimise from x (in/out, clipped into the bounds first). jtj/b receive the values at
 * the returned x. Returns 0 when the start could be evaluated, −1 otherwise. */
int xf_lm_solve(const xf_lm_setup *s, xf_lm_eval_fn eval, void *ctx, double *x, double *jtj,
		double *b, xf_lm_outcome *out);

/* The damping (Nielsen's rule): λ scales Moré's diagonal; one home for its update. */
typedef struct xf_damping {
	double lambda, nu;
} xf_damping;

void xf_damping_init(xf_damping *d, double lambda0);
/* A step was accepted with gain ratio rho (actual / predicted reduction). */
void xf_damping_accept(xf_damping *d, double rho);
/* A step was refused or could not be solved. */
void xf_damping_reject(xf_damping *d);

/* Stall test between a trial `stall_window` trials ago ("then") and now: χ² barely moved
 * while λ grew by orders of magnitude or sits high. */
int xf_lm_stalled(double chi2_then, double lambda_then, double chi2_now, double lambda_now);

#endif
