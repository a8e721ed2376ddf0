/* results_h5.h — results.h5 of an NLSQ run from its estimate (adr/0044), with an
 * optional sink that also takes each angle's surfaces (surface/surface_sink.h): the
 * outputs layer hands it the plots' sink, so io never calls the drawing code. */
#ifndef XPCSFIT_IO_RESULTS_H5_H
#define XPCSFIT_IO_RESULTS_H5_H

#include "surface/surface_sink.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/appendix.h"

/* <dir>/results.h5 of an NLSQ fit, its estimate est and appendix app; the surfaces are the
 * model at est (its grid, values, per-angle
 * scaling). plot_dpi: recorded for `xpcsfit plot DIR`. surface_threads 0 skips the
 * surfaces. With a sink (NULL: none), each angle is computed whole on one thread (its full
 * fitted map in memory, as the plots need it); without, by row chunks. results.h5 is the
 * same bytes either way. */
int xf_io_write_nlsq_h5(const char *dir, const xf_dataset *ds, const xf_estimate *est,
			const xf_nlsq_appendix *app, int plot_dpi, int surface_threads,
			const xf_surface_sink *sink, xf_error *err);

#endif
