/* run.c — one optimiser run of the fit (nlsq_internal.h): the counted passes, the
 * solver's parameter space and the fit points it starts from and ends at.
 *
 * The solver works on log D0 and log γ̇0 (when their bounds are positive) instead of D0
 * and γ̇0: the rate D0·t^α + D_offset makes the (D0, α) valley a curve — along it D at
 * the middle of the window stays put while D0 changes by decades — and Levenberg-
 * Marquardt crawls along curved valleys in short damped steps. In log D0 the valley is a
 * straight line (log D(t) = log D0 + α log t) that a Gauss-Newton step follows. The
 * minimum is the same point; points outside the solver are always physical. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/nlsq_internal.h"

int xf_fit_point_alloc(xf_fit_point *p, int n_full)
{
	size_t n = (size_t)n_full;
	p->x = malloc(sizeof(double) * n);
	p->jtj = malloc(sizeof(double) * n * n);
	p->b = malloc(sizeof(double) * n);
	p->chi2 = NAN;
	p->stop = XF_STOP_NON_FINITE;
	p->competitor_chi2 = NAN;
	return !(p->x && p->jtj && p->b);
}

void xf_fit_point_free(xf_fit_point *p)
{
	free(p->x);
	free(p->jtj);
	free(p->b);
	p->x = p->jtj = p->b = NULL;
}

void xf_fit_point_copy(xf_fit_point *dst, const xf_fit_point *src, int n_full)
{
	size_t n = (size_t)n_full;
	memcpy(dst->x, src->x, sizeof(double) * n);
	memcpy(dst->jtj, src->jtj, sizeof(double) * n * n);
	memcpy(dst->b, src->b, sizeof(double) * n);
	dst->chi2 = src->chi2;
	dst->stop = src->stop;
	dst->competitor_chi2 = src->competitor_chi2;
}

int xf_fit_pass(xf_fit_ctx *ctx, xf_fit_role role, const double *x, xf_lik_out *out)
{
	if (role == XF_ROLE_FULL)
		ctx->full_passes++;
	else
		ctx->screen_passes++;
	return xf_lik_eval(role == XF_ROLE_FULL ? ctx->full : ctx->screen, x, out);
}

/* The solver's space: u_k = log x_k for the scale parameters, u_k = x_k otherwise. */
typedef struct solver_space {
	const xf_problem *pr;
	int *is_log;		      /* [n] */
	double *lower, *upper, *scale; /* [n] in u */
	double *x;		      /* [n] physical point of the current u */
} solver_space;

static int space_init(solver_space *sp, const xf_problem *pr)
{
	int n = pr->n_full;
	sp->pr = pr;
	sp->is_log = calloc((size_t)n, sizeof(int));
	sp->lower = malloc(sizeof(double) * (size_t)n);
	sp->upper = malloc(sizeof(double) * (size_t)n);
	sp->scale = malloc(sizeof(double) * (size_t)n);
	sp->x = malloc(sizeof(double) * (size_t)n);
	if (!sp->is_log || !sp->lower || !sp->upper || !sp->scale || !sp->x)
		return -1;
	for (int k = 0; k < n; k++) {
		int scale_param = k == XF_P_D0 || (pr->mode == XF_MODE_LAMINAR &&
						   k == XF_P_GAMMA_DOT_T0);
		sp->is_log[k] = scale_param && k < pr->n_phys && pr->lower[k] > 0.0 && !getenv("XF_NOLOG");
		sp->lower[k] = sp->is_log[k] ? log(pr->lower[k]) : pr->lower[k];
		sp->upper[k] = sp->is_log[k] ? log(pr->upper[k]) : pr->upper[k];
		sp->scale[k] = sp->upper[k] - sp->lower[k];
	}
	return 0;
}

static void space_free(solver_space *sp)
{
	free(sp->is_log);
	free(sp->lower);
	free(sp->upper);
	free(sp->scale);
	free(sp->x);
}

static void to_physical(const solver_space *sp, const double *u, double *x)
{
	for (int k = 0; k < sp->pr->n_full; k++)
		x[k] = sp->is_log[k] ? exp(u[k]) : u[k];
}

