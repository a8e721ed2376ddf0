/* plot_data.c — `xpcsfit plot --config`: the selected data drawn without a fit, through
 * the same driver as a fit's plots (plot_nlsq.c: one N×N map in memory per worker,
 * forked workers, every PNG written atomically) with the pages of draw_data.c. */
#include "plot/plot_internal.h"
#include "surface/surfaces.h"
#include "xpcsfit/plot.h"

#include <math.h>
#include <string.h>

/* data of angle a as the full N×N map; the "fit" is never drawn: NaN */
static int data_surfaces(void *ctx, int a, double *data, double *fit, xf_error *err)
{
	const xf_dataset *ds = ctx;
	(void)err;
	xf_surface_data(ds, a, data);
	size_t nn = (size_t)ds->n_frames * (size_t)ds->n_frames;
	for (size_t k = 0; k < nn; k++)
		fit[k] = NAN;
	return 0;
}

int xf_plot_data(const char *plots_dir, const xf_dataset *ds, int workers, xf_error *err)
{
	const char *base = ds->path ? strrchr(ds->path, '/') : NULL;
	xf_plot_src src = {
		.n_phi = ds->n_phi,
		.phi_deg = ds->phi_deg,
		.n_frames = ds->n_frames,
		.dt_s = ds->dt_s,
		.q = ds->q,
		.mode_name = "data",
		.status = "-",
		.stop_reason = "-",
		.chi_squared = NAN,
		.reduced_chi_squared = NAN,
		.n_points = (long long)ds->n_points,
		.surfaces = data_surfaces,
		.ctx = (void *)ds,
		.workers = workers,
		.data_only = 1,
		.data_title = base ? base + 1 : ds->path,
	};
	return xf_plot_draw_all(plots_dir, &src, err);
}
