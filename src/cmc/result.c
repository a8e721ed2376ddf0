/* result.c — the CMC result record (cmc.h): layout and shard slots, then the combined
 * posterior in physical parameters with its summaries, the per-angle contrast and offset,
 * the status (kept fraction against combination.min_success_rate) and the quality. */
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/check.h"
#include "cmc/prior_vs_nlsq.h"
#include "cmc/route.h"
#include "cmc/run_internal.h"
#include "cmc/sensitivity.h"
#include "cmc/beyond.h"

#define XF_EBFMI_LOW 0.3 /* below: the sampler explores the energy poorly (Betancourt) */
#define XF_ESS_LOW   100 /* bulk or tail ESS of a kept shard below this: marginal */

int xf_cmc_result_init(const cmc_run *r, xf_cmc_result *res, xf_error *err)
{
	const xf_problem *pr = &r->pr;
	int nf = pr->n_full;
	res->mode = pr->mode;
	res->scaling_mode = pr->scaling->mode;
	res->n_params = nf;
	res->n_phys = pr->n_phys;
	res->n_theta = r->n_theta;
	res->n_phi = pr->n_phi;
	res->n_shards = r->n_shards;
	res->n_chains = r->n_chains;
	res->n_warmup = r->n_warmup;
	res->n_samples = r->n_samples;
	res->target_accept = r->target_accept;
	res->temper = r->temper;
	res->seed = r->seed;
	res->combination = r->o->combination;
	snprintf(res->shard_dir, sizeof res->shard_dir, "%s", r->dir);
	res->names = calloc((size_t)nf, sizeof(char *));
	res->is_fixed = malloc(sizeof(int) * (size_t)nf);
	res->lower = malloc(sizeof(double) * (size_t)nf);
	res->upper = malloc(sizeof(double) * (size_t)nf);
	res->theta = malloc(sizeof(int) * (size_t)(r->n_theta ? r->n_theta : 1));
	res->phi_deg = malloc(sizeof(double) * (size_t)pr->n_phi);
	res->shards = calloc((size_t)r->n_shards, sizeof(xf_cmc_shard));
	if (!res->names || !res->is_fixed || !res->lower || !res->upper || !res->theta ||
	    !res->phi_deg || !res->shards)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the CMC result");
	for (int k = 0; k < nf; k++) {
		res->names[k] = strdup(pr->names[k]);
		res->is_fixed[k] = pr->fixed[k];
		if (!res->names[k])
			return xf_fail(err, XF_ERR_NOMEM, "out of memory for the CMC result");
	}
	memcpy(res->lower, pr->lower, sizeof(double) * (size_t)nf);
	memcpy(res->upper, pr->upper, sizeof(double) * (size_t)nf);
	memcpy(res->theta, r->theta, sizeof(int) * (size_t)r->n_theta);
	memcpy(res->phi_deg, pr->ds->phi_deg, sizeof(double) * (size_t)pr->n_phi);
	return 0;
}

/* mean, sd, median, 5 % and 95 % of column k of draws [n][stride] (GSL: the quantiles
 * interpolate linearly between order statistics, as NumPy's default). */
static void column_summary(const double *draws, int n, int stride, int k, double *buf, double *mean,
			   double *sd, double *median, double *q05, double *q95)
{
	if (n == 0) { /* no combined posterior: nothing to report, not zeros */
		*mean = *sd = *median = *q05 = *q95 = NAN;
		return;
	}
	*mean = gsl_stats_mean(draws + k, (size_t)stride, (size_t)n);
	*sd = n > 1 ? gsl_stats_sd_m(draws + k, (size_t)stride, (size_t)n, *mean) : NAN;
	for (int g = 0; g < n; g++)
		buf[g] = draws[(size_t)g * stride + k];
	gsl_sort(buf, 1, (size_t)n);
	*median = gsl_stats_quantile_from_sorted_data(buf, 1, (size_t)n, 0.50);
	*q05 = gsl_stats_quantile_from_sorted_data(buf, 1, (size_t)n, 0.05);
	*q95 = gsl_stats_quantile_from_sorted_data(buf, 1, (size_t)n, 0.95);
}

