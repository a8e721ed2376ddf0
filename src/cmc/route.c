/* route.c — the exact posterior by approximate-then-verify (cmc.md "When the combination
 * can be trusted": any approximate-then-verify route; adr/0045). The posterior of a large
 * file is concentrated and close to Gaussian in the sampler's space; NUTS on every point
 * costs ~10⁵ gradient passes, a verified approximation a few thousand values-only passes.
 *
 *   approximation  N(û, Σ̂): û the NLSQ optimum in u-space with log σ̂, σ̂² = χ²(û)/n;
 *                  Σ̂ NLSQ's covariance (σ̂²·(JᵀJ)⁻¹) through du/dx, var(log σ) = 1/(2n)
 *   verification   the t₅ proposal at scale 1.5 on it, the exact full-data log posterior
 *                  (σ sampled, priors untempered) at M points in batched sweeps, PSIS:
 *                  published when k̂ ≤ 0.7, IS-ESS/M ≥ half the Gaussian reference, the
 *                  axis check passes and the IS-ESS and every coordinate's ESS ≥ 1 000
 *   fallback       otherwise the caller runs exact NUTS on every point (run.c), its
 *                  metric the weighted covariance when the weights mean something
 *
 * Everything is a pure function of (data, NLSQ result, seed): the points come from the
 * check's counter-based stream, each value from the fixed-order pass, so the bytes do not
 * depend on threads or ranks (the points are shared among the ranks, xf_full_batch). */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmc/check.h"
#include "cmc/cond_scaling.h"
#include "cmc/ridge.h"
#include "cmc/route.h"
#include "cmc/tmap.h"
#include "xpcsfit/rng.h"
#include "util/clock.h"
#include "util/key_names.h"

/* Progress of the verification, about once a second: points evaluated of the current
 * batch (wall time decides only when to tell). */
static void route_tick(void *ctx, long done, long total)
{
	cmc_run *r = ctx;
	double now = xf_monotonic_s(), el = now - r->t0;
	if (!r->progress || (done < total && now - r->last_report < 1.0))
		return;
	r->last_report = now;
	xf_cmc_progress p = { 0,
			      1,
			      done,
			      total,
			      0,
			      el,
			      xf_eta_update(&r->eta, el, done, total),
			      XF_CMC_STAGE_IMPORTANCE,
			      r->route_round_base + r->route_round,
			      NULL,
			      0,
			      0 };
	r->progress(&p, r->progress_ctx);
	if (done == total)
		r->route_points += total;
}

/* The Laplace approximation in u-space (θ, log σ): mean and lower Cholesky factor of the
 * covariance (d × d). −1 when the covariance is not positive definite. */
static int approximation(cmc_run *r, xf_cmc_target *t, double *mean, double *cov, double *chol)
{
	int nt = r->n_theta, d = nt + 1;
	double chi2;
	if (xf_lik_eval_values(t->lik, 1, r->x_start, &chi2) || !isfinite(chi2))
		return -1;
	double sigma_hat = sqrt(chi2 / (double)t->n_points);
	if (!(sigma_hat > 0.0))
		sigma_hat = r->jobs[0].noise; /* a perfect fit (noise-free data) */
	xf_cmc_to_u(t, r->x_start, sigma_hat, mean);
	xf_cmc_initial_metric(&r->pr, r->nlsq, r->theta, nt, r->x_start, 1.0, t->n_points, 1,
			      r->jtj_start, cov);
	memcpy(chol, cov, sizeof(double) * (size_t)d * d);
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', d, chol, d) != 0)
		return -1;
	for (int k = 0; k < d; k++)
		for (int l = k + 1; l < d; l++)
			chol[(size_t)k * d + l] = 0.0;
	return 0;
}

/* The weighted mean and covariance (d × d) of the check's points, and the covariance's
 * lower Cholesky factor; −1 when too few effective points (IS-ESS < 10·d) or not
 * positive definite. */
