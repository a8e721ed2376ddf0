/* chain.c — one chain of the sampler (sampler.h): warmup with step-size and metric
 * adaptation, then sampling; and the chain's random stream. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/sampler.h"
#include "xpcsfit/error.h"
#include "xpcsfit/rng.h"

double xf_chain_uniform(xf_chain_rng *r)
{
	return xf_rng_uniform(r->seed, r->stream, r->a, r->b, r->n++);
}

double xf_chain_normal(xf_chain_rng *r)
{
	return xf_rng_normal(r->seed, r->stream, r->a, r->b, r->n++);
}

int xf_chain_out_alloc(xf_chain_out *o, int d, int n_samples, int dense)
{
	memset(o, 0, sizeof *o);
	size_t n = (size_t)n_samples;
	o->draws = malloc(sizeof(double) * n * (size_t)d);
	o->logp = malloc(sizeof(double) * n);
	o->energy = malloc(sizeof(double) * n);
	o->accept_stat = malloc(sizeof(double) * n);
	o->depth = malloc(sizeof(int) * n);
	o->n_leapfrog = malloc(sizeof(int) * n);
	o->divergent = malloc(sizeof(int) * n);
	o->metric = malloc(sizeof(double) * (dense ? (size_t)d * d : (size_t)d));
	return !(o->draws && o->logp && o->energy && o->accept_stat && o->depth && o->n_leapfrog &&
		 o->divergent && o->metric);
}

void xf_chain_out_free(xf_chain_out *o)
{
	free(o->draws);
	free(o->logp);
	free(o->energy);
	free(o->accept_stat);
	free(o->depth);
	free(o->n_leapfrog);
	free(o->divergent);
	free(o->metric);
	memset(o, 0, sizeof *o);
}

/* The sampler runs in standardised coordinates z, q = q0 + L z, L the lower Cholesky
 * factor of the initial metric when it is dense and positive definite, else the square
 * roots of its diagonal: Stan's metric regularisation adds a multiple of the identity,
 * which only makes sense when every coordinate is of unit scale (in the XPCS posterior,
 * u-space variances span 1e-8 … 1, and the identity term swamped the small ones, cutting
 * the step size 50-fold). With the full factor the regularisation also pulls towards
 * the initial covariance rather than across a ridge's narrow direction (adr/0079). A
 * fixed affine map changes the log density by a constant only: the same posterior. */
typedef struct scaled_target {
	xf_logp_fn logp;
	void *ctx;
	int d, full; /* full: l is d×d lower triangular; else l is the diagonal [d] */
	const double *q0, *l;
	double *q, *g; /* [d] workspaces */
} scaled_target;

static void z_to_q(const scaled_target *t, const double *z, double *q)
{
	int d = t->d;
	for (int k = 0; k < d; k++) {
		double v = t->q0[k];
		if (t->full)
			for (int j = 0; j <= k; j++)
				v += t->l[(size_t)k * d + j] * z[j];
		else
			v += t->l[k] * z[k];
		q[k] = v;
	}
}

static int scaled_logp(void *ctx, const double *z, double *logp, double *grad)
{
	scaled_target *t = ctx;
	int d = t->d;
	z_to_q(t, z, t->q);
	int rc = t->logp(t->ctx, t->q, logp, grad ? t->g : NULL);
	if (grad) /* ∇z = Lᵀ ∇q */
		for (int j = 0; j < d; j++) {
			double v = 0.0;
			if (t->full)
				for (int k = j; k < d; k++)
					v += t->l[(size_t)k * d + j] * t->g[k];
			else
				v = t->l[j] * t->g[j];
			grad[j] = v;
		}
	return rc;
}

/* −3 when the run is interrupted, −4 when the caller abandons the chain, else 0: checked
 * after every transition (sampling: 0 in warmup, 1 after). */
static int stopped(const xf_chain_setup *s, int sampling)
{
	if (xf_interrupted())
		return -3;
	return s->abandon && s->abandon(s->abandon_ctx, sampling) ? -4 : 0;
}

