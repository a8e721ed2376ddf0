/* params_json.c — <dir>/parameters.json of an NLSQ run (spec/cli.md): the summary a
 * person or a script reads first and the warm start of `cmc --nlsq`. Carries homodyne's
 * names too (convergence_status, parameters.contrast/offset). Every number is written
 * by hand as raw text: cJSON's own printer stops at 15 digits whenever the value is
 * within an epsilon, which is not round-trip exact; we print the shortest of 15..17
 * significant digits that reads back bitwise, in the C locale, and null for NaN/Inf. */
#include "io/io_internal.h"
#include "xpcsfit/results.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *parameter_entry(double value, double unc, int fixed)
{
	cJSON *p = cJSON_CreateObject();
	cJSON_AddItemToObject(p, "value", xf_json_num(value));
	cJSON_AddItemToObject(p, "uncertainty", xf_json_num(fixed ? NAN : unc));
	if (fixed)
		cJSON_AddTrueToObject(p, "fixed");
	return p;
}

/* homodyne's scalar contrast/offset (io_internal.h) */
static cJSON *angle_summary(const double *v, const double *unc, int n)
{
	double mean, rms;
	xf_io_angle_summary(v, unc, n, &mean, &rms);
	return parameter_entry(mean, rms, 0);
}

static cJSON *parameters_object(const xf_estimate *est)
{
	cJSON *params = cJSON_CreateObject();
	for (int k = 0; k < est->n_phys && k < est->n_params; k++)
		cJSON_AddItemToObject(params, est->names[k],
				      parameter_entry(est->values ? est->values[k] : NAN,
						      est->sd ? est->sd[k] : NAN,
						      est->is_fixed ? est->is_fixed[k] : 0));
	cJSON_AddItemToObject(params, "contrast",
			      angle_summary(est->contrast, est->contrast_sd, est->n_phi));
	cJSON_AddItemToObject(params, "offset",
			      angle_summary(est->offset, est->offset_sd, est->n_phi));
	return params;
}

/* the fitted scaling coefficients themselves (names as in nlsq.h: "contrast",
 * "contrast_003", "contrast_cos1", ...): per_angle holds what they mean per angle */
static cJSON *scaling_object(const xf_estimate *est)
{
	cJSON *obj = cJSON_CreateObject();
	for (int k = est->n_phys; k < est->n_params; k++)
		cJSON_AddItemToObject(obj, est->names[k],
				      parameter_entry(est->values ? est->values[k] : NAN,
						      est->sd ? est->sd[k] : NAN,
						      est->is_fixed ? est->is_fixed[k] : 0));
	return obj;
}

static cJSON *per_angle_object(const xf_estimate *est)
{
	cJSON *pa = cJSON_CreateObject();
	cJSON_AddItemToObject(pa, "phi_deg", xf_json_numbers(est->phi_deg, est->n_phi));
	cJSON_AddItemToObject(pa, "contrast", xf_json_numbers(est->contrast, est->n_phi));
	cJSON_AddItemToObject(pa, "contrast_uncertainty",
			      xf_json_numbers(est->contrast_sd, est->n_phi));
	cJSON_AddItemToObject(pa, "offset", xf_json_numbers(est->offset, est->n_phi));
	cJSON_AddItemToObject(pa, "offset_uncertainty",
			      xf_json_numbers(est->offset_sd, est->n_phi));
	return pa;
}

static cJSON *covariance_object(const xf_estimate *est)
{
	cJSON *cov = cJSON_CreateObject();
	cJSON *names = cJSON_CreateArray();
	cJSON *matrix = cJSON_CreateArray();
	int n = est->n_params;
	for (int k = 0; k < n; k++)
		cJSON_AddItemToArray(names, cJSON_CreateString(est->names[k]));
	for (int r = 0; r < n; r++)
		cJSON_AddItemToArray(
			matrix,
			xf_json_numbers(est->covariance ? est->covariance + (size_t)r * n : NULL,
					n));
	cJSON_AddItemToObject(cov, "names", names);
	cJSON_AddItemToObject(cov, "matrix", matrix);
	return cov;
}

/* what the data identify on a ridge (adr/0047): the combinations with value and sd, the
 * parameters not identified one by one, the fix and the eigenvalue-ratio threshold; null
 * without a ridge */
