/* test_cmc_calibration.c — statistical tests of the CMC posterior as a whole (NLSQ warm
 * start, shards, NUTS, tempering, combination, self-check), cmc.md:
 *
 * 1. Simulation-based calibration (Talts, Betancourt, Simpson, Vehtari, Gelman 2018) on
 *    the static model: θ drawn from the TruncatedNormal priors, c2 simulated, NLSQ then
 *    xf_cmc_run with one shard; the rank of the true value among L = 99 thinned posterior
 *    draws must be uniform (χ² over bins, gsl_cdf_chisq_Q).
 * 2. Tempering: K = 4 shards of data that carry no information on four parameters must
 *    give back their TruncatedNormal priors (moments computed analytically).
 * 3. Consensus: on laminar data that every shard identifies, K = 1, 4, 16 agree (means
 *    within 0.2 posterior sd, sds within 15 %, k-hat <= 0.7); on harder data (slow set
 *    only) they do not yet.
 *
 * The reduced versions run in `make test`; XF_CAL_FULL=1 (the ctest test
 * test_cmc_calibration_full, label "slow", `make test-slow`) runs the full ones. Every
 * seed is fixed, so each verdict is deterministic. */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "synth.h"
#include "xpcsfit/cmc.h"
#include "xpcsfit/nlsq.h"
#include "cmc/diagnostics.h"
#include "xpcsfit/rng.h"
#include "fit_request.h"

#define XF_RNG_TEST_PRIOR 1000u /* stream of the SBC prior draws (test only) */
#define SBC_L		  99	/* thinned draws per replicate: ranks 0..99 */
#define N_THREADS	  2
#define SBC_FULL_REPS	  500 /* see test_sbc_static */

static int full_mode(void)
{
	const char *s = getenv("XF_CAL_FULL");
	return s && *s && strcmp(s, "0");
}

