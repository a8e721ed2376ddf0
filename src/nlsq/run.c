/* run.c — one optimiser run of the fit (nlsq_internal.h): the counted passes, and the
 * fit points runs start from and end at. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/nlsq_internal.h"
#include "nlsq/ridge.h"

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
	p->ridge_drop = 0.0;
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
	dst->ridge_drop = src->ridge_drop;
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

/* A run the watcher stopped on a valley (adr/0047) probes where the valley leads: a
 * short run (XF_RIDGE_PROBE_ITERATIONS, watched too) from where the crawl's last
 * displacement meets the box; its end replaces the stop only when it is better by more
 * than XF_RIDGE_AHEAD_NOISE noise units, and the run then goes on from there with the
 * budget left. So a valley that slopes on to an end where the data do inform the fit (a
 * bound) is followed there, and a flat one is left at once. */
static void probe_ridge_end(const xf_problem *pr, const xf_lm_setup *s, eval_ctx *e,
			    xf_ridge_watch *w, xf_fit_point *p, xf_lm_outcome *out)
{
	xf_lm_setup again = *s;
	int left = s->max_iterations - out->iterations;
	if (left < 1)
		return;
	xf_fit_point q = { 0 };
	if (xf_fit_point_alloc(&q, pr->n_full)) {
		xf_fit_point_free(&q);
		xf_note_no_memory();
		return;
	}
	int n_free = 0;
	for (int k = 0; k < pr->n_full; k++)
		n_free += s->free_mask[k] != 0;
	double s2 = out->chi2 / fmax(1.0, (double)pr->n_points - n_free);
	xf_lm_outcome o;
	again.max_iterations = left < XF_RIDGE_PROBE_ITERATIONS ? left : XF_RIDGE_PROBE_ITERATIONS;
	again.lambda0 = 0.0; /* the far end is no optimum: the solver's default damping */
	again.watch = NULL;  /* a probe, not the path: a search race judges the path only */
	xf_ridge_watch_reset(w);
	if (xf_ridge_watch_edge(w, p->x, q.x) == 0 &&
	    xf_lm_solve(&again, eval_counted, e, q.x, q.jtj, q.b, &o) == 0) {
		int better = o.chi2 < out->chi2 - XF_RIDGE_AHEAD_NOISE * s2;
		xf_info("nlsq %s: the valley's far end gives chi2 %.10g after %d iterations (%s): "
			"%s",
			s->phase, o.chi2, o.iterations, xf_stop_reason_name(o.stop),
			better ? "better, taken" : "no better, the valley floor kept");
		out->iterations += o.iterations;
		left -= o.iterations;
		if (better) {
			int done = out->iterations, n = pr->n_full;
			memcpy(p->x, q.x, sizeof(double) * (size_t)n);
			memcpy(p->jtj, q.jtj, sizeof(double) * (size_t)n * n);
			memcpy(p->b, q.b, sizeof(double) * (size_t)n);
			*out = o;
			out->iterations = done;
			again.max_iterations = left;
			again.watch = s->watch; /* the path goes on from the far end */
			xf_ridge_watch_reset(w);
			if (o.stop == XF_STOP_MAX_ITERATIONS && left > 0 &&
			    xf_lm_solve(&again, eval_counted, e, p->x, p->jtj, p->b, &o) == 0) {
				*out = o;
				out->iterations += done;
			}
		}
	}
	xf_fit_point_free(&q);
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
	/* runs on all the data stop when they crawl along a ridge (adr/0047); without memory
	 * for the watcher the fit has no result (the answer could differ, tests/faults/) */
	xf_ridge_watch *ridge =
		run->role == XF_ROLE_FULL ? xf_ridge_watch_create(pr, run->free_mask) : NULL;
	if (run->role == XF_ROLE_FULL && !ridge)
		xf_note_no_memory();
	if (ridge) {
		s.ridge = xf_ridge_watch_step;
		s.ridge_ctx = ridge;
	}
	xf_lm_outcome out;
	int rc = xf_lm_solve(&s, eval_counted, &e, p->x, p->jtj, p->b, &out);
	if (rc == 0 && out.stop == XF_STOP_RIDGE)
		probe_ridge_end(pr, &s, &e, ridge, p, &out);
	xf_ridge_watch_free(ridge);
	if (rc)
		return -1;
	if (run->role == XF_ROLE_FULL)
		ctx->full_iterations += out.iterations;
	p->chi2 = out.chi2;
	p->stop = out.stop;
	xf_info("nlsq %s: chi2 %.10g after %d iterations (%s)", run->phase, out.chi2,
		out.iterations, xf_stop_reason_name(out.stop));
	return 0;
}

double xf_fit_noise_s2(const xf_fit_ctx *ctx, xf_fit_role role, double chi2)
{
	double n = (double)xf_lik_points(ctx->lik[role]);
	return chi2 / fmax(1.0, n - ctx->pr->n_full);
}

int xf_fit_refine_on_all(xf_fit_ctx *ctx, const int *mask, int stall_window, const char *phase,
			 xf_fit_point *trial)
{
	if (ctx->lik[XF_ROLE_SCREEN] == ctx->lik[XF_ROLE_FULL])
		return 1;
	int budget = ctx->opt->max_iterations - ctx->full_iterations;
	if (budget < 1)
		return 0;
	xf_fit_run run = { .role = XF_ROLE_FULL,
			   .free_mask = mask,
			   .max_iterations = budget,
			   .ftol = ctx->opt->ftol,
			   .stall_window = stall_window,
			   .phase = phase };
	return xf_fit_lm(ctx, &run, trial) == 0;
}
