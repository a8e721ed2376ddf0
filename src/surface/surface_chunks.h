/* surface_chunks.h — one HDF5 chunk of the three result surfaces (data, fit, residuals)
 * of one angle, computed and compressed off the HDF5 thread so that the chunks of
 * several angles can be prepared in parallel and written in a fixed order. */
#ifndef XPCSFIT_SURFACE_SURFACE_CHUNKS_H
#define XPCSFIT_SURFACE_SURFACE_CHUNKS_H

#include <stddef.h>
#include "xpcsfit/dataset.h"
#include "xpcsfit/estimate.h"

enum { XF_SURF_DATA = 0, XF_SURF_FIT, XF_SURF_RESIDUALS, XF_N_SURFACES };

typedef struct xf_surface_chunk {
	int angle;	   /* angle index */
	size_t row0, row1; /* rows of the N×N map in this chunk (row1 ≤ N) */
	size_t chunk_rows; /* rows of a full chunk: a short last chunk is padded with NaN */
	unsigned char *bytes[XF_N_SURFACES]; /* float32, byte-shuffled, zlib-deflated */
	size_t size[XF_N_SURFACES];
	int failed; /* allocation or model failure */
} xf_surface_chunk;

/* Fill c->bytes with the chunk's three surfaces, filtered exactly as HDF5's shuffle +
 * deflate(level) pipeline would (so H5Dwrite_chunk can store them with filter mask 0).
 * The fit is the model at est (its grid, values and per-angle scaling). Returns 0 or −1. */
int xf_surface_chunk_compute(const xf_estimate *est, const xf_dataset *ds, int deflate_level,
			     xf_surface_chunk *c);
/* The same from the chunk's rows of the fitted map, computed already (fit: rows
 * row0..row1 of the N×N map, row-major): the model is not evaluated again. */
int xf_surface_chunk_from(const xf_dataset *ds, const double *fit, int deflate_level,
			  xf_surface_chunk *c);
void xf_surface_chunk_free(xf_surface_chunk *c);

#endif
