/* results.c — writing a whole result directory (spec/cli.md "Result directory"):
 * results.h5, plots/, report.html, parameters.json (its "outputs" says whether the
 * plots are there) and run.log last, whose last line says "complete" or "partial". The folder itself is claimed
 * and released by the CLI (util/rundir.h): its INCOMPLETE marker goes only after all of
 * this. A failed fit is written all the same (status "failed"). A plot that fails is a
 * warning, recorded in parameters.json and run.log, not a failed run. */
#include "io/io_internal.h"
#include "io/report_html.h"
#include "io/surface_sink.h"
#include "plot/plot_stream.h"
#include "util/interrupt.h"
#include "util/profile.h"
#include "xpcsfit/plot.h"
#include "xpcsfit/results.h"

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <limits.h>
#include <plplot.h>

static void log_versions_and_timing(const char *dir, const xf_nlsq_result *res)
{
	unsigned maj = 0, min = 0, rel = 0;
	char plver[80] = "?";
	H5get_libversion(&maj, &min, &rel);
	plgver(plver);
	xf_info("versions: xpcsfit %s, HDF5 %u.%u.%u, cJSON %s, PLplot %s", XPCSFIT_VERSION, maj,
		min, rel, cJSON_Version(), plver);
	xf_info("nlsq: status %s, stop reason %s, %d iterations, chi2 %.6g, reduced chi2 %.6g",
		res->status ? res->status : "failed", res->stop_reason ? res->stop_reason : "-",
		res->iterations, res->chi_squared, res->reduced_chi_squared);
	xf_info("timing: load %.3f s, fit %.3f s, total %.3f s", res->time_load_s, res->time_fit_s,
		res->time_total_s);
	xf_info("results written to %s", dir);
}

/* plots: a failure is a warning (the numbers are the result, `xpcsfit plot DIR` can
 * redraw them) but it is recorded: parameters.json "outputs" says partial, and so does the
 * last line of run.log */
typedef int (*plot_fn)(const char *plots_dir, void *ctx, xf_error *err);

typedef int (*file_fn)(const char *dir, void *ctx, int with_plots, xf_error *err);

/* report.html comes after the plots (it embeds them) and before parameters.json, so that
 * a run that fails writing it leaves no parameters.json (a script's first test) */
static int write_rest(const char *dir, int write_plots, plot_fn draw, void *ctx, file_fn write_json,
		      file_fn write_report, xf_error *err)
{
	xf_error plot_err = { 0 };
	const char *plots = "skipped";
	if (write_plots) {
		char path[PATH_MAX];
		if (xf_path_join(path, sizeof path, dir, "plots", err) != 0)
			return err->code;
		xf_phase("plots", 0);
		xf_profile_phase("plots");
		plots = "written";
		if (draw(path, ctx, &plot_err) != 0) {
			plots = "failed";
			xf_warn("plots not written: %s", plot_err.msg);
		}
	}
	xf_phase("write", 0);
	xf_profile_phase("writing");
	xf_json_set_outputs(plots, plot_err.code ? plot_err.msg : NULL);
	xf_phase("report", 0);
	int rc = write_report(dir, ctx, write_plots, err);
	if (rc == 0)
		rc = write_json(dir, ctx, write_plots, err);
	xf_json_set_outputs(NULL, NULL);
	if (rc)
		return rc;
	if (plot_err.code)
		xf_info("partial: every file of this result is written except the plots (%s); "
			"`xpcsfit plot DIR` redraws them",
			plot_err.msg);
	else
		xf_info("complete: every file of this result is written");
	if (xf_profile_enabled()) {
		char line[1024];
		xf_profile_format(line, sizeof line);
		xf_info("profile: %s (until run.log)", line);
	}
	return xf_results_write_log(dir, err);
}

typedef struct nlsq_ctx {
	const xf_config *cfg;
	const xf_dataset *ds;
	const xf_nlsq_result *res;
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
	return xf_plot_nlsq_parallel(plots_dir, c->cfg, c->ds, c->res, c->threads, err);
}