static double env_num(const char *name, double dflt)
{
	const char *s = getenv(name);
	return s && *s ? atof(s) : dflt;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *tmp_dir(void)
{
	const char *t = getenv("XF_TMP");
	return t && *t ? t : "/tmp/xf_test_cmc_calibration";
}

/* The moments of TruncatedNormal(mu, s) on [lo, hi]. */
static void tn_moments(double mu, double s, double lo, double hi, double *mean, double *sd)
{
	double a = (lo - mu) / s, b = (hi - mu) / s;
	double z = gsl_cdf_ugaussian_P(b) - gsl_cdf_ugaussian_P(a);
	double pa = exp(-0.5 * a * a) / sqrt(2.0 * M_PI), pb = exp(-0.5 * b * b) / sqrt(2.0 * M_PI);
	double r = (pa - pb) / z;
	*mean = mu + s * r;
	*sd = s * sqrt(1.0 + (a * pa - b * pb) / z - r * r);
}

static void set_bound(xf_test_fit *f, int k, double lo, double hi, double mu, double sd)
{
	xf_test_fit_bound(f, k, (xf_bound){ lo, hi, mu, sd });
}

/* CMC options shared by every test: a result directory per run under XF_TMP. */
static void cmc_options(xf_test_fit *f, long shards, int chains, int warmup, int samples,
			uint64_t seed)
{
	f->cmc.num_shards = shards;
	f->cmc.num_chains = chains;
	f->cmc.num_warmup = warmup;
	f->cmc.num_samples = samples;
	f->cmc.seed = seed;
}

/* NLSQ then CMC on ds; asserts that both produced a result. */
static void fit(const xf_test_fit *f, const xf_dataset *ds, const char *tag, xf_nlsq_result *nlsq,
		xf_cmc_result *res)
{
	xf_error err = { 0 };
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/%s", tmp_dir(), tag);
	if (xf_test_fit_run(f, ds, N_THREADS, nlsq, &err))
		fail_msg("%s: NLSQ: %s", tag, err.msg);
	if (xf_test_posterior_run(f, ds, nlsq, N_THREADS, dir, res, &err))
		fail_msg("%s: CMC: %s", tag, err.msg);
}

static int param_index(const xf_cmc_result *res, const char *name)
{
	for (int k = 0; k < res->n_params; k++)
		if (!strcmp(res->names[k], name))
			return k;
	fail_msg("no parameter %s in the CMC result", name);
	return -1;
}

/* ---- 1. simulation-based calibration --------------------------------------------- */

/* The static problem of the SBC: one angle, 21 frames (190 points), q and dt chosen so
 * that c2 decays across the window at D ≈ 1000. Priors narrow enough that the posterior
 * sits between prior and likelihood for D0, alpha and D_offset. */
enum { SBC_D0, SBC_ALPHA, SBC_DOFF, SBC_CONTRAST, SBC_OFFSET, SBC_NP };
static const char *const sbc_names[SBC_NP] = { "D0", "alpha", "D_offset", "contrast_000",
					       "offset_000" };
static const int sbc_slot[SBC_NP] = { XF_P_D0, XF_P_ALPHA, XF_P_D_OFFSET, XF_P_CONTRAST,
				      XF_P_OFFSET };
/* lower, upper, prior mu, prior sd */
static const double sbc_prior[SBC_NP][4] = {
	{ 200.0, 3000.0, 1000.0, 250.0 }, { -1.0, 1.0, 0.0, 0.25 }, { -200.0, 200.0, 0.0, 60.0 },
	{ 0.0, 1.0, 0.3, 0.05 },	  { 0.5, 1.5, 1.0, 0.05 },
};

/* A draw of TruncatedNormal prior k by rejection (counter (replicate, k, attempt)). */
static double sbc_prior_draw(int rep, int k)
{
	const double *p = sbc_prior[k];
	for (uint64_t t = 0;; t++) {
		double x = p[2] + p[3] * xf_rng_normal(2018, XF_RNG_TEST_PRIOR, (uint64_t)rep,
						       (uint64_t)k, t);
		if (x > p[0] && x < p[1])
			return x;
	}
}

/* Ranks of the true values among the thinned draws of one replicate; σ's rank in
 * rank[SBC_NP] (−1 when its draws could not be read). */
static void sbc_replicate(int rep, int n_frames, int chains, int warmup, int samples, int *rank,
			  double *seconds, int *importance)
{
	double t0 = now_s();
	double x[SBC_NP];
	for (int k = 0; k < SBC_NP; k++)
		x[k] = sbc_prior_draw(rep, k);
	/* the route's SBC (more frames): D_offset held at 0, so that D(t) = D0·t^α is what
	 * the data decide; with it free the α–D_offset ridge keeps the posterior far from
	 * Gaussian at any size this test can afford */
	int hold_doff = n_frames > 21;
	if (hold_doff)
		x[SBC_DOFF] = 0.0;
	/* noise log-uniform on [0.01, 0.03]: the generating σ varies too */
	double noise =
		0.01 * pow(3.0, xf_rng_uniform(2018, XF_RNG_TEST_PRIOR, (uint64_t)rep, SBC_NP, 0));
	xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, n_frames, 1.0, 0.01, 2e6 };
	const double theta[7] = { x[SBC_D0], x[SBC_ALPHA], x[SBC_DOFF], 0, 0, 0, 0 };
	const double phi = 0.0;
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, theta, 1, &phi, &x[SBC_CONTRAST], &x[SBC_OFFSET],
					  noise, 5000 + (uint64_t)rep, &ds),
			 0);
	xf_test_fit fc;
	xf_test_fit_init(&fc, XF_MODE_STATIC, NULL);
	for (int k = 0; k < SBC_NP; k++)
		set_bound(&fc, sbc_slot[k], sbc_prior[k][0], sbc_prior[k][1], sbc_prior[k][2],
			  sbc_prior[k][3]);
	if (hold_doff) {
		fc.req.fixed[XF_P_D_OFFSET] = 1;
		fc.req.start[XF_P_D_OFFSET] = 0.0;
		fc.req.value_given[XF_P_D_OFFSET] = 1;
	}
	for (int k = 0; k < 3; k++) { /* NLSQ starts at the prior means, not the truth */
		if (k == SBC_DOFF && hold_doff)
			continue;
		fc.req.start[k] = sbc_prior[k][2];
		fc.req.value_given[k] = 1;
	}
	cmc_options(&fc, 1, chains, warmup, samples, 42 + (uint64_t)rep);
	xf_nlsq_result nlsq;
	xf_cmc_result res;
	char tag[64];
	snprintf(tag, sizeof tag, "sbc_%04d", rep);
	fit(&fc, &ds, tag, &nlsq, &res);
	/* an excluded shard (K = 1: no draws) fails the SBC rather than dropping the
	 * replicate, which would condition the ranks on the diagnostics */
	if (res.n_draws < SBC_L || (res.n_shards > 0 && res.n_kept < 1))
		fail_msg("SBC replicate %d: %d draws, route %s, shard %s (R-hat %.3f, divergence "
			 "rate %.3f, bulk ESS %.0f)",
			 rep, res.n_draws, xf_posterior_route_name(res.route),
			 res.n_shards == 0	   ? "-"
			 : res.shards[0].reason[0] ? res.shards[0].reason
						   : "kept",
			 res.n_shards ? res.shards[0].rhat_max : NAN,
			 res.n_shards ? res.shards[0].divergence_rate : NAN,
			 res.n_shards ? res.shards[0].ess_bulk_min : NAN);
	*importance = res.route == XF_POSTERIOR_ROUTE_IMPORTANCE;
	int n = res.n_draws;
	for (int k = 0; k < SBC_NP; k++) {
		int j = param_index(&res, sbc_names[k]);
		int r = 0;
		for (int l = 0; l < SBC_L; l++) {
			/* evenly spaced over the pooled draws of every chain */
			long gdraw = (long)((l + 0.5) * n / SBC_L);
			r += res.draws[(size_t)gdraw * res.n_params + j] < x[k];
		}
		rank[k] = k == SBC_DOFF && hold_doff ? -1 : r; /* held: no rank */
	}
	if (getenv("XF_CAL_VERBOSE") && res.n_shards > 0) {
		printf("rep %d noise %.4f ess_bulk_min %.0f div %.3f rhat %.3f step %.3f | post sd "
		       "/ prior sd:",
		       rep, noise, res.shards[0].ess_bulk_min, res.shards[0].divergence_rate,
		       res.shards[0].rhat_max, res.shards[0].step_size_mean);
		for (int k = 0; k < SBC_NP; k++)
			printf(" %.2f", res.sd[param_index(&res, sbc_names[k])] / sbc_prior[k][3]);
		printf("\n");
	}
	/* σ: from the shard's own draws (log σ last) */
	double *d = NULL;
	int nc, nd, dim;
	xf_error err = { 0 };
	rank[SBC_NP] = -1;
	if (!xf_cmc_shard_draws(&res, 0, &d, &nc, &nd, &dim, &err)) {
		int r = 0, tot = nc * nd;
		for (int l = 0; l < SBC_L; l++) {
			long gdraw = (long)((l + 0.5) * tot / SBC_L);
			r += exp(d[(size_t)gdraw * dim + dim - 1]) < noise;
		}
		rank[SBC_NP] = r;
		free(d);
	}
	xf_cmc_result_free(&res);
	xf_nlsq_result_free(&nlsq);
	xf_dataset_free(&ds);
	*seconds = now_s() - t0;
}