static int alloc_posterior(xf_cmc_result *res, int n_draws)
{
	size_t nf = (size_t)res->n_params, na = (size_t)res->n_phi;
	res->n_draws = n_draws;
	res->draws = malloc(sizeof(double) * (size_t)(n_draws ? n_draws : 1) * nf);
	res->mean = malloc(sizeof(double) * nf);
	res->sd = malloc(sizeof(double) * nf);
	res->median = malloc(sizeof(double) * nf);
	res->q05 = malloc(sizeof(double) * nf);
	res->q95 = malloc(sizeof(double) * nf);
	res->cov = malloc(sizeof(double) * nf * nf);
	res->contrast = malloc(sizeof(double) * na);
	res->contrast_sd = malloc(sizeof(double) * na);
	res->offset = malloc(sizeof(double) * na);
	res->offset_sd = malloc(sizeof(double) * na);
	return !(res->draws && res->mean && res->sd && res->median && res->q05 && res->q95 &&
		 res->cov && res->contrast && res->contrast_sd && res->offset && res->offset_sd);
}

/* Summaries of the physical draws: every parameter, the covariance, and per angle the
 * contrast and offset the scaling coefficients mean. */
static int summarize(const cmc_run *r, xf_cmc_result *res)
{
	int n = res->n_draws, nf = res->n_params, na = res->n_phi;
	double *buf = malloc(sizeof(double) * (size_t)(n ? n : 1) * 2);
	double *con = malloc(sizeof(double) * (size_t)na * (n ? n : 1));
	double *off = malloc(sizeof(double) * (size_t)na * (n ? n : 1));
	if (!buf || !con || !off) {
		free(buf);
		free(con);
		free(off);
		return -1;
	}
	for (int k = 0; k < nf; k++)
		column_summary(res->draws, n, nf, k, buf, &res->mean[k], &res->sd[k],
			       &res->median[k], &res->q05[k], &res->q95[k]);
	for (int k = 0; k < nf; k++)
		for (int l = 0; l < nf; l++) {
			double c = 0.0;
			for (int g = 0; g < n; g++)
				c += (res->draws[(size_t)g * nf + k] - res->mean[k]) *
				     (res->draws[(size_t)g * nf + l] - res->mean[l]);
			res->cov[(size_t)k * nf + l] = n > 1 ? c / (n - 1) : NAN;
		}
	for (int g = 0; g < n; g++)
		xf_problem_scaling(&r->pr, res->draws + (size_t)g * nf, con + (size_t)g * na,
				   off + (size_t)g * na);
	for (int a = 0; a < na; a++) {
		double med, q05, q95;
		column_summary(con, n, na, a, buf, &res->contrast[a], &res->contrast_sd[a], &med,
			       &q05, &q95);
		column_summary(off, n, na, a, buf, &res->offset[a], &res->offset_sd[a], &med, &q05,
			       &q95);
	}
	free(buf);
	free(con);
	free(off);
	return 0;
}
/* A failed one-shard run on a file whose NLSQ fit found a ridge (adr/0047): the data fix
 * a combination and nothing along it but the priors and the bounds, a line in the
 * sampler's coordinates that bends where they cut it — the shape NUTS cannot cross
 * (adr/0079 "Why the α ≈ 0 replicates still fail"). Say so, with NLSQ's fix. */
static void no_posterior_ridge(const cmc_run *r, xf_quality *q)
{
	if (!r->nlsq || r->nlsq->quality.identified.n_combos <= 0)
		return;
	char line[256];
	xf_identified_text(&r->nlsq->quality.identified, line, sizeof line);
	xf_quality_add_reason(q,
			      "NLSQ found a ridge: %s; along it only the priors and bounds decide, "
			      "a shape exact NUTS cannot cross: fix a parameter or give it an "
			      "informative prior",
			      line);
}

