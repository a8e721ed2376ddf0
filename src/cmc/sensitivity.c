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
#include "util/numfmt.h"

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

xf_prior_diagnosis xf_psens_diagnosis(double prior, double lik)
{
	int p = prior >= XF_PSENS_THRESHOLD;
	if (p && isnan(lik))
		return XF_PRIOR_DIAG_UNMEASURED;
	int l = lik >= XF_PSENS_THRESHOLD;
	return p && l ? XF_PRIOR_DIAG_CONFLICT : p ? XF_PRIOR_DIAG_STRONG : XF_PRIOR_DIAG_NONE;
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
	s->nlsq_edge = calloc(n, sizeof(int));
	s->gap = malloc(sizeof(double) * n);
	s->pull = malloc(sizeof(double) * n);
	s->diagnosis = malloc(sizeof(xf_prior_diagnosis) * n);
	s->flagged = calloc(n, sizeof(int));
	s->mean = malloc(sizeof(double) * n);
	s->sd = malloc(sizeof(double) * n);
	return !(s->prior && s->lik && s->prior_mu && s->prior_sigma && s->nlsq && s->nlsq_sd &&
		 s->nlsq_edge && s->gap && s->pull && s->diagnosis && s->flagged && s->mean &&
		 s->sd);
}

/* NLSQ's value and uncertainty of the parameter called name, NaN when NLSQ has none
 * (another per-angle layout) */
static void nlsq_of(const xf_estimate *nlsq, const char *name, double *v, double *sd)
{
	*v = *sd = NAN;
	for (int j = 0; nlsq && j < nlsq->n_params; j++)
		if (!strcmp(nlsq->names[j], name) && !nlsq->is_fixed[j]) {
			*v = nlsq->values[j];
			*sd = nlsq->sd[j];
		}
}

/* where NLSQ's value x ± sd of parameter k stands in its bounds (xf_cmc_sensitivity) */
static int nlsq_edge(const xf_problem *pr, int k, double x, double sd)
{
	double lo = pr->lower[k], hi = pr->upper[k];
	if (!isfinite(x))
		return 0;
	if (xf_cmc_near_bound(lo, hi, x))
		return x - lo < hi - x ? -1 : 1;
	return sd > 0.25 * (hi - lo) ? 2 : 0;
}

int xf_data_alone(double mean, double sd, double mu0, double sigma0, double *data, double *data_sd)
{
	double prec = 1.0 / (sd * sd) - 1.0 / (sigma0 * sigma0);
	*data = *data_sd = NAN;
	if (!(prec > 0.0) || !isfinite(prec) || !isfinite(mean))
		return -1;
	*data = (mean / (sd * sd) - mu0 / (sigma0 * sigma0)) / prec;
	*data_sd = 1.0 / sqrt(prec);
	return 0;
}

/* NLSQ has a value of parameter k with an sd, inside the bounds (edge 0) */
static int nlsq_usable(const xf_cmc_sensitivity *s, int k)
{
	return isfinite(s->nlsq[k]) && isfinite(s->nlsq_sd[k]) && s->nlsq_edge[k] == 0;
}

/* What the data say of parameter k for the conflict test: NLSQ's value where usable, else
 * the data alone (xf_data_alone); 0, or −1 where neither is known. */

static int data_says(const xf_cmc_sensitivity *s, int k, double *v, double *sd)
{
	if (nlsq_usable(s, k)) {
		*v = s->nlsq[k];
		*sd = s->nlsq_sd[k];
		return 0;
	}
	return xf_data_alone(s->mean[k], s->sd[k], s->prior_mu[k], s->prior_sigma[k], v, sd);
}

/* The posterior against NLSQ and the verdict, parameter by parameter: priorsense's
 * diagnosis from the two sensitivities (a strong, correct prior is prior sensitive but
 * leaves the likelihood little to say; a conflict moves with both). Without the
 * likelihood (K > 1) a gap that the prior pays for — the posterior mean where the prior
 * is e² denser than at NLSQ's value — stands in for the likelihood's side. A gap alone is
 * no reason (NLSQ's sd is optimistic, a skewed posterior's mean is not the optimum). */
