/* select.h — the selection rules of data.md (internal to src/data/, used by tests):
 * one q ring, φ normalisation and filtering, frame window, dt. */
#ifndef XPCSFIT_DATA_SELECT_H
#define XPCSFIT_DATA_SELECT_H

#include "data/raw.h"
#include "xpcsfit/error.h"
#include "xpcsfit/selection.h"

/* A chosen angle: the raw map it comes from and its normalised φ. */
typedef struct xf_selected_angle {
	int raw_index;	/* index into raw->maps */
	double phi_deg; /* normalised to (-180, 180] */
} xf_selected_angle;

/* q ring nearest to sel's q target (or the only ring when it has none). */
int xf_select_q(const xf_raw_file *raw, const xf_selection *sel, double *q_ring, xf_error *err);
/* The rings that sel's q choice picks (adr/0063), ascending, *rings malloc'ed: one for a
 * single value, every ring for all, each list value's nearest ring (a ring once), the
 * rings within a range. No match: XF_ERR_DATA naming the nearest rings. */
int xf_select_rings(const xf_raw_file *raw, const xf_selection *sel, double **rings, int *n_rings,
		    xf_error *err);
/* The file's rings, ascending, with their map counts, into
 * out[raw->n_maps + raw->n_q_declared]; a ring of the qmap without maps is listed with 0
 * angles. Returns the count, or -1 out of memory. */
int xf_select_ring_table(const xf_raw_file *raw, xf_ring_info *out);
/* 1 when phi (normalised) lies in the range [min, max] after normalisation of the ends;
 * min > max is a wrapped range; a range 360° wide or more holds every angle. */
int xf_phi_in_range(double phi_deg, const xf_phi_range *r);
/* Angles of the ring, ascending, filtered by sel's φ ranges. *out is malloc'ed;
 * *n_in_ring receives the count before filtering. */
int xf_select_angles(const xf_raw_file *raw, const xf_selection *sel, double q_ring,
		     xf_selected_angle **out, int *n_out, int *n_in_ring, xf_error *err);
/* Frame window of sel on n_rows stored rows: 1-based first row and count. */
int xf_select_frames(const xf_selection *sel, long n_rows, long *first_frame, int *n_frames,
		     xf_error *err);
/* dt in s and a sentence saying where it came from. */
int xf_select_dt(const xf_raw_file *raw, const xf_selection *sel, double *dt_s, char *source,
		 size_t source_len, xf_error *err);

#endif
