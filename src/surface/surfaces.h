/* surfaces.h — the per-angle N×N surfaces that results.h5 (io/) and the plots (plot/)
 * share: the measured map, the fitted model map on the estimate's grid, and the mask of
 * the points no fit sees. This floor sits below io/ and plot/ (adr/0044). */
#ifndef XPCSFIT_SURFACE_SURFACES_H
#define XPCSFIT_SURFACE_SURFACES_H

#include <stddef.h>
#include "xpcsfit/dataset.h"
#include "xpcsfit/estimate.h"

/* Full symmetric N×N data map of angle a (row-major) from its packed triangle. */
void xf_surface_data(const xf_dataset *ds, int a, double *out);
/* Fitted c2 of angle a on the N×N grid: est's grid and physical values, its per-angle
 * contrast/offset, ds's angle. Returns 0, or -1 on allocation failure. */
int xf_surface_fit(const xf_estimate *est, const xf_dataset *ds, int a, double *out);
/* NaN on row 0, column 0 and the diagonal: the points a fit never sees. */
void xf_surface_mask_unfitted(double *m, size_t n);

#endif