/* Status from the kept fraction; the quality from everything a user should know. */
static void judge(const cmc_run *r, xf_cmc_result *res, int combined)
{
	xf_quality *q = &res->quality;
	long kept = 0, failed = 0, low_ebfmi = 0, low_ess = 0, divergent = 0, transitions = 0;
	double rhat = 0.0;
	for (long s = 0; s < res->n_shards; s++) {
		const xf_cmc_shard *sh = &res->shards[s];
		failed += sh->failed;
		if (!sh->kept)
			continue;
		kept++;
		rhat = fmax(rhat, sh->rhat_max);
		low_ebfmi += sh->ebfmi_min < XF_EBFMI_LOW;
		low_ess += sh->ess_bulk_min < XF_ESS_LOW || sh->ess_tail_min < XF_ESS_LOW;
		divergent += sh->divergences;
		transitions += (long)res->n_chains * res->n_samples;
	}
	res->n_kept = kept;
	/* the importance route has no shards: its draws passed the check against the exact
	 * posterior, or it was not published */
	double fraction = res->n_shards ? (double)kept / (double)res->n_shards : 1.0;
	int ok = combined && fraction >= r->o->min_success_rate;
	res->status = ok ? XF_STATUS_CONVERGED : XF_STATUS_FAILED;
	if (!combined && res->n_shards == 1) {
		xf_cmc_no_posterior_reason(res); /* one shard: NUTS's words, the prior named */
		no_posterior_ridge(r, q);
	} else if (!combined)
		xf_quality_add_reason(q,
				      "no combined posterior: every shard was excluded or failed");
	else if (fraction < r->o->min_success_rate)
		xf_quality_add_reason(
			q,
			"only %ld of %ld shards kept (%.0f %% < combination.min_success_rate "
			"%.0f %%)",
			kept, res->n_shards, 100.0 * fraction, 100.0 * r->o->min_success_rate);
	else if (kept < res->n_shards)
		xf_quality_add_reason(
			q,
			"%ld of %ld shards excluded (see shards); the posterior carries the "
			"prior to the power %ld/%ld",
			res->n_shards - kept, res->n_shards, kept, res->n_shards);
	if (failed && res->n_shards > 1)
		xf_quality_add_reason(q, "%ld shards could not be sampled", failed);
	/* any divergence after warmup: the trajectories missed part of the posterior,
	 * typically its tails (Stan warns on any; measured here: sds 4-9 % short at
	 * 0.35-3.6 % divergences, adr/0041) */
	/* one shard: draws that diverged are those of its second run, at the raised target
	 * (adr/0090: the first run's are replaced whenever any diverged) */
	int again = res->n_shards == 1 && res->target_accept < XF_RESAMPLE_ACCEPT_MAX;
	double used = again ? xf_cmc_resample_accept(res->target_accept) : res->target_accept;
	if (divergent && again)
		xf_quality_add_reason(
			q,
			"%ld of %ld transitions after warmup diverged, also when sampled again at "
			"target acceptance %.3g after %.3g: the tails may be short; raise "
			"per_shard_mcmc.target_accept_prob (e.g. %.4g)",
			divergent, transitions, used, res->target_accept,
			xf_cmc_resample_accept(used));
	else if (divergent)
		xf_quality_add_reason(
			q,
			"%ld of %ld transitions after warmup diverged%s: the tails may be short; "
			"raise per_shard_mcmc.target_accept_prob (e.g. %.4g)",
			divergent, transitions, res->n_shards > 1 ? " in the kept shards" : "",
			xf_cmc_resample_accept(used));
	if (low_ebfmi && res->n_shards == 1)
		xf_quality_add_reason(q, "E-BFMI below %.1f (poor energy exploration)",
				      XF_EBFMI_LOW);
	else if (low_ebfmi)
		xf_quality_add_reason(
			q, "%ld kept shards have E-BFMI below %.1f (poor energy exploration)",
			low_ebfmi, XF_EBFMI_LOW);
	if (low_ess && res->n_shards == 1)
		xf_quality_add_reason(q, "a bulk or tail ESS below %d", XF_ESS_LOW);
	else if (low_ess)
		xf_quality_add_reason(q, "%ld kept shards have a bulk or tail ESS below %d",
				      low_ess, XF_ESS_LOW);
	if (res->check.done && !res->check.corrected) /* its verdict names the failed check */
		xf_quality_add_reason(q, "%s", res->check.verdict);
	if (kept && rhat > 1.01 && res->n_shards == 1)
		xf_quality_add_reason(q, "the largest R-hat is %.3f", rhat);
	else if (kept && rhat > 1.01)
		xf_quality_add_reason(q, "the largest R-hat among kept shards is %.3f", rhat);
	/* mass of the exact posterior the draws never reached (beyond.c) */
	for (int k = 0; res->beyond.done && k < res->n_params; k++)
		if (res->beyond.flagged[k]) {
			char text[sizeof q->reasons[0]];
			xf_cmc_beyond_reason(res, k, text, sizeof text);
			xf_quality_add_reason(q, "%s", text);
		}
	/* a prior that decides a parameter or fights the data (sensitivity.c) */
	for (int k = 0; res->sensitivity.done && k < res->n_params; k++)
		if (res->sensitivity.flagged[k]) {
			char text[sizeof q->reasons[0]];
			xf_cmc_sensitivity_reason(res, k, text, sizeof text);
			xf_quality_add_reason(q, "%s", text);
		}
	q->overall = !ok ? XF_QUALITY_POOR : q->n_reasons ? XF_QUALITY_MARGINAL : XF_QUALITY_GOOD;
}

