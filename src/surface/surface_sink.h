/* surface_sink.h — who else takes each angle's surfaces while results.h5 is written: the
 * plots (plot/plot_stream.c), so that the model is evaluated once per angle for both
 * (adr/0036). This floor (below io/ and plot/, adr/0044) defines the hook, plot fills
 * it, io calls it and outputs/ connects the two: io never calls the drawing code. */
#ifndef XPCSFIT_SURFACE_SURFACE_SINK_H
#define XPCSFIT_SURFACE_SURFACE_SINK_H

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

#endif
