/* surfaces.h — per-angle N×N surfaces shared by results.h5 and the plots. */
#ifndef XPCSFIT_IO_SURFACES_H
#define XPCSFIT_IO_SURFACES_H

#include <stddef.h>
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/nlsq.h"

/* Full symmetric N×N data map of angle a (row-major) from its packed triangle. */
void xf_io_data_surface(const xf_dataset *ds, int a, double *out);
/* Fitted c2 of angle a on the N×N grid from res (physical values, per-angle
 * contrast/offset) and cfg's geometry. Returns 0, or -1 on allocation failure. */
int xf_io_fit_surface(const xf_config *cfg, const xf_dataset *ds, const xf_nlsq_result *res, int a,
		      double *out);
/* NaN on row 0, column 0 and the diagonal: the points a fit never sees. */
void xf_io_mask_unfitted(double *m, size_t n);

#endif
