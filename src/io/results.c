/* results.c — writing a whole NLSQ result directory (spec/cli.md "Result directory"):
 * results.h5, parameters.json, plots/ and run.log last, so that a run.log in place means
 * every other file is complete. A failed fit is written all the same (status "failed").
 * A plot that fails is a warning (recorded in run.log), not a failed run. */
#include "io/io_internal.h"
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

int xf_results_write_nlsq(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			  const xf_nlsq_result *res, const xf_output_options *opt, xf_error *err)
{
	int threads = opt && opt->threads > 1 ? opt->threads : 1;
	int surface_threads = !opt || opt->write_surfaces ? threads : 0;
	int write_plots = opt ? opt->write_plots : 1;
	if (xf_mkdir_p(dir, err) != 0)
		return err->code;
	if (xf_results_write_nlsq_h5(dir, cfg, ds, res, surface_threads, err) != 0)
		return err->code;
	if (xf_results_write_nlsq_json(dir, cfg, ds, res, err) != 0)
		return err->code;
	if (write_plots) {
		char plots[PATH_MAX];
		if (xf_path_join(plots, sizeof plots, dir, "plots", err) != 0)
			return err->code;
		/* the numbers are the result: a plot that cannot be drawn is a warning, and
		 * `xpcsfit plot DIR` can redraw it later */
		xf_error plot_err = { 0 };
		if (xf_plot_nlsq_parallel(plots, cfg, ds, res, threads, &plot_err) != 0)
			xf_warn("plots not written: %s", plot_err.msg);
	}
	log_versions_and_timing(dir, res);
	return xf_results_write_log(dir, err);
}

int xf_results_write_cmc(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			 const xf_cmc_result *res, const xf_output_options *opt, xf_error *err)
{
	if (xf_mkdir_p(dir, err) != 0)
		return err->code;
	if (xf_results_write_cmc_h5(dir, cfg, ds, res, err) != 0)
		return err->code;
	if (xf_results_write_cmc_json(dir, cfg, ds, res, err) != 0)
		return err->code;
	if (!opt || opt->write_plots) {
		char plots[PATH_MAX];
		xf_error plot_err = { 0 };
		if (xf_path_join(plots, sizeof plots, dir, "plots", err) != 0)
			return err->code;
		if (xf_plot_cmc(plots, cfg, ds, res, &plot_err) != 0)
			xf_warn("plots not written: %s", plot_err.msg);
	}
	xf_info("cmc: status %s, quality %s, %ld of %ld shards kept, %d combined draws",
		res->status ? res->status : "failed", xf_quality_level_name(res->quality.overall),
		res->n_kept, res->n_shards, res->n_draws);
	xf_info("timing: sampling %.3f s, combination %.3f s, total %.3f s", res->time_sampling_s,
		res->time_combine_s, res->time_total_s);
	xf_info("results written to %s", dir);
	return xf_results_write_log(dir, err);
}
