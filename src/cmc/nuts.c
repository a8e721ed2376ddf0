/* nuts.c — the No-U-Turn sampler's transition (sampler.h), as Stan does it: a
 * trajectory doubled forwards or backwards at random until the generalized U-turn
 * criterion fails (checked on the merged tree and across the two subtrees at every
 * level) or the energy error diverges; the new state is drawn from the trajectory by
 * multinomial sampling, biased towards the new subtree at the top level and uniform
 * inside subtrees. Recursion temporaries live in per-depth slots allocated once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/sampler.h"

/* A point of phase space: position, momentum, gradient of log p, log p. */
typedef struct ps_point {
	double *q, *p, *grad;
	double logp;
} ps_point;

/* The temporaries of one level of the tree recursion. */
typedef struct level {
	double *p_init_end, *ps_init_end, *rho_init;
	double *p_final_beg, *ps_final_beg, *rho_final;
	double *rho_subtree, *rho_ext;
	ps_point z_final;
} level;

struct xf_nuts {
	int d, max_depth;
	xf_logp_fn logp;
	void *ctx;
	const xf_metric *metric;
	double epsilon;
	ps_point cur; /* the chain's state */
	ps_point z;   /* the integrator's moving point */
	ps_point z_fwd, z_bck, z_sample, z_propose;
	double *p_fwd_fwd, *p_fwd_bck, *p_bck_fwd, *p_bck_bck;
	double *ps_fwd_fwd, *ps_fwd_bck, *ps_bck_fwd, *ps_bck_bck;
	double *rho, *rho_fwd, *rho_bck, *rho_ext, *work;
	level *levels; /* [max_depth + 1] */
	double *store; /* one allocation behind every vector */
	/* the transition in progress */
	xf_chain_rng *rng;
	int divergent, n_leapfrog;
	double sum_metro;
};

static double log_sum_exp(double a, double b)
{
	if (a == -INFINITY)
		return b;
	if (b == -INFINITY)
		return a;
	double m = a > b ? a : b;
	return m + log(exp(a - m) + exp(b - m));
}

static void point_copy(ps_point *dst, const ps_point *src, int d)
{
	memcpy(dst->q, src->q, sizeof(double) * (size_t)d);
	memcpy(dst->p, src->p, sizeof(double) * (size_t)d);
	memcpy(dst->grad, src->grad, sizeof(double) * (size_t)d);
	dst->logp = src->logp;
}

static double hamiltonian(const xf_nuts *s, const ps_point *z)
{
	double h = -z->logp + xf_metric_kinetic(s->metric, z->p);
	return isnan(h) ? INFINITY : h;
}

xf_nuts *xf_nuts_create(int d, int max_depth, xf_logp_fn logp, void *ctx, const xf_metric *metric)
{
	xf_nuts *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->d = d;
	s->max_depth = max_depth;
	s->logp = logp;
	s->ctx = ctx;
	s->metric = metric;
	s->epsilon = 1.0;
	/* 6 points × 3 vectors, 13 vectors, per level 8 vectors and a point of 3 */
	size_t per_level = 11, n_vec = 6 * 3 + 13 + (size_t)(max_depth + 1) * per_level;
	s->store = calloc(n_vec * (size_t)d, sizeof(double));
	s->levels = calloc((size_t)max_depth + 1, sizeof(level));
	if (!s->store || !s->levels) {
		xf_nuts_destroy(s);
		return NULL;
	}
	double *v = s->store;
#define NEXT() (v += d, v - d)
	ps_point *pts[6] = { &s->cur, &s->z, &s->z_fwd, &s->z_bck, &s->z_sample, &s->z_propose };
	for (int k = 0; k < 6; k++) {
		pts[k]->q = NEXT();
		pts[k]->p = NEXT();
		pts[k]->grad = NEXT();
	}
	double **vecs[13] = { &s->p_fwd_fwd,  &s->p_fwd_bck,  &s->p_bck_fwd,  &s->p_bck_bck,
			      &s->ps_fwd_fwd, &s->ps_fwd_bck, &s->ps_bck_fwd, &s->ps_bck_bck,
			      &s->rho,	      &s->rho_fwd,    &s->rho_bck,    &s->rho_ext,
			      &s->work };
	for (int k = 0; k < 13; k++)
		*vecs[k] = NEXT();
	for (int l = 0; l <= max_depth; l++) {
		level *lv = &s->levels[l];
		double **lvecs[8] = { &lv->p_init_end,	&lv->ps_init_end,  &lv->rho_init,
				      &lv->p_final_beg, &lv->ps_final_beg, &lv->rho_final,
				      &lv->rho_subtree, &lv->rho_ext };
		for (int k = 0; k < 8; k++)
			*lvecs[k] = NEXT();
		lv->z_final.q = NEXT();
		lv->z_final.p = NEXT();
		lv->z_final.grad = NEXT();
	}
#undef NEXT
	return s;
}

