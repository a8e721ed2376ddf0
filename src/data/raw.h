/* raw.h — what a layout reader finds in a file before any selection (internal to
 * src/data/): one entry per stored map with the (q, φ) of its bin, the map shape, and
 * the file's frame timing. aps_u.c and aps_old.c fill it; select.c and dataset.c use it. */
#ifndef XPCSFIT_DATA_RAW_H
#define XPCSFIT_DATA_RAW_H

#include <hdf5.h>
#include <stddef.h>
#include "xpcsfit/dataset.h"

#define XF_RAW_PATH_MAX 256

/* Limits and plausibility bounds of data.md / docs/input-formats.md ("Limits", "Refused
 * values"); ADR 0015 gives the reasons for each number. */
/* Frames of one window: it is read as one (N + 2)² block of doubles (34 GB here). */
#define XF_WINDOW_FRAMES_MAX 65536L
/* Declared rows of a stored map: any size HDF5 can declare is fine as long as frame
 * numbers stay exact in a double and a long. */
#define XF_MAP_ROWS_MAX (1L << 52)
/* |C2| of a fitted point: correlations are normalised to about 1; 1e12 is far above
 * any real map and far below the 1e154 whose square overflows χ². */
#define XF_C2_MAGNITUDE_MAX 1e12
/* q of a bin, Å⁻¹: above 0 and at most 100 (a hard X-ray reaches about 10). */
#define XF_Q_MAX 100.0
/* φ of a bin as stored, degrees: |φ| <= 720 covers every convention (0..360, -180..180,
 * -360..360); beyond it the number is not an angle. */
#define XF_PHI_ABS_MAX 720.0
/* stride_frame and avg_frame: whole numbers from 1 to 10^6. */
#define XF_FRAME_FACTOR_MAX 1e6

typedef struct xf_raw_map {
	char path[XF_RAW_PATH_MAX]; /* dataset path of the stored map */
	int map_number;		    /* 1-based position among the stored maps */
	double q;		    /* Å⁻¹ of the map's bin */
	double phi_deg;		    /* φ of the bin as stored (not normalised) */
} xf_raw_map;

/* Bins of one ring share q to this relative precision. */
#define XF_Q_RING_TOLERANCE 1e-6

/* The maps grouped by ring (ring_index.c, adr/0073), built once when a file is read. */
typedef struct xf_ring_index {
	int n;		  /* rings */
	double *q;	  /* [n] ascending: each ring's q, that of its first map in file order */
	int *start;	  /* [n + 1]: ring r's maps are order[start[r] .. start[r + 1]) */
	int *order;	  /* [n_maps] map indices ring by ring, in file order within a ring */
	double *sorted_q; /* [n_maps] every map's q, ascending */
} xf_ring_index;

typedef struct xf_raw_file {
	const char *file_name; /* for messages */
	hid_t file;
	xf_layout layout;
	int n_maps; /* usable maps (out-of-range bins skipped) */
	/* q values the layout declares whether or not a map of them is stored (APS-U's
	 * dynamic_v_list_dim0; NULL for aps-old, whose q list is per map): a ring there
	 * without a map is named when a selected q matches it (adr/0063) */
	double *q_declared;
	size_t n_q_declared;
	xf_raw_map *maps;
	int n_q_rings;	     /* distinct q among the maps (xf_raw_count_q_rings, once) */
	xf_ring_index rings; /* valid when indexed (read_raw); a raw built by hand has none */
	int indexed;
	size_t n_rows;		/* every map is n_rows × n_rows */
	int has_file_dt;	/* frame period found in the file */
	double file_dt_s;	/* frame_time (exposure_period) × stride × avg */
	char file_dt_desc[128]; /* "frame_time × stride × avg = a × b × c" */
} xf_raw_file;

/* Layout by keys (APS-U wins); error naming the keys looked for and the top-level keys. */
int xf_detect_layout(hid_t file, const char *file_name, xf_layout *layout, xf_error *err);
int xf_read_aps_u(xf_raw_file *raw, xf_error *err);
int xf_read_aps_old(xf_raw_file *raw, xf_error *err);
/* Check every map is 2-D, square, equal-sized and at least 3×3; sets raw->n_rows. */
int xf_raw_check_shapes(xf_raw_file *raw, xf_error *err);
/* Every map's q and φ finite and in range (XF_Q_MAX, XF_PHI_ABS_MAX). */
int xf_raw_check_values(const xf_raw_file *raw, xf_error *err);
void xf_raw_free(xf_raw_file *raw);

/* Frame period from the file: period × stride × avg; stride and avg default to 1, a
 * missing period leaves has_file_dt = 0. */
int xf_raw_read_dt(xf_raw_file *raw, const char *period_path, const char *period_name,
		   const char *stride_path, const char *avg_path, xf_error *err);

/* Distinct q values (relative tolerance 1e-6) among the maps, by sorting (m log m); -1
 * when memory is short. read_raw keeps it in n_q_rings. */
int xf_raw_count_q_rings(const xf_raw_file *raw);

/* ring_index.c: index raw's maps by ring (sets rings, indexed, n_q_rings); 0, or -1 when
 * memory is short. Freed by xf_raw_free. */
int xf_raw_index_rings(xf_raw_file *raw);
void xf_raw_index_free(xf_raw_file *raw);
/* With the index: 1 when a map lies within the ring tolerance of q; the q of the map
 * nearest want (raw has maps); the ring holding a map within the tolerance of q, -1 when
 * none. O(log n_maps) each. */
int xf_raw_has_map_near(const xf_raw_file *raw, double q);
double xf_raw_nearest_q(const xf_raw_file *raw, double want);
int xf_raw_ring_of(const xf_raw_file *raw, double q);
/* Map entries and search steps the selection has visited in this process: a count of its
 * work that tests compare across file sizes (tests/test_data_scale.c), never a decision. */
size_t xf_raw_visits(void);
void xf_raw_visit(size_t n);

#endif