int xf_cmc_route_publish(const cmc_run *r, xf_cmc_result *res, const xf_cmc_check *c,
			 const double *w, xf_error *err)
{
	int rc = xf_cmc_result_init(r, res, err);
	if (rc)
		return rc;
	res->n_shards = res->n_kept = 0; /* nothing was sharded or sampled by NUTS */
	if (alloc_posterior(res, r->n_chains * r->n_samples) ||
	    xf_cmc_publish_weighted(r, res, c->u, c->dim, w, c->m))
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the posterior");
	return 0;
}

int xf_cmc_finish_route(const cmc_run *r, xf_cmc_result *res, xf_error *err)
{
	const xf_shard_draws *dr = r->route_draws;
	int rc = xf_cmc_prior_check(r, res, NULL, NULL, err);
	if (rc == 0)
		rc = xf_cmc_beyond_probe(r, dr->draws, dr->n_chains * dr->n_draws, dr->dim, NAN,
					 res, err);
	if (rc)
		return rc;
	judge(r, res, 1);
	return 0;
}

int xf_cmc_finish(const cmc_run *r, xf_cmc_result *res, xf_shard_loader load, void *ctx,
		  xf_error *err)
{
	xf_combination comb;
	xf_error cerr = { 0 };
	int nt = r->n_theta, nf = res->n_params;
	int crc = xf_cmc_combine(res->combination, nt, res->shards, res->n_shards, load, ctx,
				 r->seed, &comb, &cerr);
	int combined = crc == 0;
	if (crc && crc != XF_ERR_DATA) {
		*err = cerr;
		return crc;
	}
	if (!combined && res->n_shards > 1) /* one shard: the quality reason says why */
		xf_warn("cmc: %s", cerr.msg);
	if (alloc_posterior(res, combined ? comb.n_draws : 0)) {
		xf_combination_free(&comb);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the CMC result");
	}
	for (int g = 0; g < res->n_draws; g++) {
		double *x = res->draws + (size_t)g * nf;
		memcpy(x, r->x_start, sizeof(double) * (size_t)nf);
		for (int m = 0; m < nt; m++)
			x[r->theta[m]] = 0.0;
		double *xt = malloc(sizeof(double) * (size_t)(nt ? nt : 1));
		if (!xt) {
			xf_combination_free(&comb);
			return xf_fail(err, XF_ERR_NOMEM, "out of memory for the CMC result");
		}
		xf_cmc_theta_physical(&r->pr, r->theta, nt, comb.u_draws + (size_t)g * nt, xt);
		for (int m = 0; m < nt; m++)
			x[r->theta[m]] = xt[m];
		free(xt);
	}
	if (combined) {
		res->gp_mean = comb.gp_mean;
		res->gp_cov = comb.gp_cov;
		comb.gp_mean = comb.gp_cov = NULL;
	}
	if (summarize(r, res)) {
		xf_combination_free(&comb);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory summarizing the posterior");
	}
	int rc = combined ? xf_cmc_self_check(r, comb.u_draws, comb.n_draws, res, err) : 0;
	if (rc == 0 && combined && res->n_shards == 1) /* the exact posterior's draws */
		rc = xf_cmc_beyond_probe(r, comb.u_draws, comb.n_draws, nt,
					 res->shards[0].sigma_mean, res, err);
	xf_combination_free(&comb);
	/* also without a posterior from one shard: its draws name a prior it fought */
	if (rc == 0 && (combined || res->n_shards == 1))
		rc = xf_cmc_prior_check(r, res, load, ctx, err);
	if (rc)
		return rc;
	for (long s = 0; s < res->n_shards; s++)
		res->grad_evals += res->shards[s].grad_evals;
	judge(r, res, combined);
	return 0;
}

