/* test_cmc_prior_named.c — the prior named when it is the cause, and honest time
 * (adr/0080): the reasons' words and precision on constructed results (no sampling), the
 * one-shard wording, the blame of a prior-data conflict against a strong prior, the
 * remaining time from the recent rate, and the long-run estimate and its test knob. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cmc/eta.h"
#include "cmc/run_internal.h"
#include "cmc/prior_vs_nlsq.h"
#include "cmc/sensitivity.h"

/* one sampled parameter, alpha, with its prior, NLSQ and posterior numbers */
typedef struct fake {
	xf_cmc_result res;
	char *names[1];
	int theta[1];
	xf_cmc_shard shard;
	double prior[1], lik[1], mu[1], sigma[1], nlsq[1], nlsq_sd[1], gap[1], pull[1];
	double mean[1], sd[1];
	xf_prior_diagnosis diag[1];
	int flagged[1];
	double p_mu[1], p_sigma[1], p_nlsq[1], p_nlsq_sd[1], away[1], p_away[1], logd[1];
	double ratio[1], shift[1];
	int conflict[1], edge[1];
} fake;

static void fake_init(fake *f, double prior_mu, double prior_sigma, double nlsq, double nlsq_sd,
		      double mean, double sd, double sens_prior, double sens_lik)
{
	memset(f, 0, sizeof *f);
	xf_cmc_result *r = &f->res;
	f->names[0] = "alpha";
	r->names = f->names;
	r->n_params = r->n_theta = 1;
	r->theta = f->theta;
	r->n_shards = 1;
	r->shards = &f->shard;
	r->n_chains = 4;
	r->n_samples = 1500;
	xf_cmc_sensitivity *s = &r->sensitivity;
	s->done = 1;
	s->likelihood_measured = isfinite(sens_lik);
	s->threshold = 0.05;
	s->prior = f->prior;
	s->lik = f->lik;
	s->prior_mu = f->mu;
	s->prior_sigma = f->sigma;
	s->nlsq = f->nlsq;
	s->nlsq_sd = f->nlsq_sd;
	s->nlsq_edge = f->edge;
	s->gap = f->gap;
	s->pull = f->pull;
	s->mean = f->mean;
	s->sd = f->sd;
	s->diagnosis = f->diag;
	s->flagged = f->flagged;
	f->prior[0] = sens_prior;
	f->lik[0] = sens_lik;
	f->mu[0] = prior_mu;
	f->sigma[0] = prior_sigma;
	f->nlsq[0] = nlsq;
	f->nlsq_sd[0] = nlsq_sd;
	f->mean[0] = mean;
	f->sd[0] = sd;
	f->gap[0] = (mean - nlsq) / fmax(sd, nlsq_sd);
	f->diag[0] = xf_psens_diagnosis(sens_prior, sens_lik);
	f->flagged[0] = 1;
	/* the comparison before sampling, as xf_cmc_compare_priors computes it */
	xf_cmc_prior_vs_nlsq *p = &r->prior_vs_nlsq;
	p->done = 1;
	p->prior_mu = f->p_mu;
	p->prior_sigma = f->p_sigma;
	p->nlsq = f->p_nlsq;
	p->nlsq_sd = f->p_nlsq_sd;
	p->nlsq_sd_away = f->away;
	p->prior_sd_away = f->p_away;
	p->log_density = f->logd;
	p->width_ratio = f->ratio;
	p->shift_sd = f->shift;
	p->conflict = f->conflict;
	f->p_mu[0] = prior_mu;
	f->p_sigma[0] = prior_sigma;
	f->p_nlsq[0] = nlsq;
	f->p_nlsq_sd[0] = nlsq_sd;
	double d = fabs(nlsq - prior_mu);
	f->away[0] = d / nlsq_sd;
	f->p_away[0] = d / prior_sigma;
	f->shift[0] = d * nlsq_sd / (nlsq_sd * nlsq_sd + prior_sigma * prior_sigma);
	f->conflict[0] = f->p_away[0] >= XF_PRIOR_FAR_SD && f->shift[0] >= XF_PRIOR_SHIFT_SD;
}

