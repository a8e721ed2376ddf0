/* outputs_internal.h — what the two methods' result directories share (adr/0044): the
 * order of the files after results.h5 (plots, report.html, parameters.json, run.log
 * last) and the version line of run.log. */
#ifndef XPCSFIT_OUTPUTS_INTERNAL_H
#define XPCSFIT_OUTPUTS_INTERNAL_H

#include "xpcsfit/error.h"
#include "xpcsfit/appendix.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/outputs.h"

/* draws the plots into plots_dir; a failure is a warning (recorded, not fatal) */
typedef int (*xf_outputs_plot_fn)(const char *plots_dir, void *ctx, xf_error *err);
/* writes one file of dir (report.html, parameters.json) */
typedef int (*xf_outputs_file_fn)(const char *dir, void *ctx, int with_plots, xf_error *err);

/* run.log's versions line and the NLSQ timing lines */
void xf_outputs_log_nlsq(const char *dir, const xf_estimate *est, const xf_nlsq_appendix *app);
/* plots (when write_plots), report.html, parameters.json, run.log last */
int xf_outputs_write_rest(const char *dir, int write_plots, xf_outputs_plot_fn draw, void *ctx,
			  xf_outputs_file_fn write_json, xf_outputs_file_fn write_report,
			  xf_error *err);

#endif
