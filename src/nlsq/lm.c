/* lm.c — bounded Levenberg-Marquardt with an active set (adr/0004).
 *
 * Each iteration solves (H_FF + λ·D_FF) δ = b_F over the free, inactive parameters
 * (H = JᵀJ, b = −Jᵀr, D = running max of diag H: Moré's scale-invariant damping),
 * projects x + δ into the box and accepts the step when the actual χ² reduction is a
 * positive fraction of the predicted one; λ follows Nielsen's update (xf_damping_*). A
 * parameter is active (held) when it sits on a bound and the descent direction points
 * out of the box. A damped step that would cross a bound takes that parameter to the
 * bound and is solved again over the rest (bounded_step, adr/0070). Every trial costs
 * one streamed pass that also returns H and b at the trial point, so an accepted step
 * needs no second pass. A path whose damping climbs by orders of magnitude while χ²
 * barely moves is stopped as `stalled` (adr/0007). */
#include "nlsq/lm.h"
#include "xpcsfit/error.h"

#include <lapacke.h>
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define XF_LM_LAMBDA0	 1e-3  /* initial damping relative to diag H */
#define XF_LM_LAMBDA_MAX 1e16  /* beyond: no descent possible in double precision */
#define XF_LM_ACCEPT	 1e-4  /* minimum ratio actual/predicted reduction */
#define XF_LM_BOUND_TOL	 1e-12 /* relative distance that counts as "on the bound" */
/* Stall: over the window, χ² fell by less than this fraction in all... */
#define XF_STALL_CHI2_REL 1e-5
/* ...while λ grew by at least this factor, or ended at least this high. A healthy path
 * lowers λ as it nears the optimum; λ = 1e3 shortens the Gauss-Newton step ~1000-fold. */
#define XF_STALL_LAMBDA_GROWTH 1e2
#define XF_STALL_LAMBDA_HIGH   1e3

void xf_damping_init(xf_damping *d, double lambda0)
{
	d->lambda = lambda0 > 0.0 ? lambda0 : XF_LM_LAMBDA0;
	d->nu = 2.0;
}

void xf_damping_accept(xf_damping *d, double rho)
{
	double t = 2.0 * rho - 1.0;
	d->lambda *= fmax(1.0 / 3.0, 1.0 - t * t * t);
	d->nu = 2.0;
}

void xf_damping_reject(xf_damping *d)
{
	d->lambda *= d->nu;
	d->nu *= 2.0;
}

int xf_lm_stalled(double chi2_then, double lambda_then, double chi2_now, double lambda_now)
{
	if (!(chi2_then - chi2_now <= XF_STALL_CHI2_REL * chi2_then))
		return 0;
	return lambda_now >= XF_STALL_LAMBDA_GROWTH * lambda_then ||
	       lambda_now >= XF_STALL_LAMBDA_HIGH;
}

typedef struct lm_work {
	int n;
	double *h_trial, *b_trial, *x_trial, *diag, *a, *rhs, *step;
	double *chi2_hist, *lambda_hist; /* ring buffers of the stall window */
	int *idx;
	int *clamp; /* per inactive slot of a trial: −1 to its lower bound, +1 upper, 0 free */
} lm_work;

static int work_alloc(lm_work *w, int n, int window)
{
	size_t nn = (size_t)n * n, nw = window > 0 ? (size_t)window : 1;
	w->n = n;
	w->h_trial = malloc(sizeof(double) * nn);
	w->a = malloc(sizeof(double) * nn);
	w->b_trial = malloc(sizeof(double) * n);
	w->x_trial = malloc(sizeof(double) * n);
	w->diag = calloc((size_t)n, sizeof(double));
	w->rhs = malloc(sizeof(double) * n);
	w->step = malloc(sizeof(double) * n);
	w->idx = malloc(sizeof(int) * n);
	w->clamp = malloc(sizeof(int) * n);
	w->chi2_hist = malloc(sizeof(double) * nw);
	w->lambda_hist = malloc(sizeof(double) * nw);
	return !(w->h_trial && w->a && w->b_trial && w->x_trial && w->diag && w->rhs && w->step &&
		 w->idx && w->clamp && w->chi2_hist && w->lambda_hist);
}