/* the numbers: -1.960 ± 0.0034 against -1.993 ± 0.0073 were both "-2.000" */
static void test_reason_precision(void **state)
{
	(void)state;
	fake f;
	fake_init(&f, -1.9, 0.01, -1.993, 0.0073, -1.960, 0.0034, 0.9, 0.4);
	char buf[512];
	xf_cmc_sensitivity_reason(&f.res, 0, buf, sizeof buf);
	printf("%s\n", buf);
	assert_non_null(strstr(buf, "prior-data conflict on alpha: TruncatedNormal(-1.9, 0.01)"));
	assert_non_null(strstr(buf, "pulls the posterior to -1.9600 ± 0.0034"));
	assert_non_null(strstr(buf, "the data (NLSQ) say -1.9930 ± 0.0073"));
	assert_non_null(strstr(buf, "prior 0.900, likelihood 0.400 (threshold 0.05)"));
	assert_null(strstr(buf, "fights"));
	/* a strong prior with little left for the likelihood: not a conflict */
	fake_init(&f, 0.3, 0.02, 0.31, 0.2, 0.301, 0.019, 0.08, 0.01);
	xf_cmc_sensitivity_reason(&f.res, 0, buf, sizeof buf);
	printf("%s\n", buf);
	assert_non_null(strstr(buf, "strong prior / weak likelihood on alpha: "));
	assert_null(strstr(buf, "conflict"));
	/* NLSQ clipped by a bound, or spanning the bounds, does not "say" a value */
	f.edge[0] = -1;
	xf_cmc_sensitivity_reason(&f.res, 0, buf, sizeof buf);
	printf("%s\n", buf);
	assert_non_null(strstr(buf, "while NLSQ stopped at its lower bound, 0.31;"));
	assert_null(strstr(buf, "NLSQ) say"));
	/* what the data say then: the posterior without its prior (adr/0095) */
	assert_non_null(strstr(buf, "; the data alone say 0.310 ± 0.061;"));
	f.edge[0] = 2;
	xf_cmc_sensitivity_reason(&f.res, 0, buf, sizeof buf);
	printf("%s\n", buf);
	assert_non_null(
		strstr(buf, "the data (NLSQ) do not confine it within its bounds (0.31 ± 0.20)"));
}

/* K = 1 without a posterior: NUTS's words, no shards, the prior named with its numbers */
static void test_no_posterior_one_shard(void **state)
{
	(void)state;
	fake f;
	/* α ~ N(0.3, 0.02) against NLSQ -0.24 ± 0.02: 27 NLSQ sd away */
	fake_init(&f, 0.3, 0.02, -0.24, 0.02, 0.2, 0.05, 2.9, 3.1);
	assert_int_equal(f.conflict[0], 1);
	snprintf(f.shard.reason, sizeof f.shard.reason,
		 "max R-hat 1.7 > 1.1 (validation.max_per_shard_rhat)");
	f.shard.divergences = 480;
	xf_cmc_no_posterior_reason(&f.res);
	assert_int_equal(f.res.quality.n_reasons, 1);
	const char *q = f.res.quality.reasons[0];
	printf("%s\n", q);
	assert_string_equal(q, "no posterior: NUTS did not converge: max R-hat 1.7 > 1.1 "
			       "(validation.max_per_shard_rhat), 480 of 6000 transitions after "
			       "warmup diverged; the prior on alpha (TruncatedNormal(0.3, 0.02)) "
			       "conflicts with the data (27 NLSQ sd away)");
	/* (the config key validation.max_per_shard_rhat is named as it is spelt) */
	assert_null(strstr(q, "shards"));
	assert_null(strstr(q, "shard "));
	assert_null(strstr(q, "combined"));
	/* a prior the sampler did not fight is not named */
	fake_init(&f, 0.0, 10.0, -0.24, 0.02, -0.24, 0.02, 0.001, 0.08);
	snprintf(f.shard.reason, sizeof f.shard.reason, "divergence rate 0.2 > 0.1");
	xf_cmc_no_posterior_reason(&f.res);
	assert_null(strstr(f.res.quality.reasons[0], "prior"));
	char blame[256];
	assert_int_equal(xf_cmc_prior_blame(&f.res, blame, sizeof blame), 0);
	/* a strong prior at the data: named as deciding, not as a conflict */
	fake_init(&f, 0.3, 0.02, 0.31, 0.2, 0.301, 0.019, 0.08, 0.01);
	assert_int_equal(f.conflict[0], 0);
	assert_int_equal(xf_cmc_prior_blame(&f.res, blame, sizeof blame), 1);
	assert_non_null(strstr(blame, "decides it: strong prior / weak likelihood"));
	assert_null(strstr(blame, "conflict"));
}

static void test_num_sds(void **state)
{
	(void)state;
	char b[32];
	const struct {
		double v;
		const char *want;
	} cases[] = { { 27.04, "27" },	 { 360.47, "360" },	 { 3.42, "3.4" },
		      { 0.514, "0.51" }, { 1234567, "1200000" }, { 0.0, "0" } };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		xf_num_sds(cases[i].v, b, sizeof b);
		assert_string_equal(b, cases[i].want);
	}
}

