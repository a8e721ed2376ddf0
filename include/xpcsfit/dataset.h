/* dataset.h — what a fit consumes: one q ring of an APS 8-ID-I two-time file, its
 * angles, frame times and the stored maps as packed upper triangles (spec/data.md).
 * Reading lives in src/data/. */
#ifndef XPCSFIT_DATASET_H
#define XPCSFIT_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include "xpcsfit/error.h"
#include "xpcsfit/request.h"
#include "xpcsfit/selection.h"

typedef enum xf_layout {
	XF_LAYOUT_APS_U = 0,   /* "aps-u": /xpcs/qmap + /xpcs/twotime */
	XF_LAYOUT_APS_OLD = 1, /* "aps-old": /xpcs/dqlist + /exchange/C2T_all */
} xf_layout;

const char *xf_layout_name(xf_layout layout);

/* Statistics of one angle's fitted points (1 <= i < j <= N-1) over the whole window,
 * computed while a band is loaded (every map passes through memory whole, one at a time)
 * for what needs every point: the data checks and the quantile starts (adr/0027). */
typedef struct xf_angle_stats {
	double lo, hi, mean;	    /* range and mean */
	double q_offset, q_ceiling; /* raw quantile estimates (NaN: too few points) */
} xf_angle_stats;

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
	/* A band (an MPI rank of an NLSQ run, adr/0027): c2[a] holds only the packed
	 * elements [c2_base, c2_base + c2_len) of the triangle, the rows of the rank's
	 * fitted pairs [pair_first, pair_first + pair_count), the first being (pair_i0,
	 * pair_j0); stats[a] and abs_sum/abs_count then stand for the whole window. The
	 * whole window: band 0, c2_base 0, c2_len the packed size, stats NULL. */
	int band;
	size_t c2_base, c2_len;
	size_t pair_first, pair_count;
	int pair_i0, pair_j0;
	xf_angle_stats *stats;
	double abs_sum;	  /* Σ |c2| over every fitted point, angle by angle, row by row */
	size_t abs_count; /* the points summed */
} xf_dataset;

/* c2 of angle a at packed index idx, which the dataset must hold. */
static inline double xf_dataset_c2(const xf_dataset *ds, int a, size_t idx)
{
	return ds->c2[a][idx - ds->c2_base];
}
/* 1 when the dataset holds packed index idx. */
static inline int xf_dataset_holds(const xf_dataset *ds, size_t idx)
{
	return idx - ds->c2_base < ds->c2_len;
}

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
/* Pairs per block of the likelihood's passes and the MPI split: fixed, independent of
 * the thread count. */
#define XF_PAIRS_PER_BLOCK 4096

/* fitted pairs per angle: 1 <= i < j <= n-1 */
static inline size_t xf_fitted_pairs(size_t n)
{
	return n >= 3 ? (n - 1) * (n - 2) / 2 : 0;
}

/* Read `path` (or sel->data_path when path is NULL), select the q ring, φ range and
 * frame window of sel (built from the config by src/cli/). Errors (data.md "Bad input"):
 * XF_ERR_DATA with one line; config-side problems (e.g. dt ≤ 0 in the config, no data
 * path): XF_ERR_CONFIG. */
int xf_dataset_load(const xf_selection *sel, const char *path, xf_dataset *ds, xf_error *err);
void xf_dataset_free(xf_dataset *ds);
/* Every ring that sel's q choice picks (all, a list, a range: adr/0063), each loaded as
 * xf_dataset_load loads one ring (its own q, angles, φ filtering, window, maps), in
 * ascending q; the file is read once, memory per ring as for one. *rings is malloc'ed,
 * freed with xf_dataset_free_rings. xf_dataset_load itself refuses a choice of several
 * rings (XF_ERR_CONFIG: fitting several rings is not built yet). */
int xf_dataset_load_rings(const xf_selection *sel, const char *path, xf_dataset **rings,
			  int *n_rings, xf_error *err);