/* χ² of the ranks (0..SBC_L) over n_bins equal bins; returns its upper tail p-value. */
static double rank_chi2_p(const int *ranks, int n, int n_bins, double *chi2)
{
	int count[100] = { 0 };
	for (int i = 0; i < n; i++)
		count[ranks[i] * n_bins / (SBC_L + 1)]++;
	double e = (double)n / n_bins, c = 0.0;
	for (int b = 0; b < n_bins; b++)
		c += (count[b] - e) * (count[b] - e) / e;
	*chi2 = c;
	return gsl_cdf_chisq_Q(c, n_bins - 1);
}

/* Full (XF_CAL_FULL=1): the shipped sampler (issue 22, "SBC at the defaults"): chains,
 * warmup and draws from xf_cmc_options_defaults (4 x (500 + 1500) today), target acceptance,
 * dense mass and tree depth never set here, so the defaults calibrate whatever they are;
 * 500 replicates, 20 bins. One replicate takes about 1 s on the 2-core dev machine (load
 * ~5), so the 500 fit in the ~40 min budget with room to spare (measured: see
 * docs/validation.md). Reduced (make test): 80 replicates, 2 chains x (150 + 396), 10 bins.
 * XF_SBC_REPS, XF_SBC_WARMUP, XF_SBC_SAMPLES, XF_SBC_FIRST (first replicate) override
 * (for experiments only). */
static void sbc_run(int n_frames, int n_rep_full, int n_rep_reduced, double min_importance);

static void test_sbc_static(void **state)
{
	(void)state;
	sbc_run(21, SBC_FULL_REPS, 80, 0.0);
}

/* SBC where the default route's importance sampling is what gets published (issue 23,
 * adr/0045): the same problem on 101 frames (5 050 points), where the data decide and
 * the posterior is close to Gaussian; most replicates must take the importance route
 * (else this calibrates NUTS again: the 21-frame SBC above takes NUTS in all 500), at
 * least two thirds. D_offset is held at 0 (see sbc_replicate). Full mode only (slow set):
 * 1 000 replicates, 20 bins; ~0.2 s a replicate. */
static void test_sbc_route(void **state)
{
	(void)state;
	if (!full_mode())
		skip();
	sbc_run((int)env_num("XF_SBC_ROUTE_FRAMES", 101), 1000, 0, 2.0 / 3.0);
}

