/* lm.c — bounded Levenberg-Marquardt with an active set (adr/0004).
 *
 * Each iteration solves (H_FF + λ·D_FF) δ = b_F over the free, inactive parameters
 * (H = JᵀJ, b = −Jᵀr, D = running max of diag H: Moré's scale-invariant damping),
 * projects x + δ into the box and accepts the step when the actual χ² reduction is a
 * positive fraction of the predicted one; λ follows Nielsen's update. A parameter is
 * active (held) when it sits on a bound and the descent direction points out of the box.
 * Every trial costs one streamed pass that also returns H and b at the trial point, so an
 * accepted step needs no second pass. */
#include "nlsq/lm.h"
#include "xpcsfit/error.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define XF_LM_LAMBDA0	 1e-3  /* initial damping relative to diag H */
#define XF_LM_LAMBDA_MAX 1e16  /* beyond: no descent possible in double precision */
#define XF_LM_ACCEPT	 1e-4  /* minimum ratio actual/predicted reduction */
#define XF_LM_BOUND_TOL	 1e-12 /* relative distance that counts as "on the bound" */

typedef struct lm_work {
	int n;
	double *h_trial, *b_trial, *x_trial, *diag, *a, *rhs, *step;
	int *idx;
} lm_work;

static int work_alloc(lm_work *w, int n)
{
	size_t nn = (size_t)n * n;
	w->n = n;
	w->h_trial = malloc(sizeof(double) * nn);
	w->a = malloc(sizeof(double) * nn);
	w->b_trial = malloc(sizeof(double) * n);
	w->x_trial = malloc(sizeof(double) * n);
	w->diag = calloc((size_t)n, sizeof(double));
	w->rhs = malloc(sizeof(double) * n);
	w->step = malloc(sizeof(double) * n);
	w->idx = malloc(sizeof(int) * n);
	return !(w->h_trial && w->a && w->b_trial && w->x_trial && w->diag && w->rhs && w->step &&
		 w->idx);
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
		xf_nlsq_progress p = { it, chi2, lambda, s->phase };
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

int xf_lm_solve(const xf_lm_setup *s, xf_lm_eval_fn eval, void *ctx, double *x, double *jtj,
		double *b, xf_lm_outcome *out)
{
	int n = s->n;
	lm_work w;
	out->iterations = 0;
	out->stop_reason = "non_finite";
	out->chi2 = NAN;
	if (work_alloc(&w, n)) {
		work_free(&w);
		return -1;
	}
	for (int k = 0; k < n; k++)
		x[k] = fmin(fmax(x[k], s->lower[k]), s->upper[k]);
	double chi2;
	if (eval(ctx, x, &chi2, jtj, b)) {
		work_free(&w);
		return -1;
	}
	out->chi2 = chi2;
	double lambda = XF_LM_LAMBDA0, nu = 2.0;
	for (int k = 0; k < n; k++)
		w.diag[k] = fmax(jtj[k * n + k], 1e-300);
	report(s, 0, chi2, lambda);

	for (;;) {
		int m = inactive_set(s, x, b, w.idx);
		if (m == 0 || gradient_measure(s, b, w.idx, m, chi2) <= s->gtol) {
			out->stop_reason = "gtol";
			break;
		}
		if (out->iterations >= s->max_iterations) {
			out->stop_reason = "max_iterations";
			break;
		}
		if (xf_interrupted()) {
			out->stop_reason = "interrupted";
			break;
		}
		if (lambda > XF_LM_LAMBDA_MAX) {
			/* no step of any length lowers χ²: converged to machine precision,
			 * unless H itself cannot be factorised */
			out->stop_reason = "xtol";
			break;
		}
		if (damped_step(&w, jtj, b, w.idx, m, lambda)) {
			lambda *= nu;
			nu *= 2.0;
			if (lambda > XF_LM_LAMBDA_MAX) {
				out->stop_reason = "singular";
				break;
			}
			continue;
		}
		/* projected trial point and the step actually taken */
		memcpy(w.x_trial, x, sizeof(double) * n);
		double step_norm2 = 0.0, x_norm2 = 0.0;
		for (int p = 0; p < m; p++) {
			int k = w.idx[p];
			double xt = fmin(fmax(x[k] + w.rhs[p], s->lower[k]), s->upper[k]);
			w.x_trial[k] = xt;
		}
		for (int k = 0; k < n; k++) {
			w.step[k] = w.x_trial[k] - x[k];
			double ds = w.step[k] / s->scale[k], xs = x[k] / s->scale[k];
			step_norm2 += ds * ds;
			x_norm2 += xs * xs;
		}
		/* predicted reduction of the linear model: 2bᵀδ − δᵀHδ */
		double pred = 0.0;
		for (int k = 0; k < n; k++) {
			double hd = 0.0;
			for (int l = 0; l < n; l++)
				hd += jtj[k * n + l] * w.step[l];
			pred += 2.0 * b[k] * w.step[k] - w.step[k] * hd;
		}
		int small_step = sqrt(step_norm2) <= s->xtol * (s->xtol + sqrt(x_norm2));
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
			double t = 2.0 * rho - 1.0;
			lambda *= fmax(1.0 / 3.0, 1.0 - t * t * t);
			nu = 2.0;
			report(s, out->iterations, chi2, lambda);
			if (small_step) {
				out->stop_reason = "xtol";
				break;
			}
			if (reduction <= s->ftol * chi2 && rho > 0.25) {
				out->stop_reason = "ftol";
				break;
			}
		} else {
			if (small_step) {
				/* the model cannot be improved by steps this small */
				out->stop_reason = "xtol";
				break;
			}
			lambda *= nu;
			nu *= 2.0;
		}
	}
	out->chi2 = chi2;
	work_free(&w);
	return 0;
}
