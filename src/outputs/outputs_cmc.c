/* outputs_cmc.c — the result directory of a CMC run (outputs.h): results.h5 (/cmc), then
 * the plots, report.html, parameters.json and run.log in outputs_common.c's order. The
 * angle pages draw the model at the posterior's estimate (adr/0044). */
#include "io/io_internal.h"
#include "io/report_html.h"
#include "outputs/outputs_internal.h"
#include "util/interrupt.h"
#include "xpcsfit/plot.h"
#include "xpcsfit/results.h"

typedef struct cmc_ctx {
	const xf_output_info *info;
	const xf_dataset *ds;
	const xf_estimate *est;
	const xf_cmc_appendix *app;
} cmc_ctx;

static int cmc_plots(const char *plots_dir, void *p, xf_error *err)
{
	cmc_ctx *c = p;
	xf_plot_set_angle_pages(c->info->plot_all_angles);
	return xf_plot_cmc_estimate(plots_dir, c->ds, c->est, c->app, c->info->plot_dpi, err);
}

static int cmc_json(const char *dir, void *p, int with_plots, xf_error *err)
{
	cmc_ctx *c = p;
	(void)with_plots;
	return xf_io_write_cmc_json(dir, c->info, c->ds, c->est, c->app, err);
}

static int cmc_report(const char *dir, void *p, int with_plots, xf_error *err)
{
	cmc_ctx *c = p;
	return xf_report_html_cmc(dir, c->info, c->ds, c->est, c->app, with_plots, err);
}

int xf_outputs_write_cmc(const char *dir, const xf_output_info *info, const xf_dataset *ds,
			 const xf_estimate *est, const xf_cmc_appendix *app,
			 const xf_output_options *opt, xf_error *err)
{
	if (xf_mkdir_p(dir, err) != 0)
		return err->code;
	xf_phase("results.h5", 0);
	if (xf_io_write_cmc_h5(dir, ds, est, app, err) != 0)
		return err->code;
	if (xf_io_write_posterior_nc(dir, ds, est, app, err) != 0)
		return err->code;
	if (app->n_shards > 1)
		xf_info("cmc: status %s, quality %s, %ld of %ld shards kept, %d combined draws",
			est->words.status, est->words.quality, app->n_kept, app->n_shards,
			est->n_draws);
	else /* the exact posterior (one shard or the importance route): no shards to speak of */
		xf_info("cmc: status %s, quality %s, %d draws", est->words.status,
			est->words.quality, est->n_draws);
	xf_info("cmc: route: %s", app->route_text);
	xf_info("timing: sampling %.3f s, combination %.3f s, total %.3f s (importance route "
		"%.3f s, exact NUTS %.3f s, probe beyond the draws %.3f s)",
		app->time_sampling_s, app->time_combine_s, app->time_total_s, app->time_approx_s,
		app->time_nuts_s, app->beyond->wall_s);
	xf_info("results written to %s", dir);
	xf_output_info with_rings = *info; /* a joint posterior's rings: parameters.json */
	if (opt && opt->rings_json)
		with_rings.rings_json = opt->rings_json;
	cmc_ctx c = { &with_rings, ds, est, app };
	return xf_outputs_write_rest(dir, !opt || opt->write_plots, cmc_plots, &c, cmc_json,
				     cmc_report, err);
}