static void sbc_run(int n_frames, int n_rep_full, int n_rep_reduced, double min_importance)
{
	int full = full_mode();
	/* full: the sampler exactly as shipped (chains, warmup, samples here; target
	 * acceptance, dense mass and tree depth are never overridden), read from
	 * xf_cmc_options_defaults so that a change of a default is what gets calibrated */
	xf_cmc_options dflt;
	xf_cmc_options_defaults(&dflt);
	int n_rep = (int)env_num("XF_SBC_REPS", full ? n_rep_full : n_rep_reduced);
	int chains = full ? dflt.num_chains : 2;
	int warmup = (int)env_num("XF_SBC_WARMUP", full ? dflt.num_warmup : 150);
	int samples = (int)env_num("XF_SBC_SAMPLES", full ? dflt.num_samples : 396);
	/* 0: absent, the mode's default (static: 0.99, src/cmc/run.c, adr/0041) */
	printf("SBC sampler: target_accept_prob %.2f (0: the static default), dense_mass %d, "
	       "max_tree_depth %d\n",
	       dflt.target_accept_prob, dflt.dense_mass, dflt.max_tree_depth);
	int n_bins = n_rep >= 200 ? 20 : 10; /* ≥ 8 expected per bin; bins divide 100 ranks */
	int *ranks = malloc(sizeof(int) * (size_t)n_rep * (SBC_NP + 1));
	int *col = malloc(sizeof(int) * (size_t)n_rep);
	assert_non_null(ranks);
	double t0 = now_s(), slowest = 0.0;
	int first = (int)env_num("XF_SBC_FIRST", 0); /* to re-run one replicate */
	int n_importance = 0;
	for (int r = 0; r < n_rep; r++) {
		double s;
		int imp = 0;
		sbc_replicate(first + r, n_frames, chains, warmup, samples,
			      ranks + (size_t)r * (SBC_NP + 1), &s, &imp);
		n_importance += imp;
		slowest = fmax(slowest, s);
	}
	/* the default route (adr/0045): importance where its check passes, NUTS elsewhere,
	 * so both, and the choice between them, are what is calibrated */
	printf("SBC: %d replicates of %d points, %d chains x (%d warmup + %d draws), "
	       "L = %d, %d bins; route: %d importance, %d NUTS; %.1f s (slowest replicate "
	       "%.2f s)\n",
	       n_rep, (n_frames - 1) * (n_frames - 2) / 2, chains, warmup, samples, SBC_L, n_bins,
	       n_importance, n_rep - n_importance, now_s() - t0, slowest);
	if (n_importance < min_importance * n_rep)
		fail_msg("SBC: %d of %d replicates took the importance route, want >= %.0f",
			 n_importance, n_rep, min_importance * n_rep);
	/* five parameters tested: a family-wise level of 1 % (Bonferroni) */
	const double p_min = 0.01 / SBC_NP;
	int failed = 0;
	for (int k = 0; k <= SBC_NP; k++) {
		int n = 0;
		for (int r = 0; r < n_rep; r++)
			if (ranks[(size_t)r * (SBC_NP + 1) + k] >= 0)
				col[n++] = ranks[(size_t)r * (SBC_NP + 1) + k];
		if (n == 0)
			continue; /* a parameter held fixed in this SBC */
		double chi2, p = rank_chi2_p(col, n, n_bins, &chi2);
		double mean_rank = 0.0;
		for (int i = 0; i < n; i++)
			mean_rank += (double)col[i] / n;
		printf("  %-13s chi2 %6.2f (df %d)  p %.4f  mean rank %.1f (uniform: %.1f)%s\n",
		       k < SBC_NP ? sbc_names[k] : "sigma", chi2, n_bins - 1, p, mean_rank,
		       SBC_L / 2.0,
		       k < SBC_NP ? "" : "  [reported only: its prior depends on the data]");
		if (k < SBC_NP && !(p > p_min))
			failed++;
	}
	free(ranks);
	free(col);
	if (failed)
		fail_msg("SBC: %d parameters have non-uniform ranks (p < %.3f)", failed, p_min);
}

/* ---- 2. tempering: uninformative shards give back the prior ----------------------- */

/* Static data at q = 100 Å⁻¹: the diffusion factor is clipped at exp(−700) for every pair,
 * so c2 = offset + noise and the likelihood does not depend on D0, alpha, D_offset or the
 * contrast (their derivatives are exactly 0). With K = 4 tempered shards:
 * - every shard's marginal of each of the four is exactly [TN(x(u)) |dx/du|]^(1/4) in
 *   u-space (the priors are independent and nothing else depends on them): its mean and
 *   sd, by quadrature, must match the shard's draws within 5 Monte Carlo standard errors.
 *   This tests the tempering itself, whatever the combination does.
 * - the combined result: with priors well inside their bounds (±8 sd) p^(1/4) is nearly
 *   Gaussian in u-space, the self-check corrects the rest, and the reported mean and sd
 *   must be the TruncatedNormal's (moments analytic, GSL). With priors truncated at
 *   1.6–3 sd, p^(1/4) has exponential tails in u and the consensus average is not the
 *   prior (cmc.md "When the combination can be trusted"): the result must then either
 *   match the prior after the self-check's correction or say that it does not
 *   (k-hat > 0.7, quality marginal). */
enum { TMP_NP = 4 };
static const char *const tmp_names[TMP_NP] = { "D0", "alpha", "D_offset", "contrast_000" };
static const int tmp_slot[TMP_NP] = { XF_P_D0, XF_P_ALPHA, XF_P_D_OFFSET, XF_P_CONTRAST };
/* lower, upper, prior mu, prior sd: priors well inside the bounds */
static const double tmp_inside[TMP_NP][4] = {
	{ 500.0, 1500.0, 1000.0, 62.5 },
	{ -0.8, 0.8, 0.0, 0.1 },
	{ -80.0, 80.0, 0.0, 10.0 },
	{ 0.1, 0.5, 0.3, 0.025 },
};
/* priors truncated by their bounds */
static const double tmp_truncated[TMP_NP][4] = {
	{ 500.0, 1500.0, 900.0, 250.0 },
	{ -0.5, 0.5, 0.0, 0.2 },
	{ -50.0, 50.0, 10.0, 20.0 },
	{ 0.0, 1.0, 0.3, 0.1 },
};