void xf_nuts_destroy(xf_nuts *s)
{
	if (!s)
		return;
	free(s->store);
	free(s->levels);
	free(s);
}

void xf_nuts_set_step(xf_nuts *s, double epsilon)
{
	s->epsilon = epsilon;
}

double xf_nuts_step(const xf_nuts *s)
{
	return s->epsilon;
}

const double *xf_nuts_point(const xf_nuts *s, double *logp)
{
	if (logp)
		*logp = s->cur.logp;
	return s->cur.q;
}

static int evaluate(xf_nuts *s, const double *q, double *logp, double *grad)
{
	if (s->logp(s->ctx, q, logp, grad) || !isfinite(*logp)) {
		*logp = -INFINITY;
		return -1;
	}
	return 0;
}

int xf_nuts_init(xf_nuts *s, const double *q)
{
	memcpy(s->cur.q, q, sizeof(double) * (size_t)s->d);
	return evaluate(s, s->cur.q, &s->cur.logp, s->cur.grad);
}

double xf_nuts_leapfrog(xf_nuts *s, double *q, double *p, double *grad, double *logp, double eps)
{
	int d = s->d;
	for (int k = 0; k < d; k++)
		p[k] += 0.5 * eps * grad[k];
	xf_metric_velocity(s->metric, p, s->work);
	for (int k = 0; k < d; k++)
		q[k] += eps * s->work[k];
	if (evaluate(s, q, logp, grad))
		return INFINITY;
	for (int k = 0; k < d; k++)
		p[k] += 0.5 * eps * grad[k];
	double h = -*logp + xf_metric_kinetic(s->metric, p);
	return isnan(h) ? INFINITY : h;
}

static void evolve(xf_nuts *s, ps_point *z, double eps)
{
	xf_nuts_leapfrog(s, z->q, z->p, z->grad, &z->logp, eps);
}

/* Both ends of a trajectory still move apart along ρ (in the metric's sense). */
static int criterion(const xf_nuts *s, const double *ps_minus, const double *ps_plus,
		     const double *rho)
{
	double a = 0.0, b = 0.0;
	for (int k = 0; k < s->d; k++) {
		a += ps_plus[k] * rho[k];
		b += ps_minus[k] * rho[k];
	}
	return a > 0.0 && b > 0.0;
}

static void vec_add(double *out, const double *a, const double *b, int d)
{
	for (int k = 0; k < d; k++)
		out[k] = a[k] + b[k];
}

