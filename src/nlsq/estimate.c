/* estimate.c — an NLSQ result as the method-neutral estimate (estimate.h): the fitted
 * values with their standard errors and covariance, the per-angle scaling, the quality,
 * and the stage timings; no posterior route. And the fit's appendix (appendix.h). */
#include "xpcsfit/estimate.h"
#include "xpcsfit/nlsq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy(double *dst, const double *src, int n)
{
	if (src && n > 0)
		memcpy(dst, src, sizeof(double) * (size_t)n);
}

/* per-angle scaling: NaN where the result has none (a failed fit), as the model then
 * draws nothing */
static void copy_or_nan(double *dst, const double *src, int n)
{
	for (int k = 0; k < n; k++)
		dst[k] = src ? src[k] : NAN;
}

int xf_estimate_from_nlsq(const xf_nlsq_result *res, const xf_model_grid *grid, xf_estimate *e,
			  xf_error *err)
{
	if (xf_estimate_alloc(e, res->n_params, res->n_phi, 0, err) != 0)
		return err->code;
	e->method = XF_METHOD_NLSQ;
	e->route = XF_POSTERIOR_ROUTE_NONE;
	e->grid = *grid;
	e->grid.mode = res->mode;
	e->scaling_mode = res->scaling_mode;
	e->n_phys = res->n_phys;
	size_t np = (size_t)res->n_params;
	for (int k = 0; k < res->n_params; k++) {
		e->names[k] = strdup(res->names && res->names[k] ? res->names[k] : "");
		e->units[k] = xf_model_param_unit(xf_model_record_of(res->mode), k);
		e->is_fixed[k] = res->is_fixed ? res->is_fixed[k] : 0;
		if (!e->names[k]) {
			xf_estimate_free(e);
			return xf_fail(err, XF_ERR_NOMEM, "out of memory for the estimate");
		}
	}
	copy(e->values, res->values, res->n_params);
	copy(e->sd, res->uncertainties, res->n_params);
	if (res->covariance && np > 0) {
		e->covariance = malloc(sizeof(double) * np * np);
		if (!e->covariance) {
			xf_estimate_free(e);
			return xf_fail(err, XF_ERR_NOMEM, "out of memory for the estimate");
		}
		memcpy(e->covariance, res->covariance, sizeof(double) * np * np);
	}
	e->cov_rank = res->cov_rank;
	copy(e->phi_deg, res->phi_deg, res->n_phi);
	copy_or_nan(e->contrast, res->contrast, res->n_phi);
	copy(e->contrast_sd, res->contrast_unc, res->n_phi);
	copy_or_nan(e->offset, res->offset, res->n_phi);
	copy(e->offset_sd, res->offset_unc, res->n_phi);
	e->status = res->status;
	e->quality = res->quality;
	xf_estimate_add_stage(e, "load", res->time_load_s);
	xf_estimate_add_stage(e, "fit", res->time_fit_s);
	xf_estimate_add_stage(e, "total", res->time_total_s);
	xf_estimate_seal(e);
	return 0;
}

void xf_nlsq_appendix_of(const xf_nlsq_result *res, xf_nlsq_appendix *a)
{
	*a = (xf_nlsq_appendix){
		.chi_squared = res->chi_squared,
		.reduced_chi_squared = res->reduced_chi_squared,
		.residual_sd = res->residual_sd,
		.n_points = res->n_points,
		.n_free = res->n_free,
		.iterations = res->iterations,
		.stop_reason = res->stop_reason,
		.search = res->search,
		.sigma_rule = res->sigma_rule,
		.sigma = res->sigma,
		.n_at_bounds = res->n_at_bounds,
		.at_bounds = res->at_bounds,
		.n_starts_run = res->n_starts_run,
		.time_load_s = res->time_load_s,
		.time_fit_s = res->time_fit_s,
		.time_total_s = res->time_total_s,
		.device_asked = res->device_asked,
		.device_decision = res->device_decision,
	};
}
