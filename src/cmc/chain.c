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
	return !(o->draws && o->logp && o->energy && o->accept_stat && o->depth &&
		 o->n_leapfrog && o->divergent && o->metric);
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
	double *cov = malloc(sizeof(double) * (size_t)d * d);
	out->grad_evals = 0;
	out->warmup_divergent = 0;
	if (!cov || xf_metric_alloc(&metric, d, s->dense) ||
	    !(nuts = xf_nuts_create(d, s->max_depth, s->logp, s->ctx, &metric))) {
		rc = -2;
		goto done;
	}
	if (s->init_cov)
		xf_metric_set(&metric, s->init_cov);
	if (xf_nuts_init(nuts, s->init)) {
		rc = -1;
		goto done;
	}
	if ((rc = warmup(s, nuts, &metric, &rng, cov, out)))
		goto done;
	for (int it = 0; it < s->n_samples; it++) {
		xf_nuts_info info;
		xf_nuts_transition(nuts, &rng, &info);
		out->grad_evals += info.n_leapfrog;
		memcpy(out->draws + (size_t)it * d, xf_nuts_point(nuts, &out->logp[it]),
		       sizeof(double) * (size_t)d);
		out->energy[it] = info.energy;
		out->accept_stat[it] = info.accept_stat;
		out->depth[it] = info.depth;
		out->n_leapfrog[it] = info.n_leapfrog;
		out->divergent[it] = info.divergent;
		if (xf_interrupted()) {
			rc = -3;
			goto done;
		}
	}
	out->step_size = xf_nuts_step(nuts);
	memcpy(out->metric, metric.inv, sizeof(double) * (s->dense ? (size_t)d * d : (size_t)d));
done:
	xf_nuts_destroy(nuts);
	xf_metric_free(&metric);
	free(cov);
	return rc;
}
