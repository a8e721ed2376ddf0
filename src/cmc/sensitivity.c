/* sensitivity.c — does the prior decide the posterior? (cmc.md "Prior sensitivity on
 * every result", adr/0040). The posterior is reweighted as if the prior (or the
 * likelihood) were raised to α = 1 ± ε — importance weights p^(α−1) per draw, Pareto-
 * smoothed — and the change of each marginal is measured by the cumulative Jensen–
 * Shannon distance (Kallioinen, Paananen, Bürkner, Vehtari, Statistics and Computing
 * 2023; the R package priorsense: its idea, our code). A marginal that moves when the
 * prior is scaled is decided by the prior; the posterior mean against NLSQ's estimate
 * shows how far. Sums run in draw order (sorted by value, ties by index): the numbers do
 * not depend on threads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/sensitivity.h"

/* 0·log 0 = 0: a bin where a cumulative distribution is still 0 adds nothing */
static double xlog2_ratio(double a, double b)
{
	return a > 0.0 ? a * log2(a / b) : 0.0;
}

/* One direction of the CJS distance over the sorted draws s[n]: the bins lie between
 * consecutive draws (ascending, or descending for −x), P the equal-weight and Q the
 * weighted cumulative distribution at each bin's left end (priorsense's step-function
 * integrals). */
static double cjs_one(const xf_ranked *s, int n, const double *w, double w_sum, int descending)
{
	double q = 0.0, pq = 0.0, qp = 0.0, p_int = 0.0, q_int = 0.0;
	for (int j = 0; j < n - 1; j++) {
		int a = descending ? n - 1 - j : j, b = descending ? n - 2 - j : j + 1;
		double width = descending ? s[a].v - s[b].v : s[b].v - s[a].v;
		double p = (double)(j + 1) / n;
		q += w[s[a].i] / w_sum;
		double m = 0.5 * (p + q);
		pq += width * xlog2_ratio(p, m);
		qp += width * xlog2_ratio(q, m);
		p_int += width * p;
		q_int += width * q;
	}
	double bound = p_int + q_int;
	if (!(bound > 0.0))
		return 0.0; /* every draw the same value: nothing can move */
	/* the (Q − P) terms of CJS(P‖Q) and CJS(Q‖P) cancel in the sum */
	double d = (pq + qp) / bound;
	return d > 0.0 ? sqrt(d) : 0.0;
}

double xf_cjs_dist(const double *x, int stride, int n, const double *w)
{
	if (n < 2)
		return 0.0;
	xf_ranked *s = malloc(sizeof(xf_ranked) * (size_t)n);
	if (!s)
		return NAN;
	double w_sum = 0.0;
	for (int g = 0; g < n; g++) {
		s[g] = (xf_ranked){ x[(size_t)g * stride], g };
		w_sum += w[g];
	}
	qsort(s, (size_t)n, sizeof(xf_ranked), xf_cmp_ranked);
	double up = cjs_one(s, n, w, w_sum, 0), down = cjs_one(s, n, w, w_sum, 1);
	free(s);
	return up > down ? up : down;
}

int xf_powerscale_sensitivity(const double *draws, int n, int stride, const int *cols, int n_cols,
			      const double *log_comp, double eps, double *sens, double *khat)
{
	double *lw = malloc(sizeof(double) * (size_t)(n ? n : 1));
	double *dist = calloc((size_t)(n_cols ? n_cols : 1), sizeof(double));
	if (!lw || !dist) {
		free(lw);
		free(dist);
		return -1;
	}
	*khat = 0.0;
	for (int side = 0; side < 2; side++) {
		double alpha = side ? 1.0 + eps : 1.0 - eps;
		for (int g = 0; g < n; g++)
			lw[g] = (alpha - 1.0) * log_comp[g];
		double k = xf_psis(lw, n);
		*khat = k > *khat || isnan(k) ? k : *khat;
		for (int g = 0; g < n; g++)
			lw[g] = exp(lw[g]);
		for (int c = 0; c < n_cols; c++)
			dist[c] += xf_cjs_dist(draws + cols[c], stride, n, lw);
	}
	/* priorsense: the derivative of the distance with respect to log₂ α */
	for (int c = 0; c < n_cols; c++)
		sens[c] = dist[c] / (2.0 * log2(1.0 + eps));
	free(lw);
	free(dist);
	return 0;
}

