/* surface_chunks.c — compute and compress one chunk of the result surfaces
 * (surface_chunks.h). Runs on worker threads: touches no HDF5 state. */
#include "surface/surface_chunks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "xpcsfit/model.h"

/* HDF5's shuffle filter: byte b of element i goes to b·n + i. */
static void shuffle_floats(const float *src, size_t n, unsigned char *dst)
{
	const unsigned char *s = (const unsigned char *)src;
	for (size_t i = 0; i < n; i++)
		for (size_t b = 0; b < sizeof(float); b++)
			dst[b * n + i] = s[i * sizeof(float) + b];
}

/* A byte plane is stored rather than deflated when its byte entropy is at least this
 * (bits per byte): Huffman codes would save at most 5 % of it, and deflating noise costs
 * as much as deflating anything else. */
#define XF_PLANE_STORE_BITS 7.6
#define XF_PLANE_SAMPLE	    8

/* The order-0 entropy of a byte plane in bits per byte (a function of the bytes only: the
 * same choice on every thread). */
static double plane_entropy(const unsigned char *p, size_t n)
{
	/* every 8th byte (32 768 of a 262-row chunk of 1000 frames: the estimate is within
	 * 0.02 bits) */
	size_t count[256] = { 0 }, taken = 0;
	for (size_t i = 0; i < n; i += XF_PLANE_SAMPLE, taken++)
		count[p[i]]++;
	double h = 0.0;
	for (int b = 0; b < 256; b++)
		if (count[b])
			h -= (double)count[b] * log2((double)count[b] / (double)taken);
	return taken ? h / (double)taken : 0.0;
}

/* A zlib stream as HDF5's shuffle + deflate filters write it, one byte plane at a time:
 * planes of sign, exponent and high mantissa (runs) with the run-length strategy (Z_RLE:
 * matches at distance one only), planes of noise (the low mantissa; every plane of a
 * residual but the first) as stored blocks (deflate level 0, switched within the stream
 * by deflateParams). Any inflater reads it; the choice depends on the bytes only
 * (adr/0036). */
static int deflate_floats(const float *v, size_t n, int level, unsigned char *scratch,
			  unsigned char **out, size_t *out_size)
{
	uLong in = (uLong)(n * sizeof(float)), bound = compressBound(in) + 64;
	*out = malloc(bound);
	if (!*out)
		return -1;
	shuffle_floats(v, n, scratch);
	z_stream z;
	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, level, Z_DEFLATED, MAX_WBITS, 8, Z_RLE) != Z_OK)
		return -1;
	z.next_out = *out;
	z.avail_out = (uInt)bound;
	int st = Z_OK, cur = level;
	for (size_t b = 0; b < sizeof(float) && st == Z_OK; b++) {
		unsigned char *plane = scratch + b * n;
		int want = plane_entropy(plane, n) >= XF_PLANE_STORE_BITS ? 0 : level;
		if (want != cur) {
			st = deflateParams(&z, want, want ? Z_RLE : Z_DEFAULT_STRATEGY);
			cur = want;
		}
		z.next_in = plane;
		z.avail_in = (uInt)n;
		if (st == Z_OK)
			st = deflate(&z, b + 1 == sizeof(float) ? Z_FINISH : Z_NO_FLUSH);
	}
	*out_size = z.total_out;
	deflateEnd(&z);
	return st == Z_STREAM_END ? 0 : -1;
}

int xf_surface_chunk_from(const xf_dataset *ds, const double *fit, int deflate_level,
			  xf_surface_chunk *c)
{
	size_t n = (size_t)ds->n_frames, m = c->chunk_rows * n;
	int a = c->angle;
	float *surf = malloc(sizeof(float) * m * XF_N_SURFACES);
	unsigned char *scratch = malloc(sizeof(float) * m);
	c->failed = 1;
	if (!surf || !scratch)
		goto done;
	float *data_f = surf, *fit_f = surf + m, *res_f = surf + 2 * m;
	size_t filled = (c->row1 - c->row0) * n;
	for (int s = 0; s < XF_N_SURFACES; s++) /* padding rows of a short last chunk */
		for (size_t k = filled; k < m; k++)
			surf[(size_t)s * m + k] = NAN;
	const double *packed = ds->c2[a];
	for (size_t i = c->row0; i < c->row1; i++) {
		size_t row = (i - c->row0) * n, idx = i; /* packed (0, i) */
		const double *f = fit + row;
		for (size_t j = 0; j < n; j++) {
			/* (j, i) below the diagonal: rows of the triangle apart; from it on: row i */
			double d = packed[idx];
			idx += j < i ? n - j - 1 : 1;
			data_f[row + j] = (float)d;
			fit_f[row + j] = (float)f[j];
			res_f[row + j] = (float)(d - f[j]);
		}
		/* nothing is fitted on row/column 0 and the diagonal */
		res_f[row] = NAN;
		res_f[row + i] = NAN;
		if (i == 0)
			for (size_t j = 0; j < n; j++)
				res_f[row + j] = NAN;
	}
	for (int s = 0; s < XF_N_SURFACES; s++)
		if (deflate_floats(surf + (size_t)s * m, m, deflate_level, scratch, &c->bytes[s],
				   &c->size[s]))
			goto done;
	c->failed = 0;
done:
	free(surf);
	free(scratch);
	return c->failed ? -1 : 0;
}

int xf_surface_chunk_compute(const xf_estimate *est, const xf_dataset *ds, int deflate_level,
			     xf_surface_chunk *c)
{
	size_t n = (size_t)ds->n_frames;
	int a = c->angle;
	double *fit = malloc(sizeof(double) * (c->row1 - c->row0) * n);
	c->failed = 1;
	if (!fit)
		return -1;
	double theta[XF_N_PHYS];
	xf_estimate_theta(est, theta);
	xf_model_grid grid = xf_estimate_grid_at(est, a); /* the slot's ring q */
	int rc = xf_model_c2_rows(&grid, theta, ds->phi_deg[a], est->contrast[a], est->offset[a],
				  (int)c->row0, (int)c->row1, fit);
	if (rc == 0)
		rc = xf_surface_chunk_from(ds, fit, deflate_level, c);
	free(fit);
	return rc ? -1 : 0;
}

void xf_surface_chunk_free(xf_surface_chunk *c)
{
	for (int s = 0; s < XF_N_SURFACES; s++) {
		free(c->bytes[s]);
		c->bytes[s] = NULL;
	}
}