/* Stan's build_tree: a subtree of 2^depth leapfrog steps in direction sign from s->z. */
static int build_tree(xf_nuts *s, int depth, ps_point *z_propose, double *ps_beg, double *ps_end,
		      double *rho, double *p_beg, double *p_end, double h0, double sign,
		      double *log_sum_weight)
{
	int d = s->d;
	if (depth == 0) {
		evolve(s, &s->z, sign * s->epsilon);
		s->n_leapfrog++;
		double h = hamiltonian(s, &s->z);
		if (h - h0 > XF_NUTS_MAX_DELTA_H)
			s->divergent = 1;
		*log_sum_weight = log_sum_exp(*log_sum_weight, h0 - h);
		s->sum_metro += h0 - h > 0.0 ? 1.0 : exp(h0 - h);
		point_copy(z_propose, &s->z, d);
		xf_metric_velocity(s->metric, s->z.p, ps_beg);
		memcpy(ps_end, ps_beg, sizeof(double) * (size_t)d);
		for (int k = 0; k < d; k++)
			rho[k] += s->z.p[k];
		memcpy(p_beg, s->z.p, sizeof(double) * (size_t)d);
		memcpy(p_end, p_beg, sizeof(double) * (size_t)d);
		return !s->divergent;
	}
	level *lv = &s->levels[depth];
	double lsw_init = -INFINITY, lsw_final = -INFINITY;
	memset(lv->rho_init, 0, sizeof(double) * (size_t)d);
	if (!build_tree(s, depth - 1, z_propose, ps_beg, lv->ps_init_end, lv->rho_init, p_beg,
			lv->p_init_end, h0, sign, &lsw_init))
		return 0;
	point_copy(&lv->z_final, &s->z, d);
	memset(lv->rho_final, 0, sizeof(double) * (size_t)d);
	if (!build_tree(s, depth - 1, &lv->z_final, lv->ps_final_beg, ps_end, lv->rho_final,
			lv->p_final_beg, p_end, h0, sign, &lsw_final))
		return 0;
	/* multinomial sample from the subtree, uniform between its two halves */
	double lsw_subtree = log_sum_exp(lsw_init, lsw_final);
	*log_sum_weight = log_sum_exp(*log_sum_weight, lsw_subtree);
	if (lsw_final > lsw_subtree) {
		point_copy(z_propose, &lv->z_final, d);
	} else {
		double accept = exp(lsw_final - lsw_subtree);
		if (xf_chain_uniform(s->rng) < accept)
			point_copy(z_propose, &lv->z_final, d);
	}
	vec_add(lv->rho_subtree, lv->rho_init, lv->rho_final, d);
	for (int k = 0; k < d; k++)
		rho[k] += lv->rho_subtree[k];
	/* the U-turn criterion on the merged subtree and across its two halves */
	int persist = criterion(s, ps_beg, ps_end, lv->rho_subtree);
	vec_add(lv->rho_ext, lv->rho_init, lv->p_final_beg, d);
	persist &= criterion(s, ps_beg, lv->ps_final_beg, lv->rho_ext);
	vec_add(lv->rho_ext, lv->rho_final, lv->p_init_end, d);
	persist &= criterion(s, lv->ps_init_end, ps_end, lv->rho_ext);
	return persist;
}