static void work_free(lm_work *w)
{
	free(w->h_trial);
	free(w->a);
	free(w->b_trial);
	free(w->x_trial);
	free(w->diag);
	free(w->rhs);
	free(w->step);
	free(w->idx);
	free(w->clamp);
	free(w->chi2_hist);
	free(w->lambda_hist);
}

static int at_lower(const xf_lm_setup *s, const double *x, int k)
{
	return x[k] <= s->lower[k] + XF_LM_BOUND_TOL * s->scale[k];
}

static int at_upper(const xf_lm_setup *s, const double *x, int k)
{
	return x[k] >= s->upper[k] - XF_LM_BOUND_TOL * s->scale[k];
}

/* Free parameters not held at a bound by the descent direction b. */
static int inactive_set(const xf_lm_setup *s, const double *x, const double *b, int *idx)
{
	int m = 0;
	for (int k = 0; k < s->n; k++) {
		if (!s->free_mask[k])
			continue;
		if ((at_lower(s, x, k) && b[k] <= 0.0) || (at_upper(s, x, k) && b[k] >= 0.0))
			continue;
		idx[m++] = k;
	}
	return m;
}

/* Scaled projected gradient norm: max |b_k|·scale_k over inactive parameters, relative
 * to χ² so that the test does not depend on the size of the data. */
static double gradient_measure(const xf_lm_setup *s, const double *b, const int *idx, int m,
			       double chi2)
{
	double g = 0.0;
	for (int q = 0; q < m; q++)
		g = fmax(g, fabs(b[idx[q]]) * s->scale[idx[q]]);
	return g / fmax(chi2, 1e-300);
}

/* Solve (H_FF + λ D_FF) δ = b_F by Cholesky; 0 on success. */
static int damped_step(lm_work *w, const double *h, const double *b, const int *idx, int m,
		       double lambda)
{
	int n = w->n;
	for (int p = 0; p < m; p++) {
		for (int q = 0; q < m; q++)
			w->a[p * m + q] = h[idx[p] * n + idx[q]];
		w->a[p * m + p] += lambda * w->diag[idx[p]];
		w->rhs[p] = b[idx[p]];
	}
	return LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', m, 1, w->a, m, w->rhs, 1) != 0;
}

static void report(const xf_lm_setup *s, int it, double chi2, double lambda)
{
	if (s->progress) {
		xf_nlsq_progress p = { it, chi2, lambda, s->phase, s->screening };
		s->progress(&p, s->progress_ctx);
	}
}

/* A trial point where a free parameter that moved χ² before no longer moves it at all
 * (JᵀJ_kk exactly 0) has stepped into a region flattened by a hard floor of the model,
 * e.g. D_offset so negative that every D_k sits at 10⁻¹⁰. χ² can be lower there than at
 * a poor start, but no derivative leads out again, so such a step is refused like a
 * non-finite one and the damping grows until the step stays in the sensitive region. */
static int loses_sensitivity(const xf_lm_setup *s, const double *jtj, const double *jtj_trial)
{
	for (int k = 0; k < s->n; k++) {
		size_t kk = (size_t)k * s->n + k;
		if (s->free_mask[k] && jtj[kk] > 0.0 && jtj_trial[kk] == 0.0)
			return 1;
	}
	return 0;
}

/* Solve the damped step over the slots not clamped, the clamped ones moved to their
 * bound: (H_RR + λ D_RR) δ_R = b_R − H_RC δ_C. 0 on success; the step goes to w->rhs. */
static int solve_clamped(const xf_lm_setup *s, lm_work *w, const double *x, const double *h,
			 const double *b, int m, double lambda)
{
	int n = w->n, r = 0;
	double *delta = w->step; /* scratch here; projected_trial rewrites it */
	for (int p = 0; p < m; p++) {
		int k = w->idx[p];
		delta[p] = w->clamp[p] < 0   ? s->lower[k] - x[k]
			   : w->clamp[p] > 0 ? s->upper[k] - x[k]
					     : 0.0;
	}
	for (int p = 0; p < m; p++) {
		if (w->clamp[p])
			continue;
		int k = w->idx[p], c = 0;
		double rhs = b[k];
		for (int q = 0; q < m; q++) {
			if (w->clamp[q])
				rhs -= h[(size_t)k * n + w->idx[q]] * delta[q];
			else
				w->a[r * m + c++] = h[(size_t)k * n + w->idx[q]];
		}
		w->a[r * m + r] += lambda * w->diag[k];
		w->x_trial[r++] = rhs; /* the reduced right-hand side, in slot order */
	}
	/* the reduced system sits in the leading r columns of rows of stride m */
	if (r > 0 && LAPACKE_dposv(LAPACK_ROW_MAJOR, 'U', r, 1, w->a, m, w->x_trial, 1) != 0)
		return 1;
	for (int p = 0, q = 0; p < m; p++)
		w->rhs[p] = w->clamp[p] ? delta[p] : w->x_trial[q++];
	return 0;
}

