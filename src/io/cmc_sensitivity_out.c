/* cmc_sensitivity_out.c — the prior check (cmc_sensitivity_out.h) written out. Every
 * sampled parameter is listed, flagged or not, so a reader can see how close to the
 * threshold each one is; fixed parameters have no prior to check. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/cmc_sensitivity_out.h"
#include "io/io_internal.h"

#define XF_PSENS_METHOD                                                                            \
	"power-scaling of prior and likelihood by alpha = 1 +/- eps, Pareto-smoothed "             \
	"importance weights, cumulative Jensen-Shannon distance of each marginal "                 \
	"(Kallioinen et al. 2023, priorsense)"
#define XF_PSENS_NO_LIK                                                                            \
	"likelihood not power-scaled: the combined draws of K > 1 shards carry no per-draw "       \
	"likelihood; num_shards: 1 gives both"

#define XF_PSENS_FAILED                                                                            \
	"computed on the draws of a NUTS run that did not converge (no posterior): they "          \
	"name the prior the sampler fought, not a posterior to report"
#define XF_PRIOR_VS_NLSQ_RULE                                                                      \
	"before sampling: conflict when NLSQ lies >= 3 prior sigma from the prior mean and the "   \
	"Gaussian product would pull the posterior >= 1 NLSQ sd, |nlsq - mu| * s / (s^2 + "        \
	"sigma^2)"

static cJSON *param_entry(const xf_cmc_appendix *app, int k)
{
	const xf_cmc_sensitivity *s = app->sensitivity;
	cJSON *e = cJSON_CreateObject(), *prior = cJSON_CreateObject();
	cJSON_AddStringToObject(prior, "type", "TruncatedNormal");
	cJSON_AddItemToObject(prior, "mu", xf_json_num(s->prior_mu[k]));
	cJSON_AddItemToObject(prior, "sigma", xf_json_num(s->prior_sigma[k]));
	cJSON_AddItemToObject(prior, "lower", xf_json_num(app->lower[k]));
	cJSON_AddItemToObject(prior, "upper", xf_json_num(app->upper[k]));
	cJSON_AddItemToObject(e, "prior", prior);
	cJSON_AddItemToObject(e, "prior_sensitivity", xf_json_num(s->prior[k]));
	cJSON_AddItemToObject(e, "likelihood_sensitivity", xf_json_num(s->lik[k]));
	cJSON_AddStringToObject(e, "diagnosis", xf_prior_diagnosis_name(s->diagnosis[k]));
	/* the draws judged: the posterior's, or a failed run's (failed_run) */
	cJSON_AddItemToObject(e, "posterior_mean", xf_json_num(s->mean[k]));
	cJSON_AddItemToObject(e, "posterior_std", xf_json_num(s->sd[k]));
	cJSON_AddItemToObject(e, "nlsq", xf_json_num(s->nlsq[k]));
	cJSON_AddItemToObject(e, "nlsq_std", xf_json_num(s->nlsq_sd[k]));
	cJSON_AddItemToObject(e, "gap_sd", xf_json_num(s->gap[k]));
	cJSON_AddItemToObject(e, "prior_pull", xf_json_num(s->pull[k]));
	cJSON_AddBoolToObject(e, "flagged", s->flagged[k]);
	return e;
}