/* One warmup transition: its counts, the progress tick, and the step size it teaches
 * (both warmups, Stan's windows and the settling one, adr/0079). */
static void warm_transition(const xf_chain_setup *s, xf_nuts *nuts, xf_chain_rng *rng,
			    xf_step_adapt *step, xf_chain_out *out)
{
	xf_nuts_info info;
	xf_nuts_transition(nuts, rng, &info);
	out->grad_evals += info.n_leapfrog;
	out->warmup_divergent += info.divergent;
	out->warmup_done++;
	if (s->tick)
		s->tick(s->tick_ctx, 0, info.divergent);
	xf_nuts_set_step(nuts, xf_step_adapt_learn(step, info.accept_stat));
}

/* Warmup: every transition teaches the step size; at the end of each slow window the
 * metric takes the window's covariance and the step size starts over (Stan). */
static int warmup(const xf_chain_setup *s, xf_nuts *nuts, xf_metric *metric, xf_chain_rng *rng,
		  double *cov, xf_chain_out *out)
{
	xf_step_adapt step;
	xf_window_adapt win;
	if (xf_window_init(&win, s->n_warmup, s->d, s->dense)) {
		xf_window_free(&win);
		return -2;
	}
	xf_nuts_find_step(nuts, rng);
	xf_step_adapt_init(&step, s->target_accept, xf_nuts_step(nuts));
	for (int it = 0; it < s->n_warmup; it++) {
		warm_transition(s, nuts, rng, &step, out);
		if (xf_window_learn(&win, xf_nuts_point(nuts, NULL), cov)) {
			xf_metric_set(metric, cov); /* an indefinite estimate keeps the old one */
			xf_nuts_find_step(nuts, rng);
			xf_step_adapt_init(&step, s->target_accept, xf_nuts_step(nuts));
		}
		int rc = stopped(s, 0);
		if (rc) {
			xf_window_free(&win);
			return rc;
		}
	}
	if (s->n_warmup > 0)
		xf_nuts_set_step(nuts, xf_step_adapt_final(&step));
	xf_window_free(&win);
	return 0;
}

/* n warmup transitions that teach the step size only (and, with win, feed its window). */
static int fast_phase(const xf_chain_setup *s, xf_nuts *nuts, xf_chain_rng *rng,
		      xf_step_adapt *step, int n, xf_window_adapt *win, xf_chain_out *out)
{
	for (int it = 0; it < n; it++) {
		warm_transition(s, nuts, rng, step, out);
		if (win)
			xf_window_add(win, xf_nuts_point(nuts, NULL));
		int rc = stopped(s, 0);
		if (rc)
			return rc;
	}
	return 0;
}

/* The settling warmup (adr/0079): a short fast interval, then slow windows (100, 200,
 * 400 … transitions) whose covariance becomes the metric, each compared with the
 * metric it replaces; once they agree (xf_metric_settled) the two are pooled and the
 * terminal fast interval follows at once. The windows never run past n_warmup − XF_SETTLE_TERM: a metric
 * that never settles gets the same budget as Stan's windows. A pure function of the
 * chain's draws: no clock. */
