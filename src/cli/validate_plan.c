/* validate_plan.c — the part of `xpcsfit validate` that says what will be fitted (issue
 * 25, docs/cli.md "validate"): the per-angle mode NLSQ will use on these angles and the
 * one CMC will sample, σ, and every parameter of the fit — free or fixed, its start and
 * where it comes from, its bounds, CMC's prior (a normal truncated to the bounds) and its
 * unit. The numbers are those of the problem the fit builds (xf_problem_build on the same
 * request and data), so validate cannot describe another fit than nlsq runs. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "cli/request_build.h"
#include "util/numfmt.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/params.h"

/* where parameter k's start comes from: the config, the data (NLSQ estimates the
 * physical ones and screens starts around the estimate, docs/nlsq.md; the per-angle
 * coefficients start at quantile estimates), or 0 (a Fourier harmonic) */
static const char *start_source(const xf_config *cfg, const xf_problem *pr, int k)
{
	if (k < pr->n_phys)
		return pr->value_given[k] || pr->fixed[k] ? "config" : "data";
	const char *name = pr->names[k];
	if (pr->scaling->mode == XF_SCALING_FOURIER && !strstr(name, "_c0"))
		return "zero";
	int given = !strncmp(name, "contrast", 8) ? cfg->n_contrast_start : cfg->n_offset_start;
	return given ? "config" : "data";
}

/* the start shown: none for a physical start the fit estimates from the data */
static double start_value(const xf_config *cfg, const xf_problem *pr, int k)
{
	return strcmp(start_source(cfg, pr, k), "data") || k >= pr->n_phys ? pr->start[k] : NAN;
}

/* the per-angle mode CMC samples: the config's, or NLSQ's (fourier as individual) */
static const char *cmc_mode(const xf_config *cfg, const xf_problem *pr)
{
	xf_request nlsq, post;
	xf_request_from_config(cfg, &nlsq);
	xf_request_for_posterior(&nlsq, cfg->cmc.per_angle_mode, pr->scaling->mode, &post);
	return xf_scaling_mode_used_name(post.per_angle_mode);
}

static void num(double x, char *buf, size_t size)
{
	if (isfinite(x))
		xf_num_value(x, NAN, buf, size);
	else
		snprintf(buf, size, "-");
}

static void print_param(const xf_config *cfg, const xf_problem *pr, int k)
{
	char start[XF_NUM_TEXT], lo[XF_NUM_TEXT], hi[XF_NUM_TEXT], mu[XF_NUM_TEXT], sd[XF_NUM_TEXT];
	num(start_value(cfg, pr, k), start, sizeof start);
	num(pr->lower[k], lo, sizeof lo);
	num(pr->upper[k], hi, sizeof hi);
	num(pr->fixed[k] ? NAN : pr->prior_mu[k], mu, sizeof mu);
	num(pr->fixed[k] ? NAN : pr->prior_sigma[k], sd, sizeof sd);
	printf("  %-20s %-6s %-10s %-7s %-10s %-10s %-10s %-10s %s\n", pr->names[k],
	       pr->fixed[k] ? "fixed" : "free", start, start_source(cfg, pr, k), lo, hi, mu, sd,
	       xf_param_unit(pr->names[k]));
}

static int count_free(const xf_problem *pr)
{
	int n = 0;
	for (int k = 0; k < pr->n_full; k++)
		n += !pr->fixed[k];
	return n;
}

void xf_validate_plan_lines(const xf_config *cfg, const xf_problem *pr)
{
	char sigma[XF_NUM_TEXT];
	printf("per_angle_mode: %s (config: %s)\n", xf_scaling_mode_used_name(pr->scaling->mode),
	       xf_scaling_mode_name(cfg->nlsq.per_angle_mode));
	printf("per_angle_mode_cmc: %s (config: %s)\n", cmc_mode(cfg, pr),
	       xf_scaling_mode_name(cfg->cmc.per_angle_mode));
	xf_num_value(pr->sigma, NAN, sigma, sizeof sigma);
	printf("sigma: %s\n",
	       pr->has_sigma ? sigma : "not given (NLSQ: from the residuals; CMC: sampled)");
	printf("parameters: %d free of %d (%d physical, %d per-angle coefficients)\n",
	       count_free(pr), pr->n_full, pr->n_phys, pr->n_full - pr->n_phys);
	printf("  %-20s %-6s %-10s %-7s %-10s %-10s %-10s %-10s %s\n", "name", "status", "start",
	       "from", "lower", "upper", "prior_mu", "prior_sd", "unit");
	for (int k = 0; k < pr->n_full; k++)
		print_param(cfg, pr, k);
	if (cfg->cmc.use_nlsq_informed_priors)
		printf("priors: CMC centres them on the NLSQ result "
		       "(validation.use_nlsq_informed_priors)\n");
}

static cJSON *param_json(const xf_config *cfg, const xf_problem *pr, int k)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "name", pr->names[k]);
	cJSON_AddBoolToObject(p, "fixed", pr->fixed[k]);
	double start = start_value(cfg, pr, k);
	if (isfinite(start))
		cJSON_AddNumberToObject(p, "start", start);
	else
		cJSON_AddNullToObject(p, "start");
	cJSON_AddStringToObject(p, "start_source", start_source(cfg, pr, k));
	cJSON_AddNumberToObject(p, "lower", pr->lower[k]);
	cJSON_AddNumberToObject(p, "upper", pr->upper[k]);
	cJSON_AddNumberToObject(p, "prior_mu", pr->prior_mu[k]);
	cJSON_AddNumberToObject(p, "prior_sigma", pr->prior_sigma[k]);
	cJSON_AddStringToObject(p, "unit", xf_param_unit(pr->names[k]));
	return p;
}

void xf_validate_plan_json(cJSON *o, const xf_config *cfg, const xf_problem *pr)
{
	cJSON_AddStringToObject(o, "per_angle_mode", xf_scaling_mode_used_name(pr->scaling->mode));
	cJSON_AddStringToObject(o, "per_angle_mode_config",
				xf_scaling_mode_name(cfg->nlsq.per_angle_mode));
	cJSON_AddStringToObject(o, "per_angle_mode_cmc", cmc_mode(cfg, pr));
	if (pr->has_sigma)
		cJSON_AddNumberToObject(o, "sigma", pr->sigma);
	else
		cJSON_AddNullToObject(o, "sigma");
	cJSON *arr = cJSON_CreateArray();
	for (int k = 0; k < pr->n_full; k++)
		cJSON_AddItemToArray(arr, param_json(cfg, pr, k));
	cJSON_AddItemToObject(o, "parameters", arr);
	cJSON_AddBoolToObject(o, "nlsq_informed_priors", cfg->cmc.use_nlsq_informed_priors);
}
