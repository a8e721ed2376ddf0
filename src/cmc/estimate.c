/* estimate.c — a CMC result as the method-neutral estimate (estimate.h): the posterior
 * mean and sd, covariance, draws (borrowed) and summaries, the per-angle scaling, the
 * quality and the stage timings (e->stages has room for per-stage timings beyond
 * sampling and combination). The route is the one the run recorded (res->route, adr/0045):
 * importance, NUTS, or consensus over shards. */
#include "xpcsfit/cmc.h"
#include "xpcsfit/estimate.h"

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

static int fill_params(const xf_cmc_result *res, xf_estimate *e, xf_error *err)
{
	for (int k = 0; k < res->n_params; k++) {
		e->names[k] = strdup(res->names && res->names[k] ? res->names[k] : "");
		if (!e->names[k])
			return xf_fail(err, XF_ERR_NOMEM, "out of memory for the estimate");
		e->units[k] = xf_model_param_unit(xf_model_record_of(res->mode), k);
		e->is_fixed[k] = res->is_fixed ? res->is_fixed[k] : 0;
		/* a fixed parameter has no uncertainty, as NLSQ's */
		e->sd[k] = e->is_fixed[k] || !res->sd ? NAN : res->sd[k];
	}
	copy(e->values, res->mean, res->n_params);
	copy(e->median, res->median, res->n_params);
	copy(e->q05, res->q05, res->n_params);
	copy(e->q95, res->q95, res->n_params);
	size_t np = (size_t)res->n_params;
	if (res->cov && np > 0) {
		e->covariance = malloc(sizeof(double) * np * np);
		if (!e->covariance)
			return xf_fail(err, XF_ERR_NOMEM, "out of memory for the estimate");
		memcpy(e->covariance, res->cov, sizeof(double) * np * np);
	}
	return 0;
}

/* how the published posterior was reached (xf_cmc_result.route; a run that ended before
 * its route did: one shard is NUTS, several are consensus) */
static xf_posterior_route route_of(const xf_cmc_result *res)
{
	if (res->route != XF_POSTERIOR_ROUTE_NONE)
		return res->route;
	return res->n_shards == 1 ? XF_POSTERIOR_ROUTE_NUTS : XF_POSTERIOR_ROUTE_CMC;
}

int xf_estimate_from_cmc(const xf_cmc_result *res, const xf_model_grid *grid, xf_estimate *e,
			 xf_error *err)
{
	if (xf_estimate_alloc(e, res->n_params, res->n_phi, 1, err) != 0)
		return err->code;
	e->method = XF_METHOD_CMC;
	e->route = route_of(res);
	e->grid = *grid;
	e->grid.mode = res->mode;
	e->scaling_mode = res->scaling_mode;
	e->n_phys = res->n_phys;
	if (fill_params(res, e, err) != 0) {
		xf_estimate_free(e);
		return err->code;
	}
	e->n_draws = res->n_draws;
	for (int k = 0; k < res->n_params; k++)
		e->sd_table[k] = e->is_fixed[k] && e->n_draws > 1 ? 0.0 : e->sd[k];
	e->draws = res->draws;
	copy(e->phi_deg, res->phi_deg, res->n_phi);
	copy_or_nan(e->contrast, res->contrast, res->n_phi);
	copy(e->contrast_sd, res->contrast_sd, res->n_phi);
	copy_or_nan(e->offset, res->offset, res->n_phi);
	copy(e->offset_sd, res->offset_sd, res->n_phi);
	e->status = res->status;
	e->quality = res->quality;
	if (res->approx.done)
		xf_estimate_add_stage(e, "importance route", res->time_approx_s);
	if (res->time_nuts_s > 0.0)
		xf_estimate_add_stage(e, "exact NUTS", res->time_nuts_s);
	xf_estimate_add_stage(e, "sampling", res->time_sampling_s);
	xf_estimate_add_stage(e, "combination", res->time_combine_s);
	xf_estimate_add_stage(e, "total", res->time_total_s);
	xf_estimate_seal(e);
	return 0;
}
