/* cmc_json.c — <dir>/parameters.json of a CMC run (spec/cli.md, the cmc schema): the
 * posterior summaries of every parameter, per-angle contrast and offset, the shards
 * (planned, kept, excluded with reasons) and their diagnostics, the consensus check,
 * the quality. homodyne's names are kept (convergence_status, parameters.contrast and
 * .offset as means over angles). */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/cmc_posterior_out.h"
#include "io/cmc_sensitivity_out.h"
#include "io/io_internal.h"
#include "xpcsfit/results.h"

/* v, or NaN (null) when there is no combined posterior: summaries of zero draws are not
 * numbers, whatever the summarizing code left in them. */
static double drawn(const xf_estimate *est, double v)
{
	return est->n_draws > 0 ? v : NAN;
}

static cJSON *drawn_numbers(const xf_estimate *est, const double *v, int n)
{
	if (est->n_draws > 0)
		return xf_json_numbers(v, n);
	cJSON *arr = cJSON_CreateArray();
	for (int k = 0; k < n; k++)
		cJSON_AddItemToArray(arr, cJSON_CreateNull());
	return arr;
}

/* One parameter's summary: "value"/"uncertainty" are the names NLSQ's parameters.json
 * uses (adr/0062: the posterior mean and sd), "mean"/"std" the same numbers under the
 * names earlier versions wrote, then the median and the 5 %/95 % quantiles. */
static cJSON *summary_entry(const xf_estimate *est, int k, const double *mean, const double *sd,
			    const double *median, const double *q05, const double *q95)
{
	cJSON *p = cJSON_CreateObject();
	if (est->is_fixed[k]) {
		cJSON_AddItemToObject(p, "value", xf_json_num(est->n_draws ? est->draws[k] : NAN));
		cJSON_AddNullToObject(p, "uncertainty");
		cJSON_AddTrueToObject(p, "fixed");
		return p;
	}
	cJSON_AddItemToObject(p, "value", xf_json_num(drawn(est, mean[k])));
	cJSON_AddItemToObject(p, "uncertainty", xf_json_num(drawn(est, sd[k])));
	cJSON_AddItemToObject(p, "mean", xf_json_num(drawn(est, mean[k])));
	cJSON_AddItemToObject(p, "std", xf_json_num(drawn(est, sd[k])));
	cJSON_AddItemToObject(p, "median", xf_json_num(drawn(est, median[k])));
	cJSON_AddItemToObject(p, "q05", xf_json_num(drawn(est, q05[k])));
	cJSON_AddItemToObject(p, "q95", xf_json_num(drawn(est, q95[k])));
	return p;
}

/* homodyne's scalar contrast/offset: the mean over angles, sd = RMS of the angles' sds
 * (value/uncertainty, and mean/std as for every parameter) */
static cJSON *angle_mean(const xf_estimate *est, const double *v, const double *sd, int n)
{
	double m, s;
	xf_io_cmc_angle_mean(v, sd, n, &m, &s);
	cJSON *p = cJSON_CreateObject();
	cJSON_AddItemToObject(p, "value", xf_json_num(drawn(est, m)));
	cJSON_AddItemToObject(p, "uncertainty", xf_json_num(drawn(est, s)));
	cJSON_AddItemToObject(p, "mean", xf_json_num(drawn(est, m)));
	cJSON_AddItemToObject(p, "std", xf_json_num(drawn(est, s)));
	return p;
}

static cJSON *parameters_object(const xf_estimate *est, const xf_cmc_appendix *app,
				int physical_only, int plain)
{
	const xf_cmc_check *c = app->check;
	cJSON *obj = cJSON_CreateObject();
	int k0 = physical_only ? 0 : est->n_phys, k1 = physical_only ? est->n_phys : est->n_params;
	for (int k = k0; k < k1; k++)
		cJSON_AddItemToObject(
			obj, est->names[k],
			plain ? summary_entry(est, k, c->mean, c->sd, c->median, c->q05, c->q95)
			      : summary_entry(est, k, est->values, est->sd, est->median, est->q05,
					      est->q95));
	if (physical_only && !plain) {
		cJSON_AddItemToObject(obj, "contrast",
				      angle_mean(est, est->contrast, est->contrast_sd, est->n_phi));
		cJSON_AddItemToObject(obj, "offset",
				      angle_mean(est, est->offset, est->offset_sd, est->n_phi));
	}
	return obj;
}