static void judge_params(const cmc_run *r, xf_cmc_result *res)
{
	xf_cmc_sensitivity *s = &res->sensitivity;
	for (int k = 0; k < res->n_params; k++) {
		s->diagnosis[k] = XF_PRIOR_DIAG_NONE;
		nlsq_of(r->nlsq, res->names[k], &s->nlsq[k], &s->nlsq_sd[k]);
		s->nlsq_edge[k] = nlsq_edge(&r->pr, k, s->nlsq[k], s->nlsq_sd[k]);
		double z_nlsq = (s->nlsq[k] - s->prior_mu[k]) / s->prior_sigma[k];
		double z_mean = (s->mean[k] - s->prior_mu[k]) / s->prior_sigma[k];
		double scale = isfinite(s->nlsq_sd[k]) ? fmax(s->sd[k], s->nlsq_sd[k]) : s->sd[k];
		s->gap[k] = (s->mean[k] - s->nlsq[k]) / scale;
		s->pull[k] = 0.5 * (z_nlsq * z_nlsq - z_mean * z_mean);
		if (isnan(s->prior[k]))
			continue;
		s->diagnosis[k] = xf_psens_diagnosis(s->prior[k], s->lik[k]);
		double dv, dsd, z_gap = NAN;
		if (!data_says(s, k, &dv, &dsd))
			z_gap = (dv - s->prior_mu[k]) /
				sqrt(dsd * dsd + s->prior_sigma[k] * s->prior_sigma[k]);
		if (s->diagnosis[k] == XF_PRIOR_DIAG_CONFLICT && isfinite(z_gap) &&
		    fabs(z_gap) < XF_PRIOR_AGREE_Z)
			s->diagnosis[k] = XF_PRIOR_DIAG_AGREEING;
		int decides = s->prior[k] >= XF_PSENS_THRESHOLD;
		int pulls = fabs(s->gap[k]) > XF_PRIOR_GAP_MAX && s->pull[k] > XF_PRIOR_PULL_MIN;
		if (pulls && !decides)
			s->diagnosis[k] = XF_PRIOR_DIAG_PULLS;
		s->flagged[k] = decides || pulls;
	}
}

/* mean and sd of column m of x[n][nt] into mean[k], sd[k] */
static void draws_summary(const double *x, int n, int nt, int m, double *mean, double *sd)
{
	double a = 0.0, q = 0.0;
	for (int g = 0; g < n; g++)
		a += x[(size_t)g * nt + m];
	a /= n;
	for (int g = 0; g < n; g++) {
		double e = x[(size_t)g * nt + m] - a;
		q += e * e;
	}
	*mean = a;
	*sd = n > 1 ? sqrt(q / (n - 1)) : NAN;
}