static cJSON *identified_object(const xf_identified *id)
{
	if (id->n_combos == 0)
		return cJSON_CreateNull();
	cJSON *obj = cJSON_CreateObject();
	cJSON *combos = cJSON_CreateArray();
	for (int k = 0; k < id->n_combos; k++) {
		const xf_identified_combo *c = &id->combo[k];
		cJSON *o = cJSON_CreateObject();
		cJSON *terms = cJSON_CreateObject();
		for (int t = 0; t < c->n_terms; t++)
			cJSON_AddItemToObject(terms, c->names[t], xf_json_num(c->coef[t]));
		cJSON_AddStringToObject(o, "combination", c->text);
		cJSON_AddItemToObject(o, "coefficients", terms);
		cJSON_AddItemToObject(o, "value", xf_json_num(c->value));
		cJSON_AddItemToObject(o, "sd", xf_json_num(c->sd));
		cJSON_AddItemToArray(combos, o);
	}
	cJSON *names = cJSON_CreateArray();
	for (int k = 0; k < id->n_not_identified; k++)
		cJSON_AddItemToArray(names, cJSON_CreateString(id->not_identified[k]));
	cJSON_AddItemToObject(obj, "combinations", combos);
	cJSON_AddItemToObject(obj, "not_identified", names);
	cJSON_AddStringToObject(obj, "fix", id->fix);
	cJSON_AddItemToObject(obj, "eigenvalue_ratio_threshold", xf_json_num(id->ratio_threshold));
	cJSON_AddItemToObject(obj, "smallest_eigenvalue_ratio", xf_json_num(id->min_ratio));
	return obj;
}

/* quality (nlsq.md): the grade, its reasons and the checks behind "converged" */
static cJSON *quality_object(const xf_estimate *est)
{
	const xf_quality *q = &est->quality;
	cJSON *obj = xf_json_quality(q);
	cJSON *checks = cJSON_CreateObject();
	cJSON_AddItemToObject(checks, "distance_to_optimum_se", xf_json_num(q->distance_se));
	cJSON_AddBoolToObject(checks, "all_parameters_informed", q->all_informed);
	cJSON_AddBoolToObject(checks, "best_of_screened_starts", q->best_of_starts);
	cJSON_AddItemToObject(obj, "checks", checks);
	cJSON_AddItemToObject(obj, "identified", identified_object(&q->identified));
	return obj;
}

/* how the optimum was searched for (nlsq.md "Finding the optimum") */
static cJSON *search_object(const xf_estimate *est, const xf_nlsq_appendix *app)
{
	const xf_nlsq_search *s = &app->search;
	cJSON *obj = cJSON_CreateObject();
	cJSON_AddStringToObject(obj, "chosen_start", s->chosen);
	cJSON_AddItemToObject(obj, "starts_screened", xf_json_int(s->n_candidates));
	cJSON_AddItemToObject(obj, "starts_moved_from_flat", xf_json_int(s->n_replaced));
	cJSON_AddItemToObject(obj, "effective_starts", xf_json_int(s->n_effective));
	cJSON_AddItemToObject(obj, "basins", xf_json_int(s->n_basins));
	cJSON_AddItemToObject(obj, "refined_on_all_data", xf_json_int(s->n_refined));
	/* restarts from inside the bounds (adr/0046): rounds run and rounds that won */
	cJSON_AddItemToObject(obj, "bound_restart_rounds", xf_json_int(s->n_bound_restarts));
	cJSON_AddItemToObject(obj, "bound_restarts_improved", xf_json_int(s->n_bound_improved));
	/* other flow-angle basins (adr/0053): profiles, basins refitted, refits that won */
	cJSON_AddItemToObject(obj, "phi0_profiles", xf_json_int(s->n_phi0_profiles));
	cJSON_AddItemToObject(obj, "phi0_basins_tried", xf_json_int(s->n_phi0_tried));
	cJSON_AddItemToObject(obj, "phi0_basins_improved", xf_json_int(s->n_phi0_improved));
	for (int r = 0; r < 2; r++) {
		cJSON *round = cJSON_CreateObject();
		cJSON_AddItemToObject(round, "points", xf_json_int((long long)s->round_points[r]));
		cJSON_AddItemToObject(round, "passes", xf_json_int(s->round_passes[r]));
		cJSON_AddItemToObject(obj, r ? "screening_round2" : "screening_round1", round);
	}
	cJSON_AddItemToObject(obj, "whole_data_pass_equivalents", xf_json_num(s->pass_equivalents));
	cJSON *start = cJSON_CreateObject();
	for (int k = 0; k < est->n_phys && est->names; k++)
		cJSON_AddItemToObject(start, est->names[k], xf_json_num(s->estimate[k]));
	cJSON_AddItemToObject(obj, "estimated_start", start);
	return obj;
}