static cJSON *per_angle_object(const xf_estimate *est)
{
	cJSON *pa = cJSON_CreateObject();
	cJSON_AddItemToObject(pa, "phi_deg", xf_json_numbers(est->phi_deg, est->n_phi));
	/* *_uncertainty as NLSQ names them; *_std the same numbers (earlier versions) */
	cJSON_AddItemToObject(pa, "contrast", drawn_numbers(est, est->contrast, est->n_phi));
	cJSON_AddItemToObject(pa, "contrast_uncertainty",
			      drawn_numbers(est, est->contrast_sd, est->n_phi));
	cJSON_AddItemToObject(pa, "contrast_std", drawn_numbers(est, est->contrast_sd, est->n_phi));
	cJSON_AddItemToObject(pa, "offset", drawn_numbers(est, est->offset, est->n_phi));
	cJSON_AddItemToObject(pa, "offset_uncertainty",
			      drawn_numbers(est, est->offset_sd, est->n_phi));
	cJSON_AddItemToObject(pa, "offset_std", drawn_numbers(est, est->offset_sd, est->n_phi));
	return pa;
}

static cJSON *shard_entry(const xf_estimate *est, const xf_cmc_appendix *app, const xf_cmc_shard *s)
{
	cJSON *e = cJSON_CreateObject();
	cJSON_AddItemToObject(e, "id", xf_json_int(s->id));
	cJSON_AddItemToObject(e, "n_points", xf_json_int((long long)s->n_points));
	cJSON_AddBoolToObject(e, "kept", s->kept);
	if (s->reason[0])
		cJSON_AddStringToObject(e, "reason", s->reason);
	if (s->failed)
		return e;
	cJSON_AddItemToObject(e, "rhat_max", xf_json_num(s->rhat_max));
	cJSON_AddItemToObject(e, "ess_bulk_min", xf_json_num(s->ess_bulk_min));
	cJSON_AddItemToObject(e, "ess_tail_min", xf_json_num(s->ess_tail_min));
	cJSON_AddItemToObject(e, "divergences", xf_json_int(s->divergences));
	cJSON_AddItemToObject(e, "divergence_rate", xf_json_num(s->divergence_rate));
	cJSON_AddItemToObject(e, "max_depth_fraction", xf_json_num(s->depth_saturation));
	cJSON_AddItemToObject(e, "ebfmi_min", xf_json_num(s->ebfmi_min));
	cJSON_AddItemToObject(e, "step_size", xf_json_num(s->step_size_mean));
	cJSON_AddItemToObject(e, "gradient_evaluations", xf_json_int(s->grad_evals));
	cJSON_AddItemToObject(e, "sigma_mean", xf_json_num(s->sigma_mean));
	cJSON_AddItemToObject(e, "sigma_sd", xf_json_num(s->sigma_sd));
	cJSON_AddItemToObject(e, "sigma_prior_scale", xf_json_num(s->sigma_scale));
	cJSON_AddItemToObject(e, "noise", xf_json_num(s->noise));
	cJSON *ess = cJSON_CreateObject(), *rhat = cJSON_CreateObject(),
	      *mean = cJSON_CreateObject();
	cJSON *skew = cJSON_CreateObject();
	for (int m = 0; m <= app->n_theta; m++) {
		const char *name = m < app->n_theta ? est->names[app->theta[m]] : "sigma";
		cJSON_AddItemToObject(ess, name, xf_json_num(s->ess_bulk[m]));
		cJSON_AddItemToObject(rhat, name, xf_json_num(s->rhat[m]));
		if (m < app->n_theta) {
			cJSON_AddItemToObject(mean, name, xf_json_num(s->mean[m]));
			cJSON_AddItemToObject(skew, name, xf_json_num(s->skew[m]));
		}
	}
	cJSON_AddItemToObject(e, "ess_bulk", ess);
	cJSON_AddItemToObject(e, "rhat", rhat);
	cJSON_AddItemToObject(e, "mean", mean);
	cJSON_AddItemToObject(e, "skewness_u", skew);
	return e;
}