const char *xf_psens_diagnosis(double prior, double lik)
{
	int p = prior >= XF_PSENS_THRESHOLD;
	if (p && isnan(lik))
		return "prior sensitive (likelihood not measured)";
	int l = lik >= XF_PSENS_THRESHOLD;
	return p && l ? "prior-data conflict" : p ? "strong prior / weak likelihood" : "-";
}

static double log_sigmoid(double u)
{
	return u >= 0.0 ? -log1p(exp(-u)) : u - log1p(exp(u));
}

/* K = 1: the shard's draws in physical θ and their log likelihood =
 * stored log target − (1/K)·(log prior + log|dx/du|) − (σ's prior and Jacobian), the
 * terms of target.c in the same order */
static int one_shard(const cmc_run *r, const xf_shard_draws *d, double *x, double *ll)
{
	const xf_problem *pr = &r->pr;
	int nt = r->n_theta, n = d->n_chains * d->n_draws;
	for (int g = 0; g < n; g++) {
		const double *u = d->draws + (size_t)g * d->dim;
		double *xg = x + (size_t)g * (nt ? nt : 1);
		xf_cmc_theta_physical(pr, r->theta, nt, u, xg);
		double prior_u = 0.0;
		for (int m = 0; m < nt; m++) {
			int k = r->theta[m];
			double z = (xg[m] - pr->prior_mu[k]) / pr->prior_sigma[k];
			prior_u += -0.5 * z * z + log(pr->upper[k] - pr->lower[k]) +
				   log_sigmoid(u[m]) + log_sigmoid(-u[m]);
		}
		double log_sigma = u[nt], ratio = exp(log_sigma) / d->sigma_scale;
		ll[g] = d->logp[g] - r->temper * prior_u - (-0.5 * ratio * ratio + log_sigma);
	}
	return n;
}

static int alloc_sens(xf_cmc_sensitivity *s, int nf)
{
	size_t n = (size_t)nf;
	s->prior = malloc(sizeof(double) * n);
	s->lik = malloc(sizeof(double) * n);
	s->prior_mu = malloc(sizeof(double) * n);
	s->prior_sigma = malloc(sizeof(double) * n);
	s->nlsq = malloc(sizeof(double) * n);
	s->nlsq_sd = malloc(sizeof(double) * n);
	s->gap = malloc(sizeof(double) * n);
	s->pull = malloc(sizeof(double) * n);
	s->diagnosis = malloc(sizeof(char *) * n);
	s->flagged = calloc(n, sizeof(int));
	return !(s->prior && s->lik && s->prior_mu && s->prior_sigma && s->nlsq && s->nlsq_sd &&
		 s->gap && s->pull && s->diagnosis && s->flagged);
}

/* NLSQ's value and uncertainty of the parameter called name, NaN when NLSQ has none
 * (another per-angle layout) */
static void nlsq_of(const xf_nlsq_result *nlsq, const char *name, double *v, double *sd)
{
	*v = *sd = NAN;
	for (int j = 0; nlsq && j < nlsq->n_params; j++)
		if (!strcmp(nlsq->names[j], name) && !nlsq->is_fixed[j]) {
			*v = nlsq->values[j];
			*sd = nlsq->uncertainties[j];
		}
}

/* The posterior against NLSQ and the verdict, parameter by parameter. A gap alone is
 * no reason (NLSQ's sd is optimistic, a skewed posterior's mean is not the optimum);
 * a gap that the prior pays for — the posterior mean where the prior is e² denser than
 * at NLSQ's value — is the prior fighting the data. */