/* The damped step δ over the inactive set (in w->rhs) honouring the box: a parameter whose
 * step would leave the box is moved to the bound it crosses and held there, and the step
 * over the others is solved again given that move, until no further parameter crosses.
 * Clipping alone keeps the other components computed for the crossing parameter's full
 * move: along a nearly degenerate linear pair (a ring's contrast and offset when g1
 * barely decays, c2 ≈ offset + contrast) the clipped step leaves the valley floor, χ²
 * rises, the step is refused and λ climbs until the step stays inside, so the fit
 * creeps and stops short of the optimum (issue 26). 0 on success. */
static int bounded_step(const xf_lm_setup *s, lm_work *w, const double *x, const double *h,
			const double *b, int m, double lambda)
{
	for (int p = 0; p < m; p++)
		w->clamp[p] = 0;
	for (int round = 0; round < m; round++) {
		int crossed = 0;
		for (int p = 0; p < m; p++) {
			int k = w->idx[p];
			if (w->clamp[p])
				continue;
			if (x[k] + w->rhs[p] < s->lower[k]) {
				w->clamp[p] = -1;
				crossed = 1;
			} else if (x[k] + w->rhs[p] > s->upper[k]) {
				w->clamp[p] = 1;
				crossed = 1;
			}
		}
		if (!crossed)
			return 0;
		if (solve_clamped(s, w, x, h, b, m, lambda))
			return 1;
	}
	return 0;
}

/* Project x + δ into the box; the step actually taken goes to w->step. Returns whether
 * the scaled step is below xtol relative to the scaled x. */
static int projected_trial(const xf_lm_setup *s, lm_work *w, const double *x, int m)
{
	double step_norm2 = 0.0, x_norm2 = 0.0;
	memcpy(w->x_trial, x, sizeof(double) * s->n);
	for (int p = 0; p < m; p++) {
		int k = w->idx[p];
		w->x_trial[k] = w->clamp[p] < 0 ? s->lower[k]
				: w->clamp[p] > 0
					? s->upper[k]
					: fmin(fmax(x[k] + w->rhs[p], s->lower[k]), s->upper[k]);
	}
	for (int k = 0; k < s->n; k++) {
		w->step[k] = w->x_trial[k] - x[k];
		double ds = w->step[k] / s->scale[k], xs = x[k] / s->scale[k];
		step_norm2 += ds * ds;
		x_norm2 += xs * xs;
	}
	return sqrt(step_norm2) <= s->xtol * (s->xtol + sqrt(x_norm2));
}

/* Predicted reduction of the linear model for the step taken: 2bᵀδ − δᵀHδ. */
static double predicted_reduction(int n, const double *jtj, const double *b, const double *step)
{
	double pred = 0.0;
	for (int k = 0; k < n; k++) {
		double hd = 0.0;
		for (int l = 0; l < n; l++)
			hd += jtj[k * n + l] * step[l];
		pred += 2.0 * b[k] * step[k] - step[k] * hd;
	}
	return pred;
}

/* The reduction a full Gauss-Newton step (λ = 0) over the inactive set predicts: bᵀH⁻¹b;
 * NAN when H_FF cannot be factorised. */
static double gauss_newton_reduction(lm_work *w, const double *h, const double *b, int m)
{
	if (damped_step(w, h, b, w->idx, m, 0.0))
		return NAN;
	double red = 0.0;
	for (int p = 0; p < m; p++)
		red += b[w->idx[p]] * w->rhs[p];
	return red;
}

/* Remember χ² and λ before this trial; returns 1 when the path has stalled. */
static int note_trial(const xf_lm_setup *s, lm_work *w, int trial, double chi2, double lambda)
{
	int win = s->stall_window;
	if (win <= 0)
		return 0;
	if (trial >= win) {
		/* the window's oldest entry sits at trial % win */
		if (xf_lm_stalled(w->chi2_hist[trial % win], w->lambda_hist[trial % win], chi2,
				  lambda))
			return 1;
	}
	w->chi2_hist[trial % win] = chi2;
	w->lambda_hist[trial % win] = lambda;
	return 0;
}

