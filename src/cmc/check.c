/* check.c — the consensus self-check (cmc.md, "When the combination can be trusted"):
 * the combined posterior, taken as a Gaussian in u-space, is importance-sampled against
 * the exact full-data posterior. M points from N(mean, cov) of the combined u-draws; at
 * each, the full-data log posterior (untempered priors, σ at the median of the kept
 * shards' σ, one values-only likelihood pass over every pair on the device pool); the log
 * ratios are Pareto-smoothed (psis.c). k̂ ≤ 0.7: the weighted summaries replace the
 * consensus ones, which are kept beside them; k̂ > 0.7: the consensus summaries stay and
 * the result says plainly that they do not match the full-data posterior. */
#include <gsl/gsl_sort.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/check.h"
#include "xpcsfit/rng.h"

#define XF_LOG_2PI 1.8378770664093453

typedef struct weighted {
	double x, w;
} weighted;

static int cmp_weighted(const void *a, const void *b)
{
	const weighted *p = a, *q = b;
	return (p->x > q->x) - (p->x < q->x);
}

/* Weighted quantile q of sorted (x, w) (Σ w = 1): linear between the midpoints of the
 * cumulative weights, so equal weights give NumPy's "hazen" definition. */
static double weighted_quantile(const weighted *v, int n, double q)
{
	double cum = 0.0, prev_mid = 0.0, prev_x = v[0].x;
	for (int i = 0; i < n; i++) {
		double mid = cum + 0.5 * v[i].w;
		if (mid >= q) {
			if (i == 0 || mid <= prev_mid)
				return v[i].x;
			return prev_x + (q - prev_mid) / (mid - prev_mid) * (v[i].x - prev_x);
		}
		cum += v[i].w;
		prev_mid = mid;
		prev_x = v[i].x;
	}
	return v[n - 1].x;
}

/* mean, sd, median, 5 %, 95 % of values x[m] under weights w[m] */
static void weighted_summary(const double *x, const double *w, int m, weighted *buf, double *mean,
			     double *sd, double *median, double *q05, double *q95)
{
	double mu = 0.0, var = 0.0;
	for (int i = 0; i < m; i++)
		mu += w[i] * x[i];
	for (int i = 0; i < m; i++)
		var += w[i] * (x[i] - mu) * (x[i] - mu);
	for (int i = 0; i < m; i++)
		buf[i] = (weighted){ x[i], w[i] };
	qsort(buf, (size_t)m, sizeof(weighted), cmp_weighted);
	*mean = mu;
	*sd = sqrt(var);
	*median = weighted_quantile(buf, m, 0.50);
	*q05 = weighted_quantile(buf, m, 0.05);
	*q95 = weighted_quantile(buf, m, 0.95);
}

/* The median of the kept shards' σ (the nuisance σ of the full-data posterior). */
static double median_sigma(const xf_cmc_result *res)
{
	double *v = malloc(sizeof(double) * (size_t)res->n_shards);
	int n = 0;
	if (!v)
		return NAN;
	for (long s = 0; s < res->n_shards; s++)
		if (res->shards[s].kept)
			v[n++] = res->shards[s].sigma_mean;
	double med = NAN;
	if (n) {
		gsl_sort(v, 1, (size_t)n);
		med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
	}
	free(v);
	return med;
}

/* Mean and lower Cholesky factor of the covariance of u_draws [g][nt]; −1 when the
 * covariance is not positive definite. */