static int weighted_gaussian(const xf_cmc_check *c, const double *w, double *mu, double *cov,
			     double *chol)
{
	int d = c->dim;
	if (!(c->ess >= 10.0 * d))
		return -1;
	memset(mu, 0, sizeof(double) * (size_t)d);
	memset(cov, 0, sizeof(double) * (size_t)d * d);
	for (int i = 0; i < c->m; i++)
		for (int k = 0; k < d; k++)
			mu[k] += w[i] * c->u[(size_t)i * d + k];
	for (int i = 0; i < c->m; i++)
		for (int k = 0; k < d; k++)
			for (int l = 0; l < d; l++)
				cov[(size_t)k * d + l] += w[i] * (c->u[(size_t)i * d + k] - mu[k]) *
							  (c->u[(size_t)i * d + l] - mu[l]);
	memcpy(chol, cov, sizeof(double) * (size_t)d * d);
	if (LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', d, chol, d) != 0)
		return -1;
	for (int k = 0; k < d; k++)
		for (int l = k + 1; l < d; l++)
			chol[(size_t)k * d + l] = 0.0;
	return 0;
}

/* The weighted covariance as the fallback's initial metric (dense, or its diagonal);
 * untouched when not usable (the NLSQ metric stays). */
static void weighted_metric(const xf_cmc_check *c, const double *w, int dense, double *metric)
{
	int d = c->dim;
	double *mu = malloc(sizeof(double) * (size_t)d);
	double *cov = malloc(sizeof(double) * (size_t)d * d);
	double *chol = malloc(sizeof(double) * (size_t)d * d);
	if (mu && cov && chol && weighted_gaussian(c, w, mu, cov, chol) == 0) {
		for (int k = 0; k < d; k++)
			for (int l = 0; l < d; l++) {
				if (dense)
					metric[(size_t)k * d + l] = cov[(size_t)k * d + l];
				else if (k == l)
					metric[k] = cov[(size_t)k * d + k];
			}
	}
	free(mu);
	free(cov);
	free(chol);
}

/* The published draws as a one-chain shard (u-space points with their log target): what
 * the prior sensitivity reads of an exact posterior (sensitivity.c), and σ's summary. */
static int route_draws(const cmc_run *r, const xf_cmc_check *c, const double *w,
		       const double *log_p, double sigma_scale, xf_cmc_route_out *out)
{
	int g_n = r->n_chains * r->n_samples, d = c->dim;
	xf_shard_draws *s = &out->draws;
	if (xf_shard_draws_alloc(s, 1, g_n, d))
		return -1;
	s->sigma_scale = sigma_scale;
	s->chain_status[0] = XF_CHAIN_DONE;
	/* the same systematic positions as the published draws (check_publish.c) */
	double u0 = xf_rng_uniform(r->seed, XF_RNG_CMC_CHECK, UINT64_MAX, 0, 0);
	double cum = w[0], s1 = 0.0, s2 = 0.0;
	int i = 0;
	for (int g = 0; g < g_n; g++) {
		double pos = (g + u0) / g_n;
		while (pos > cum && i < c->m - 1)
			cum += w[++i];
		memcpy(s->draws + (size_t)g * d, c->u + (size_t)i * d, sizeof(double) * (size_t)d);
		s->logp[g] = log_p[i];
	}
	for (int k = 0; k < c->m; k++) {
		double sigma = exp(c->u[(size_t)k * d + d - 1]);
		s1 += w[k] * sigma;
		s2 += w[k] * sigma * sigma;
	}
	out->sigma_mean = s1;
	out->sigma_sd = sqrt(fmax(s2 - s1 * s1, 0.0));
	return 0;
}

/* The rounds failed: once more, from a proposal along the ridge the
 * failing round's worst axis ran along (ridge.h, adr/0099), the grid's slices asked of
 * the exact posterior instead of fitted to the rounds' few effective points. 0 (c holds
 * that attempt's check when it ran: *ran 1), or an error code with err set. */
static int ridge_attempt(cmc_run *r, xf_full_batch *fb, const double *mean, const double *cov,
			 double *w, xf_cmc_check *c, int *ran, xf_error *err)
{
	int k = c->axis_param, rounds = c->rounds, rc = 0;
	*ran = 0;
	if (k < 0 || k >= r->n_theta || r->theta[k] >= r->pr.n_phys)
		return 0; /* along σ or the scaling: no ridge of a physical parameter */
	xf_slice s;
	xf_ridge rg;
	memset(&rg, 0, sizeof rg);
	if ((rc = xf_slice_open(&s, r, err)))
		return rc;
	int brc = xf_ridge_build(&rg, &s, k, mean, cov, r->slopes);
	char pcs[96];
	xf_plaw_describe(&rg.pc, pcs, sizeof pcs);
	xf_info("cmc: importance route: a proposal along %s's ridge: %d slices of the exact "
		"posterior (%ld passes), power-law coordinates: %s (centres move %.3g widths "
		"over the grid)%s",
		r->pr.names[r->theta[k]], rg.n, rg.passes, pcs, rg.bend,
		brc ? "; too few to use" : "");
	if (brc < 0)
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the posterior's ridge");
	if (brc == 0) {
		xf_is_prop p;
		xf_is_prop_ridge(&p, &rg);
		r->route_round_base = rounds; /* the progress line counts on */
		int irc = xf_cmc_route_rounds_prop(xf_full_logp_batch, fb, &p,
						   r->seed + XF_RIDGE_SEED, &r->route_round,
						   xf_cmc_route_min_ess(fb->t->n_points), w, c);
		if (irc)
			rc = irc == XF_ERR_INTERRUPTED ? xf_fail(err, XF_ERR_INTERRUPTED,
								 "interrupted while checking the "
								 "posterior's approximation")
						       : xf_fail(err, XF_ERR_NOMEM,
								 "out of memory checking the "
								 "posterior's approximation");
		c->rounds += rounds;
		c->ridge_param = k;
		c->power_law_coords = rg.pc.n;
		*ran = 1;
	}
	xf_ridge_free(&rg);
	xf_slice_close(&s);
	return rc;
}

int xf_cmc_route_importance(cmc_run *r, xf_cmc_result *res, double *metric, xf_cmc_route_out *out,
			    xf_error *err)
{
	int nt = r->n_theta, d = nt + 1, m0 = XF_ROUTE_M0, rc = 0;
	int m_max = xf_check_m_max(m0);
	shard_job *job = &r->jobs[0]; /* K = 1: every pair */
	xf_cmc_check *c = &out->check;
	xf_cmc_target t;
	xf_tmap map;
	xf_cond_scaling cs;
	xf_is_prop prop;
	int have_t = 0, have_map = 0, have_cs = 0, irc = 0;
	xf_lik *lik = NULL;
	double *mean = malloc(sizeof(double) * (size_t)d);
	double *cov = malloc(sizeof(double) * (size_t)d * d);
	double *chol = malloc(sizeof(double) * (size_t)d * d);
	double *w = malloc(sizeof(double) * (size_t)m_max);
	c->u = malloc(sizeof(double) * (size_t)m_max * d);
	c->log_w = malloc(sizeof(double) * (size_t)m_max);
	c->log_p = malloc(sizeof(double) * (size_t)m_max);
	if (!mean || !cov || !chol || !w || !c->u || !c->log_w || !c->log_p ||
	    xf_cmc_target_alloc(&t, &r->pr)) {
		rc = xf_fail(err, XF_ERR_NOMEM,
			     "out of memory for the posterior's importance route");
		goto done;
	}
	have_t = 1;
	if (!(lik = xf_lik_create(&r->pr, &job->ps, r->pool, err)) ||
	    xf_cmc_route_device(r, lik, XF_DEVICE_JOB_POSTERIOR_IMPORTANCE, "importance route", 0,
				err)) {
		rc = err->code;
		goto done;
	}
	t.lik = lik;
	t.n_points = job->ps.n_pairs * (size_t)r->pr.n_phi;
	t.n_theta = nt;
	t.theta = r->theta;
	t.dim = d;
	t.temper = 1.0;
	t.sigma_scale = job->sigma_scale;
	t.x_fixed = r->x_start;
	if (approximation(r, &t, mean, cov, chol)) {
		snprintf(out->note, sizeof out->note,
			 "the NLSQ covariance gives no usable Gaussian approximation");
		xf_info("cmc: %s: exact NUTS", out->note);
		rc = 1;
		goto done;
	}
	xf_info("cmc: the posterior by importance sampling from the NLSQ approximation, checked "
		"against the exact full-data posterior (%zu points)",
		t.n_points);
	xf_full_batch fb = { &t, d, 0.0, 1, route_tick, r };
	if (xf_tmap_alloc(&map, d)) {
		rc = xf_fail(err, XF_ERR_NOMEM,
			     "out of memory for the posterior's importance route");
		goto done;
	}
	have_map = 1;
	xf_tmap_linear(&map, mean, chol);
	xf_is_prop_tmap(&prop, &map);
	/* sampled per-angle scaling: drawn from its exact conditional, the map fitted to θ
	 * and σ alone (adr/0081) */
	if (xf_cond_scaling_count(&t) > 0) {
		int crc = xf_cond_scaling_init(&cs, &t, r->slopes, mean, cov);
		have_cs = 1;
		if (crc < 0) {
			rc = xf_fail(err, XF_ERR_NOMEM,
				     "out of memory for the posterior's importance route");
			goto done;
		}
		if (crc == 0) {
			xf_cond_scaling_prop(&cs, &prop);
			cs.tick = route_tick;
			cs.tick_ctx = r;
			xf_info("cmc: importance route: the per-angle scaling (%d coefficients) "
				"drawn from its exact conditional; the proposal fitted to %d "
				"coordinates",
				cs.d_s, cs.d_m);
		}
	}
	c->sized_m = t.n_points > XF_ROUTE_SMALL_POINTS; /* adr/0092 */
	irc = xf_cmc_route_rounds_prop(xf_full_logp_batch, &fb, &prop, r->seed, &r->route_round,
				       xf_cmc_route_min_ess(t.n_points), w, c);
	if (irc) {
		rc = irc == XF_ERR_INTERRUPTED
			     ? xf_fail(err, XF_ERR_INTERRUPTED,
				       "interrupted while checking the posterior's approximation")
			     : xf_fail(err, XF_ERR_NOMEM,
				       "out of memory checking the posterior's approximation");
		goto done;
	}
	c->done = 1;
	c->scaling_conditional = prop.d_mix < d ? cs.d_s : 0;
	c->map_dim = prop.d_mix;
	c->power_law_coords = prop.d_mix < d ? cs.pc.n : 0;
	c->ridge_param = -1;
	if (!(c->pass_khat && c->pass_ess && c->pass_axis)) { /* every file size (adr/0100) */
		int ran;
		if ((rc = ridge_attempt(r, &fb, mean, cov, w, c, &ran, err)))
			goto done;
		if (ran) {
			c->scaling_conditional = 0;
			c->map_dim = d;
		}
	}
	xf_info("cmc: importance route: k-hat %.3f, M %d, IS-ESS %.0f (IS-ESS/M %.3f, Gaussian "
		"target %.3f), smallest coordinate ESS %.0f, worst axis %d drop %.3f",
		c->khat, c->m, c->ess, c->ess / c->m, c->ess_ref, c->ess_coord_min, c->axis,
		c->axis_drop);
	if (c->pass_khat && c->pass_ess && c->pass_axis) {
		c->corrected = 1;
		if (xf_cmc_route_publish(r, res, c, w, err) ||
		    route_draws(r, c, w, c->log_p, job->sigma_scale, out)) {
			rc = err->code ? err->code
				       : xf_fail(err, XF_ERR_NOMEM,
						 "out of memory publishing the posterior");
			goto done;
		}
		rc = 0;
		goto done;
	}
	/* the reasons, as the consensus verdict gives them */
	char what[128] = "";
	size_t n = 0;
	if (!c->pass_khat)
		n += (size_t)snprintf(what + n, sizeof what - n, "k-hat %.2f > %.1f, ", c->khat,
				      XF_KHAT_MAX);
	if (!c->pass_ess && n < sizeof what)
		n += (size_t)snprintf(what + n, sizeof what - n,
				      "IS-ESS %.0f (IS-ESS/M %.3f, reference %.3f), ", c->ess,
				      c->ess / c->m, XF_ESS_REF_FRACTION * c->ess_ref);
	if (!c->pass_axis && c->tail_axis >= 0 && c->tail_excess > 0.0 && n < sizeof what)
		n += (size_t)snprintf(what + n, sizeof what - n,
				      "axis %d at z %+g outweighs every point by e^%.1f, ",
				      c->tail_axis, c->tail_z, fmin(c->tail_excess, 999.0));
	else if (!c->pass_axis && n < sizeof what)
		n += (size_t)snprintf(what + n, sizeof what - n, "axis %d drop %.2g vs 0.5, ",
				      c->axis, c->axis_drop);
	if (n >= 2 && n < sizeof what)
		what[n - 2] = '\0';
	snprintf(out->note, sizeof out->note,
		 "the approximation does not match the exact posterior after %d round%s (%s)",
		 c->rounds, c->rounds > 1 ? "s" : "", what);
	snprintf(c->verdict, sizeof c->verdict, "%s", out->note);
	xf_info("cmc: %s: exact NUTS on every point", out->note);
	if (c->khat <= 1.0) {
		weighted_metric(c, w, r->dense, metric);
		if (xf_cmc_route_handoff(c, w, r->n_chains, r->seed, out))
			rc = xf_fail(err, XF_ERR_NOMEM, "out of memory handing over to NUTS");
	}
	rc = rc ? rc : 1;
done:
	xf_lik_destroy(lik);
	if (have_t)
		xf_cmc_target_free(&t);
	if (have_map)
		xf_tmap_free(&map);
	if (have_cs)
		xf_cond_scaling_free(&cs);
	free(mean);
	free(cov);
	free(chol);
	free(w);
	return rc;
}

double xf_cmc_route_min_ess(size_t n_points)
{
	return n_points <= XF_ROUTE_SMALL_POINTS ? 2.0 * XF_ROUTE_MIN_ESS : XF_ROUTE_MIN_ESS;
}

void xf_cmc_route_out_free(xf_cmc_route_out *out)
{
	xf_shard_draws_free(&out->draws);
	free(out->check.u);
	free(out->check.log_w);
	free(out->check.log_p);
	free(out->inits);
	memset(out, 0, sizeof *out);
}

void xf_cmc_route_describe(const xf_cmc_result *res, char *buf, size_t size)
{
	const xf_cmc_check *c = &res->approx;
	char rounds_note[128], cond_note[128] = "";
	snprintf(rounds_note, sizeof rounds_note,
		 " (round %d: a proposal fitted to round %d's weighted points)", c->rounds,
		 c->rounds - 1);
	if (c->prior_start > 0 && c->rounds == c->prior_start)
		snprintf(rounds_note, sizeof rounds_note,
			 " (round %d: the Laplace approximation with the priors in)", c->rounds);
	else if (c->prior_start > 0)
		snprintf(rounds_note, sizeof rounds_note,
			 " (round %d: a proposal fitted to round %d's weighted points, after a "
			 "start with the priors in)",
			 c->rounds, c->rounds - 1);
	if (c->ridge_param >= 0 && c->ridge_param < res->n_theta) /* adr/0099 */
		snprintf(rounds_note, sizeof rounds_note,
			 " (round %d: a proposal along %s's ridge from the exact posterior's "
			 "slices, after %d fitted round%s)",
			 c->rounds, res->names[res->theta[c->ridge_param]], c->rounds - 1,
			 c->rounds > 2 ? "s" : "");
	if (c->scaling_conditional > 0)
		snprintf(cond_note, sizeof cond_note,
			 ", contrast and offset from their exact conditional%s",
			 c->power_law_coords > 0 ? ", in power-law coordinates on a ridge" : "");
	if (res->route == XF_POSTERIOR_ROUTE_IMPORTANCE)
		snprintf(buf, size,
			 "importance sampling from the NLSQ approximation%s%s, checked against the "
			 "exact posterior: k-hat %.3g, M %d, IS-ESS %.0f (smallest coordinate "
			 "%.0f), axis deviation %.3g: passed",
			 c->rounds > 1 ? rounds_note : "", cond_note, c->khat, c->m, c->ess,
			 c->ess_coord_min, c->axis_dev);
	else if (res->route == XF_POSTERIOR_ROUTE_NUTS && res->route_note[0])
		snprintf(buf, size, "exact NUTS on every point (%s)", res->route_note);
	else if (res->route == XF_POSTERIOR_ROUTE_NUTS)
		snprintf(buf, size, "exact NUTS on every point (" XF_KEY_CMC_ROUTE ": nuts)");
	else
		snprintf(buf, size, "consensus Monte Carlo over %ld shards", res->n_shards);
}