static int warmup_settle(const xf_chain_setup *s, xf_nuts *nuts, xf_metric *metric,
			 xf_chain_rng *rng, double *cov, xf_chain_out *out)
{
	int d = s->d, rc = 0, slow_end = s->n_warmup - XF_SETTLE_TERM;
	size_t n_cov = s->dense ? (size_t)d * d : (size_t)d;
	xf_step_adapt step;
	xf_window_adapt win;
	if (xf_window_init(&win, s->n_warmup, d, s->dense)) {
		xf_window_free(&win);
		return -2;
	}
	xf_nuts_find_step(nuts, rng);
	xf_step_adapt_init(&step, s->target_accept, xf_nuts_step(nuts));
	if ((rc = fast_phase(s, nuts, rng, &step, XF_SETTLE_INIT, NULL, out)))
		goto done;
	int size = XF_SETTLE_WINDOW;
	double w_prev = 0.0; /* draws behind the metric in use (0: the initial one) */
	while (out->warmup_done < slow_end) {
		int left = slow_end - out->warmup_done;
		/* a window that would leave less than twice its size absorbs the rest */
		if (size > left || left - size < 2 * size)
			size = left;
		if ((rc = fast_phase(s, nuts, rng, &step, size, &win, out)))
			goto done;
		long n = win.n;
		double *est = malloc(sizeof(double) * n_cov);
		if (!est) {
			rc = -2;
			goto done;
		}
		memcpy(est, win.m2, sizeof(double) * n_cov);
		/* the regularised estimate, as xf_window_learn forms it */
		for (size_t k = 0; k < n_cov; k++)
			est[k] = (n > 1 ? est[k] / (double)(n - 1) : 0.0) * (double)n /
				 ((double)n + 5.0);
		for (int k = 0; k < d; k++)
			est[s->dense ? (size_t)k * d + k : (size_t)k] +=
				1e-3 * 5.0 / ((double)n + 5.0);
		if (s->dense)
			for (int k = 0; k < d; k++)
				for (int l = k + 1; l < d; l++) {
					double v = 0.5 * (est[(size_t)k * d + l] +
							  est[(size_t)l * d + k]);
					est[(size_t)k * d + l] = est[(size_t)l * d + k] = v;
				}
		double kappa;
		int settled = xf_metric_settled(metric->inv, est, d, s->dense, n, &kappa);
		/* a settled window agrees with the metric in use: both estimate the same
		 * covariance, so they are pooled by their draws (the initial metric counts
		 * as one window of the same size); one window alone is the noisier. An
		 * unsettled window replaces the metric (Stan). */
		double w_new =
			settled ? (double)n / ((double)n + (w_prev > 0 ? w_prev : (double)n)) : 1.0;
		for (size_t k = 0; k < n_cov; k++)
			cov[k] = w_new * est[k] + (1.0 - w_new) * metric->inv[k];
		w_prev = (double)n;
		free(est);
		win.n = 0;
		memset(win.mean, 0, sizeof(double) * (size_t)d);
		memset(win.m2, 0, sizeof(double) * n_cov);
		xf_metric_set(metric, cov); /* an indefinite estimate keeps the old one */
		xf_nuts_find_step(nuts, rng);
		xf_step_adapt_init(&step, s->target_accept, xf_nuts_step(nuts));
		out->warmup_windows++;
		if (settled)
			break;
		size *= 2;
	}
	int term = s->n_warmup - out->warmup_done;
	if (term > XF_SETTLE_TERM)
		term = XF_SETTLE_TERM;
	if ((rc = fast_phase(s, nuts, rng, &step, term, NULL, out)))
		goto done;
	xf_nuts_set_step(nuts, xf_step_adapt_final(&step));
done:
	xf_window_free(&win);
	return rc;
}

/* The lower Cholesky factor of a dense covariance into l (d×d); −1 when it is not
 * positive definite or not finite (then the diagonal standardises). */
static int full_factor(const double *cov, int d, double *l)
{
	for (size_t i = 0; i < (size_t)d * d; i++)
		if (!isfinite(cov[i]))
			return -1;
	memcpy(l, cov, sizeof(double) * (size_t)d * d);
	for (int k = 0; k < d; k++) /* exact symmetry */
		for (int j = 0; j < k; j++)
			l[(size_t)j * d + k] = l[(size_t)k * d + j];
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', d, l, d) != 0)
		return -1;
	for (int r = 0; r < d; r++)
		for (int c = r + 1; c < d; c++)
			l[(size_t)r * d + c] = 0.0;
	return 0;
}