static cJSON *shards_object(const xf_cmc_appendix *app)
{
	cJSON *obj = cJSON_CreateObject(), *excluded = cJSON_CreateArray();
	double rhat = 0.0, ess_bulk = INFINITY, ess_tail = INFINITY, div = 0.0;
	long n_ok = 0, n_div = 0;
	for (long s = 0; s < app->n_shards; s++) {
		const xf_cmc_shard *sh = &app->shards[s];
		if (!sh->kept) {
			cJSON *e = cJSON_CreateObject();
			cJSON_AddItemToObject(e, "id", xf_json_int(s));
			cJSON_AddStringToObject(e, "reason", sh->reason);
			cJSON_AddItemToArray(excluded, e);
		}
		if (sh->failed)
			continue;
		rhat = fmax(rhat, sh->rhat_max);
		ess_bulk = fmin(ess_bulk, sh->ess_bulk_min);
		ess_tail = fmin(ess_tail, sh->ess_tail_min);
		div += sh->divergence_rate;
		n_div += sh->divergences;
		n_ok++;
	}
	cJSON_AddItemToObject(obj, "planned", xf_json_int(app->n_shards));
	cJSON_AddItemToObject(obj, "kept", xf_json_int(app->n_kept));
	cJSON_AddItemToObject(obj, "kept_fraction",
			      xf_json_num((double)app->n_kept / (double)app->n_shards));
	cJSON_AddItemToObject(obj, "excluded", excluded);
	cJSON_AddItemToObject(obj, "max_rhat", xf_json_num(n_ok ? rhat : NAN));
	cJSON_AddItemToObject(obj, "min_ess_bulk", xf_json_num(n_ok ? ess_bulk : NAN));
	cJSON_AddItemToObject(obj, "min_ess_tail", xf_json_num(n_ok ? ess_tail : NAN));
	cJSON_AddItemToObject(obj, "mean_divergence_rate", xf_json_num(n_ok ? div / n_ok : NAN));
	cJSON_AddItemToObject(obj, "divergences", xf_json_int(n_div));
	return obj;
}

/* The self-check (docs/cmc.md, adr/0039): the three checks with their numbers, what was
 * published, and the plain consensus summaries when the corrected ones replaced them. */
/* A check against the exact posterior: the consensus self-check (consensus, with the
 * plain consensus summaries) or the importance route's (adr/0045). */
static cJSON *check_object_of(const xf_estimate *est, const xf_cmc_appendix *app,
			      const xf_cmc_check *c, int consensus)
{
	if (!c->done)
		return cJSON_CreateNull();
	cJSON *obj = cJSON_CreateObject();
	cJSON_AddItemToObject(obj, "khat", xf_json_num(c->khat));
	cJSON_AddItemToObject(obj, "M", xf_json_int(c->m));
	cJSON_AddItemToObject(obj, "M_first", xf_json_int(c->m_first));
	cJSON_AddBoolToObject(obj, "M_stable", c->stable);
	cJSON_AddItemToObject(obj, "seed", xf_json_u64(c->seed));
	cJSON_AddItemToObject(obj, "is_ess", xf_json_num(c->ess));
	cJSON_AddItemToObject(obj, "is_ess_per_M", xf_json_num(c->m ? c->ess / c->m : NAN));
	cJSON_AddItemToObject(obj, "is_ess_per_M_gaussian", xf_json_num(c->ess_ref));
	cJSON *axis = cJSON_CreateObject();
	cJSON_AddItemToObject(axis, "max_deviation", xf_json_num(c->axis_dev));
	cJSON_AddItemToObject(axis, "drop", xf_json_num(c->axis_drop));
	cJSON_AddItemToObject(axis, "axis", xf_json_int(c->axis));
	cJSON_AddItemToObject(axis, "drop_plus", xf_json_num(c->axis_drop_plus));
	cJSON_AddItemToObject(axis, "drop_minus", xf_json_num(c->axis_drop_minus));
	if (c->axis_param >= 0 && c->axis_param < app->n_theta)
		cJSON_AddStringToObject(axis, "largest_loading",
					est->names[app->theta[c->axis_param]]);
	else
		cJSON_AddNullToObject(axis, "largest_loading");
	if (c->tail_axis >= 0) { /* the route's tail probe (adr/0085), part of this gate */
		cJSON *tail = cJSON_CreateObject();
		cJSON_AddItemToObject(tail, "excess", xf_json_num(c->tail_excess));
		cJSON_AddItemToObject(tail, "axis", xf_json_int(c->tail_axis));
		cJSON_AddItemToObject(tail, "z", xf_json_num(c->tail_z));
		cJSON_AddItemToObject(axis, "tail_probe", tail);
	} else {
		cJSON_AddNullToObject(axis, "tail_probe");
	}
	cJSON_AddItemToObject(obj, "axis_check", axis);
	cJSON *passed = cJSON_CreateObject();
	cJSON_AddBoolToObject(passed, "khat", c->pass_khat);
	cJSON_AddBoolToObject(passed, "is_ess", c->pass_ess);
	cJSON_AddBoolToObject(passed, "axis", c->pass_axis);
	cJSON_AddItemToObject(obj, "passed", passed);
	cJSON *prop = cJSON_CreateObject();
	cJSON_AddStringToObject(prop, "family",
				c->core > 0.0 ? "mixture_gaussian_multivariate_t"
					      : "multivariate_t");
	if (c->core > 0.0)
		cJSON_AddItemToObject(prop, "gaussian_weight", xf_json_num(c->core));
	cJSON_AddItemToObject(prop, "nu", xf_json_int(c->nu));
	cJSON_AddItemToObject(prop, "scale", xf_json_num(c->scale));
	if (!consensus) { /* adr/0081 */
		cJSON_AddItemToObject(prop, "map_dim", xf_json_int(c->map_dim));
		cJSON_AddItemToObject(prop, "scaling_conditional",
				      xf_json_int(c->scaling_conditional));
		cJSON_AddItemToObject(prop, "power_law_coords", /* adr/0082 */
				      xf_json_int(c->power_law_coords));
	}
	cJSON_AddItemToObject(obj, "proposal", prop);
	cJSON_AddBoolToObject(obj, "corrected", c->corrected);
	cJSON_AddStringToObject(obj, "published",
				c->corrected ? "importance_weighted" : "consensus");
	if (c->corrected)
		cJSON_AddNullToObject(obj, "verdict");
	else
		cJSON_AddStringToObject(obj, "verdict", c->verdict);
	if (!consensus) {
		cJSON_AddItemToObject(obj, "rounds", xf_json_int(c->rounds));
		cJSON_AddItemToObject(obj, "prior_start_round", xf_json_int(c->prior_start));
		if (c->ridge_param >= 0 && c->ridge_param < app->n_theta) /* adr/0099 */
			cJSON_AddStringToObject(obj, "ridge_param",
						est->names[app->theta[c->ridge_param]]);
		else
			cJSON_AddNullToObject(obj, "ridge_param");
		cJSON_AddItemToObject(obj, "min_ess", xf_json_num(c->min_ess));
		cJSON_AddItemToObject(obj, "coordinate_ess_min", xf_json_num(c->ess_coord_min));
		cJSON_AddStringToObject(obj, "coordinate_ess_min_of",
					c->ess_coord >= 0 && c->ess_coord < app->n_theta
						? est->names[app->theta[c->ess_coord]]
						: "sigma");
		return obj;
	}
	cJSON_AddItemToObject(obj, "sigma", xf_json_num(c->sigma));
	cJSON_AddItemToObject(obj, "consensus_summaries",
			      c->corrected ? parameters_object(est, app, 1, 1)
					   : cJSON_CreateNull());
	return obj;
}