/* Quantiles uq[5] (probabilities tq) in u of the density ∝ [TN(x(u); mu, s) |dx/du|]^t,
 * x = lo + w·S(u), by quadrature. Its moments in u are no use: far outside the bounds
 * the density falls only like e^(−t|u|), so a tail of mass ~1e-3 carries a sizeable part
 * of the variance, which 4000 draws cannot estimate. */
static const double tq[5] = { 0.1, 0.25, 0.5, 0.75, 0.9 };

static void tempered_u_quantiles(const double *p, double temper, double *uq)
{
	const double du = 1e-3, lo_u = -80.0;
	const int n = 160001;
	double w = p[1] - p[0], total = 0.0, *cdf = malloc(sizeof(double) * n);
	assert_non_null(cdf);
	for (int i = 0; i < n; i++) {
		double u = lo_u + i * du, sg = 1.0 / (1.0 + exp(-u)), x = p[0] + w * sg;
		double z = (x - p[2]) / p[3];
		total += exp(temper * (-0.5 * z * z + log(sg) + log1p(-sg)));
		cdf[i] = total;
	}
	for (int q = 0, i = 0; q < 5; q++) {
		while (i < n - 1 && cdf[i] < tq[q] * total)
			i++;
		uq[q] = lo_u + i * du;
	}
	free(cdf);
}

/* Per-shard tempering check (asserted): the fraction of each shard's draws below each
 * quantile of prior^(1/K) must be the quantile's probability within 5 Monte Carlo
 * standard errors (sqrt(f(1 − f)/ESS) of the indicator). Returns the failures. */
static int check_shards(const xf_cmc_result *res, const double (*prior)[4])
{
	int failed = 0;
	for (int m = 0; m < res->n_theta; m++) {
		int k = -1;
		for (int q = 0; q < TMP_NP; q++)
			if (!strcmp(res->names[res->theta[m]], tmp_names[q]))
				k = q;
		if (k < 0)
			continue;
		double uq[5], worst = 0.0, worst_se = 0.0;
		/* 1/K from the shard count, not res->temper: a wrong factor must not judge itself */
		tempered_u_quantiles(prior[k], 1.0 / (double)res->n_shards, uq);
		for (long s = 0; s < res->n_shards; s++) {
			double *d = NULL;
			int nc, nd, dim;
			xf_error err = { 0 };
			if (xf_cmc_shard_draws(res, s, &d, &nc, &nd, &dim, &err))
				fail_msg("shard %ld draws: %s", s, err.msg);
			int n = nc * nd;
			double *ind = malloc(sizeof(double) * (size_t)n);
			assert_non_null(ind);
			for (int q = 0; q < 5; q++) {
				double f = 0.0;
				for (int i = 0; i < n; i++)
					f += (ind[i] = d[(size_t)i * dim + m] < uq[q]) / (double)n;
				double se = sqrt(f * (1.0 - f) / xf_diag_ess_bulk(ind, nc, nd));
				if (!(se > 0.0))
					se = 1.0 / n;
				double z = (f - tq[q]) / se;
				if (fabs(z) > fabs(worst))
					worst = z;
				worst_se = fmax(worst_se, se);
				if (!(fabs(z) < 5.0 && se < 0.03)) {
					printf("    shard %ld %s: P(u < %.3f) = %.4f, "
					       "prior^(1/%ld) "
					       "%.2f (MCSE %.4f)  <-- FAIL\n",
					       s, tmp_names[k], uq[q], f, res->n_shards, tq[q], se);
					failed++;
				}
			}
			free(ind);
			free(d);
		}
		printf("    %-13s shards vs prior^(1/%ld) in u: deciles/quartiles %.3f %.3f %.3f "
		       "%.3f %.3f; worst z %+.2f (largest MCSE %.4f)\n",
		       tmp_names[k], res->n_shards, uq[0], uq[1], uq[2], uq[3], uq[4], worst,
		       worst_se);
	}
	return failed;
}

/* Returns the number of failed parameters of the combined result; *honest is set to 1
 * when the result either matched or said it is not to be trusted. */
