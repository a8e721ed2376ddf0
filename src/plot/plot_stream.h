/* plot_stream.h — the plots of an NLSQ fit drawn from the surfaces that results.h5 is
 * written from (surface/surface_sink.h): the model is evaluated once per angle, and the
 * drawing processes start before the surfaces so that drawing and writing overlap
 * (adr/0036). The PNGs are the bytes xf_plot_nlsq draws. */
#ifndef XPCSFIT_PLOT_STREAM_H
#define XPCSFIT_PLOT_STREAM_H

#include "surface/surface_sink.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/appendix.h"

typedef struct xf_plot_stream xf_plot_stream;

/* Creates plots_dir and starts the drawing processes (workers ≤ 1: the angles are drawn
 * by the writing thread as they come). NULL with err set when it cannot: draw with
 * xf_plot_nlsq_estimate after results.h5 instead. The model is est's; pages at dpi. */
xf_plot_stream *xf_plot_stream_start(const char *plots_dir, const xf_dataset *ds,
				     const xf_estimate *est, const xf_nlsq_appendix *app, int dpi,
				     int workers, xf_error *err);
/* the hook to hand xf_io_write_nlsq_h5 (io/results_h5.h) */
const xf_surface_sink *xf_plot_stream_sink(xf_plot_stream *s);
/* Waits for the drawing processes (progress shown), draws overview.png, frees s.
 * Every angle must have gone through the sink; else (or when a page failed) an error. */
int xf_plot_stream_finish(xf_plot_stream *s, xf_error *err);
/* Stops the drawing processes and frees s (results.h5 failed); NULL is ignored */
void xf_plot_stream_abort(xf_plot_stream *s);

#endif