static cJSON *check_object(const xf_estimate *est, const xf_cmc_appendix *app)
{
	return check_object_of(est, app, app->check, 1);
}

/* How the posterior was reached (adr/0045): the route, why NUTS when the importance
 * check failed, that check's numbers and σ's posterior (importance); each stage's time
 * is in timing_s. */
static cJSON *route_object(const xf_estimate *est, const xf_cmc_appendix *app)
{
	cJSON *obj = cJSON_CreateObject();
	cJSON_AddStringToObject(obj, "route", est->words.route->name);
	cJSON_AddStringToObject(obj, "description", app->route_text);
	if (app->route_note[0])
		cJSON_AddStringToObject(obj, "note", app->route_note);
	else
		cJSON_AddNullToObject(obj, "note");
	if (app->device && app->device->asked[0]) { /* --device gpu|auto (adr/0130) */
		cJSON *dev = cJSON_CreateObject();
		cJSON_AddStringToObject(dev, "asked", app->device->asked);
		cJSON *lines = cJSON_AddArrayToObject(dev, "decisions");
		for (int k = 0; k < app->device->n_lines; k++)
			cJSON_AddItemToArray(lines, cJSON_CreateString(app->device->lines[k]));
		cJSON_AddItemToObject(obj, "device", dev);
	}
	cJSON_AddItemToObject(obj, "importance_check", check_object_of(est, app, app->approx, 0));
	if (est->words.route->from_importance_points) {
		cJSON *sg = cJSON_CreateObject();
		cJSON_AddItemToObject(sg, "value", xf_json_num(app->sigma_mean));
		cJSON_AddItemToObject(sg, "uncertainty", xf_json_num(app->sigma_sd));
		cJSON_AddItemToObject(sg, "mean", xf_json_num(app->sigma_mean));
		cJSON_AddItemToObject(sg, "std", xf_json_num(app->sigma_sd));
		cJSON_AddItemToObject(obj, "sigma", sg);
	}
	return obj;
}