static int tempering_run(const double (*prior)[4], const char *tag, int *flagged)
{
	int full = full_mode();
	double t0 = now_s();
	xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 41, 1.0, 100.0, 2e6 };
	const double theta[7] = { prior[0][2], prior[1][2], prior[2][2], 0, 0, 0, 0 }, phi = 0.0,
		     con = 0.3, off = 1.0;
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, theta, 1, &phi, &con, &off, 0.01, 77, &ds), 0);
	xf_test_fit fc;
	xf_test_fit_init(&fc, XF_MODE_STATIC, NULL);
	for (int k = 0; k < TMP_NP; k++)
		set_bound(&fc, tmp_slot[k], prior[k][0], prior[k][1], prior[k][2], prior[k][3]);
	fc.opt.start_search = 0; /* the screening needs a model that moves */
	cmc_options(&fc, 4, 4, full ? 500 : 200, full ? 2000 : 600, 11);
	if (full)
		fc.cmc.check_draws = 8000;
	xf_nlsq_result nlsq;
	xf_cmc_result res;
	fit(&fc, &ds, tag, &nlsq, &res);
	assert_int_equal(res.n_shards, 4);
	double ess = 0.0;
	if (res.check.done) {
		double s2 = 0.0;
		for (int i = 0; i < res.check.m; i++)
			s2 += exp(2.0 * res.check.log_w[i]);
		ess = 1.0 / s2;
	}
	printf("tempering (%s): K = %ld (%ld kept), %s, %d draws; self-check k-hat %.3f, "
	       "M = %d, importance ESS %.0f, corrected %d, quality %s; %.1f s\n",
	       tag, res.n_shards, res.n_kept, xf_combination_rule_name(res.combination),
	       res.n_draws, res.check.khat, res.check.m, ess, res.check.corrected,
	       xf_quality_level_name(res.quality.overall), now_s() - t0);
	int failed = 0;
	for (int k = 0; k < TMP_NP; k++) {
		const double *p = prior[k];
		double mean, sd;
		tn_moments(p[2], p[3], p[0], p[1], &mean, &sd);
		int j = param_index(&res, tmp_names[k]);
		/* Monte Carlo error of importance-weighted moments: sd/√ESS for the mean,
		 * sd/√(2 ESS) for the sd; 4 of them each */
		double tol_mean = 4.0 * sd / sqrt(ess), tol_sd = 4.0 * sd / sqrt(2.0 * ess);
		int ok = fabs(res.mean[j] - mean) < tol_mean && fabs(res.sd[j] - sd) < tol_sd;
		printf("  %-13s prior TN mean %9.4f sd %8.4f | reported mean %9.4f sd %8.4f "
		       "(tol %.4f, %.4f)",
		       tmp_names[k], mean, sd, res.mean[j], res.sd[j], tol_mean, tol_sd);
		if (res.check.corrected)
			printf(" | plain consensus mean %9.4f sd %8.4f", res.check.mean[j],
			       res.check.sd[j]);
		printf("%s\n", ok ? "" : "  <-- differs");
		failed += !ok;
	}
	/* the tolerances above have teeth (at most 0.15 prior sd) when the check corrected */
	int corrected = res.check.done && res.check.corrected && ess >= 700.0;
	*flagged = res.check.done && res.check.khat > 0.7 && res.quality.overall != XF_QUALITY_GOOD;
	if (!corrected)
		failed = failed ? failed : -1;
	int shard_failed = check_shards(&res, prior);
	xf_cmc_result_free(&res);
	xf_nlsq_result_free(&nlsq);
	xf_dataset_free(&ds);
	if (shard_failed)
		fail_msg("tempering (%s): %d shard marginals are not the prior^(1/K)", tag,
			 shard_failed);
	return failed;
}

/* Measured (full, 2026-11-26, after adr/0039): inside, k-hat -0.41, IS-ESS 2050,
 * corrected, every moment within tolerance; truncated, k-hat 1.14, IS-ESS 35, graded
 * marginal (flagged), so honest. Before adr/0039 the truncated case gave k-hat 0.627,
 * IS-ESS 155, neither corrected nor flagged, and this test failed. */
static void test_tempering_prior(void **state)
{
	(void)state;
	int flagged;
	int failed = tempering_run(tmp_inside, "tempering_inside", &flagged);
	if (failed)
		fail_msg("tempering: the combined posterior does not give back the prior "
			 "(%d parameters; -1: the self-check did not correct it)",
			 failed);
	failed = tempering_run(tmp_truncated, "tempering_truncated", &flagged);
	/* truncated priors: right, or honest about being wrong */
	if (failed && !flagged)
		fail_msg("tempering (truncated priors): the combined posterior is not the prior "
			 "and the result does not say so");
}

/* ---- 3. K-independence on laminar data ------------------------------------------- */

/* One laminar K-independence case: data, NLSQ start and sampler lengths. */
struct consensus_case {
	const char *tag;
	int n_frames;
	double truth[7], start[7], noise;
	int warmup, samples;
	int check_khat; /* assert k-hat <= 0.7 for K > 1 */
	int honest_ok;	/* a K > 1 result not graded good may differ (cmc.md: agree, or say so) */
};

/* K = 1 (the exact posterior), 4 and 16 on the case's data: the reported means must be
 * within 0.2 posterior sd of K = 1 and the sds within 15 % (cmc.md). Returns the number
 * of failed (parameter, K) pairs, plus one per K > 1 with k-hat > 0.7 when asked. */