int xf_cmc_prior_check(const cmc_run *r, xf_cmc_result *res, xf_shard_loader load, void *ctx,
		       xf_error *err)
{
	xf_cmc_sensitivity *s = &res->sensitivity;
	int nf = res->n_params, nt = r->n_theta, rc = 0;
	/* no posterior from one shard that NUTS sampled but did not converge: its draws
	 * still say which prior the sampler fought (adr/0080) */
	int failed = res->n_draws == 0 && res->n_shards == 1 && !res->shards[0].failed &&
		     !r->route_draws && load;
	if ((res->n_draws < 2 && !failed) || nt == 0)
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
	int exact = (res->n_shards == 1 && (res->shards[0].kept || failed)) || r->route_draws;
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
	s->failed_run = failed;
	for (int k = 0; k < nf; k++) {
		s->mean[k] = failed ? NAN : res->mean[k];
		s->sd[k] = failed ? NAN : res->sd[k];
	}
	for (int m = 0; failed && m < nt; m++)
		draws_summary(x, n, nt, m, &s->mean[r->theta[m]], &s->sd[r->theta[m]]);
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

/* The heading of flagged parameter k's reason: priorsense's diagnosis in words */
static void heading(const xf_cmc_result *res, int k, char *buf, size_t size)
{
	const xf_cmc_sensitivity *s = &res->sensitivity;
	xf_prior_diagnosis d = s->diagnosis[k];
	const char *name = res->names[k];
	int pulls = fabs(s->gap[k]) > XF_PRIOR_GAP_MAX && s->pull[k] > XF_PRIOR_PULL_MIN;
	if (d == XF_PRIOR_DIAG_CONFLICT)
		snprintf(buf, size, "prior-data conflict on %s", name);
	else if (d == XF_PRIOR_DIAG_AGREEING)
		snprintf(buf, size, "informative prior on %s (agreeing with the data)", name);
	else if (d == XF_PRIOR_DIAG_STRONG)
		snprintf(buf, size, "strong prior / weak likelihood on %s", name);
	else if (s->prior[k] >= s->threshold && pulls) /* K > 1: the gap stands in for it */
		snprintf(buf, size, "prior-data conflict on %s", name);
	else if (s->prior[k] >= s->threshold) /* K > 1: the likelihood is not measured */
		snprintf(buf, size, "prior decides %s", name);
	else
		snprintf(buf, size, "prior pulls %s away from NLSQ", name);
}

void xf_cmc_sensitivity_reason(const xf_cmc_result *res, int k, char *buf, size_t size)
{
	const xf_cmc_sensitivity *s = &res->sensitivity;
	char mu[XF_NUM_TEXT], sg[XF_NUM_TEXT], post[2 * XF_NUM_TEXT], nl[2 * XF_NUM_TEXT];
	char val[XF_NUM_TEXT];
	char data[224] = "no NLSQ value to compare", lik[64] = "", head[128];
	/* each pair to the precision its own sd supports (numfmt.h): -1.960 ± 0.0034 against
	 * -1.993 ± 0.0073 must not both read -2.000 */
	xf_num_value(s->prior_mu[k], NAN, mu, sizeof mu);
	xf_num_value(s->prior_sigma[k], NAN, sg, sizeof sg);
	xf_num_pm(s->mean[k], s->sd[k], " ± ", post, sizeof post);
	if (isfinite(s->nlsq[k])) {
		xf_num_pm(s->nlsq[k], s->nlsq_sd[k], " ± ", nl, sizeof nl);
		xf_num_value(s->nlsq[k], NAN, val, sizeof val);
		/* a fit clipped by a bound, or one that spans the bounds, does not "say" a
		 * value: name what NLSQ found instead */
		if (s->nlsq_edge[k] == -1 || s->nlsq_edge[k] == 1)
			snprintf(data, sizeof data, "NLSQ stopped at its %s bound, %s",
				 s->nlsq_edge[k] < 0 ? "lower" : "upper", val);
		else if (s->nlsq_edge[k] == 2)
			snprintf(data, sizeof data,
				 "the data (NLSQ) do not confine it within its bounds (%s)", nl);
		else
			snprintf(data, sizeof data, "the data (NLSQ) say %s", nl);
	}
	/* where NLSQ says nothing usable: the data alone, the posterior without its prior
	 * (xf_data_alone; docs/cmc.md) */
	double dv, dsd;
	if (!nlsq_usable(s, k) &&
	    !xf_data_alone(s->mean[k], s->sd[k], s->prior_mu[k], s->prior_sigma[k], &dv, &dsd)) {
		char al[2 * XF_NUM_TEXT];
		xf_num_pm(dv, dsd, " ± ", al, sizeof al);
		size_t at = isfinite(s->nlsq[k]) ? strlen(data) : 0;
		snprintf(data + at, sizeof data - at, "%sthe data alone say %s", at ? "; " : "",
			 al);
	}
	if (isfinite(s->lik[k]))
		snprintf(lik, sizeof lik, ", likelihood %.3f", s->lik[k]);
	else
		snprintf(lik, sizeof lik, ", likelihood not measured");
	heading(res, k, head, sizeof head);
	snprintf(buf, size,
		 "%s: TruncatedNormal(%s, %s) pulls the %s to %s while %s; power-scaling "
		 "sensitivity prior %.3f%s (threshold %.2f)",
		 head, mu, sg, s->failed_run ? "failed run's draws" : "posterior", post, data,
		 s->prior[k], lik, s->threshold);
}

void xf_cmc_sensitivity_free(xf_cmc_sensitivity *s)
{
	free(s->prior);
	free(s->lik);
	free(s->prior_mu);
	free(s->prior_sigma);
	free(s->nlsq);
	free(s->nlsq_sd);
	free(s->nlsq_edge);
	free(s->gap);
	free(s->pull);
	free(s->diagnosis);
	free(s->flagged);
	free(s->mean);
	free(s->sd);
	memset(s, 0, sizeof *s);
}
