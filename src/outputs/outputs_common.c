/* outputs_common.c — the order of a result directory's files after results.h5 (spec/cli.md
 * "Result directory"): plots/, report.html (it embeds them), parameters.json (its
 * "outputs" says whether the plots are there), run.log last, whose last line says
 * "complete" or "partial". A plot that fails is a warning, recorded in parameters.json
 * and run.log, not a failed run. This layer sits above io/ and plot/ (adr/0044). */
#include "io/io_internal.h"
#include "outputs/outputs_internal.h"
#include "util/interrupt.h"
#include "util/profile.h"
#include "xpcsfit/results.h"

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <limits.h>
#include <plplot.h>

void xf_outputs_log_nlsq(const char *dir, const xf_estimate *est, const xf_nlsq_appendix *app)
{
	unsigned maj = 0, min = 0, rel = 0;
	char plver[80] = "?";
	H5get_libversion(&maj, &min, &rel);
	plgver(plver);
	xf_info("versions: xpcsfit %s, HDF5 %u.%u.%u, cJSON %s, PLplot %s", XPCSFIT_VERSION, maj,
		min, rel, cJSON_Version(), plver);
	xf_info("nlsq: status %s, stop reason %s, %d iterations, chi2 %.6g, reduced chi2 %.6g",
		est->words.status, app->stop_reason ? app->stop_reason : "-", app->iterations,
		app->chi_squared, app->reduced_chi_squared);
	xf_info("timing: load %.3f s, fit %.3f s, total %.3f s", app->time_load_s, app->time_fit_s,
		app->time_total_s);
	xf_info("results written to %s", dir);
}

/* plots: a failure is a warning (the numbers are the result, `xpcsfit plot DIR` can
 * redraw them) but it is recorded: parameters.json "outputs" says partial, and so does the
 * last line of run.log */
/* report.html comes after the plots (it embeds them) and before parameters.json, so that
 * a run that fails writing it leaves no parameters.json (a script's first test) */
int xf_outputs_write_rest(const char *dir, int write_plots, xf_outputs_plot_fn draw, void *ctx,
			  xf_outputs_file_fn write_json, xf_outputs_file_fn write_report,
			  xf_error *err)
{
	xf_error plot_err = { 0 };
	xf_plots_outcome plots = XF_PLOTS_SKIPPED;
	if (write_plots) {
		char path[PATH_MAX];
		if (xf_path_join(path, sizeof path, dir, "plots", err) != 0)
			return err->code;
		xf_phase("plots", 0);
		xf_profile_phase("plots");
		plots = XF_PLOTS_WRITTEN;
		if (draw(path, ctx, &plot_err) != 0) {
			plots = XF_PLOTS_FAILED;
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
	xf_json_set_outputs(XF_PLOTS_UNSAID, NULL);
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
