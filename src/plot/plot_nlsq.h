/* plot_nlsq.h — the plots of an NLSQ result drawn from its estimate (adr/0044): what the
 * outputs layer calls; xf_plot_nlsq / xf_plot_nlsq_parallel (plot.h) build the estimate
 * from a config and call this. */
#ifndef XPCSFIT_PLOT_PLOT_NLSQ_H
#define XPCSFIT_PLOT_PLOT_NLSQ_H

#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/nlsq.h"

/* The angle pages and overview.png of res into plots_dir, the model at est; pages at dpi
 * (plotting.dpi, 0: nominal) drawn by `workers` processes (≤ 1: this one; call it with no
 * other threads running, it forks). */
int xf_plot_nlsq_estimate(const char *plots_dir, const xf_dataset *ds, const xf_nlsq_result *res,
			  const xf_estimate *est, int dpi, int workers, xf_error *err);

#endif
