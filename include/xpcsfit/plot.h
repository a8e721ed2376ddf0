/* plot.h — PNG plots of a result (PLplot, pngcairo device). The model drawn over the
 * data is the method's estimate (estimate.h): its grid, values and per-angle scaling;
 * nothing here reads the config (adr/0044). */
#ifndef XPCSFIT_PLOT_H
#define XPCSFIT_PLOT_H

#include <stddef.h>
#include "xpcsfit/cmc_appendix.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/appendix.h"

/* <plots_dir>/c2_phi_{index:03d}_{phi:+07.2f}deg.png per angle (data | fit | residual,
 * axes t1, t2 in s, colour bars) and overview.png, the fit being the model at est; pages
 * at dpi (XF_KEY_DPI, 0: nominal), the angle pages drawn by `workers` processes (≤ 1:
 * this one; call it with no other threads running, it forks). */
int xf_plot_nlsq_estimate(const char *plots_dir, const xf_dataset *ds, const xf_estimate *est,
			  const xf_nlsq_appendix *app, int dpi, int workers, xf_error *err);

/* File name of angle a's figure: "c2_phi_{a:03d}_{phi:+07.2f}deg.png". */
void xf_plot_angle_name(char *buf, size_t size, int a, double phi_deg);

/* The plots of a CMC result (docs/cmc.md "Plots"): trace and rank plots per parameter,
 * the corner plot of the physical parameters, the per-shard forest plot, and per angle
 * data | posterior-mean fit | residual (the model at est; without ds or est those pages
 * are skipped); pages at dpi. */
int xf_plot_cmc_estimate(const char *plots_dir, const xf_dataset *ds, const xf_estimate *est,
			 const xf_cmc_appendix *app, int dpi, xf_error *err);

/* xpcsfit plot --config: the selected data without a fit into plots_dir (created if
 * missing): c2_phi_{index:03d}_{phi:+07.2f}deg.png per angle (c2 map, c2 along the
 * diagonal, c2 against lag for a few t1) and overview.png; angle pages drawn by `workers`
 * processes (≤ 1: this one; call it with no other threads running). */
int xf_plot_data(const char *plots_dir, const xf_dataset *ds, int workers, xf_error *err);

/* XF_KEY_ANGLE_PAGES: 1 ("all") draws every angle's page; 0 ("auto", the default) the
 * angles of overview.png's lag panel, all of them up to 10 angles, else 10 evenly spread
 * (adr/0059). Process-wide, like XF_KEY_DPI; `xpcsfit plot DIR` draws every angle. */
void xf_plot_set_angle_pages(int all);

/* xpcsfit plot DIR: redraw the plots of a result directory (NLSQ or CMC) from its
 * results.h5: from the stored surfaces, or without them from the data file and the model
 * at the values (adr/0059). CMC: the angle pages, corner.png and overview.png. */
int xf_plot_result_dir(const char *dir, xf_error *err);
/* The same with the data read from data_path (NULL: the file results.h5 names), which
 * must hold the fitted window; with data_path the stored surfaces are not used. */
int xf_plot_result_dir_data(const char *dir, const char *data_path, xf_error *err);

#endif