int xf_chain_run(const xf_chain_setup *s, xf_chain_out *out)
{
	int d = s->d, rc = 0;
	xf_metric metric = { 0 };
	xf_chain_rng rng = s->rng;
	xf_nuts *nuts = NULL;
	size_t n_cov = s->dense ? (size_t)d * d : (size_t)d;
	double *cov = malloc(sizeof(double) * (size_t)d * d);
	double *lf = malloc(sizeof(double) * (size_t)d * d);
	double *zero = calloc((size_t)d, sizeof(double));
	double *tq = malloc(sizeof(double) * (size_t)d);
	double *tg = malloc(sizeof(double) * (size_t)d);
	scaled_target st = { s->logp, s->ctx, d, 0, s->init, lf, tq, tg };
	out->grad_evals = 0;
	out->warmup_divergent = 0;
	out->warmup_done = 0;
	out->samples_done = 0;
	out->warmup_windows = 0;
	if (!cov || !lf || !zero || !tq || !tg || xf_metric_alloc(&metric, d, s->dense) ||
	    !(nuts = xf_nuts_create(d, s->max_depth, scaled_logp, &st, &metric))) {
		rc = -2;
		goto done;
	}
	if (s->init_cov && s->dense && full_factor(s->init_cov, d, lf) == 0) {
		st.full = 1; /* the initial metric in z is the identity */
	} else {
		for (int k = 0; k < d; k++) {
			double v = s->init_cov
					   ? s->init_cov[s->dense ? (size_t)k * d + k : (size_t)k]
					   : 1.0;
			lf[k] = v > 0.0 && isfinite(v) ? sqrt(v) : 1.0;
		}
		if (s->init_cov) { /* the initial metric in z: D⁻¹ C D⁻¹ */
			for (size_t i = 0; i < n_cov; i++) {
				int r = s->dense ? (int)(i / (size_t)d) : (int)i;
				int c = s->dense ? (int)(i % (size_t)d) : (int)i;
				cov[i] = s->init_cov[i] / (lf[r] * lf[c]);
			}
			xf_metric_set(&metric, cov);
		}
	}
	if (xf_nuts_init(nuts, zero)) {
		rc = -1;
		goto done;
	}
	int settle = s->settle && s->n_warmup >= XF_SETTLE_INIT + XF_SETTLE_WINDOW + XF_SETTLE_TERM;
	if ((rc = settle ? warmup_settle(s, nuts, &metric, &rng, cov, out)
			 : warmup(s, nuts, &metric, &rng, cov, out)))
		goto done;
	for (int it = 0; it < s->n_samples; it++) {
		xf_nuts_info info;
		xf_nuts_transition(nuts, &rng, &info);
		out->grad_evals += info.n_leapfrog;
		z_to_q(&st, xf_nuts_point(nuts, &out->logp[it]), out->draws + (size_t)it * d);
		out->energy[it] = info.energy;
		out->accept_stat[it] = info.accept_stat;
		out->depth[it] = info.depth;
		out->n_leapfrog[it] = info.n_leapfrog;
		out->divergent[it] = info.divergent;
		out->samples_done++;
		if (s->tick)
			s->tick(s->tick_ctx, 1, info.divergent);
		if ((rc = stopped(s, 1)))
			goto done;
	}
	out->step_size = xf_nuts_step(nuts);
	for (size_t i = 0; i < n_cov; i++) { /* the adapted metric back in q: L M⁻¹ Lᵀ */
		int r = s->dense ? (int)(i / (size_t)d) : (int)i;
		int c = s->dense ? (int)(i % (size_t)d) : (int)i;
		double v = 0.0;
		if (!st.full)
			v = metric.inv[i] * lf[r] * lf[c];
		else
			for (int a = 0; a <= r; a++)
				for (int b = 0; b <= c; b++)
					v += lf[(size_t)r * d + a] * metric.inv[(size_t)a * d + b] *
					     lf[(size_t)c * d + b];
		out->metric[i] = v;
	}
done:
	xf_nuts_destroy(nuts);
	xf_metric_free(&metric);
	free(cov);
	free(lf);
	free(zero);
	free(tq);
	free(tg);
	return rc;
}
