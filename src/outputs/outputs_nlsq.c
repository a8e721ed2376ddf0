/* outputs_nlsq.c — the result directory of an NLSQ fit (outputs.h): results.h5 with the
 * plots drawn from its surfaces as it is written (plot/plot_stream.h, adr/0036), or after
 * it when that cannot start, then the rest in outputs_common.c's order. The model of the
 * surfaces and plots is the fit's estimate (adr/0044). */
#include "io/io_internal.h"
#include "io/report_html.h"
#include "io/results_h5.h"
#include "outputs/outputs_internal.h"
#include "plot/plot_stream.h"
#include "util/interrupt.h"
#include "xpcsfit/plot.h"
#include "xpcsfit/results.h"

#include <limits.h>

typedef struct nlsq_ctx {
	const xf_output_info *info;
	const xf_dataset *ds;
	const xf_estimate *est;
	const xf_nlsq_appendix *app;
	int dpi;
	int threads;
	xf_plot_stream *stream; /* the plots being drawn from the surfaces, or NULL */
} nlsq_ctx;

static int nlsq_plots(const char *plots_dir, void *p, xf_error *err)
{
	nlsq_ctx *c = p;
	if (c->stream) {
		xf_plot_stream *s = c->stream;
		c->stream = NULL;
		return xf_plot_stream_finish(s, err);
	}
	return xf_plot_nlsq_estimate(plots_dir, c->ds, c->est, c->app, c->dpi, c->threads, err);
}

static int nlsq_json(const char *dir, void *p, int with_plots, xf_error *err)
{
	nlsq_ctx *c = p;
	(void)with_plots;
	return xf_io_write_nlsq_json(dir, c->info, c->ds, c->est, c->app, err);
}

static int nlsq_report(const char *dir, void *p, int with_plots, xf_error *err)
{
	nlsq_ctx *c = p;
	return xf_report_html_nlsq(dir, c->info, c->ds, c->est, c->app, c->est->slot_q, with_plots,
				   err);
}

int xf_outputs_write_nlsq(const char *dir, const xf_output_info *info, const xf_dataset *ds,
			  const xf_estimate *est, const xf_nlsq_appendix *app,
			  const xf_output_options *opt, xf_error *err)
{
	int dpi = info->plot_dpi;
	int threads = opt && opt->threads > 1 ? opt->threads : 1;
	int surface_threads = !opt || opt->write_surfaces ? threads : 0;
	int write_plots = opt ? opt->write_plots : 1;
	xf_plot_set_angle_pages(info->plot_all_angles);
	if (xf_mkdir_p(dir, err) != 0)
		return err->code;
	/* plots and surfaces: the plots are drawn from the surfaces as results.h5 is written
	 * (plot/plot_stream.h); when that cannot start, after it as without surfaces */
	xf_output_info with_rings = *info; /* a joint fit's rings go into parameters.json */
	if (opt && opt->rings_json)
		with_rings.rings_json = opt->rings_json;
	nlsq_ctx c = { &with_rings, ds, est, app, dpi, threads, NULL };
	char plots_dir[PATH_MAX];
	if (write_plots && surface_threads > 0 &&
	    xf_path_join(plots_dir, sizeof plots_dir, dir, "plots", err) == 0) {
		xf_error stream_err = { 0 };
		c.stream = xf_plot_stream_start(plots_dir, ds, est, app, dpi, threads, &stream_err);
	}
	xf_phase("results.h5", 0);
	if (xf_io_write_nlsq_h5(dir, ds, est, app, dpi, surface_threads,
				c.stream ? xf_plot_stream_sink(c.stream) : NULL, err) != 0) {
		xf_plot_stream_abort(c.stream);
		return err->code;
	}
	xf_outputs_log_nlsq(dir, est, app);
	int rc = xf_outputs_write_rest(dir, write_plots, nlsq_plots, &c, nlsq_json, nlsq_report,
				       err);
	xf_plot_stream_abort(c.stream); /* write_rest failed before the plots */
	return rc;
}
