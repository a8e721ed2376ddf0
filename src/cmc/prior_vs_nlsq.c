/* prior_vs_nlsq.c — before sampling, each prior against what the data say (NLSQ's value
 * x̂ and uncertainty s): how far x̂ lies from the prior's mean μ in prior sigmas σ and in
 * NLSQ sds, the prior's log density at x̂ against its peak, and how far the Gaussian
 * product of the two would pull the posterior off x̂, |x̂ − μ|·s/(s² + σ²) NLSQ sds. A
 * prior both far (x̂ beyond 3 σ) and strong enough to pull by an NLSQ sd or more is a
 * prior–data conflict in waiting: the sampler then explores a posterior squeezed
 * between the two, typically with a poor R̂ and divergences, and the user must know which
 * prior to look at before the minutes of sampling (cmc.md, adr/0080). Pure arithmetic on
 * the config and the NLSQ result: nothing here changes what is sampled. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/prior_vs_nlsq.h"
#include "util/numfmt.h"

/* NLSQ's value and uncertainty of the parameter called name, NaN when NLSQ has none */
static void nlsq_value(const xf_estimate *nlsq, const char *name, double *v, double *sd)
{
	*v = *sd = NAN;
	for (int j = 0; nlsq && j < nlsq->n_params; j++)
		if (!strcmp(nlsq->names[j], name) && !nlsq->is_fixed[j]) {
			*v = nlsq->values[j];
			*sd = nlsq->sd[j];
		}
}

void xf_num_sds(double v, char *buf, size_t size)
{
	if (!isfinite(v) || v == 0.0 || (fabs(v) >= 0.01 && fabs(v) < 1e9)) {
		double a = fabs(v);
		int decimals = a > 0.0 && isfinite(a) ? 1 - (int)floor(log10(a)) : 0;
		if (decimals < 0) { /* 2 significant digits of a large number: 1234 → 1200 */
			double unit = pow(10.0, -decimals);
			snprintf(buf, size, "%.0f", round(v / unit) * unit);
		} else {
			snprintf(buf, size, "%.*f", decimals, v);
		}
		return;
	}
	snprintf(buf, size, "%.2g", v);
}

static int alloc_arrays(xf_cmc_prior_vs_nlsq *p, int nf)
{
	double **arr[] = { &p->prior_mu,    &p->prior_sigma,  &p->nlsq,
			   &p->nlsq_sd,	    &p->nlsq_sd_away, &p->prior_sd_away,
			   &p->log_density, &p->width_ratio,  &p->shift_sd };
	int ok = 1;
	for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) {
		*arr[i] = malloc(sizeof(double) * (size_t)nf);
		ok = ok && *arr[i];
		for (int k = 0; *arr[i] && k < nf; k++)
			(*arr[i])[k] = NAN;
	}
	p->conflict = calloc((size_t)nf, sizeof(int));
	return ok && p->conflict;
}

/* "the prior on alpha, TruncatedNormal(0.3, 0.02), lies 27 NLSQ sd (75 prior sd) from
 * the NLSQ value -1.2432 ± 0.055 ..." */
static void warn_one(const xf_cmc_prior_vs_nlsq *p, const xf_problem *pr, int k)
{
	char mu[XF_NUM_TEXT], sg[XF_NUM_TEXT], val[2 * XF_NUM_TEXT], a[32], b[32], c[32], w[32];
	xf_num_value(pr->prior_mu[k], NAN, mu, sizeof mu);
	xf_num_value(pr->prior_sigma[k], NAN, sg, sizeof sg);
	xf_num_pm(p->nlsq[k], p->nlsq_sd[k], " ± ", val, sizeof val);
	xf_num_sds(p->nlsq_sd_away[k], a, sizeof a);
	xf_num_sds(p->prior_sd_away[k], b, sizeof b);
	xf_num_sds(p->shift_sd[k], c, sizeof c);
	xf_num_sds(p->width_ratio[k], w, sizeof w);
	xf_warn("cmc: prior-data conflict in waiting: the prior on %s, TruncatedNormal(%s, %s), "
		"is %s NLSQ sd (%s prior sd) from the NLSQ value %s; with a sigma %s times the "
		"NLSQ sd it would pull the posterior ~%s NLSQ sd (expect a poor R-hat or "
		"divergences); "
		"widen it or set it from independent knowledge",
		pr->names[k], mu, sg, a, b, val, w, c);
}

