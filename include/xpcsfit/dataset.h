/* dataset.h — what a fit consumes: one q ring of an APS 8-ID-I two-time file, its
 * angles, frame times and the stored maps as packed upper triangles (spec/data.md).
 * Reading lives in src/data/. */
#ifndef XPCSFIT_DATASET_H
#define XPCSFIT_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include "xpcsfit/config.h"
#include "xpcsfit/error.h"

typedef enum xf_layout {
	XF_LAYOUT_APS_U = 0,   /* "aps-u": /xpcs/qmap + /xpcs/twotime */
	XF_LAYOUT_APS_OLD = 1, /* "aps-old": /xpcs/dqlist + /exchange/C2T_all */
} xf_layout;

const char *xf_layout_name(xf_layout layout);

typedef struct xf_dataset {
	char *path; /* file read */
	xf_layout layout;
	double q;	      /* Å⁻¹, q of the selected ring (used by the physics) */
	int n_q_rings;	      /* distinct q values in the file */
	int n_phi;	      /* angles kept, ascending */
	double *phi_deg;      /* [n_phi], normalised to (-180, 180] */
	int *map_number;      /* [n_phi] 1-based stored-map counter each angle came from */
	int n_phi_in_ring;    /* angles in the ring before φ filtering */
	long n_frames_stored; /* rows of the stored maps */
	long first_frame;     /* 1-based stored row of frame k = 0 */
	int n_frames;	      /* N: frames kept, t_k = k·dt_s, k = 0..N-1 */
	double dt_s;	      /* s between stored rows */
	char dt_source[160];  /* "config", "file: frame_time × stride × avg = ..." */
	/* c2[a]: packed upper triangle (diagonal included, diagonal-corrected) of angle a,
	 * row-major: element (i, j), i <= j, at xf_packed_index(N, i, j). */
	double **c2;
	size_t n_points; /* fitted points: n_phi · (N−1)(N−2)/2 (i ≥ 1, j > i) */
} xf_dataset;

/* Packed upper-triangle index of (i, j), 0 <= i <= j < n. */
static inline size_t xf_packed_index(size_t n, size_t i, size_t j)
{
	/* row r holds n - r elements; row i starts after sum_{r<i} (n - r) */
	return i * n - (i * (i - 1)) / 2 + (j - i);
}
static inline size_t xf_packed_size(size_t n)
{
	return n * (n + 1) / 2;
}
/* fitted pairs per angle: 1 <= i < j <= n-1 */
static inline size_t xf_fitted_pairs(size_t n)
{
	return n >= 3 ? (n - 1) * (n - 2) / 2 : 0;
}

/* Read `path` (or cfg->data_path when path is NULL), select the q ring, φ range and
 * frame window of cfg. Errors (data.md "Bad input"): XF_ERR_DATA with one line;
 * config-side problems (e.g. dt ≤ 0 in the config, no data path): XF_ERR_CONFIG. */
int xf_dataset_load(const xf_config *cfg, const char *path, xf_dataset *ds, xf_error *err);
void xf_dataset_free(xf_dataset *ds);

/* Full N×N matrix of angle a (row-major), symmetric, from the packed triangle. */
void xf_dataset_full_matrix(const xf_dataset *ds, int a, double *out);

/* Full matrix from a stored triangle (data.md): detects upper/lower/full storage,
 * C = H + Hᵀ, C[i,i] /= 2. In place on an n×n row-major matrix. Returns 0, or 1 with
 * a warning issued when a full map is not symmetric (its upper triangle is used). */
int xf_triangle_to_full(double *m, size_t n, const char *map_name);
/* Diagonal correction (data.md) in place on a full symmetric n×n matrix. */
void xf_diagonal_correct(double *m, size_t n);
/* φ normalised to (-180, 180]. */
double xf_phi_normalise(double phi_deg);

/* xpcsfit simulate */
typedef struct xf_sim_options {
	const char *out_path;
	xf_layout layout; /* APS-U by default */
	int n_phi;
	const double *phi_deg; /* angles in the order the maps are written */
	int n_frames;	       /* N = cfg end_frame or --frames */
	double contrast;       /* 0.3 */
	double offset;	       /* 1.0 */
	double noise_sd;       /* 0.002, additive Gaussian per stored point */
	uint64_t seed;	       /* 1 */
	int lzf;	       /* compress maps with LZF (filter 32000) */
} xf_sim_options;

/* Write a simulated file from cfg (mode, q, dt, gap, values; null → middle of bounds
 * with a warning). Written atomically (temporary name, then rename). */
int xf_simulate_write(const xf_config *cfg, const xf_sim_options *opt, xf_error *err);

#endif
