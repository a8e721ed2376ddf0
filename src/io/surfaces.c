/* surfaces.c — the N×N surfaces of one angle that results.h5 and the plots share: the
 * measured map unpacked from its stored triangle, the fitted model map, and the
 * residual map with NaN where nothing was fitted (row/column 0 and the diagonal). */
#include "io/io_internal.h"
#include "io/surfaces.h"
#include "xpcsfit/model.h"

#include <math.h>
#include <string.h>

void xf_io_data_surface(const xf_dataset *ds, int a, double *out)
{
	xf_dataset_full_matrix(ds, a, out);
}

int xf_io_fit_surface(const xf_config *cfg, const xf_dataset *ds, const xf_nlsq_result *res, int a,
		      double *out)
{
	xf_model_grid grid = {
		.mode = res->mode,
		.shear_model = cfg ? cfg->shear_model : XF_SHEAR_HOMODYNE,
		.n_frames = ds->n_frames,
		.dt_s = ds->dt_s,
		.q = ds->q,
		.gap_A = cfg ? cfg->gap_A : 2e6,
	};
	/* the model reads 7 values whatever the mode; static ignores the shear ones */
	double theta[XF_N_PHYS] = { 0 };
	int n_phys = res->n_phys < XF_N_PHYS ? res->n_phys : XF_N_PHYS;
	for (int k = 0; k < n_phys && res->values; k++)
		theta[k] = res->values[k];
	double contrast = res->contrast ? res->contrast[a] : NAN;
	double offset = res->offset ? res->offset[a] : NAN;
	if (xf_model_c2_full(&grid, theta, ds->phi_deg[a], contrast, offset, out) != 0)
		return -1;
	return 0;
}

void xf_io_mask_unfitted(double *m, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		m[k] = NAN;	    /* row 0: t1 = 0 is never fitted */
		m[k * n] = NAN;	    /* column 0 */
		m[k * n + k] = NAN; /* the diagonal */
	}
}
