/* estimate.c — allocation, freeing and small accessors of the method-neutral estimate
 * (estimate.h). The converters from a method's result live with the method. */
#include "xpcsfit/estimate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double *zeros(size_t n)
{
	return calloc(n ? n : 1, sizeof(double));
}

int xf_estimate_alloc(xf_estimate *e, int n_params, int n_phi, int summaries, xf_error *err)
{
	memset(e, 0, sizeof *e);
	size_t np = (size_t)(n_params > 0 ? n_params : 0), na = (size_t)(n_phi > 0 ? n_phi : 0);
	e->n_params = n_params;
	e->n_phi = n_phi;
	e->names = calloc(np ? np : 1, sizeof *e->names);
	e->units = calloc(np ? np : 1, sizeof *e->units);
	e->is_fixed = calloc(np ? np : 1, sizeof *e->is_fixed);
	e->values = zeros(np);
	e->sd = zeros(np);
	e->phi_deg = zeros(na);
	e->contrast = zeros(na);
	e->contrast_sd = zeros(na);
	e->offset = zeros(na);
	e->offset_sd = zeros(na);
	int ok = e->names && e->units && e->is_fixed && e->values && e->sd && e->phi_deg &&
		 e->contrast && e->contrast_sd && e->offset && e->offset_sd;
	if (ok && summaries) {
		e->median = zeros(np);
		e->q05 = zeros(np);
		e->q95 = zeros(np);
		e->sd_table = zeros(np);
		ok = e->median && e->q05 && e->q95 && e->sd_table;
	}
	if (!ok) {
		xf_estimate_free(e);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the estimate (%d parameters)",
			       n_params);
	}
	return 0;
}

const char *xf_method_name(xf_method m)
{
	return m == XF_METHOD_CMC ? "cmc" : "nlsq";
}

/* The routes' records, in route order (cmc.md; adr/0045, adr/0120) */
static const xf_route_record routes[] = {
	[XF_POSTERIOR_ROUTE_NONE] = { .route = XF_POSTERIOR_ROUTE_NONE,
				      .name = "",
				      .posterior = "" },
	[XF_POSTERIOR_ROUTE_IMPORTANCE] = { .route = XF_POSTERIOR_ROUTE_IMPORTANCE,
					    .name = "importance",
					    .posterior = "importance_sampled_exact",
					    .from_importance_points = 1 },
	[XF_POSTERIOR_ROUTE_NUTS] = { .route = XF_POSTERIOR_ROUTE_NUTS,
				      .name = "nuts",
				      .posterior = "exact_nuts" },
	/* consensus over K > 1 shards; the self-check may importance-weight it (adr/0012) */
	[XF_POSTERIOR_ROUTE_CMC] = { .route = XF_POSTERIOR_ROUTE_CMC,
				     .name = "cmc",
				     .posterior = "consensus",
				     .posterior_corrected = "importance_weighted" },
};

const xf_route_record *xf_route_record_of(xf_posterior_route route)
{
	int n = (int)(sizeof routes / sizeof routes[0]);
	return (int)route >= 0 && (int)route < n ? &routes[route] : &routes[0];
}

const char *xf_posterior_route_name(xf_posterior_route route)
{
	return xf_route_record_of(route)->name;
}

void xf_estimate_seal(xf_estimate *e)
{
	for (int k = e->n_phys; e->units && k < e->n_params; k++)
		e->units[k] = "1"; /* contrast and offset coefficients are dimensionless */
	e->words = (xf_estimate_words){
		.method = xf_method_name(e->method),
		.status = xf_fit_status_name(e->status),
		.quality = xf_quality_level_name(e->quality.overall),
		.route = xf_route_record_of(e->route),
		.mode = xf_mode_name(e->grid.mode),
		.scaling = xf_scaling_mode_used_name(e->scaling_mode),
	};
}

void xf_estimate_free(xf_estimate *e)
{
	for (int k = 0; e->names && k < e->n_params; k++)
		free(e->names[k]);
	free(e->names);
	free(e->units);
	free(e->is_fixed);
	free(e->values);
	free(e->sd);
	free(e->covariance);
	free(e->median);
	free(e->q05);
	free(e->q95);
	free(e->sd_table);
	free(e->phi_deg);
	free(e->contrast);
	free(e->contrast_sd);
	free(e->offset);
	free(e->offset_sd);
	free(e->slot_q);
	memset(e, 0, sizeof *e);
}

int xf_estimate_set_slot_q(xf_estimate *e, const double *slot_q, xf_error *err)
{
	if (!slot_q)
		return 0;
	size_t n = (size_t)(e->n_phi > 0 ? e->n_phi : 0);
	e->slot_q = malloc((n ? n : 1) * sizeof *e->slot_q);
	if (!e->slot_q)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the slots' q (%zu)", n);
	memcpy(e->slot_q, slot_q, n * sizeof *e->slot_q);
	return 0;
}

xf_model_grid xf_estimate_grid_at(const xf_estimate *e, int a)
{
	xf_model_grid g = e->grid;
	if (e->slot_q && a >= 0 && a < e->n_phi)
		g.q = e->slot_q[a];
	return g;
}

void xf_estimate_add_stage(xf_estimate *e, const char *name, double seconds)
{
	if (e->n_stages >= XF_ESTIMATE_MAX_STAGES)
		return;
	xf_estimate_stage *s = &e->stages[e->n_stages++];
	snprintf(s->name, sizeof s->name, "%s", name);
	s->seconds = seconds;
}

void xf_estimate_theta(const xf_estimate *e, double theta[XF_N_PHYS])
{
	int n = e->n_phys < XF_N_PHYS ? e->n_phys : XF_N_PHYS;
	for (int k = 0; k < XF_N_PHYS; k++)
		theta[k] = k < n && e->values ? e->values[k] : 0.0;
}
