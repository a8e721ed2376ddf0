/* surface_sink.h — who else takes each angle's surfaces while results.h5 is written: the
 * plots (plot/plot_stream.c), so that the model is evaluated once per angle for both
 * (adr/0036). io defines the hook, plot fills it: io never calls the drawing code. */
#ifndef XPCSFIT_IO_SURFACE_SINK_H
#define XPCSFIT_IO_SURFACE_SINK_H

#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/nlsq.h"

typedef struct xf_surface_sink {
	/* On the writing thread, in angle order, before angle a is computed: wait until the
	 * sink has room for it (its memory stays bounded). 0: it takes angle a; else it takes
	 * no more angles (the surfaces are written all the same). */
	int (*reserve)(void *ctx, int a);
	/* On a worker thread, concurrently for different angles: angle a's data as its
	 * packed triangle (xf_dataset.c2[a]) and its fitted model as a full N×N map,
	 * row-major */
	void (*take)(void *ctx, int a, const double *data_packed, const double *fit);
	/* On the writing thread, in angle order, once take(a) has returned */
	void (*ready)(void *ctx, int a);
	void *ctx;
} xf_surface_sink;

/* xf_results_write_nlsq_h5 whose surfaces also go to sink (NULL: to no one). With a
 * sink, each angle is computed whole on one thread (its full fitted map in memory, as the
 * plots need it); without, by row chunks. results.h5 is the same bytes either way. */
int xf_io_write_nlsq_h5_sink(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			     const xf_nlsq_result *res, int surface_threads,
			     const xf_surface_sink *sink, xf_error *err);

#endif