int xf_cmc_compare_priors(const cmc_run *r, xf_cmc_result *res, xf_error *err)
{
	const xf_problem *pr = &r->pr;
	xf_cmc_prior_vs_nlsq *p = &res->prior_vs_nlsq;
	int nf = pr->n_full;
	xf_cmc_prior_vs_nlsq_free(p);
	if (!alloc_arrays(p, nf)) {
		xf_cmc_prior_vs_nlsq_free(p);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory comparing priors with NLSQ");
	}
	for (int m = 0; m < r->n_theta; m++) {
		int k = r->theta[m];
		double mu = pr->prior_mu[k], sigma = pr->prior_sigma[k], x, s;
		nlsq_value(r->nlsq, pr->names[k], &x, &s);
		p->prior_mu[k] = mu;
		p->prior_sigma[k] = sigma;
		p->nlsq[k] = x;
		p->nlsq_sd[k] = s;
		if (!isfinite(x) || !(sigma > 0.0))
			continue;
		double dist = fabs(x - mu), z = dist / sigma;
		p->prior_sd_away[k] = z;
		p->log_density[k] = -0.5 * z * z;
		if (!(s > 0.0) || !isfinite(s))
			continue; /* no NLSQ uncertainty: the data's width is unknown */
		p->nlsq_sd_away[k] = dist / s;
		p->width_ratio[k] = sigma / s;
		p->shift_sd[k] = dist * s / (s * s + sigma * sigma);
		p->conflict[k] = z >= XF_PRIOR_FAR_SD && p->shift_sd[k] >= XF_PRIOR_SHIFT_SD;
		p->n_conflicts += p->conflict[k];
		if (p->conflict[k])
			warn_one(p, pr, k);
	}
	p->done = 1;
	return 0;
}

/* a prior's name and numbers, "alpha (TruncatedNormal(0.3, 0.02))" */
static void prior_text(const xf_cmc_result *res, int k, char *buf, size_t size)
{
	const xf_cmc_prior_vs_nlsq *p = &res->prior_vs_nlsq;
	char mu[XF_NUM_TEXT], sg[XF_NUM_TEXT];
	xf_num_value(p->prior_mu[k], NAN, mu, sizeof mu);
	xf_num_value(p->prior_sigma[k], NAN, sg, sizeof sg);
	snprintf(buf, size, "%s (TruncatedNormal(%s, %s))", res->names[k], mu, sg);
}

int xf_cmc_prior_blame(const xf_cmc_result *res, char *buf, size_t size)
{
	const xf_cmc_sensitivity *s = &res->sensitivity;
	const xf_cmc_prior_vs_nlsq *p = &res->prior_vs_nlsq;
	int named = 0;
	size_t used = 0;
	buf[0] = '\0';
	for (int k = 0; p->done && k < res->n_params && used + 1 < size; k++) {
		int before = p->conflict[k];
		xf_prior_diagnosis diag =
			s->done && s->diagnosis ? s->diagnosis[k] : XF_PRIOR_DIAG_NONE;
		int conflict = diag == XF_PRIOR_DIAG_CONFLICT;
		int strong = diag == XF_PRIOR_DIAG_STRONG;
		if (!before && !conflict && !strong)
			continue;
		char who[160], far[64] = "", a[32];
		prior_text(res, k, who, sizeof who);
		if (p->done && isfinite(p->nlsq_sd_away[k])) {
			xf_num_sds(p->nlsq_sd_away[k], a, sizeof a);
			snprintf(far, sizeof far, " (%s NLSQ sd away)", a);
		}
		used += (size_t)snprintf(buf + used, size - used, "%sthe prior on %s %s%s",
					 named ? "; " : "", who,
					 strong && !before ? "decides it: strong prior / weak "
							     "likelihood"
							   : "conflicts with the data",
					 far);
		named++;
		if (used >= size)
			used = size - 1;
	}
	return named;
}

void xf_cmc_no_posterior_reason(xf_cmc_result *res)
{
	const xf_cmc_shard *sh = &res->shards[0];
	char why[256], blame[320];
	long transitions = (long)res->n_chains * res->n_samples;
	if (sh->failed)
		snprintf(why, sizeof why, "NUTS could not sample: %s", sh->reason);
	else
		snprintf(why, sizeof why,
			 "NUTS did not converge: %s, %ld of %ld transitions after warmup diverged",
			 sh->reason, sh->divergences, transitions);
	if (xf_cmc_prior_blame(res, blame, sizeof blame))
		xf_quality_add_reason(&res->quality, "no posterior: %s; %s", why, blame);
	else
		xf_quality_add_reason(&res->quality, "no posterior: %s", why);
}

void xf_cmc_prior_vs_nlsq_free(xf_cmc_prior_vs_nlsq *p)
{
	free(p->prior_mu);
	free(p->prior_sigma);
	free(p->nlsq);
	free(p->nlsq_sd);
	free(p->nlsq_sd_away);
	free(p->prior_sd_away);
	free(p->log_density);
	free(p->width_ratio);
	free(p->shift_sd);
	free(p->conflict);
	memset(p, 0, sizeof *p);
}
