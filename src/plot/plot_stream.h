/* plot_stream.h — the plots of an NLSQ fit drawn from the surfaces that results.h5 is
 * written from (io/surface_sink.h): the model is evaluated once per angle, and the
 * drawing processes start before the surfaces so that drawing and writing overlap
 * (adr/0036). The PNGs are the bytes xf_plot_nlsq draws. */
#ifndef XPCSFIT_PLOT_STREAM_H
#define XPCSFIT_PLOT_STREAM_H

#include "io/surface_sink.h"

typedef struct xf_plot_stream xf_plot_stream;

/* Creates plots_dir and starts the drawing processes (workers ≤ 1: the angles are drawn
 * by the writing thread as they come). NULL with err set when it cannot: draw with
 * xf_plot_nlsq_parallel after results.h5 instead. */
xf_plot_stream *xf_plot_stream_start(const char *plots_dir, const xf_config *cfg,
				     const xf_dataset *ds, const xf_nlsq_result *res, int workers,
				     xf_error *err);
/* the hook to hand xf_io_write_nlsq_h5_sink */
const xf_surface_sink *xf_plot_stream_sink(xf_plot_stream *s);
/* Waits for the drawing processes (progress shown), draws overview.png, frees s.
 * Every angle must have gone through the sink; else (or when a page failed) an error. */
int xf_plot_stream_finish(xf_plot_stream *s, xf_error *err);
/* Stops the drawing processes and frees s (results.h5 failed); NULL is ignored */
void xf_plot_stream_abort(xf_plot_stream *s);

#endif