void xf_cmc_shard_free(xf_cmc_shard *s)
{
	free(s->rhat);
	free(s->ess_bulk);
	free(s->ess_tail);
	free(s->mean);
	free(s->sd);
	free(s->skew);
	free(s->kurtosis);
	free(s->u_mean);
	free(s->u_cov);
}

void xf_cmc_result_free(xf_cmc_result *res)
{
	if (res->names)
		for (int k = 0; k < res->n_params; k++)
			free(res->names[k]);
	if (res->shards)
		for (long s = 0; s < res->n_shards; s++)
			xf_cmc_shard_free(&res->shards[s]);
	free(res->names);
	free(res->is_fixed);
	free(res->lower);
	free(res->upper);
	free(res->theta);
	free(res->draws);
	free(res->mean);
	free(res->sd);
	free(res->median);
	free(res->q05);
	free(res->q95);
	free(res->cov);
	free(res->gp_mean);
	free(res->gp_cov);
	free(res->phi_deg);
	free(res->contrast);
	free(res->contrast_sd);
	free(res->offset);
	free(res->offset_sd);
	free(res->shards);
	free(res->check.u);
	free(res->check.log_w);
	free(res->check.mean);
	free(res->check.sd);
	free(res->check.median);
	free(res->check.q05);
	free(res->check.q95);
	free(res->check.draws);
	free(res->check.log_p);
	free(res->approx.u);
	free(res->approx.log_w);
	free(res->approx.log_p);
	xf_cmc_sensitivity_free(&res->sensitivity);
	xf_cmc_prior_vs_nlsq_free(&res->prior_vs_nlsq);
	xf_cmc_beyond_free(&res->beyond);
	memset(res, 0, sizeof *res);
}

int xf_cmc_shard_draws(const xf_cmc_result *res, long id, double **draws, int *n_chains,
		       int *n_draws, int *dim, xf_error *err)
{
	xf_shard_draws d;
	int got = xf_store_load(res->shard_dir, id, 0, &d, err);
	if (got <= 0)
		return got < 0 ? err->code
			       : xf_fail(err, XF_ERR_DATA, "shard %ld is missing from %s", id,
					 res->shard_dir);
	*draws = d.draws;
	*n_chains = d.n_chains;
	*n_draws = d.n_draws;
	*dim = d.dim;
	d.draws = NULL;
	xf_shard_draws_free(&d);
	return 0;
}
