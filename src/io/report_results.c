/* report_results.c — what report.html shows of an NLSQ and of a CMC result: the rows of
 * parameters.json "parameters" (the same numbers, written to the precision their
 * uncertainty supports) with their units, the fitted scaling coefficients, the fit
 * numbers, config and timing (report_html.h). */
#include "io/cmc_sensitivity_out.h"
#include "io/io_internal.h"
#include "io/report_html.h"
#include "xpcsfit/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* room for the n_params parameters of a result and the scalar contrast/offset rows */
static xf_report_param *alloc_params(int n_params, xf_error *err)
{
	xf_report_param *p = n_params >= 0 ? calloc((size_t)n_params + 2, sizeof *p) : NULL;
	if (!p)
		xf_fail(err, XF_ERR_NOMEM, "out of memory building the report");
	return p;
}

/* the per-angle mode used and the one the config asked for ("auto", null: NLSQ's) */
static void add_config(xf_report *r, xf_mode mode, xf_scaling_mode used, const char *asked)
{
	xf_report_add(r, XF_REPORT_CONFIG, "mode", "%s", xf_mode_name(mode));
	xf_report_add(r, XF_REPORT_CONFIG, "per-angle mode", "%s (config: %s)",
		      xf_scaling_mode_used_name(used), asked ? asked : "");
}

/* The unit of a row and what it stands for beside its numbers: every column of the
 * table has a head (issue 25: the last one had none). */
static void label_row(xf_report_param *p)
{
	p->unit = xf_param_unit(p->name);
	if (p->fixed)
		snprintf(p->note, sizeof p->note, "fixed");
}

/* The scalar contrast or offset row (parameters.json "parameters"): over several angles
 * it is the mean of the per-angle values, with the RMS of their uncertainties. */
static void summary_row(xf_report_param *p, const char *name, xf_scaling_mode mode, int n_phi)
{
	p->name = name;
	label_row(p);
	if (n_phi <= 1)
		return;
	if (mode == XF_SCALING_AUTO)
		snprintf(p->note, sizeof p->note, "one value for all %d angles", n_phi);
	else if (mode == XF_SCALING_CONSTANT)
		snprintf(p->note, sizeof p->note, "held at the starts; mean over %d angles", n_phi);
	else
		snprintf(p->note, sizeof p->note, "mean over %d angles", n_phi);
}

static xf_report_param nlsq_param(const xf_estimate *est, int k)
{
	xf_report_param p = { .name = est->names[k],
			      .value = est->values ? est->values[k] : NAN,
			      .unc = est->sd ? est->sd[k] : NAN,
			      .fixed = est->is_fixed ? est->is_fixed[k] : 0 };
	label_row(&p);
	return p;
}

/* The fitted scaling coefficients below the scalar rows, unless there is one contrast
 * and one offset coefficient (auto's shared pair, or one angle): then the scalar rows
 * are those coefficients and a second pair of rows would repeat them (issue 25). */
static int add_coefficients(const xf_estimate *est, const double *slot_q, xf_report_param *p, int n)
{
	int n_basis = (est->n_params - est->n_phys) / 2;
	if (n_basis <= 1)
		return n;
	for (int k = est->n_phys; k < est->n_params; k++) {
		int j = (k - est->n_phys) % n_basis;
		p[n] = nlsq_param(est, k);
		if (est->scaling_mode == XF_SCALING_INDIVIDUAL && est->phi_deg && j < est->n_phi &&
		    !p[n].fixed) {
			if (slot_q) { /* a joint fit: several rings' angles, which ring? */
				int ring = 1;
				for (int a = 1; a <= j; a++)
					ring += slot_q[a] != slot_q[a - 1];
				snprintf(p[n].note, sizeof p[n].note,
					 "ring %d (q = %.4g Å⁻¹), angle φ = %.2f°", ring, slot_q[j],
					 est->phi_deg[j]);
			} else {
				snprintf(p[n].note, sizeof p[n].note, "angle φ = %.2f°",
					 est->phi_deg[j]);
			}
		}
		n++;
	}
	return n;
}

int xf_report_html_nlsq(const char *dir, const xf_output_info *info, const xf_dataset *ds,
			const xf_estimate *est, const xf_nlsq_appendix *app, const double *slot_q,
			int with_plots, xf_error *err)
{
	xf_report_param *p = alloc_params(est->n_params, err);
	if (!p)
		return err->code;
	int n = 0;
	for (int k = 0; k < est->n_phys && k < est->n_params; k++)
		p[n++] = nlsq_param(est, k);
	xf_io_angle_summary(est->contrast, est->contrast_sd, est->n_phi, &p[n].value, &p[n].unc);
	summary_row(&p[n++], "contrast", est->scaling_mode, est->n_phi);
	xf_io_angle_summary(est->offset, est->offset_sd, est->n_phi, &p[n].value, &p[n].unc);
	summary_row(&p[n++], "offset", est->scaling_mode, est->n_phi);
	n = add_coefficients(est, slot_q, p, n);
	xf_report r = { .method = XF_METHOD_NLSQ,
			.status = est->status,
			.quality = &est->quality,
			.value_head = "value",
			.unc_head = "uncertainty (1 sd)",
			.n_params = n,
			.params = p };
	int sigma_given = app->sigma_rule == XF_SIGMA_GIVEN;
	xf_report_add(&r, XF_REPORT_FIT, "stop reason", "%s",
		      app->stop_reason ? app->stop_reason : "-");
	xf_report_add(&r, XF_REPORT_FIT, "iterations", "%d", app->iterations);
	xf_report_add(&r, XF_REPORT_FIT, "chi-squared", "%.6g", app->chi_squared);
	if (sigma_given)
		xf_report_add(&r, XF_REPORT_FIT, "reduced chi-squared", "%.6g",
			      app->reduced_chi_squared);
	else
		xf_report_add(&r, XF_REPORT_FIT, "residual sd", "%.6g (sigma not given)",
			      app->residual_sd);
	xf_report_add(&r, XF_REPORT_FIT, "points, free parameters", "%zu, %d", app->n_points,
		      app->n_free);
	for (int k = 0; app->at_bounds && k < app->n_at_bounds; k++)
		xf_report_add(&r, XF_REPORT_FIT, "at a bound", "%s", app->at_bounds[k]);
	add_config(&r, est->grid.mode, est->scaling_mode, info->per_angle_mode);
	if (!info->loss_linear)
		xf_report_add(&r, XF_REPORT_CONFIG, "loss", "%s, f_scale %.6g",
			      info->loss ? info->loss : "", info->f_scale);
	xf_report_add(&r, XF_REPORT_TIMING, "load", "%.3f s", app->time_load_s);
	xf_report_add(&r, XF_REPORT_TIMING, "fit", "%.3f s", app->time_fit_s);
	xf_report_add(&r, XF_REPORT_TIMING, "total", "%.3f s", app->time_total_s);
	int rc = xf_report_html_write(dir, &r, info, ds, with_plots, err);
	free(p);
	return rc;
}