static void to_solver(const solver_space *sp, const double *x, double *u)
{
	for (int k = 0; k < sp->pr->n_full; k++)
		u[k] = sp->is_log[k] ? log(x[k]) : x[k];
}

/* JᵀJ and b between the spaces: ∂/∂u_k = (dx_k/du_k)·∂/∂x_k, dx/du = x for log. The
 * factor is `x` going to u and `1/x` coming back. */
static void chain(const solver_space *sp, const double *x, int to_u, double *jtj, double *b)
{
	int n = sp->pr->n_full;
	for (int k = 0; k < n; k++) {
		if (!sp->is_log[k])
			continue;
		double f = to_u ? x[k] : 1.0 / x[k];
		b[k] *= f;
		for (int l = 0; l < n; l++) {
			jtj[(size_t)k * n + l] *= f;
			jtj[(size_t)l * n + k] *= f;
		}
	}
}

typedef struct eval_ctx {
	xf_fit_ctx *fit;
	xf_fit_role role;
	solver_space *sp;
	const xf_fit_run *run;
} eval_ctx;

static int eval_in_u(void *ctx, const double *u, double *chi2, double *jtj, double *b)
{
	eval_ctx *e = ctx;
	to_physical(e->sp, u, e->sp->x);
	xf_lik_out out = { 0.0, jtj, b, 0.0 };
	int rc = xf_fit_pass(e->fit, e->role, e->sp->x, &out);
	*chi2 = out.chi2;
	if (getenv("XF_DEBUG_X")) { fprintf(stderr, "X %s %.10g", e->run->phase, out.chi2); for (int k = 0; k < e->fit->pr->n_full; k++) fprintf(stderr, " %.6g", e->sp->x[k]); fprintf(stderr, "\n"); }
	if (rc == 0 && jtj)
		chain(e->sp, e->sp->x, 1, jtj, b);
	return rc;
}

static int watch_in_u(void *ctx, const double *u, double chi2, double gn_reduction)
{
	eval_ctx *e = ctx;
	to_physical(e->sp, u, e->sp->x);
	return e->run->watch(e->run->watch_ctx, e->sp->x, chi2, gn_reduction);
}

int xf_fit_lm(xf_fit_ctx *ctx, const xf_fit_run *run, xf_fit_point *p)
{
	const xf_problem *pr = ctx->pr;
	solver_space sp;
	memset(&sp, 0, sizeof sp);
	eval_ctx e = { ctx, run->role, &sp, run };
	xf_lm_setup s = {
		.n = pr->n_full,
		.free_mask = run->free_mask,
		.max_iterations = run->max_iterations,
		.xtol = ctx->opt->xtol,
		.gtol = ctx->opt->gtol,
		.ftol = run->ftol,
		.stall_window = run->stall_window,
		.lambda0 = run->lambda0,
		.watch = run->watch ? watch_in_u : NULL,
		.watch_ctx = &e,
		.progress = ctx->progress,
		.progress_ctx = ctx->progress_ctx,
		.phase = run->phase,
		.screening = run->role == XF_ROLE_SCREEN,
	};
	xf_lm_outcome out;
	int rc = -1;
	if (space_init(&sp, pr))
		goto done;
	s.lower = sp.lower;
	s.upper = sp.upper;
	s.scale = sp.scale;
	/* physical points are inside the bounds; clip before the log of a bound value */
	for (int k = 0; k < pr->n_full; k++)
		p->x[k] = fmin(fmax(p->x[k], pr->lower[k]), pr->upper[k]);
	to_solver(&sp, p->x, p->x);
	rc = xf_lm_solve(&s, eval_in_u, &e, p->x, p->jtj, p->b, &out);
	to_physical(&sp, p->x, p->x);
	if (rc)
		goto done;
	chain(&sp, p->x, 0, p->jtj, p->b);
	if (run->role == XF_ROLE_FULL)
		ctx->full_iterations += out.iterations;
	p->chi2 = out.chi2;
	p->stop = out.stop;
	xf_info("nlsq %s: chi2 %.10g after %d iterations (%s)", run->phase, out.chi2,
		out.iterations, xf_stop_reason_name(out.stop));
done:
	space_free(&sp);
	return rc;
}
