/* nlsq.c — one NLSQ fit and its estimate (nlsq.h, adr/0117) */
#include "services/nlsq.h"

#include <string.h>

#include "util/clock.h"

int xf_nlsq_estimate(const xf_nlsq_result *res, const xf_request *req, const xf_dataset *ds,
		     const double *slot_q, xf_estimate *est, xf_error *err)
{
	xf_model_grid grid = xf_request_grid(req, ds->n_frames, ds->dt_s, ds->q);
	grid.mode = res->mode;
	if (xf_estimate_from_nlsq(res, &grid, est, err))
		return err->code;
	if (xf_estimate_set_slot_q(est, slot_q, err)) {
		xf_estimate_free(est);
		return err->code;
	}
	return 0;
}

int xf_nlsq_run(const xf_request *req, const xf_nlsq_options *o, const xf_dataset *ds,
		int n_threads, xf_nlsq_progress_fn progress, void *progress_ctx, double t_start_s,
		double t_loaded_s, xf_nlsq_fitted *fit, xf_error *err)
{
	memset(fit, 0, sizeof *fit);
	int rc = xf_nlsq_fit(req, o, ds, n_threads, progress, progress_ctx, &fit->res, err);
	if (rc)
		return rc;
	double t_fit_s = xf_monotonic_s();
	fit->res.time_load_s = t_loaded_s - t_start_s;
	fit->res.time_fit_s = t_fit_s - t_loaded_s;
	fit->res.time_total_s = t_fit_s - t_start_s;
	if (xf_nlsq_estimate(&fit->res, req, ds, NULL, &fit->est, err))
		return err->code;
	xf_nlsq_appendix_of(&fit->res, &fit->app);
	fit->published = 1;
	return 0;
}

void xf_nlsq_fitted_take_estimate(xf_nlsq_fitted *fit, xf_estimate *est)
{
	*est = fit->est;
	memset(&fit->est, 0, sizeof fit->est);
}

void xf_nlsq_fitted_free(xf_nlsq_fitted *fit)
{
	if (fit->published)
		xf_estimate_free(&fit->est);
	xf_nlsq_result_free(&fit->res);
	memset(fit, 0, sizeof *fit);
}