/* the remaining time follows the recent rate, not the rate since the start */
static void test_eta_window(void **state)
{
	(void)state;
	xf_eta e;
	memset(&e, 0, sizeof e);
	double t = 0.0, eta = NAN;
	long done = 0, total = 100000;
	assert_true(isnan(xf_eta_update(&e, t, done, total)));
	for (int i = 0; i < 10; i++) /* cheap first transitions: 100 a second */
		eta = xf_eta_update(&e, t += 1.0, done += 100, total);
	assert_true(fabs(eta - (total - done) / 100.0) < 1e-9);
	for (int i = 0; i < XF_ETA_WINDOW; i++) /* then deep trees: 10 a second */
		eta = xf_eta_update(&e, t += 1.0, done += 10, total);
	assert_true(fabs(eta - (total - done) / 10.0) < 1e-9);
	/* a new task (the next round of the same size) starts a new window */
	assert_true(isnan(xf_eta_update(&e, t += 1.0, 0, total)));
	assert_true(xf_eta_update(&e, t += 1.0, total, total) == 0.0);
}

static void test_long_run_estimate(void **state)
{
	(void)state;
	/* the first 100 transitions took 500 passes in 10 s: 0.02 s a pass; at least 66.3
	 * passes a transition are assumed for the 10 000 ahead */
	double e = xf_nuts_expected_s(10.0, 100, 500, 10000);
	assert_true(fabs(e - 0.02 * XF_GRADS_PER_TRANSITION * 10000) < 1e-6);
	/* more passes per transition than the floor: as measured */
	e = xf_nuts_expected_s(10.0, 100, 10000, 10000);
	assert_true(fabs(e - 1000.0) < 1e-9);
	assert_true(isnan(xf_nuts_expected_s(1.0, 0, 0, 10)));
	assert_int_equal(xf_long_run_probe(8000, 4), 40);
	assert_int_equal(xf_long_run_probe(900, 2), 20);
	assert_int_equal(xf_long_run_probe(10, 2), 10);
	assert_int_equal(xf_long_run_probe(12, 4), 12);
	unsetenv("XPCSFIT_TEST_LONG_RUN_S");
	assert_true(xf_long_run_threshold_s() == XF_LONG_RUN_S);
	setenv("XPCSFIT_TEST_LONG_RUN_S", "0.5", 1);
	assert_true(xf_long_run_threshold_s() == 0.5);
	setenv("XPCSFIT_TEST_LONG_RUN_S", "soon", 1); /* not a number: the default */
	assert_true(xf_long_run_threshold_s() == XF_LONG_RUN_S);
	unsetenv("XPCSFIT_TEST_LONG_RUN_S");
}

/* the line's two chances: the estimate at the probe count, and later the time so far
 * plus the recent-rate ETA; said once */
static void test_long_run_when(void **state)
{
	(void)state;
	cmc_run r;
	shard_job job;
	memset(&r, 0, sizeof r);
	memset(&job, 0, sizeof job);
	job.ps.n_pairs = 1000;
	r.jobs = &job;
	r.pr.n_phi = 3;
	r.n_shards = 1;
	r.only_shard = -1;
	r.n_chains = 4;
	r.n_warmup = 500;
	r.n_samples = 1500;
	r.n_threads = 2;
	unsetenv("XPCSFIT_TEST_LONG_RUN_S");
	/* before the probe (40 of 8 000, adr/0096): nothing, however slow */
	r.iterations_done = 39;
	r.grad_evals_done = 100000;
	xf_cmc_long_run_check(&r, 1e6);
	assert_int_equal(r.long_checked, 0);
	xf_cmc_long_run_recheck(&r, 1e6, 1e6); /* no recheck before the estimate */
	assert_int_equal(r.long_warned, 0);
	/* at the probe: 40 transitions, 800 passes in 4 s: 0.005 s × 66.3 × 8 000 = 2 652 s */
	r.iterations_done = 40;
	r.grad_evals_done = 800;
	xf_cmc_long_run_check(&r, 4.0);
	assert_int_equal(r.long_checked, 1);
	assert_int_equal(r.long_warned, 1);
	/* a fast start (0.5 s: 331 s expected) stays quiet until the ETA says otherwise */
	r.long_checked = r.long_warned = 0;
	xf_cmc_long_run_check(&r, 0.5);
	assert_int_equal(r.long_checked, 1);
	assert_int_equal(r.long_warned, 0);
	xf_cmc_long_run_recheck(&r, 100.0, 400.0);
	assert_int_equal(r.long_warned, 0);
	xf_cmc_long_run_recheck(&r, 100.0, NAN);
	assert_int_equal(r.long_warned, 0);
	xf_cmc_long_run_recheck(&r, 100.0, 600.0);
	assert_int_equal(r.long_warned, 1);
	/* K > 1: never (the line is about the exact one-shard run) */
	r.long_checked = 1;
	r.long_warned = 0;
	r.n_shards = 3;
	xf_cmc_long_run_recheck(&r, 1e6, 1e6);
	assert_int_equal(r.long_warned, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reason_precision),
		cmocka_unit_test(test_no_posterior_one_shard),
		cmocka_unit_test(test_num_sds),
		cmocka_unit_test(test_eta_window),
		cmocka_unit_test(test_long_run_estimate),
		cmocka_unit_test(test_long_run_when),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
