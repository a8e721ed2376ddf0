/* chain.c — one chain of the sampler (sampler.h): warmup with step-size and metric
 * adaptation, then sampling; and the chain's random stream. */
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

/* The sampler runs in standardised coordinates z = (q − q0)/scale, scale = the square
 * root of the initial metric's diagonal: Stan's metric regularisation adds a multiple of
 * the identity, which only makes sense when every coordinate is of unit scale (in the
 * XPCS posterior, u-space variances span 1e-8 … 1, and the identity term swamped the
 * small ones, cutting the step size 50-fold). A fixed affine map changes the log
 * density by a constant only, so the posterior is the same. */
typedef struct scaled_target {
	xf_logp_fn logp;
	void *ctx;
	int d;
	const double *q0, *scale;
	double *q; /* [d] workspace */
} scaled_target;

static void z_to_q(const scaled_target *t, const double *z, double *q)
{
	for (int k = 0; k < t->d; k++)
		q[k] = t->q0[k] + t->scale[k] * z[k];
}

static int scaled_logp(void *ctx, const double *z, double *logp, double *grad)
{
	scaled_target *t = ctx;
	z_to_q(t, z, t->q);
	int rc = t->logp(t->ctx, t->q, logp, grad);
	if (grad)
		for (int k = 0; k < t->d; k++)
			grad[k] *= t->scale[k];
	return rc;
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
		xf_nuts_info info;
		xf_nuts_transition(nuts, rng, &info);
		out->grad_evals += info.n_leapfrog;
		out->warmup_divergent += info.divergent;
		if (s->tick)
			s->tick(s->tick_ctx, 0, info.divergent);
		xf_nuts_set_step(nuts, xf_step_adapt_learn(&step, info.accept_stat));
		if (xf_window_learn(&win, xf_nuts_point(nuts, NULL), cov)) {
			xf_metric_set(metric, cov); /* an indefinite estimate keeps the old one */
			xf_nuts_find_step(nuts, rng);
			xf_step_adapt_init(&step, s->target_accept, xf_nuts_step(nuts));
		}
		if (xf_interrupted()) {
			xf_window_free(&win);
			return -3;
		}
	}
	if (s->n_warmup > 0)
		xf_nuts_set_step(nuts, xf_step_adapt_final(&step));
	xf_window_free(&win);
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
	double *scale = malloc(sizeof(double) * (size_t)d);
	double *zero = calloc((size_t)d, sizeof(double));
	double *tq = malloc(sizeof(double) * (size_t)d);
	scaled_target st = { s->logp, s->ctx, d, s->init, scale, tq };
	out->grad_evals = 0;
	out->warmup_divergent = 0;
	if (!cov || !scale || !zero || !tq || xf_metric_alloc(&metric, d, s->dense) ||
	    !(nuts = xf_nuts_create(d, s->max_depth, scaled_logp, &st, &metric))) {
		rc = -2;
		goto done;
	}
	for (int k = 0; k < d; k++) {
		double v =
			s->init_cov ? s->init_cov[s->dense ? (size_t)k * d + k : (size_t)k] : 1.0;
		scale[k] = v > 0.0 && isfinite(v) ? sqrt(v) : 1.0;
	}
	if (s->init_cov) { /* the initial metric in z: D⁻¹ C D⁻¹ */
		for (size_t i = 0; i < n_cov; i++) {
			int r = s->dense ? (int)(i / (size_t)d) : (int)i;
			int c = s->dense ? (int)(i % (size_t)d) : (int)i;
			cov[i] = s->init_cov[i] / (scale[r] * scale[c]);
		}
		xf_metric_set(&metric, cov);
	}
	if (xf_nuts_init(nuts, zero)) {
		rc = -1;
		goto done;
	}
	if ((rc = warmup(s, nuts, &metric, &rng, cov, out)))
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
		if (s->tick)
			s->tick(s->tick_ctx, 1, info.divergent);
		if (xf_interrupted()) {
			rc = -3;
			goto done;
		}
	}
	out->step_size = xf_nuts_step(nuts);
	for (size_t i = 0; i < n_cov; i++) { /* the adapted metric back in q: D M⁻¹ D */
		int r = s->dense ? (int)(i / (size_t)d) : (int)i;
		int c = s->dense ? (int)(i % (size_t)d) : (int)i;
		out->metric[i] = metric.inv[i] * scale[r] * scale[c];
	}
done:
	xf_nuts_destroy(nuts);
	xf_metric_free(&metric);
	free(cov);
	free(scale);
	free(zero);
	free(tq);
	return rc;
}
