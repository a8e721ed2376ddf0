/* plot.h — PNG plots of a result (PLplot, pngcairo device). */
#ifndef XPCSFIT_PLOT_H
#define XPCSFIT_PLOT_H

#include <stddef.h>
#include "xpcsfit/cmc.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/nlsq.h"

/* <plots_dir>/c2_phi_{index:03d}_{phi:+07.2f}deg.png per angle (data | fit | residual,
 * axes t1, t2 in s, colour bars) and overview.png. */
int xf_plot_nlsq(const char *plots_dir, const xf_config *cfg, const xf_dataset *ds,
		 const xf_nlsq_result *res, xf_error *err);

/* File name of angle a's figure: "c2_phi_{a:03d}_{phi:+07.2f}deg.png". */
void xf_plot_angle_name(char *buf, size_t size, int a, double phi_deg);

/* The same with the angle PNGs drawn by `workers` processes (≤ 1: this one). Call it
 * with no other threads running (it forks). */
int xf_plot_nlsq_parallel(const char *plots_dir, const xf_config *cfg, const xf_dataset *ds,
			  const xf_nlsq_result *res, int workers, xf_error *err);

/* The plots of a CMC result (docs/cmc.md "Plots"): trace and rank plots per parameter,
 * the corner plot of the physical parameters, the per-shard forest plot, and per angle
 * data | posterior-mean fit | residual. */
int xf_plot_cmc(const char *plots_dir, const xf_config *cfg, const xf_dataset *ds,
		const xf_cmc_result *res, xf_error *err);

/* xpcsfit plot --config: the selected data without a fit into plots_dir (created if
 * missing): c2_phi_{index:03d}_{phi:+07.2f}deg.png per angle (c2 map, c2 along the
 * diagonal, c2 against lag for a few t1) and overview.png; angle pages drawn by `workers`
 * processes (≤ 1: this one; call it with no other threads running). */
int xf_plot_data(const char *plots_dir, const xf_dataset *ds, int workers, xf_error *err);

/* xpcsfit plot DIR: redraw the plots of a result directory from its results.h5. */
int xf_plot_result_dir(const char *dir, xf_error *err);

#endif
