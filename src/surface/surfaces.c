/* surfaces.c — the N×N surfaces of one angle that results.h5 and the plots share: the
 * measured map unpacked from its stored triangle, the fitted model map on the estimate's
 * grid (at each angle slot's ring q), and the residual map with NaN where nothing was fitted (row/column 0 and the
 * diagonal). */
#include "surface/surfaces.h"
#include "xpcsfit/model.h"

#include <math.h>
#include <string.h>

void xf_surface_data(const xf_dataset *ds, int a, double *out)
{
	xf_dataset_full_matrix(ds, a, out);
}

int xf_surface_fit(const xf_estimate *est, const xf_dataset *ds, int a, double *out)
{
	/* the model reads 7 values whatever the mode; static ignores the shear ones */
	double theta[XF_N_PHYS];
	xf_estimate_theta(est, theta);
	double contrast = est->contrast ? est->contrast[a] : NAN;
	double offset = est->offset ? est->offset[a] : NAN;
	xf_model_grid grid = xf_estimate_grid_at(est, a); /* the slot's ring q (adr/0068) */
	if (xf_model_c2_full(&grid, theta, ds->phi_deg[a], contrast, offset, out) != 0)
		return -1;
	return 0;
}

void xf_surface_mask_unfitted(double *m, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		m[k] = NAN;	    /* row 0: t1 = 0 is never fitted */
		m[k * n] = NAN;	    /* column 0 */
		m[k * n + k] = NAN; /* the diagonal */
	}
}