static int gaussian_of(const double *u, int g, int nt, double *mean, double *chol)
{
	memset(mean, 0, sizeof(double) * (size_t)nt);
	for (int i = 0; i < g; i++)
		for (int k = 0; k < nt; k++)
			mean[k] += u[(size_t)i * nt + k] / g;
	for (int k = 0; k < nt; k++)
		for (int l = 0; l < nt; l++) {
			double c = 0.0;
			for (int i = 0; i < g; i++)
				c += (u[(size_t)i * nt + k] - mean[k]) *
				     (u[(size_t)i * nt + l] - mean[l]);
			chol[(size_t)k * nt + l] = c / (g - 1);
		}
	if (g < nt + 2 || LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', nt, chol, nt) != 0)
		return -1;
	for (int k = 0; k < nt; k++)
		for (int l = k + 1; l < nt; l++)
			chol[(size_t)k * nt + l] = 0.0;
	return 0;
}

/* Replace the reported summaries by the weighted ones; the consensus ones move to check. */
static int correct(const cmc_run *r, xf_cmc_result *res, const double *w)
{
	xf_cmc_check *c = &res->check;
	int nf = res->n_params, nt = r->n_theta, na = res->n_phi, m = c->m;
	double *x = malloc(sizeof(double) * (size_t)m * nf), *xt = malloc(sizeof(double) * nt);
	double *col = malloc(sizeof(double) * m), *con = malloc(sizeof(double) * (size_t)m * na);
	double *off = malloc(sizeof(double) * (size_t)m * na);
	weighted *buf = malloc(sizeof(weighted) * m);
	int rc = -1;
	if (!x || !xt || !col || !con || !off || !buf)
		goto done;
	for (int i = 0; i < m; i++) {
		double *xi = x + (size_t)i * nf;
		memcpy(xi, r->x_start, sizeof(double) * (size_t)nf);
		xf_cmc_theta_physical(&r->pr, r->theta, nt, c->u + (size_t)i * nt, xt);
		for (int k = 0; k < nt; k++)
			xi[r->theta[k]] = xt[k];
		xf_problem_scaling(&r->pr, xi, con + (size_t)i * na, off + (size_t)i * na);
	}
	size_t bytes = sizeof(double) * (size_t)nf;
	memcpy(c->mean, res->mean, bytes);
	memcpy(c->sd, res->sd, bytes);
	memcpy(c->median, res->median, bytes);
	memcpy(c->q05, res->q05, bytes);
	memcpy(c->q95, res->q95, bytes);
	for (int k = 0; k < nf; k++) {
		if (res->is_fixed[k])
			continue;
		for (int i = 0; i < m; i++)
			col[i] = x[(size_t)i * nf + k];
		weighted_summary(col, w, m, buf, &res->mean[k], &res->sd[k], &res->median[k],
				 &res->q05[k], &res->q95[k]);
	}
	for (int k = 0; k < nf; k++) /* the covariance too: it is what a user propagates */
		for (int l = 0; l < nf; l++) {
			double s = 0.0;
			if (!res->is_fixed[k] && !res->is_fixed[l])
				for (int i = 0; i < m; i++)
					s += w[i] * (x[(size_t)i * nf + k] - res->mean[k]) *
					     (x[(size_t)i * nf + l] - res->mean[l]);
			res->cov[(size_t)k * nf + l] = s;
		}
	for (int a = 0; a < na; a++) {
		double med, q05, q95;
		for (int i = 0; i < m; i++)
			col[i] = con[(size_t)i * na + a];
		weighted_summary(col, w, m, buf, &res->contrast[a], &res->contrast_sd[a], &med,
				 &q05, &q95);
		for (int i = 0; i < m; i++)
			col[i] = off[(size_t)i * na + a];
		weighted_summary(col, w, m, buf, &res->offset[a], &res->offset_sd[a], &med, &q05,
				 &q95);
	}
	c->corrected = 1;
	rc = 0;
done:
	free(x);
	free(xt);
	free(col);
	free(con);
	free(off);
	free(buf);
	return rc;
}

int xf_cmc_self_check(const cmc_run *r, const double *u_draws, int g, xf_cmc_result *res,
		      xf_error *err)
{
	xf_cmc_check *c = &res->check;
	int nt = r->n_theta, m = r->o->check_draws, nf = res->n_params, rc = 0;
	if (r->n_shards < 2 || m <= 0 || res->n_draws == 0 || nt == 0)
		return 0;
	double sigma = median_sigma(res);
	double *mean = malloc(sizeof(double) * nt), *chol = malloc(sizeof(double) * nt * nt);
	double *z = malloc(sizeof(double) * (nt + 1)), *u = malloc(sizeof(double) * (nt + 1));
	double *w = malloc(sizeof(double) * m);
	xf_pairset all = { 0 };
	xf_lik *lik = NULL;
	xf_cmc_target t;
	int have_target = 0;
	c->u = malloc(sizeof(double) * (size_t)m * nt);
	c->log_w = malloc(sizeof(double) * m);
	c->mean = malloc(sizeof(double) * nf);
	c->sd = malloc(sizeof(double) * nf);
	c->median = malloc(sizeof(double) * nf);
	c->q05 = malloc(sizeof(double) * nf);
	c->q95 = malloc(sizeof(double) * nf);
	if (!mean || !chol || !z || !u || !w || !c->u || !c->log_w || !c->mean || !c->sd ||
	    !c->median || !c->q05 || !c->q95 || xf_pairset_all(&all, r->pr.ds->n_frames) ||
	    xf_cmc_target_alloc(&t, &r->pr)) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the consensus self-check");
		goto done;
	}
	have_target = 1;
	if (!(sigma > 0.0) || gaussian_of(u_draws, g, nt, mean, chol)) {
		xf_warn("cmc: the consensus self-check was skipped: the combined draws have no "
			"usable covariance");
		goto done;
	}
	if (!(lik = xf_lik_create(&r->pr, &all, r->pool, err))) {
		rc = err->code;
		goto done;
	}
	/* the full-data posterior: every pair, untempered priors, σ fixed (its prior terms
	 * are then constants and cancel in the normalised weights) */
	t.lik = lik;
	t.n_points = r->pr.ds->n_points;
	t.n_theta = nt;
	t.theta = r->theta;
	t.dim = nt + 1;
	t.temper = 1.0;
	t.sigma_scale = 1.0;
	t.x_fixed = r->x_start;
	double log_det = 0.0;
	for (int k = 0; k < nt; k++)
		log_det += log(chol[(size_t)k * nt + k]);
	xf_info("cmc: self-check, the full-data posterior at %d points of the combined Gaussian",
		m);
	for (int i = 0; i < m; i++) {
		double zz = 0.0, lp;
		for (int k = 0; k < nt; k++) {
			z[k] = xf_rng_normal(r->seed, XF_RNG_CMC_CHECK, (uint64_t)i, (uint64_t)k,
					     0);
			zz += z[k] * z[k];
		}
		for (int k = 0; k < nt; k++) {
			double s = mean[k];
			for (int l = 0; l <= k; l++)
				s += chol[(size_t)k * nt + l] * z[l];
			u[k] = s;
		}
		u[nt] = log(sigma);
		memcpy(c->u + (size_t)i * nt, u, sizeof(double) * nt);
		double log_q = -0.5 * zz - log_det - 0.5 * nt * XF_LOG_2PI;
		int bad = xf_cmc_target_logp(&t, u, &lp, NULL);
		c->log_w[i] = bad || !isfinite(lp) ? -INFINITY : lp - log_q;
		if (xf_interrupted()) {
			rc = xf_fail(err, XF_ERR_INTERRUPTED, "interrupted during the self-check");
			goto done;
		}
	}
	c->done = 1;
	c->m = m;
	c->seed = r->seed;
	c->sigma = sigma;
	c->khat = xf_psis(c->log_w, m);
	for (int i = 0; i < m; i++)
		w[i] = exp(c->log_w[i]);
	if (c->khat <= XF_KHAT_MAX) {
		if (correct(r, res, w))
			rc = xf_fail(err, XF_ERR_NOMEM,
				     "out of memory for the consensus self-check");
	} else {
		xf_warn("cmc: the combined posterior does not match the full-data posterior "
			"(Pareto k-hat %.2f > %.1f): the reported summaries are the plain "
			"consensus "
			"ones; fewer shards, or num_shards: 1 (the exact posterior), is the remedy",
			c->khat, XF_KHAT_MAX);
	}
done:
	xf_lik_destroy(lik);
	xf_pairset_free(&all);
	if (have_target)
		xf_cmc_target_free(&t);
	free(mean);
	free(chol);
	free(z);
	free(u);
	free(w);
	return rc;
}