static void judge_params(const cmc_run *r, xf_cmc_result *res)
{
	xf_cmc_sensitivity *s = &res->sensitivity;
	for (int k = 0; k < res->n_params; k++) {
		s->diagnosis[k] = "-";
		nlsq_of(r->nlsq, res->names[k], &s->nlsq[k], &s->nlsq_sd[k]);
		double z_nlsq = (s->nlsq[k] - s->prior_mu[k]) / s->prior_sigma[k];
		double z_mean = (res->mean[k] - s->prior_mu[k]) / s->prior_sigma[k];
		double scale =
			isfinite(s->nlsq_sd[k]) ? fmax(res->sd[k], s->nlsq_sd[k]) : res->sd[k];
		s->gap[k] = (res->mean[k] - s->nlsq[k]) / scale;
		s->pull[k] = 0.5 * (z_nlsq * z_nlsq - z_mean * z_mean);
		if (isnan(s->prior[k]))
			continue;
		s->diagnosis[k] = xf_psens_diagnosis(s->prior[k], s->lik[k]);
		int decides = s->prior[k] >= XF_PSENS_THRESHOLD;
		int fights = fabs(s->gap[k]) > XF_PRIOR_GAP_MAX && s->pull[k] > XF_PRIOR_PULL_MIN;
		if (fights && !decides)
			s->diagnosis[k] = "prior pulls the posterior away from NLSQ";
		s->flagged[k] = decides || fights;
	}
}

int xf_cmc_prior_check(const cmc_run *r, xf_cmc_result *res, xf_shard_loader load, void *ctx,
		       xf_error *err)
{
	xf_cmc_sensitivity *s = &res->sensitivity;
	int nf = res->n_params, nt = r->n_theta, rc = 0;
	if (res->n_draws < 2 || nt == 0)
		return 0;
	if (alloc_sens(s, nf))
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the prior sensitivity");
	s->threshold = XF_PSENS_THRESHOLD;
	s->eps = XF_PSENS_ALPHA;
	s->khat_lik = NAN;
	for (int k = 0; k < nf; k++) {
		s->prior[k] = s->lik[k] = NAN;
		s->prior_mu[k] = r->pr.prior_mu[k];
		s->prior_sigma[k] = r->pr.prior_sigma[k];
	}
	xf_shard_draws d;
	memset(&d, 0, sizeof d);
	/* an exact posterior: NUTS on one shard, or the importance route's draws */
	int exact = (res->n_shards == 1 && res->shards[0].kept) || r->route_draws;
	if (r->route_draws)
		d = *r->route_draws; /* borrowed: not freed here */
	else if (exact && (rc = load(ctx, 0, &d, err)))
		return rc;
	int n = exact ? d.n_chains * d.n_draws : res->n_draws;
	double *x = malloc(sizeof(double) * (size_t)n * (size_t)nt);
	double *lp = malloc(sizeof(double) * (size_t)n), *ll = malloc(sizeof(double) * (size_t)n);
	double *sens = malloc(sizeof(double) * (size_t)nt);
	int *cols = malloc(sizeof(int) * (size_t)nt);
	if (!x || !lp || !ll || !sens || !cols) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the prior sensitivity");
		goto done;
	}
	for (int m = 0; m < nt; m++)
		cols[m] = m;
	if (exact)
		one_shard(r, &d, x, ll);
	else
		for (int g = 0; g < n; g++)
			for (int m = 0; m < nt; m++)
				x[(size_t)g * nt + m] = res->draws[(size_t)g * nf + r->theta[m]];
	s->n_draws = n;
	s->likelihood_measured = exact;
	/* each parameter's own prior, scaled alone (priorsense's prior_selection): the
	 * joint prior would move every parameter correlated with the one whose prior
	 * decides, and the reason must name the prior that does */
	s->khat_prior = 0.0;
	for (int m = 0; m < nt && rc == 0; m++) {
		int k = r->theta[m];
		double khat;
		for (int g = 0; g < n; g++) {
			double z =
				(x[(size_t)g * nt + m] - r->pr.prior_mu[k]) / r->pr.prior_sigma[k];
			lp[g] = -0.5 * z * z; /* the truncation's constant drops out */
		}
		if (xf_powerscale_sensitivity(x, n, nt, &cols[m], 1, lp, s->eps, &s->prior[k],
					      &khat))
			rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the prior sensitivity");
		s->khat_prior = khat > s->khat_prior || isnan(khat) ? khat : s->khat_prior;
	}
	if (rc)
		goto done;
	if (exact) {
		if (xf_powerscale_sensitivity(x, n, nt, cols, nt, ll, s->eps, sens, &s->khat_lik)) {
			rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the prior sensitivity");
			goto done;
		}
		for (int m = 0; m < nt; m++)
			s->lik[r->theta[m]] = sens[m];
	}
	judge_params(r, res);
	s->done = 1;