static cJSON *build(const xf_output_info *info, const xf_dataset *ds, const xf_estimate *est,
		    const xf_cmc_appendix *app)
{
	cJSON *root = xf_json_result_head(est);
	cJSON_AddItemToObject(root, "quality", xf_json_quality(&est->quality));
	cJSON_AddItemToObject(root, "parameters", parameters_object(est, app, 1, 0));
	cJSON_AddItemToObject(root, "scaling_parameters", parameters_object(est, app, 0, 0));
	cJSON_AddItemToObject(root, "parameter_units", xf_json_parameter_units(est));
	cJSON_AddItemToObject(root, "per_angle", per_angle_object(est));
	cJSON_AddStringToObject(root, "per_angle_mode", est->words.scaling);
	cJSON_AddItemToObject(root, "overrides", xf_json_overrides(info));
	cJSON *comb = cJSON_CreateObject();
	cJSON_AddStringToObject(comb, "method", xf_combination_rule_name(app->combination));
	cJSON_AddItemToObject(comb, "prior_exponent", xf_json_num(app->temper));
	cJSON_AddItemToObject(comb, "n_draws", xf_json_int(est->n_draws));
	cJSON_AddItemToObject(root, "combination", comb);
	cJSON_AddItemToObject(root, "shards", shards_object(app));
	cJSON_AddItemToObject(root, "posterior_route", route_object(est, app));
	cJSON_AddItemToObject(root, "consensus_check", check_object(est, app));
	cJSON_AddItemToObject(root, "prior_sensitivity", xf_cmc_sensitivity_json(est, app));
	cJSON_AddItemToObject(root, "prior_vs_nlsq", xf_cmc_prior_vs_nlsq_json(est, app));
	cJSON_AddItemToObject(root, "beyond_draws", xf_cmc_beyond_json(est, app));
	cJSON_AddItemToObject(root, "posterior_diagnostics", xf_cmc_posterior_diag_json(est, app));
	cJSON *sh = cJSON_CreateArray();
	for (long s = 0; s < app->n_shards; s++)
		cJSON_AddItemToArray(sh, shard_entry(est, app, &app->shards[s]));
	cJSON_AddItemToObject(root, "shard_diagnostics", sh);
	cJSON *sampler = cJSON_CreateObject();
	cJSON_AddItemToObject(sampler, "chains", xf_json_int(app->n_chains));
	cJSON_AddItemToObject(sampler, "warmup", xf_json_int(app->n_warmup));
	cJSON_AddItemToObject(sampler, "samples", xf_json_int(app->n_samples));
	cJSON_AddItemToObject(sampler, "max_tree_depth", xf_json_int(info->max_tree_depth));
	cJSON_AddItemToObject(sampler, "target_accept_prob", xf_json_num(app->target_accept));
	cJSON_AddBoolToObject(sampler, "dense_mass", info->dense_mass);
	cJSON_AddItemToObject(sampler, "seed", xf_json_u64(app->seed));
	cJSON_AddItemToObject(sampler, "gradient_evaluations", xf_json_int(app->grad_evals));
	cJSON_AddBoolToObject(sampler, "nlsq_informed_priors", info->nlsq_informed_priors);
	cJSON_AddItemToObject(root, "sampler", sampler);
	cJSON *timing = cJSON_CreateObject();
	cJSON_AddItemToObject(timing, "importance_route", xf_json_num(app->time_approx_s));
	cJSON_AddItemToObject(timing, "nuts", xf_json_num(app->time_nuts_s));
	cJSON_AddItemToObject(timing, "sampling", xf_json_num(app->time_sampling_s));
	cJSON_AddItemToObject(timing, "combine", xf_json_num(app->time_combine_s));
	cJSON_AddItemToObject(timing, "beyond_draws", xf_json_num(app->beyond->wall_s));
	cJSON_AddItemToObject(timing, "total", xf_json_num(app->time_total_s));
	cJSON_AddItemToObject(root, "timing_s", timing);
	xf_json_add_timings(root);
	xf_json_add_provenance(root, info, ds);
	cJSON *rings = info->rings_json ? cJSON_Parse(info->rings_json) : NULL;
	if (rings) /* a joint posterior over q rings (adr/0066) */
		cJSON_AddItemToObject(root, "rings", rings);
	return root;
}

int xf_io_write_cmc_json(const char *dir, const xf_output_info *info, const xf_dataset *ds,
			 const xf_estimate *est, const xf_cmc_appendix *app, xf_error *err)
{
	return xf_json_write(dir, "parameters.json", build(info, ds, est, app), err);
}