void xf_nuts_transition(xf_nuts *s, xf_chain_rng *rng, xf_nuts_info *info)
{
	int d = s->d;
	size_t bytes = sizeof(double) * (size_t)d;
	s->rng = rng;
	/* fresh momentum at the current point */
	memcpy(s->z.q, s->cur.q, bytes);
	memcpy(s->z.grad, s->cur.grad, bytes);
	s->z.logp = s->cur.logp;
	xf_metric_sample(s->metric, rng, s->z.p, s->work);
	point_copy(&s->z_fwd, &s->z, d);
	point_copy(&s->z_bck, &s->z, d);
	point_copy(&s->z_sample, &s->z, d);
	point_copy(&s->z_propose, &s->z, d);
	xf_metric_velocity(s->metric, s->z.p, s->ps_fwd_fwd);
	double *ps_all[3] = { s->ps_fwd_bck, s->ps_bck_fwd, s->ps_bck_bck };
	double *p_all[4] = { s->p_fwd_fwd, s->p_fwd_bck, s->p_bck_fwd, s->p_bck_bck };
	for (int k = 0; k < 3; k++)
		memcpy(ps_all[k], s->ps_fwd_fwd, bytes);
	for (int k = 0; k < 4; k++)
		memcpy(p_all[k], s->z.p, bytes);
	memcpy(s->rho, s->z.p, bytes);
	double log_sum_weight = 0.0, h0 = hamiltonian(s, &s->z);
	int depth = 0;
	s->n_leapfrog = 0;
	s->sum_metro = 0.0;
	s->divergent = 0;
	while (depth < s->max_depth) {
		double lsw_subtree = -INFINITY;
		int valid;
		memset(s->rho_fwd, 0, bytes);
		memset(s->rho_bck, 0, bytes);
		if (xf_chain_uniform(rng) > 0.5) { /* extend forwards */
			point_copy(&s->z, &s->z_fwd, d);
			memcpy(s->rho_bck, s->rho, bytes);
			memcpy(s->p_bck_fwd, s->p_fwd_bck, bytes);
			memcpy(s->ps_bck_fwd, s->ps_fwd_bck, bytes);
			valid = build_tree(s, depth, &s->z_propose, s->ps_fwd_bck, s->ps_fwd_fwd,
					   s->rho_fwd, s->p_fwd_bck, s->p_fwd_fwd, h0, 1.0,
					   &lsw_subtree);
			point_copy(&s->z_fwd, &s->z, d);
		} else { /* extend backwards */
			point_copy(&s->z, &s->z_bck, d);
			memcpy(s->rho_fwd, s->rho, bytes);
			memcpy(s->p_fwd_bck, s->p_bck_fwd, bytes);
			memcpy(s->ps_fwd_bck, s->ps_bck_fwd, bytes);
			valid = build_tree(s, depth, &s->z_propose, s->ps_bck_fwd, s->ps_bck_bck,
					   s->rho_bck, s->p_bck_fwd, s->p_bck_bck, h0, -1.0,
					   &lsw_subtree);
			point_copy(&s->z_bck, &s->z, d);
		}
		if (!valid)
			break;
		depth++;
		/* biased progressive sampling: prefer the new subtree */
		if (lsw_subtree > log_sum_weight) {
			point_copy(&s->z_sample, &s->z_propose, d);
		} else {
			double accept = exp(lsw_subtree - log_sum_weight);
			if (xf_chain_uniform(rng) < accept)
				point_copy(&s->z_sample, &s->z_propose, d);
		}
		log_sum_weight = log_sum_exp(log_sum_weight, lsw_subtree);
		vec_add(s->rho, s->rho_bck, s->rho_fwd, d);
		int persist = criterion(s, s->ps_bck_bck, s->ps_fwd_fwd, s->rho);
		vec_add(s->rho_ext, s->rho_bck, s->p_fwd_bck, d);
		persist &= criterion(s, s->ps_bck_bck, s->ps_fwd_bck, s->rho_ext);
		vec_add(s->rho_ext, s->rho_fwd, s->p_bck_fwd, d);
		persist &= criterion(s, s->ps_bck_fwd, s->ps_fwd_fwd, s->rho_ext);
		if (!persist)
			break;
	}
	info->depth = depth;
	info->n_leapfrog = s->n_leapfrog;
	info->divergent = s->divergent;
	info->accept_stat = s->n_leapfrog ? s->sum_metro / s->n_leapfrog : 0.0;
	memcpy(s->cur.q, s->z_sample.q, bytes);
	memcpy(s->cur.grad, s->z_sample.grad, bytes);
	s->cur.logp = s->z_sample.logp;
	info->energy = hamiltonian(s, &s->z_sample);
}

void xf_nuts_find_step(xf_nuts *s, xf_chain_rng *rng)
{
	int d = s->d;
	size_t bytes = sizeof(double) * (size_t)d;
	if (!(s->epsilon > 0.0) || s->epsilon > 1e7)
		return;
	int direction = 0;
	for (int tries = 0; tries < 100; tries++) {
		memcpy(s->z.q, s->cur.q, bytes);
		memcpy(s->z.grad, s->cur.grad, bytes);
		s->z.logp = s->cur.logp;
		xf_metric_sample(s->metric, rng, s->z.p, s->work);
		double h0 = hamiltonian(s, &s->z);
		evolve(s, &s->z, s->epsilon);
		double delta_h = h0 - hamiltonian(s, &s->z);
		if (direction == 0) { /* the first trial only sets the direction */
			direction = delta_h > log(0.8) ? 1 : -1;
			continue;
		}
		if ((direction == 1 && !(delta_h > log(0.8))) ||
		    (direction == -1 && !(delta_h < log(0.8))))
			break;
		s->epsilon = direction == 1 ? 2.0 * s->epsilon : 0.5 * s->epsilon;
		if (s->epsilon > 1e7 || s->epsilon < 1e-12)
			break;
	}
}
