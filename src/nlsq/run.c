/* run.c — one optimiser run of the fit (nlsq_internal.h): the counted passes, and the
 * fit points runs start from and end at. */
#include <math.h>
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
	p->bound_drop = 0.0;
	p->basin_drop = 0.0;
	p->basin_phi0 = NAN;
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
	dst->bound_drop = src->bound_drop;
	dst->basin_drop = src->basin_drop;
	dst->basin_phi0 = src->basin_phi0;
}

int xf_fit_pass(xf_fit_ctx *ctx, xf_fit_role role, const double *x, xf_lik_out *out)
{
	ctx->passes[role]++;
	return xf_lik_eval(ctx->lik[role], x, out);
}

typedef struct eval_ctx {
	xf_fit_ctx *fit;
	xf_fit_role role;
} eval_ctx;

static int eval_counted(void *ctx, const double *x, double *chi2, double *jtj, double *b)
{
	eval_ctx *e = ctx;
	xf_lik_out out = { 0.0, jtj, b, 0.0 };
	int rc = xf_fit_pass(e->fit, e->role, x, &out);
	*chi2 = out.chi2;
	return rc;
}

int xf_fit_lm(xf_fit_ctx *ctx, const xf_fit_run *run, xf_fit_point *p)
{
	const xf_problem *pr = ctx->pr;
	eval_ctx e = { ctx, run->role };
	xf_lm_setup s = {
		.n = pr->n_full,
		.lower = pr->lower,
		.upper = pr->upper,
		.scale = pr->scale,
		.free_mask = run->free_mask,
		.max_iterations = run->max_iterations,
		.xtol = ctx->opt->xtol,
		.gtol = ctx->opt->gtol,
		.ftol = run->ftol,
		.stall_window = run->stall_window,
		.lambda0 = run->lambda0,
		.watch = run->watch,
		.watch_ctx = run->watch_ctx,
		.progress = ctx->progress,
		.progress_ctx = ctx->progress_ctx,
		.phase = run->phase,
		.screening = run->role != XF_ROLE_FULL,
	};
	xf_lm_outcome out;
	if (xf_lm_solve(&s, eval_counted, &e, p->x, p->jtj, p->b, &out))
		return -1;
	if (run->role == XF_ROLE_FULL)
		ctx->full_iterations += out.iterations;
	p->chi2 = out.chi2;
	p->stop = out.stop;
	xf_info("nlsq %s: chi2 %.10g after %d iterations (%s)", run->phase, out.chi2,
		out.iterations, xf_stop_reason_name(out.stop));
	return 0;
}