int xf_report_html_cmc(const char *dir, const xf_output_info *info, const xf_dataset *ds,
		       const xf_estimate *est, const xf_cmc_appendix *app, int with_plots,
		       xf_error *err)
{
	xf_report_param *p = alloc_params(est->n_phys, err);
	if (!p)
		return err->code;
	int drawn = est->n_draws > 0, n = 0;
	for (int k = 0; k < est->n_phys && k < est->n_params; k++) {
		int fixed = est->is_fixed[k];
		p[n] = (xf_report_param){ .name = est->names[k],
					  .value = !drawn  ? NAN
						   : fixed ? est->draws[k]
							   : est->values[k],
					  .unc = drawn ? est->sd_table[k] : NAN,
					  .fixed = fixed,
					  .has_interval = drawn,
					  .lo = drawn ? est->q05[k] : NAN,
					  .hi = drawn ? est->q95[k] : NAN };
		label_row(&p[n++]);
	}
	xf_io_cmc_angle_mean(est->contrast, est->contrast_sd, est->n_phi, &p[n].value, &p[n].unc);
	summary_row(&p[n++], "contrast", est->scaling_mode, est->n_phi);
	xf_io_cmc_angle_mean(est->offset, est->offset_sd, est->n_phi, &p[n].value, &p[n].unc);
	summary_row(&p[n++], "offset", est->scaling_mode, est->n_phi);
	for (int k = n - 2; !drawn && k < n; k++)
		p[k].value = p[k].unc = NAN;
	xf_report r = { .method = XF_METHOD_CMC,
			.status = est->status,
			.quality = &est->quality,
			.value_head = "posterior mean",
			.unc_head = "posterior sd",
			.interval_head = "5–95 % interval",
			.n_params = n,
			.params = p };
	xf_report_add(&r, XF_REPORT_FIT, "route", "%s", app->route_text);
	if (app->n_shards > 1) {
		xf_report_add(&r, XF_REPORT_FIT, "combination", "%s",
			      xf_combination_rule_name(app->combination));
		xf_report_add(&r, XF_REPORT_FIT, "shards kept", "%ld of %ld", app->n_kept,
			      app->n_shards);
	}
	if (est->words.route->from_importance_points) {
		xf_report_add(&r, XF_REPORT_FIT, "draws",
			      "%d, resampled from %d weighted points of the check", est->n_draws,
			      app->approx->m);
	} else {
		xf_report_add(&r, XF_REPORT_FIT, "combined draws", "%d", est->n_draws);
		xf_report_add(&r, XF_REPORT_FIT, "chains, warmup, samples", "%d, %d, %d",
			      app->n_chains, app->n_warmup, app->n_samples);
	}
	/* the self-check against the full-data posterior (docs/cmc.md) */
	if (!app->check->done && app->n_shards > 1)
		xf_report_add(&r, XF_REPORT_FIT, "consensus check", "not run");
	else if (app->check->done)
		xf_report_add(
			&r, XF_REPORT_FIT, "consensus check",
			"Pareto k %.3g, M %d, IS-ESS %.0f (%.3f of M; Gaussian target "
			"%.3f), axis deviation %.3g (axis %d), seed %llu: %s",
			app->check->khat, app->check->m, app->check->ess,
			app->check->ess / app->check->m, app->check->ess_ref, app->check->axis_dev,
			app->check->axis, (unsigned long long)app->check->seed,
			app->check->corrected ? "passed; posterior and draws importance-corrected"
					      : "failed; summaries are the plain consensus");
	xf_cmc_sensitivity_report(&r, est, app);
	add_config(&r, est->grid.mode, est->scaling_mode, info->per_angle_mode);
	if (app->approx->done)
		xf_report_add(&r, XF_REPORT_TIMING, "importance route", "%.3f s",
			      app->time_approx_s);
	if (app->time_nuts_s > 0.0)
		xf_report_add(&r, XF_REPORT_TIMING, "exact NUTS", "%.3f s", app->time_nuts_s);
	xf_report_add(&r, XF_REPORT_TIMING, "sampling", "%.3f s", app->time_sampling_s);
	xf_report_add(&r, XF_REPORT_TIMING, "combination", "%.3f s", app->time_combine_s);
	xf_report_add(&r, XF_REPORT_TIMING, "total", "%.3f s", app->time_total_s);
	int rc = xf_report_html_write(dir, &r, info, ds, with_plots, err);
	free(p);
	return rc;
}
