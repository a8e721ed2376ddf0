/* check.c — the consensus self-check (cmc.md, "When the combination can be trusted";
 * adr/0039): the combined posterior is importance-sampled against the exact full-data
 * posterior. Points from a multivariate t built on the combined Gaussian in u-space
 * (proposal.c); at each, the full-data log posterior (untempered priors, σ at the median
 * of the kept shards' σ, one values-only likelihood pass over every pair on the device
 * pool); the log ratios are Pareto-smoothed (psis.c). M starts at
 * combination.check_draws and doubles until k̂ and IS-ESS/M agree between M/2 and M. The
 * correction is published only when all three checks pass — k̂ ≤ 0.7, IS-ESS/M at least
 * half of what a Gaussian target gives, and the axis check — because k̂ alone cannot see
 * the part of the posterior the proposal never reached. */
#include <gsl/gsl_sort.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/check.h"
#include "cmc/proposal.h"

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

/* The verdict: which checks failed, with their numbers; it is the quality reason, so it
 * fits in one (≤ 191 characters with all three failing). The axis's parameter name is in
 * parameters.json. */
static void verdict(xf_cmc_check *c)
{
	char what[96] = "";
	size_t n = 0;
	if (!c->pass_khat)
		n += (size_t)snprintf(what + n, sizeof what - n, "k-hat %.2f > %.1f, ", c->khat,
				      XF_KHAT_MAX);
	if (!c->pass_ess && n < sizeof what)
		n += (size_t)snprintf(what + n, sizeof what - n, "IS-ESS/M %.3f < %.3f, ",
				      c->ess / c->m, XF_ESS_REF_FRACTION * c->ess_ref);
	if (!c->pass_axis && n < sizeof what)
		n += (size_t)snprintf(what + n, sizeof what - n, "axis %d drop %.2g vs 0.5, ",
				      c->axis, c->axis_drop);
	if (n >= 2 && n < sizeof what)
		what[n - 2] = '\0';
	snprintf(c->verdict, sizeof c->verdict,
		 "the combined posterior does not match the full-data posterior (%s); "
		 "num_shards: 1 gives the exact one",
		 what);
}

int xf_cmc_self_check(const cmc_run *r, const double *u_draws, int g, xf_cmc_result *res,
		      xf_error *err)
{
	xf_cmc_check *c = &res->check;
	int nt = r->n_theta, m0 = r->o->check_draws, nf = res->n_params, rc = 0;
	if (r->n_shards < 2 || m0 <= 0 || res->n_draws == 0 || nt == 0)
		return 0;
	int m_max = xf_check_m_max(m0);
	double sigma = median_sigma(res);
	double *mean = malloc(sizeof(double) * nt), *chol = malloc(sizeof(double) * nt * nt);
	double *w = malloc(sizeof(double) * m_max);
	xf_pairset all = { 0 };
	xf_lik *lik = NULL;
	xf_cmc_target t;
	int have_target = 0;
	c->u = malloc(sizeof(double) * (size_t)m_max * nt);
	c->log_w = malloc(sizeof(double) * m_max);
	c->mean = malloc(sizeof(double) * nf);
	c->sd = malloc(sizeof(double) * nf);
	c->median = malloc(sizeof(double) * nf);
	c->q05 = malloc(sizeof(double) * nf);
	c->q95 = malloc(sizeof(double) * nf);
	if (!mean || !chol || !w || !c->u || !c->log_w || !c->mean || !c->sd || !c->median ||
	    !c->q05 || !c->q95 || xf_pairset_all(&all, r->pr.ds->n_frames) ||
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
	if (!(lik = xf_lik_create(&r->pr, &all, r->pool, err)) ||
	    xf_cmc_route_device(r, lik, XF_DEVICE_JOB_POSTERIOR_IMPORTANCE, "consensus self-check",
				0, err)) {
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
	/* θ only: σ held at the median of the shards' (its prior terms then cancel) */
	xf_full_batch fb = { &t, nt, log(sigma), 0, NULL, NULL };
	int irc = xf_check_importance(xf_full_logp_batch, &fb, nt, mean, chol, r->seed, m0, 0.0, w,
				      c);
	if (irc) {
		rc = irc == XF_ERR_INTERRUPTED
			     ? xf_fail(err, XF_ERR_INTERRUPTED, "interrupted during the self-check")
			     : xf_fail(err, XF_ERR_NOMEM,
				       "out of memory for the consensus self-check");
		goto done;
	}
	c->done = 1;
	c->sigma = sigma;
	const char *axis_name = c->axis_param >= 0 ? res->names[r->theta[c->axis_param]] : "-";
	xf_info("cmc: self-check: k-hat %.3f, M %d, IS-ESS %.0f (IS-ESS/M %.3f, Gaussian "
		"target %.3f), worst axis %d (%s) drop %.3f (|dev| %.3f), seed %llu",
		c->khat, c->m, c->ess, c->ess / c->m, c->ess_ref, c->axis, axis_name, c->axis_drop,
		c->axis_dev, (unsigned long long)c->seed);
	if (c->pass_khat && c->pass_ess && c->pass_axis) {
		if (xf_cmc_check_publish(r, res, w))
			rc = xf_fail(err, XF_ERR_NOMEM,
				     "out of memory for the consensus self-check");
	} else {
		verdict(c);
		xf_warn("cmc: %s; the summaries are the plain consensus ones", c->verdict);
	}
done:
	xf_lik_destroy(lik);
	xf_pairset_free(&all);
	if (have_target)
		xf_cmc_target_free(&t);
	free(mean);
	free(chol);
	free(w);
	return rc;
}