static cJSON *build(const xf_output_info *info, const xf_dataset *ds, const xf_estimate *est,
		    const xf_nlsq_appendix *app)
{
	cJSON *root = xf_json_result_head(est);
	cJSON_AddItemToObject(root, "chi_squared", xf_json_num(app->chi_squared));
	cJSON_AddItemToObject(root, "reduced_chi_squared", xf_json_num(app->reduced_chi_squared));
	/* the cost chi_squared is: Σ r² for linear, f_scale²·Σρ((r/f_scale)²) otherwise */
	cJSON_AddStringToObject(root, "loss", info->loss ? info->loss : "linear");
	if (!info->loss_linear)
		cJSON_AddItemToObject(root, "f_scale", xf_json_num(info->f_scale));
	int sigma_given = app->sigma_rule == XF_SIGMA_GIVEN;
	if (!sigma_given)
		cJSON_AddItemToObject(root, "residual_sd", xf_json_num(app->residual_sd));
	cJSON_AddItemToObject(root, "n_points", xf_json_int((long long)app->n_points));
	cJSON_AddItemToObject(root, "n_free_parameters", xf_json_int(app->n_free));
	cJSON_AddStringToObject(root, "sigma_rule", xf_sigma_rule_name(app->sigma_rule));
	cJSON_AddItemToObject(root, "sigma", xf_json_num(app->sigma));
	cJSON_AddStringToObject(root, "stop_reason", app->stop_reason ? app->stop_reason : "");
	if (app->device_asked && app->device_asked[0]) { /* --device gpu|auto (adr/0130) */
		cJSON *dev = cJSON_AddObjectToObject(root, "device");
		cJSON_AddStringToObject(dev, "asked", app->device_asked);
		cJSON_AddStringToObject(dev, "decision", app->device_decision);
	}
	cJSON_AddItemToObject(root, "iterations", xf_json_int(app->iterations));
	cJSON_AddItemToObject(root, "quality", quality_object(est));
	cJSON *at = cJSON_CreateArray();
	for (int k = 0; app->at_bounds && k < app->n_at_bounds; k++)
		cJSON_AddItemToArray(at, cJSON_CreateString(app->at_bounds[k]));
	cJSON_AddItemToObject(root, "parameters_at_bounds", at);
	cJSON_AddItemToObject(root, "parameters", parameters_object(est));
	cJSON_AddItemToObject(root, "scaling_parameters", scaling_object(est));
	cJSON_AddItemToObject(root, "parameter_units", xf_json_parameter_units(est));
	cJSON_AddItemToObject(root, "per_angle", per_angle_object(est));
	cJSON_AddStringToObject(root, "per_angle_mode", est->words.scaling);
	cJSON_AddStringToObject(root, "per_angle_mode_config",
				info->per_angle_mode ? info->per_angle_mode : "");
	cJSON_AddItemToObject(root, "overrides", xf_json_overrides(info));
	cJSON_AddItemToObject(root, "covariance", covariance_object(est));
	cJSON_AddItemToObject(root, "covariance_rank", xf_json_int(est->cov_rank));
	cJSON_AddItemToObject(root, "n_starts", xf_json_int(app->n_starts_run));
	cJSON_AddItemToObject(root, "search", search_object(est, app));
	cJSON *timing = cJSON_CreateObject();
	cJSON_AddItemToObject(timing, "load", xf_json_num(app->time_load_s));
	cJSON_AddItemToObject(timing, "fit", xf_json_num(app->time_fit_s));
	cJSON_AddItemToObject(timing, "total", xf_json_num(app->time_total_s));
	cJSON_AddItemToObject(root, "timing_s", timing);
	xf_json_add_timings(root);
	xf_json_add_provenance(root, info, ds);
	cJSON *rings = info->rings_json ? cJSON_Parse(info->rings_json) : NULL;
	if (rings)
		cJSON_AddItemToObject(root, "rings", rings);
	return root;
}

int xf_io_write_nlsq_json(const char *dir, const xf_output_info *info, const xf_dataset *ds,
			  const xf_estimate *est, const xf_nlsq_appendix *app, xf_error *err)
{
	return xf_json_write(dir, "parameters.json", build(info, ds, est, app), err);
}