static int nlsq_json(const char *dir, void *p, int with_plots, xf_error *err)
{
	nlsq_ctx *c = p;
	(void)with_plots;
	return xf_results_write_nlsq_json(dir, c->cfg, c->ds, c->res, err);
}

static int nlsq_report(const char *dir, void *p, int with_plots, xf_error *err)
{
	nlsq_ctx *c = p;
	return xf_report_html_nlsq(dir, c->cfg, c->ds, c->res, with_plots, err);
}

int xf_results_write_nlsq(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			  const xf_nlsq_result *res, const xf_output_options *opt, xf_error *err)
{
	int threads = opt && opt->threads > 1 ? opt->threads : 1;
	int surface_threads = !opt || opt->write_surfaces ? threads : 0;
	int write_plots = opt ? opt->write_plots : 1;
	if (xf_mkdir_p(dir, err) != 0)
		return err->code;
	/* plots and surfaces: the plots are drawn from the surfaces as results.h5 is written
	 * (plot/plot_stream.h); when that cannot start, after it as without surfaces */
	nlsq_ctx c = { cfg, ds, res, threads, NULL };
	char plots_dir[PATH_MAX];
	if (write_plots && surface_threads > 0 &&
	    xf_path_join(plots_dir, sizeof plots_dir, dir, "plots", err) == 0) {
		xf_error stream_err = { 0 };
		c.stream = xf_plot_stream_start(plots_dir, cfg, ds, res, threads, &stream_err);
	}
	xf_phase("results.h5", 0);
	if (xf_io_write_nlsq_h5_sink(dir, cfg, ds, res, surface_threads,
				     c.stream ? xf_plot_stream_sink(c.stream) : NULL, err) != 0) {
		xf_plot_stream_abort(c.stream);
		return err->code;
	}
	log_versions_and_timing(dir, res);
	int rc = write_rest(dir, write_plots, nlsq_plots, &c, nlsq_json, nlsq_report, err);
	xf_plot_stream_abort(c.stream); /* write_rest failed before the plots */
	return rc;
}

typedef struct cmc_ctx {
	const xf_config *cfg;
	const xf_dataset *ds;
	const xf_cmc_result *res;
} cmc_ctx;

static int cmc_plots(const char *plots_dir, void *p, xf_error *err)
{
	cmc_ctx *c = p;
	return xf_plot_cmc(plots_dir, c->cfg, c->ds, c->res, err);
}

static int cmc_json(const char *dir, void *p, int with_plots, xf_error *err)
{
	cmc_ctx *c = p;
	(void)with_plots;
	return xf_results_write_cmc_json(dir, c->cfg, c->ds, c->res, err);
}

static int cmc_report(const char *dir, void *p, int with_plots, xf_error *err)
{
	cmc_ctx *c = p;
	return xf_report_html_cmc(dir, c->cfg, c->ds, c->res, with_plots, err);
}

int xf_results_write_cmc(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			 const xf_cmc_result *res, const xf_output_options *opt, xf_error *err)
{
	if (xf_mkdir_p(dir, err) != 0)
		return err->code;
	xf_phase("results.h5", 0);
	if (xf_results_write_cmc_h5(dir, cfg, ds, res, err) != 0)
		return err->code;
	xf_info("cmc: status %s, quality %s, %ld of %ld shards kept, %d combined draws",
		res->status ? res->status : "failed", xf_quality_level_name(res->quality.overall),
		res->n_kept, res->n_shards, res->n_draws);
	char how[512];
	xf_cmc_route_describe(res, how, sizeof how);
	xf_info("cmc: route: %s", how);
	xf_info("timing: sampling %.3f s, combination %.3f s, total %.3f s (importance route "
		"%.3f s, exact NUTS %.3f s)",
		res->time_sampling_s, res->time_combine_s, res->time_total_s, res->time_approx_s,
		res->time_nuts_s);
	xf_info("results written to %s", dir);
	cmc_ctx c = { cfg, ds, res };
	return write_rest(dir, !opt || opt->write_plots, cmc_plots, &c, cmc_json, cmc_report, err);
}