cJSON *xf_cmc_sensitivity_json(const xf_estimate *est, const xf_cmc_appendix *app)
{
	const xf_cmc_sensitivity *s = app->sensitivity;
	if (!s->done)
		return cJSON_CreateNull();
	cJSON *obj = cJSON_CreateObject(), *params = cJSON_CreateObject();
	cJSON_AddStringToObject(obj, "method", XF_PSENS_METHOD);
	cJSON_AddItemToObject(obj, "eps", xf_json_num(s->eps));
	cJSON_AddItemToObject(obj, "threshold", xf_json_num(s->threshold));
	cJSON_AddItemToObject(obj, "draws", xf_json_int(s->n_draws));
	cJSON_AddBoolToObject(obj, "likelihood_measured", s->likelihood_measured);
	cJSON_AddBoolToObject(obj, "failed_run", s->failed_run);
	if (s->failed_run)
		cJSON_AddStringToObject(obj, "failed_run_note", XF_PSENS_FAILED);
	if (!s->likelihood_measured)
		cJSON_AddStringToObject(obj, "note", XF_PSENS_NO_LIK);
	cJSON_AddItemToObject(obj, "khat_prior", xf_json_num(s->khat_prior));
	cJSON_AddItemToObject(obj, "khat_likelihood", xf_json_num(s->khat_lik));
	for (int m = 0; m < app->n_theta; m++)
		cJSON_AddItemToObject(params, est->names[app->theta[m]],
				      param_entry(app, app->theta[m]));
	cJSON_AddItemToObject(obj, "parameters", params);
	return obj;
}

