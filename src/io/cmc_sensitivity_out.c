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

static cJSON *param_entry(const xf_cmc_result *res, int k)
{
	const xf_cmc_sensitivity *s = &res->sensitivity;
	cJSON *e = cJSON_CreateObject(), *prior = cJSON_CreateObject();
	cJSON_AddStringToObject(prior, "type", "TruncatedNormal");
	cJSON_AddItemToObject(prior, "mu", xf_json_num(s->prior_mu[k]));
	cJSON_AddItemToObject(prior, "sigma", xf_json_num(s->prior_sigma[k]));
	cJSON_AddItemToObject(prior, "lower", xf_json_num(res->lower[k]));
	cJSON_AddItemToObject(prior, "upper", xf_json_num(res->upper[k]));
	cJSON_AddItemToObject(e, "prior", prior);
	cJSON_AddItemToObject(e, "prior_sensitivity", xf_json_num(s->prior[k]));
	cJSON_AddItemToObject(e, "likelihood_sensitivity", xf_json_num(s->lik[k]));
	cJSON_AddStringToObject(e, "diagnosis", s->diagnosis[k]);
	cJSON_AddItemToObject(e, "posterior_mean", xf_json_num(res->mean[k]));
	cJSON_AddItemToObject(e, "posterior_std", xf_json_num(res->sd[k]));
	cJSON_AddItemToObject(e, "nlsq", xf_json_num(s->nlsq[k]));
	cJSON_AddItemToObject(e, "nlsq_std", xf_json_num(s->nlsq_sd[k]));
	cJSON_AddItemToObject(e, "gap_sd", xf_json_num(s->gap[k]));
	cJSON_AddItemToObject(e, "prior_pull", xf_json_num(s->pull[k]));
	cJSON_AddBoolToObject(e, "flagged", s->flagged[k]);
	return e;
}

cJSON *xf_cmc_sensitivity_json(const xf_cmc_result *res)
{
	const xf_cmc_sensitivity *s = &res->sensitivity;
	if (!s->done)
		return cJSON_CreateNull();
	cJSON *obj = cJSON_CreateObject(), *params = cJSON_CreateObject();
	cJSON_AddStringToObject(obj, "method", XF_PSENS_METHOD);
	cJSON_AddItemToObject(obj, "eps", xf_json_num(s->eps));
	cJSON_AddItemToObject(obj, "threshold", xf_json_num(s->threshold));
	cJSON_AddItemToObject(obj, "draws", xf_json_int(s->n_draws));
	cJSON_AddBoolToObject(obj, "likelihood_measured", s->likelihood_measured);
	if (!s->likelihood_measured)
		cJSON_AddStringToObject(obj, "note", XF_PSENS_NO_LIK);
	cJSON_AddItemToObject(obj, "khat_prior", xf_json_num(s->khat_prior));
	cJSON_AddItemToObject(obj, "khat_likelihood", xf_json_num(s->khat_lik));
	for (int m = 0; m < res->n_theta; m++)
		cJSON_AddItemToObject(params, res->names[res->theta[m]],
				      param_entry(res, res->theta[m]));
	cJSON_AddItemToObject(obj, "parameters", params);
	return obj;
}

void xf_cmc_sensitivity_h5(h5w *w, hid_t g, const xf_cmc_result *res)
{
	const xf_cmc_sensitivity *s = &res->sensitivity;
	size_t nf = (size_t)res->n_params;
	if (!s->done)
		return;
	hid_t sg = H5Gcreate2(g, "prior_sensitivity", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
	double *flag = malloc(sizeof(double) * nf);
	if (sg < 0 || !flag) {
		if (sg >= 0)
			H5Gclose(sg);
		free(flag);
		xf_h5_fail(w, "/cmc/prior_sensitivity");
		return;
	}
	for (size_t k = 0; k < nf; k++)
		flag[k] = s->flagged[k];
	xf_h5_attr_str(w, sg, "method", XF_PSENS_METHOD);
	if (!s->likelihood_measured)
		xf_h5_attr_str(w, sg, "note", XF_PSENS_NO_LIK);
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
	xf_h5_put_strings(w, sg, "diagnosis", res->n_params, s->diagnosis,
			  "per parameter: -, prior-data conflict, strong prior / weak "
			  "likelihood, ...");
	free(flag);
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

void xf_cmc_sensitivity_report(xf_report *r, const xf_cmc_result *res)
{
	const xf_cmc_sensitivity *s = &res->sensitivity;
	char sens[256] = "", gap[256] = "";
	if (!s->done) {
		xf_report_add(r, XF_REPORT_FIT, "prior sensitivity", "not computed");
		return;
	}
	for (int m = 0; m < res->n_theta && res->theta[m] < res->n_phys; m++) {
		int k = res->theta[m];
		const char *sep = m ? ", " : "";
		if (s->likelihood_measured)
			append(sens, sizeof sens, "%s%s %.3f/%.3f", sep, res->names[k], s->prior[k],
			       s->lik[k]);
		else
			append(sens, sizeof sens, "%s%s %.3f", sep, res->names[k], s->prior[k]);
		append(gap, sizeof gap, "%s%s %+.1f sd", sep, res->names[k], s->gap[k]);
	}
	xf_report_add(r, XF_REPORT_FIT,
		      s->likelihood_measured ? "prior sensitivity (prior/likelihood)"
					     : "prior sensitivity (prior)",
		      "%s (threshold %.2f)", sens, s->threshold);
	xf_report_add(r, XF_REPORT_FIT, "posterior − NLSQ", "%s", gap);
}
