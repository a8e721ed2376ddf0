/* cmc_posterior_out.c — the published posterior's per-parameter diagnostics (R-hat,
 * bulk and tail ESS, MCSE of the mean and of the sd; adr/0061) as parameters.json's
 * "posterior_diagnostics" block and results.h5's /cmc/posterior_diagnostics group. The
 * numbers are xf_cmc_posterior_diagnostics' (cmc/posterior_diag.c), the same that
 * posterior.nc's summary group holds. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "io/cmc_posterior_out.h"
#include "io/io_internal.h"

cJSON *xf_cmc_posterior_diag_json(const xf_estimate *est, const xf_cmc_appendix *app)
{
	const xf_cmc_posterior_diag *d = &app->diag;
	cJSON *obj = cJSON_CreateObject();
	cJSON_AddStringToObject(obj, "layout", xf_chain_layout_name(d->layout));
	cJSON_AddStringToObject(obj, "note", d->note);
	cJSON_AddItemToObject(obj, "chains", xf_json_int(d->n_chains));
	cJSON_AddItemToObject(obj, "draws_per_chain", xf_json_int(d->n_draws));
	cJSON_AddStringToObject(obj, "file", "posterior.nc");
	cJSON *params = cJSON_CreateObject();
	for (int k = 0; k < est->n_params; k++) {
		if (est->is_fixed[k])
			continue;
		cJSON *p = cJSON_CreateObject();
		cJSON_AddItemToObject(p, "r_hat", xf_json_num(d->rhat[k]));
		cJSON_AddItemToObject(p, "ess_bulk", xf_json_num(d->ess_bulk[k]));
		cJSON_AddItemToObject(p, "ess_tail", xf_json_num(d->ess_tail[k]));
		cJSON_AddItemToObject(p, "mcse_mean", xf_json_num(d->mcse_mean[k]));
		cJSON_AddItemToObject(p, "mcse_sd", xf_json_num(d->mcse_sd[k]));
		cJSON_AddItemToObject(params, est->names[k], p);
	}
	cJSON_AddItemToObject(obj, "parameters", params);
	return obj;
}

void xf_cmc_posterior_diag_h5(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app)
{
	const xf_cmc_posterior_diag *d = &app->diag;
	size_t nf = (size_t)est->n_params;
	hid_t pg = w->failed ? -1
			     : H5Gcreate2(g, "posterior_diagnostics", H5P_DEFAULT, w->gcpl,
					  H5P_DEFAULT);
	if (pg < 0)
		xf_h5_fail(w, "/cmc/posterior_diagnostics");
	else {
		xf_h5_nx_class(w, pg, "NXcollection");
		xf_h5_attr_str(w, pg, "layout", xf_chain_layout_name(d->layout));
		xf_h5_attr_str(w, pg, "note", d->note);
		xf_h5_put_i64(w, pg, "chains", d->n_chains, "chains of the published draws");
		xf_h5_put_i64(w, pg, "draws_per_chain", d->n_draws, "draws of each chain");
		xf_h5_put_vec(w, pg, "r_hat", nf, d->rhat, "1",
			      "rank-normalised split R-hat of /cmc/draws split into chains "
			      "(NaN: fixed)");
		xf_h5_put_vec(w, pg, "ess_bulk", nf, d->ess_bulk, "1",
			      "bulk effective sample size");
		xf_h5_put_vec(w, pg, "ess_tail", nf, d->ess_tail, "1",
			      "tail effective sample size");
		xf_h5_put_vec(w, pg, "mcse_mean", nf, d->mcse_mean, "see parameter_names",
			      "Monte Carlo standard error of the mean");
		xf_h5_put_vec(w, pg, "mcse_sd", nf, d->mcse_sd, "see parameter_names",
			      "Monte Carlo standard error of the sd");
		static const char *const by_param[] = { "r_hat", "ess_bulk", "ess_tail",
							"mcse_mean", "mcse_sd" };
		for (size_t k = 0; k < sizeof by_param / sizeof by_param[0]; k++)
			xf_h5_dims(w, pg, by_param[k], "/cmc/parameter_names", NULL);
		H5Gclose(pg);
	}
}
