/* results_config.c — the CLI's adapters from a loaded config to the result layers
 * (results_config.h, adr/0044): the one place where the config becomes the model grid of
 * the outputs (the request's, xf_request_grid), the run's xf_output_info, and each
 * method's estimate (the services'). outputs/, io/ and plot/ below take those and never read the config. */
#include "xpcsfit/plot.h"
#include "xpcsfit/results_config.h"
#include "cli/request_build.h"
#include "services/nlsq.h"
#include "services/posterior.h"

#include <stdlib.h>
#include <string.h>

int xf_output_info_from_config(const xf_config *cfg, xf_method method, xf_output_info *info,
			       xf_error *err)
{
	memset(info, 0, sizeof *info);
	if (!cfg)
		return 0;
	int cmc = method == XF_METHOD_CMC;
	info->config_path = cfg->source_path;
	info->plot_dpi = cfg->plot_dpi;
	info->plot_all_angles = cfg->plot_all_angles;
	info->loss = xf_loss_name(cfg->nlsq.loss);
	info->loss_linear = cfg->nlsq.loss == XF_LOSS_LINEAR;
	info->f_scale = cfg->nlsq.f_scale;
	info->per_angle_mode =
		xf_scaling_mode_name(cmc ? cfg->cmc.per_angle_mode : cfg->nlsq.per_angle_mode);
	info->max_tree_depth = cfg->cmc.max_tree_depth;
	info->dense_mass = cfg->cmc.dense_mass;
	info->nlsq_informed_priors = cfg->cmc.use_nlsq_informed_priors;
	if (cfg->n_overrides == 0)
		return 0;
	xf_output_override *o = calloc(cfg->n_overrides, sizeof *o);
	if (!o)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for the overrides");
	for (size_t k = 0; k < cfg->n_overrides; k++)
		o[k] = (xf_output_override){ cfg->overrides[k].option, cfg->overrides[k].key,
					     cfg->overrides[k].value };
	info->overrides = o;
	info->n_overrides = cfg->n_overrides;
	return 0;
}

void xf_output_info_free(xf_output_info *info)
{
	free((void *)info->overrides);
	memset(info, 0, sizeof *info);
}

/* est and info of an NLSQ result fitted to ds with cfg, its angle slots at slot_q (a
 * joint fit, adr/0068; NULL: ds->q); 0 or an error code (nothing to free then) */
static int nlsq_inputs(const xf_config *cfg, const xf_dataset *ds, const xf_nlsq_result *res,
		       const double *slot_q, xf_estimate *est, xf_output_info *info, xf_error *err)
{
	xf_request req;
	xf_request_from_config(cfg, &req);
	if (xf_nlsq_estimate(res, &req, ds, slot_q, est, err) != 0)
		return err->code;
	if (xf_output_info_from_config(cfg, XF_METHOD_NLSQ, info, err) != 0) {
		xf_estimate_free(est);
		return err->code;
	}
	return 0;
}

static void release(xf_estimate *est, xf_output_info *info)
{
	xf_estimate_free(est);
	xf_output_info_free(info);
}

int xf_results_write_nlsq(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			  const xf_estimate *est, const xf_nlsq_appendix *app,
			  const xf_output_options *opt, xf_error *err)
{
	xf_output_info info;
	if (xf_output_info_from_config(cfg, XF_METHOD_NLSQ, &info, err) != 0)
		return err->code;
	int rc = xf_outputs_write_nlsq(dir, &info, ds, est, app, opt, err);
	xf_output_info_free(&info);
	return rc;
}

int xf_results_write_nlsq_h5(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			     const xf_nlsq_result *res, int surface_threads, xf_error *err)
{
	xf_estimate est;
	xf_output_info info;
	if (nlsq_inputs(cfg, ds, res, NULL, &est, &info, err) != 0)
		return err->code;
	xf_nlsq_appendix app;
	xf_nlsq_appendix_of(res, &app);
	int rc = xf_io_write_nlsq_results_h5(dir, &info, ds, &est, &app, surface_threads, err);
	release(&est, &info);
	return rc;
}

int xf_results_write_nlsq_json(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			       const xf_nlsq_result *res, xf_error *err)
{
	xf_estimate est;
	xf_output_info info;
	if (nlsq_inputs(cfg, ds, res, NULL, &est, &info, err) != 0)
		return err->code;
	xf_nlsq_appendix app;
	xf_nlsq_appendix_of(res, &app);
	int rc = xf_io_write_nlsq_json(dir, &info, ds, &est, &app, err);
	release(&est, &info);
	return rc;
}

int xf_plot_nlsq(const char *plots_dir, const xf_config *cfg, const xf_dataset *ds,
		 const xf_nlsq_result *res, xf_error *err)
{
	xf_estimate est;
	xf_output_info info;
	if (nlsq_inputs(cfg, ds, res, NULL, &est, &info, err) != 0)
		return err->code;
	xf_nlsq_appendix app;
	xf_nlsq_appendix_of(res, &app);
	int rc = xf_plot_nlsq_estimate(plots_dir, ds, &est, &app, info.plot_dpi, 1, err);
	release(&est, &info);
	return rc;
}

int xf_results_write_cmc(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			 const xf_estimate *est, const xf_cmc_appendix *app,
			 const xf_output_options *opt, xf_error *err)
{
	xf_output_info info;
	if (xf_output_info_from_config(cfg, XF_METHOD_CMC, &info, err) != 0)
		return err->code;
	int rc = xf_outputs_write_cmc(dir, &info, ds, est, app, opt, err);
	xf_output_info_free(&info);
	return rc;
}

int xf_results_check_nlsq(const char *dir, const xf_estimate *res, const xf_nlsq_origin *o,
			  const xf_config *cfg, const xf_dataset *ds, xf_error *err)
{
	return xf_io_check_nlsq(dir, res, o, cfg->mode, cfg->bounds, ds, err);
}