done:
	if (!r->route_draws)
		xf_shard_draws_free(&d);
	free(x);
	free(lp);
	free(ll);
	free(sens);
	free(cols);
	return rc;
}

/* a number as a user reads it, never with an exponent between 1 and 1e9: `digits`
 * significant digits, large values rounded to them (an sd: 6295 → 6300) or, with
 * whole, in whole units (a value: 26150, 5709) */
static const char *num(char *buf, size_t size, double v, int digits, int whole)
{
	if (fabs(v) >= 1.0 && fabs(v) < 1e9) {
		int decimals = digits - 1 - (int)floor(log10(fabs(v)));
		double unit = decimals < 0 && !whole ? pow(10.0, -decimals) : 1.0;
		snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 0, round(v / unit) * unit);
	} else {
		snprintf(buf, size, "%.*g", digits, v);
	}
	return buf;
}

void xf_cmc_sensitivity_reason(const xf_cmc_result *res, int k, char *buf, size_t size)
{
	const xf_cmc_sensitivity *s = &res->sensitivity;
	char a[32], b[32], c[32], d[32], e[32], f[32], data[96] = "no NLSQ value to compare";
	int decides = s->prior[k] >= s->threshold;
	int fights = s->lik[k] >= s->threshold ||
		     (fabs(s->gap[k]) > XF_PRIOR_GAP_MAX && s->pull[k] > XF_PRIOR_PULL_MIN);
	if (isfinite(s->nlsq[k]))
		snprintf(data, sizeof data, "the data (NLSQ) say %s%s%s",
			 num(e, sizeof e, s->nlsq[k], 4, 1), isfinite(s->nlsq_sd[k]) ? " ± " : "",
			 isfinite(s->nlsq_sd[k]) ? num(f, sizeof f, s->nlsq_sd[k], 2, 0) : "");
	snprintf(buf, size,
		 "prior %s %s: TruncatedNormal(%s, %s) pulls the posterior to %s ± %s while "
		 "%s; power-scaling sensitivity %.2f %s %.2f",
		 fights ? "fights the data on" : "decides", res->names[k],
		 num(a, sizeof a, s->prior_mu[k], 4, 1), num(b, sizeof b, s->prior_sigma[k], 4, 1),
		 num(c, sizeof c, res->mean[k], 4, 1), num(d, sizeof d, res->sd[k], 2, 0), data,
		 s->prior[k], decides ? ">" : "<=", s->threshold);
}

void xf_cmc_sensitivity_free(xf_cmc_sensitivity *s)
{
	free(s->prior);
	free(s->lik);
	free(s->prior_mu);
	free(s->prior_sigma);
	free(s->nlsq);
	free(s->nlsq_sd);
	free(s->gap);
	free(s->pull);
	free(s->diagnosis);
	free(s->flagged);
	memset(s, 0, sizeof *s);
}