static int consensus_run(const struct consensus_case *cc)
{
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, cc->n_frames, 0.001, 0.0054, 2e6 };
	const double phi[6] = { -60, -30, 0, 30, 60, 90 },
		     con[6] = { 0.3, 0.3, 0.3, 0.3, 0.3, 0.3 };
	const double off[6] = { 1, 1, 1, 1, 1, 1 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, cc->truth, 6, phi, con, off, cc->noise, 31, &ds), 0);
	const long ks[3] = { 1, 4, 16 };
	double mean[3][XF_N_BOUND_SLOTS + 2], sd[3][XF_N_BOUND_SLOTS + 2], khat[3] = { 0 };
	double plain_mean[3][XF_N_BOUND_SLOTS + 2], plain_sd[3][XF_N_BOUND_SLOTS + 2];
	int corrected[3] = { 0 }, good[3] = { 0 };
	char names[XF_N_BOUND_SLOTS + 2][32];
	int np = 0;
	for (int r = 0; r < 3; r++) {
		double t0 = now_s();
		xf_test_fit fc;
		xf_test_fit_init(&fc, XF_MODE_LAMINAR, cc->start);
		cmc_options(&fc, ks[r], 4, (int)env_num("XF_CONS_WARMUP", cc->warmup),
			    (int)env_num("XF_CONS_SAMPLES", cc->samples), 5);
		xf_nlsq_result nlsq;
		xf_cmc_result res;
		char tag[64];
		snprintf(tag, sizeof tag, "%s_k%ld", cc->tag, ks[r]);
		fit(&fc, &ds, tag, &nlsq, &res);
		/* K = 1: the default route, importance (no shards) or exact NUTS (one) */
		if (ks[r] == 1)
			assert_true(res.n_shards <= 1);
		else
			assert_int_equal(res.n_shards, ks[r]);
		np = res.n_params < XF_N_BOUND_SLOTS + 2 ? res.n_params : XF_N_BOUND_SLOTS + 2;
		double ess_min = INFINITY, rhat_max = 0.0, div = 0.0;
		for (long s = 0; s < res.n_shards; s++) {
			ess_min = fmin(ess_min, res.shards[s].ess_bulk_min);
			rhat_max = fmax(rhat_max, res.shards[s].rhat_max);
			div = fmax(div, res.shards[s].divergence_rate);
		}
		khat[r] = res.check.done ? res.check.khat : NAN;
		corrected[r] = res.check.done && res.check.corrected;
		good[r] = res.quality.overall == XF_QUALITY_GOOD;
		printf("%s K = %2ld (route %s): %zu points, %ld kept, k-hat %.3f (corrected %d), "
		       "quality %s; shards: min bulk ESS %.0f, max R-hat %.3f, max divergence "
		       "rate %.3f; %.1f s\n",
		       cc->tag, ks[r], xf_posterior_route_name(res.route), ds.n_points, res.n_kept,
		       khat[r], corrected[r], xf_quality_level_name(res.quality.overall), ess_min,
		       rhat_max, div, now_s() - t0);
		for (int k = 0; k < np; k++) {
			snprintf(names[k], sizeof names[k], "%s", res.names[k]);
			mean[r][k] = res.mean[k];
			sd[r][k] = res.sd[k];
			plain_mean[r][k] = corrected[r] ? res.check.mean[k] : res.mean[k];
			plain_sd[r][k] = corrected[r] ? res.check.sd[k] : res.sd[k];
		}
		xf_cmc_result_free(&res);
		xf_nlsq_result_free(&nlsq);
	}
	xf_dataset_free(&ds);
	int failed = 0;
	printf("  reported (PSIS-corrected where k-hat <= 0.7) against K = 1; [plain consensus]\n");
	printf("  %-20s %12s %10s | %12s %10s %6s %6s [%6s %6s] | %12s %10s %6s %6s [%6s %6s]\n",
	       "parameter", "K=1 mean", "sd", "K=4 mean", "sd", "dz", "sd/sd1", "dz", "sd/sd1",
	       "K=16 mean", "sd", "dz", "sd/sd1", "dz", "sd/sd1");
	for (int k = 0; k < np; k++) {
		printf("  %-20s %12.6g %10.4g", names[k], mean[0][k], sd[0][k]);
		for (int r = 1; r < 3; r++) {
			double dz = (mean[r][k] - mean[0][k]) / sd[0][k],
			       ratio = sd[r][k] / sd[0][k];
			int ok = fabs(dz) < 0.2 && fabs(ratio - 1.0) < 0.15;
			failed += !ok && !(cc->honest_ok && !good[r]);
			printf(" | %12.6g %10.4g %+6.2f %6.3f%s[%+6.2f %6.3f]", mean[r][k],
			       sd[r][k], dz, ratio,
			       ok	 ? " "
			       : good[r] ? "*"
					 : "m",
			       (plain_mean[r][k] - mean[0][k]) / sd[0][k],
			       plain_sd[r][k] / sd[0][k]);
		}
		printf("\n");
	}
	for (int r = 1; r < 3 && cc->check_khat; r++)
		if (!(khat[r] <= 0.7)) {
			printf("  K = %ld: k-hat %.3f > 0.7  <-- FAIL\n", ks[r], khat[r]);
			failed++;
		}
	return failed;
}