void xf_dataset_free_rings(xf_dataset *rings, int n_rings);
/* The rings side by side as one dataset, ring by ring (a joint fit, adr/0066): *slot_q
 * (malloc'ed, [joint->n_phi]) the q of each slot. joint borrows the rings' maps: free it
 * with xf_dataset_free_joined before the rings. XF_ERR_DATA for rings of different frame
 * grids or a band. */
int xf_dataset_join_rings(const xf_dataset *rings, int n_rings, xf_dataset *joint, double **slot_q,
			  xf_error *err);
void xf_dataset_free_joined(xf_dataset *joint);
/* One q ring of a file (validate's listing): its q and the maps (angles) it holds. */
typedef struct xf_ring_info {
	double q;     /* Å⁻¹ */
	int n_angles; /* stored maps of the ring, before φ filtering; 0: a ring of the qmap
		       * that no map holds (never selected) */
} xf_ring_info;
/* The rings of the file at path (or sel->data_path), ascending; *rings malloc'ed. */
int xf_dataset_file_rings(const xf_selection *sel, const char *path, xf_ring_info **rings,
			  int *n_rings, xf_error *err);
/* The q of each ring sel's choice picks (as xf_dataset_load_rings would load them,
 * ascending), the maps not read: a per-ring fit (adr/0065) loads each ring on its own, so
 * that one bad ring fails alone. Every ring must keep an angle after φ filtering (else
 * the error, before any ring is fitted); n_kept (NULL: not wanted) gets the angles each
 * ring keeps. *q and *n_kept malloc'ed. */
int xf_dataset_selected_rings(const xf_selection *sel, const char *path, double **q, int *n_rings,
			      int **n_kept, xf_error *err);
/* Like xf_dataset_load, but keep only the band of rank `rank` of `ranks`: the rows of the
 * fitted pairs of its blocks xf_dist_blocks(⌈pairs / XF_PAIRS_PER_BLOCK⌉, ranks, rank)
 * (a rank may hold none). Every map is still read and checked whole, one at a time, and
 * stats filled (adr/0027). */
int xf_dataset_load_band(const xf_selection *sel, const char *path, int rank, int ranks,
			 xf_dataset *ds, xf_error *err);

/* Statistics of one angle's packed triangle (n frames, whole): range and mean of the
 * fitted points, and Σ|c2| over them added to *abs_sum (in row order) with *abs_count. */
void xf_map_range(const double *c2, size_t n, double *lo, double *hi, double *mean);
void xf_map_abs_sum(const double *c2, size_t n, double *abs_sum, size_t *abs_count);
/* Raw quantile estimates of one angle (nlsq.md): the 10th percentile at long lags and the
 * 90th at short lags; buf holds xf_fitted_pairs(n) doubles. NaN both when there are too
 * few points (XF_QUANTILE_MIN_POINTS). */
#define XF_QUANTILE_MIN_POINTS 100
void xf_map_quantiles(const double *c2, size_t n, double *buf, double *offset, double *ceiling);

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
	int n_frames;	       /* N = the config's end_frame or --frames */
	double contrast;       /* 0.3 */
	double offset;	       /* 1.0 */
	double noise_sd;       /* 0.002, additive Gaussian per stored point */
	uint64_t seed;	       /* 1 */
	int lzf;	       /* compress maps with LZF (filter 32000) */
	int n_q;	       /* rings written (adr/0063); 0: the one ring of sel's q */
	const double *q_per_A; /* [n_q] Å⁻¹, one ring each, the same truth and angles */
} xf_sim_options;

/* Write a simulated file: the model of req (mode, shear model, gap, starts as the truth;
 * a start not given is the middle of its bounds, with a warning) at sel's q (or each of
 * opt's n_q rings, ring-major maps) and dt.
 * Written atomically (temporary name, then rename). */
int xf_simulate_write(const xf_request *req, const xf_selection *sel, const xf_sim_options *opt,
		      xf_error *err);

#endif