int xf_lm_solve(const xf_lm_setup *s, xf_lm_eval_fn eval, void *ctx, double *x, double *jtj,
		double *b, xf_lm_outcome *out)
{
	int n = s->n;
	assert(n > 0 && s->max_iterations >= 0);
	lm_work w;
	xf_damping damp;
	out->iterations = 0;
	out->stop = XF_STOP_NON_FINITE;
	out->chi2 = NAN;
	if (work_alloc(&w, n, s->stall_window)) {
		work_free(&w);
		xf_note_no_memory(); /* not a non-finite start: the fit must not go on without it */
		return -1;
	}
	for (int k = 0; k < n; k++)
		x[k] = fmin(fmax(x[k], s->lower[k]), s->upper[k]);
	double chi2;
	if (eval(ctx, x, &chi2, jtj, b)) {
		work_free(&w);
		return -1;
	}
	xf_damping_init(&damp, s->lambda0);
	for (int k = 0; k < n; k++)
		w.diag[k] = fmax(jtj[k * n + k], 1e-300);
	report(s, 0, chi2, damp.lambda);

	for (;;) {
		int m = inactive_set(s, x, b, w.idx);
		if (m == 0 || gradient_measure(s, b, w.idx, m, chi2) <= s->gtol) {
			out->stop = XF_STOP_GTOL;
			break;
		}
		if (out->iterations >= s->max_iterations) {
			out->stop = XF_STOP_MAX_ITERATIONS;
			break;
		}
		if (xf_interrupted()) {
			out->stop = XF_STOP_INTERRUPTED;
			break;
		}
		if (s->watch &&
		    s->watch(s->watch_ctx, x, chi2, gauss_newton_reduction(&w, jtj, b, m))) {
			out->stop = XF_STOP_WORSE;
			break;
		}
		if (damp.lambda > XF_LM_LAMBDA_MAX ||
		    note_trial(s, &w, out->iterations, chi2, damp.lambda)) {
			/* no step of useful length lowers χ² here */
			out->stop = XF_STOP_STALLED;
			break;
		}
		if (damped_step(&w, jtj, b, w.idx, m, damp.lambda) ||
		    bounded_step(s, &w, x, jtj, b, m, damp.lambda)) {
			xf_damping_reject(&damp);
			if (damp.lambda > XF_LM_LAMBDA_MAX) {
				out->stop = XF_STOP_SINGULAR;
				break;
			}
			continue;
		}
		int small_step = projected_trial(s, &w, x, m);
		double pred = predicted_reduction(n, jtj, b, w.step);
		double chi2_trial;
		out->iterations++;
		int bad = eval(ctx, w.x_trial, &chi2_trial, w.h_trial, w.b_trial) ||
			  loses_sensitivity(s, jtj, w.h_trial);
		double rho = (!bad && pred > 0.0) ? (chi2 - chi2_trial) / pred : -1.0;
		if (rho > XF_LM_ACCEPT) {
			double reduction = chi2 - chi2_trial;
			memcpy(x, w.x_trial, sizeof(double) * n);
			memcpy(jtj, w.h_trial, sizeof(double) * (size_t)n * n);
			memcpy(b, w.b_trial, sizeof(double) * n);
			chi2 = chi2_trial;
			for (int k = 0; k < n; k++)
				w.diag[k] = fmax(w.diag[k], jtj[k * n + k]);
			xf_damping_accept(&damp, rho);
			report(s, out->iterations, chi2, damp.lambda);
			if (small_step) {
				out->stop = XF_STOP_XTOL;
				break;
			}
			if (reduction <= s->ftol * chi2 && rho > 0.25) {
				out->stop = XF_STOP_FTOL;
				break;
			}
			if (s->ridge && s->ridge(s->ridge_ctx, x, chi2, jtj)) {
				out->stop = XF_STOP_RIDGE;
				break;
			}
		} else {
			if (small_step) {
				/* the model cannot be improved by steps this small */
				out->stop = XF_STOP_XTOL;
				break;
			}
			xf_damping_reject(&damp);
		}
	}
	out->chi2 = chi2;
	out->lambda = damp.lambda;
	work_free(&w);
	return 0;
}