/* Laminar data that every shard of K = 16 identifies (issue #16): 6 angles x 80 frames,
 * fast diffusion (D0 2e4, alpha -0.5, D_offset 5e3) and low noise (2.5e-4), so each
 * shard's posterior is close to Gaussian and the consensus, PSIS-corrected, is
 * K-independent; k-hat <= 0.7 is asserted for K = 4 and 16. Measured (2-core machine):
 * - full (4 chains x (500 + 1500)), 85 s: reported means within 0.08 sd of K = 1, sds
 *   0.98-1.03x; k-hat 0.31 (K = 4), 0.42 (K = 16); K = 16 plain consensus 0.38 sd off,
 *   sds 0.92-1.02x.
 * - reduced, make test (4 chains x (200 + 400)), 23 s: within 0.06 sd, sds 0.94-1.00x;
 *   k-hat 0.04, 0.25.
 * Re-measured after adr/0039 (2026-11-26), full, 27 s: within 0.07 sd, sds 0.95-1.03x;
 * k-hat -0.47 (K = 4), 0.08 (K = 16), corrected, good. */
static void test_consensus_laminar(void **state)
{
	(void)state;
	int full = full_mode();
	struct consensus_case cc = {
		.tag = "consensus",
		.n_frames = (int)env_num("XF_CONS_FRAMES", 80),
		.truth = { 2e4, -0.5, 5e3, 0.015, -0.3, 0.0005, 1.5 },
		.start = { 1.5e4, -0.4, 3e3, 0.01, 0, 0, 0 },
		.noise = 2.5e-4,
		.warmup = full ? 500 : 200,
		.samples = full ? 1500 : 400,
		.check_khat = 1,
	};
	int failed = consensus_run(&cc);
	if (failed)
		fail_msg("consensus: %d failures: (parameter, K) pairs off K = 1 by more than 0.2 "
			 "sd in the mean or 15 %% in the sd (marked *), or k-hat > 0.7",
			 failed);
}

/* The harder case of ADR 0012, slow set only: 6 angles x 60 frames, noise 1e-3.
 * Before adr/0039: K = 4 gave k-hat 0.71 > 0.7 (plain consensus 0.54 sd off, shear sds
 * 0.67x, marginal); K = 16 (k-hat 0.57 from an unwidened Gaussian, "corrected") had sds
 * 0.84-0.90x and was not flagged. With the t proposal and the three gates both are
 * flagged (measured on the same case through the CLI: K = 4 IS-ESS/M 0.093 < 0.161 at
 * M = 16 000; K = 16 IS-ESS/M 0.155 < 0.161 and axis deviation 0.23): graded marginal,
 * the consensus summaries marked as such. cmc.md asks K-independence *or* an honest
 * grade, so a differing K > 1 result counts as a failure only when graded good
 * (honest_ok; marked m instead of *). The tolerances are the spec's, not weakened.
 * Measured by this test (2026-11-26, after adr/0039 and 0040; 31 s): K = 4 k-hat 0.53,
 * K = 16 k-hat 0.19, both uncorrected and marginal; shear means 0.60 (K = 4) and 0.27
 * (K = 16) sd off K = 1, sds 0.63-0.68x; passes (nothing differing is graded good). */
static void test_consensus_laminar_hard(void **state)
{
	(void)state;
	if (!full_mode())
		skip();
	struct consensus_case cc = {
		.tag = "consensus_hard",
		.n_frames = 60,
		.truth = { 1500, -1.1, 10, 0.015, -0.3, 0.0005, 1.5 },
		.start = { 1000, -0.6, 0, 0.01, 0, 0, 0 },
		.noise = 1e-3,
		.warmup = 500,
		.samples = 1500,
		.check_khat = 0,
		.honest_ok = 1,
	};
	int failed = consensus_run(&cc);
	if (failed)
		fail_msg(
			"consensus (hard case): %d (parameter, K) pairs differ from K = 1 by more "
			"than 0.2 sd in the mean or 15 %% in the sd and are graded good (marked *)",
			failed);
}

int main(void)
{
	xf_log_set_stderr(0, 0);
	const char *only = getenv("XF_CAL_ONLY");
	struct CMUnitTest all[] = {
		cmocka_unit_test(test_sbc_static),
		cmocka_unit_test(test_sbc_route),
		cmocka_unit_test(test_tempering_prior),
		cmocka_unit_test(test_consensus_laminar),
		cmocka_unit_test(test_consensus_laminar_hard),
	};
	if (only && *only) {
		cmocka_set_test_filter(only);
	}
	return cmocka_run_group_tests(all, NULL, NULL);
}