void xf_cmc_sensitivity_h5(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app)
{
	const xf_cmc_sensitivity *s = app->sensitivity;
	size_t nf = (size_t)est->n_params;
	if (!s->done)
		return;
	hid_t sg = H5Gcreate2(g, "prior_sensitivity", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
	double *flag = malloc(sizeof(double) * nf);
	const char **diagnosis = malloc(sizeof(char *) * nf);
	if (sg < 0 || !flag || !diagnosis) {
		if (sg >= 0)
			H5Gclose(sg);
		free(flag);
		free(diagnosis);
		xf_h5_fail(w, "/cmc/prior_sensitivity");
		return;
	}
	for (size_t k = 0; k < nf; k++) {
		flag[k] = s->flagged[k];
		diagnosis[k] = xf_prior_diagnosis_name(s->diagnosis[k]);
	}
	xf_h5_attr_str(w, sg, "method", XF_PSENS_METHOD);
	if (!s->likelihood_measured)
		xf_h5_attr_str(w, sg, "note", XF_PSENS_NO_LIK);
	if (s->failed_run)
		xf_h5_attr_str(w, sg, "failed_run", XF_PSENS_FAILED);
	xf_h5_put_f64(w, sg, "threshold", s->threshold, "1",
		      "a sensitivity at or above it: the prior (or likelihood) moves the marginal");
	xf_h5_put_f64(w, sg, "eps", s->eps, "1", "power-scaling by alpha = 1 - eps and 1 + eps");
	xf_h5_put_vec(w, sg, "prior", nf, s->prior, "1",
		      "power-scaling sensitivity to the prior, per parameter of "
		      "/cmc/parameter_names (NaN: not sampled)");
	xf_h5_put_vec(w, sg, "likelihood", nf, s->lik, "1",
		      "power-scaling sensitivity to the likelihood (NaN: not measured, K > 1)");
	xf_h5_put_vec(w, sg, "prior_mu", nf, s->prior_mu, "parameter",
		      "mean of the truncated-normal prior on the bounds");
	xf_h5_put_vec(w, sg, "prior_sigma", nf, s->prior_sigma, "parameter",
		      "its sigma (before truncation)");
	xf_h5_put_vec(w, sg, "nlsq", nf, s->nlsq, "parameter", "the NLSQ estimate");
	xf_h5_put_vec(w, sg, "nlsq_std", nf, s->nlsq_sd, "parameter", "its uncertainty");
	xf_h5_put_vec(w, sg, "gap_sd", nf, s->gap, "1",
		      "(posterior mean - NLSQ) / max(posterior sd, NLSQ uncertainty)");
	xf_h5_put_vec(w, sg, "prior_pull", nf, s->pull, "1",
		      "log prior density at the posterior mean minus at the NLSQ value");
	xf_h5_put_vec(w, sg, "flagged", nf, flag, "1", "1: a quality reason names this parameter");
	xf_h5_put_strings(w, sg, "diagnosis", est->n_params, diagnosis,
			  "per parameter: -, prior-data conflict, strong prior / weak "
			  "likelihood, ...");
	free(flag);
	free(diagnosis);
	static const char *const by_param[] = { "prior",   "likelihood", "prior_mu", "prior_sigma",
						"nlsq",	   "nlsq_std",	 "gap_sd",   "prior_pull",
						"flagged", "diagnosis" };
	for (size_t k = 0; k < sizeof by_param / sizeof by_param[0]; k++)
		xf_h5_dims(w, sg, by_param[k], "/cmc/parameter_names", NULL);
	xf_h5_nx_class(w, sg, "NXcollection");
	H5Gclose(sg);
}

/* appends "name a/b" (or "name a") to buf while it fits */
static void append(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *fmt, ...)
{
	size_t n = strlen(buf);
	if (n + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, size - n, fmt, ap);
	va_end(ap);
}

void xf_cmc_sensitivity_report(xf_report *r, const xf_estimate *est, const xf_cmc_appendix *app)
{
	const xf_cmc_sensitivity *s = app->sensitivity;
	const xf_cmc_prior_vs_nlsq *pv = app->prior_vs_nlsq;
	char sens[256] = "", gap[256] = "", far[256] = "";
	/* the priors named before sampling (adr/0080) */
	for (int m = 0; pv->done && m < app->n_theta; m++) {
		int k = app->theta[m];
		double a = pv->nlsq_sd_away[k];
		if (pv->conflict[k])
			append(far, sizeof far, "%s%s %.*f NLSQ sd from its prior's mean",
			       *far ? ", " : "", est->names[k], a < 10.0 ? 1 : 0, a);
	}
	if (*far)
		xf_report_add(r, XF_REPORT_FIT, "prior far from the data (before sampling)", "%s",
			      far);
	if (s->failed_run)
		xf_report_add(r, XF_REPORT_FIT, "prior sensitivity on", "%s", XF_PSENS_FAILED);
	if (!s->done) {
		xf_report_add(r, XF_REPORT_FIT, "prior sensitivity", "not computed");
		return;
	}
	for (int m = 0; m < app->n_theta && app->theta[m] < est->n_phys; m++) {
		int k = app->theta[m];
		const char *sep = m ? ", " : "";
		if (s->likelihood_measured)
			append(sens, sizeof sens, "%s%s %.3f/%.3f", sep, est->names[k], s->prior[k],
			       s->lik[k]);
		else
			append(sens, sizeof sens, "%s%s %.3f", sep, est->names[k], s->prior[k]);
		append(gap, sizeof gap, "%s%s %+.1f sd", sep, est->names[k], s->gap[k]);
	}
	xf_report_add(r, XF_REPORT_FIT,
		      s->likelihood_measured ? "prior sensitivity (prior/likelihood)"
					     : "prior sensitivity (prior)",
		      "%s (threshold %.2f)", sens, s->threshold);
	xf_report_add(r, XF_REPORT_FIT, "posterior − NLSQ", "%s", gap);
}

cJSON *xf_cmc_prior_vs_nlsq_json(const xf_estimate *est, const xf_cmc_appendix *app)
{
	const xf_cmc_prior_vs_nlsq *p = app->prior_vs_nlsq;
	if (!p->done)
		return cJSON_CreateNull();
	cJSON *obj = cJSON_CreateObject(), *params = cJSON_CreateObject();
	cJSON_AddStringToObject(obj, "rule", XF_PRIOR_VS_NLSQ_RULE);
	cJSON_AddItemToObject(obj, "conflicts", xf_json_int(p->n_conflicts));
	for (int m = 0; m < app->n_theta; m++) {
		int k = app->theta[m];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddItemToObject(e, "prior_mu", xf_json_num(p->prior_mu[k]));
		cJSON_AddItemToObject(e, "prior_sigma", xf_json_num(p->prior_sigma[k]));
		cJSON_AddItemToObject(e, "nlsq", xf_json_num(p->nlsq[k]));
		cJSON_AddItemToObject(e, "nlsq_std", xf_json_num(p->nlsq_sd[k]));
		cJSON_AddItemToObject(e, "nlsq_sd_away", xf_json_num(p->nlsq_sd_away[k]));
		cJSON_AddItemToObject(e, "prior_sd_away", xf_json_num(p->prior_sd_away[k]));
		cJSON_AddItemToObject(e, "log_density_vs_peak", xf_json_num(p->log_density[k]));
		cJSON_AddItemToObject(e, "width_ratio", xf_json_num(p->width_ratio[k]));
		cJSON_AddItemToObject(e, "expected_pull_sd", xf_json_num(p->shift_sd[k]));
		cJSON_AddBoolToObject(e, "conflict", p->conflict[k]);
		cJSON_AddItemToObject(params, est->names[k], e);
	}
	cJSON_AddItemToObject(obj, "parameters", params);
	return obj;
}

#define XF_BEYOND_RULE                                                                             \
	"along each parameter past the draws' extremes: the Laplace mass of the exact "            \
	"posterior's slices, scaled by the draws' density at their 5 %/95 % quantile; "            \
	"flagged when above 0.01 or when it widens the sd by more than 5 %"

cJSON *xf_cmc_beyond_json(const xf_estimate *est, const xf_cmc_appendix *app)
{
	const xf_cmc_beyond *t = app->beyond;
	if (!t->done)
		return cJSON_CreateNull();
	cJSON *obj = cJSON_CreateObject(), *params = cJSON_CreateObject();
	cJSON_AddStringToObject(
		obj, "rule",
		"along each parameter past the draws' extremes: the Laplace mass of "
		"the exact posterior's slices, scaled by the draws' density at their "
		"5 %/95 % quantile; flagged when above 0.01 or when it widens the "
		"sd by more than 5 %");
	cJSON_AddItemToObject(obj, "flagged", xf_json_int(t->n_flagged));
	cJSON_AddItemToObject(obj, "passes", xf_json_int(t->passes));
	for (int m = 0; m < app->n_theta; m++) {
		int k = app->theta[m];
		if (k >= est->n_phys) /* the scaling: not probed */
			continue;
		cJSON *e = cJSON_CreateObject();
		cJSON_AddItemToObject(e, "mass_beyond_draws", xf_json_num(t->mass[k]));
		cJSON_AddItemToObject(e, "sd_ratio", xf_json_num(t->sd_ratio[k]));
		cJSON_AddItemToObject(e, "draws_edge", xf_json_num(t->edge[k]));
		cJSON_AddItemToObject(e, "reach", xf_json_num(t->reach[k]));
		cJSON_AddItemToObject(e, "calibration", xf_json_num(t->calib[k]));
		cJSON_AddBoolToObject(e, "flagged", t->flagged[k]);
		cJSON_AddItemToObject(e, "sides_judged", xf_json_int(t->sides[k]));
		cJSON_AddItemToObject(params, est->names[k], e);
	}
	cJSON_AddItemToObject(obj, "parameters", params);
	return obj;
}

void xf_cmc_prior_vs_nlsq_h5(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app)
{
	const xf_cmc_prior_vs_nlsq *p = app->prior_vs_nlsq;
	size_t nf = (size_t)est->n_params;
	if (!p->done)
		return;
	hid_t sg = H5Gcreate2(g, "prior_vs_nlsq", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
	double *flag = malloc(sizeof(double) * nf);
	if (sg < 0 || !flag) {
		if (sg >= 0)
			H5Gclose(sg);
		free(flag);
		xf_h5_fail(w, "/cmc/prior_vs_nlsq");
		return;
	}
	for (size_t k = 0; k < nf; k++)
		flag[k] = p->conflict[k];
	xf_h5_attr_str(w, sg, "rule", XF_PRIOR_VS_NLSQ_RULE);
	xf_h5_put_vec(w, sg, "prior_mu", nf, p->prior_mu, "parameter", "the prior's mean");
	xf_h5_put_vec(w, sg, "prior_sigma", nf, p->prior_sigma, "parameter", "its sigma");
	xf_h5_put_vec(w, sg, "nlsq", nf, p->nlsq, "parameter", "the NLSQ estimate");
	xf_h5_put_vec(w, sg, "nlsq_std", nf, p->nlsq_sd, "parameter", "its uncertainty");
	xf_h5_put_vec(w, sg, "nlsq_sd_away", nf, p->nlsq_sd_away, "1",
		      "|nlsq - prior_mu| / nlsq_std (NaN: not sampled or no NLSQ uncertainty)");
	xf_h5_put_vec(w, sg, "prior_sd_away", nf, p->prior_sd_away, "1",
		      "|nlsq - prior_mu| / prior_sigma");
	xf_h5_put_vec(w, sg, "log_density_vs_peak", nf, p->log_density, "1",
		      "log prior density at the NLSQ value minus at its peak");
	xf_h5_put_vec(w, sg, "width_ratio", nf, p->width_ratio, "1", "prior_sigma / nlsq_std");
	xf_h5_put_vec(w, sg, "expected_pull_sd", nf, p->shift_sd, "1",
		      "the Gaussian product's pull off the NLSQ value, in NLSQ sds");
	xf_h5_put_vec(w, sg, "conflict", nf, flag, "1",
		      "1: far and strong, a prior-data conflict in waiting (named at the start)");
	free(flag);
	static const char *const by_param[] = { "prior_mu",
						"prior_sigma",
						"nlsq",
						"nlsq_std",
						"nlsq_sd_away",
						"prior_sd_away",
						"log_density_vs_peak",
						"width_ratio",
						"expected_pull_sd",
						"conflict" };
	for (size_t k = 0; k < sizeof by_param / sizeof by_param[0]; k++)
		xf_h5_dims(w, sg, by_param[k], "/cmc/parameter_names", NULL);
	xf_h5_nx_class(w, sg, "NXcollection");
	H5Gclose(sg);
}

void xf_cmc_beyond_h5(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app)
{
	const xf_cmc_beyond *t = app->beyond;
	size_t nf = (size_t)est->n_params;
	if (!t->done)
		return;
	hid_t sg = H5Gcreate2(g, "beyond_draws", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
	double *flag = malloc(sizeof(double) * nf);
	if (sg < 0 || !flag) {
		if (sg >= 0)
			H5Gclose(sg);
		free(flag);
		xf_h5_fail(w, "/cmc/beyond_draws");
		return;
	}
	for (size_t k = 0; k < nf; k++)
		flag[k] = isnan(t->mass[k]) ? NAN : t->flagged[k];
	xf_h5_attr_str(w, sg, "rule", XF_BEYOND_RULE);
	xf_h5_put_vec(w, sg, "mass_beyond_draws", nf, t->mass, "1",
		      "the exact posterior's mass past the draws' extremes, both sides (NaN: not "
		      "probed)");
	xf_h5_put_vec(w, sg, "sd_ratio", nf, t->sd_ratio, "1",
		      "the sd with that mass over the draws' sd");
	xf_h5_put_vec(w, sg, "draws_edge", nf, t->edge, "parameter",
		      "the draws' extreme on the side of the larger mass");
	xf_h5_put_vec(w, sg, "reach", nf, t->reach, "parameter",
		      "where 90 % of that side's mass beyond the draws is reached");
	xf_h5_put_vec(w, sg, "calibration", nf, t->calib, "1",
		      "the probe's mass between the 95 % (5 %) quantile and the extreme over the "
		      "draws' 5 %");
	xf_h5_put_vec(w, sg, "flagged", nf, flag, "1", "1: a quality reason names it");
	for (size_t k = 0; k < nf; k++)
		flag[k] = isnan(t->mass[k]) ? NAN : t->sides[k];
	xf_h5_put_vec(w, sg, "sides_judged", nf, flag, "1",
		      "sides (0-2) whose calibration slices converged and agreed with the draws");
	free(flag);
	static const char *const by_param[] = { "mass_beyond_draws", "sd_ratio",
						"draws_edge",	     "reach",
						"calibration",	     "flagged",
						"sides_judged" };
	for (size_t k = 0; k < sizeof by_param / sizeof by_param[0]; k++)
		xf_h5_dims(w, sg, by_param[k], "/cmc/parameter_names", NULL);
	xf_h5_nx_class(w, sg, "NXcollection");
	H5Gclose(sg);
}
