/* select.c — which part of a file is fitted (data.md "Selection"): the one q ring
 * nearest to the configured q (rings are never mixed), its angles normalised, filtered
 * and ordered ascending, the frame window with homodyne's clamping, and dt; what to
 * select comes as an xf_selection (selection.h), built from the config by src/cli/. */
#include "data/select.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/size.h"

/* Bins of one ring share q to this relative precision. */
#define XF_Q_RING_TOLERANCE 1e-6
/* A configured wavevector_q farther than this fraction from every ring is an error
 * (adr/0031, docs/config.md "q and geometry checks"). */
#define XF_Q_TARGET_TOLERANCE 0.05
/* Two angles closer than this (degrees) are the same angle. */
#define XF_PHI_SAME_DEG 1e-9
/* Config and file dt that differ by more than this fraction get a warning. */
#define XF_DT_MISMATCH_FRACTION 0.01
#define XF_MIN_FRAMES		3

static int in_ring(double q, double q_ring);

static double q_min(const xf_raw_file *raw)
{
	double v = raw->maps[0].q;
	for (int m = 1; m < raw->n_maps; m++)
		v = raw->maps[m].q < v ? raw->maps[m].q : v;
	return v;
}

static double q_max(const xf_raw_file *raw)
{
	double v = raw->maps[0].q;
	for (int m = 1; m < raw->n_maps; m++)
		v = raw->maps[m].q > v ? raw->maps[m].q : v;
	return v;
}

int xf_select_q(const xf_raw_file *raw, const xf_selection *sel, double *q_ring, xf_error *err)
{
	if (raw->n_maps == 0)
		return xf_fail(err, XF_ERR_DATA, "no map left: every bin is out of range, in %s",
			       raw->file_name);
	if (!sel->has_q) {
		int rings = xf_raw_count_q_rings(raw);
		if (rings != 1)
			return xf_fail(err, XF_ERR_CONFIG,
				       "analyzer_parameters.scattering.wavevector_q is not set and "
				       "%s holds %d q rings: set it to choose one",
				       raw->file_name, rings);
		*q_ring = raw->maps[0].q;
		return 0;
	}
	int best = 0, second = -1;
	double want = sel->q_target_per_A;
	for (int m = 1; m < raw->n_maps; m++)
		if (fabs(raw->maps[m].q - want) < fabs(raw->maps[best].q - want))
			best = m;
	*q_ring = raw->maps[best].q;
	if (fabs(*q_ring - want) <= XF_Q_TARGET_TOLERANCE * want)
		return 0;
	/* the next ring the other way round, for the message */
	for (int m = 0; m < raw->n_maps; m++)
		if (!in_ring(raw->maps[m].q, *q_ring) &&
		    (second < 0 || fabs(raw->maps[m].q - want) < fabs(raw->maps[second].q - want)))
			second = m;
	char next[96] = "";
	int rings = xf_raw_count_q_rings(raw);
	if (second >= 0)
		snprintf(next, sizeof next, ", next %.6g 1/A", raw->maps[second].q);
	return xf_fail(err, XF_ERR_DATA,
		       "analyzer_parameters.scattering.wavevector_q = %g 1/A is %.0f%% from the "
		       "nearest q ring of the file (%.6g 1/A%s; must be within %.0f%% of a ring; "
		       "the file's %d ring%s span %.6g to %.6g 1/A), in %s",
		       want, 100.0 * fabs(*q_ring - want) / want, *q_ring, next,
		       100.0 * XF_Q_TARGET_TOLERANCE, rings, rings == 1 ? "" : "s", q_min(raw),
		       q_max(raw), raw->file_name);
}

static int in_ring(double q, double q_ring)
{
	return fabs(q - q_ring) <= XF_Q_RING_TOLERANCE * fabs(q_ring);
}

int xf_phi_in_range(double phi_deg, const xf_phi_range *r)
{
	if (r->max_deg - r->min_deg >= 360.0)
		return 1;
	double lo = xf_phi_normalise(r->min_deg), hi = xf_phi_normalise(r->max_deg);
	double p = xf_phi_normalise(phi_deg);
	if (lo <= hi)
		return p >= lo && p <= hi;
	return p >= lo || p <= hi; /* wrapped through ±180 */
}

static int by_phi(const void *a, const void *b)
{
	const xf_selected_angle *x = a, *y = b;
	return (x->phi_deg > y->phi_deg) - (x->phi_deg < y->phi_deg);
}

static int keep_angle(const xf_selection *sel, double phi_deg)
{
	for (int r = 0; r < sel->n_phi_ranges; r++)
		if (xf_phi_in_range(phi_deg, &sel->phi_ranges[r]))
			return 1;
	return 0;
}

static void list_angles(const xf_selected_angle *a, int n, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int k = 0; k < n && used + 32 < len; k++)
		used += (size_t)snprintf(buf + used, len - used, "%s%g", k ? ", " : "",
					 a[k].phi_deg);
	if (used + 32 >= len)
		snprintf(buf + used, len - used, ", …");
}

int xf_select_angles(const xf_raw_file *raw, const xf_selection *sel, double q_ring,
		     xf_selected_angle **out, int *n_out, int *n_in_ring, xf_error *err)
{
	xf_selected_angle *a = xf_malloc_array((size_t)raw->n_maps, sizeof *a);
	int n = 0, kept = 0;
	char list[512];
	*out = NULL;
	*n_out = *n_in_ring = 0;
	if (!a)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory selecting angles");
	for (int m = 0; m < raw->n_maps; m++)
		if (in_ring(raw->maps[m].q, q_ring)) {
			a[n].raw_index = m;
			a[n++].phi_deg = xf_phi_normalise(raw->maps[m].phi_deg);
		}
	qsort(a, (size_t)n, sizeof *a, by_phi);
	for (int k = 1; k < n; k++)
		if (fabs(a[k].phi_deg - a[k - 1].phi_deg) <= XF_PHI_SAME_DEG) {
			xf_fail(err, XF_ERR_DATA,
				"two bins of the q = %g ring have the same φ = %g (maps %s and "
				"%s), "
				"in %s",
				q_ring, a[k].phi_deg, raw->maps[a[k - 1].raw_index].path,
				raw->maps[a[k].raw_index].path, raw->file_name);
			free(a);
			return XF_ERR_DATA;
		}
	*n_in_ring = n;
	if (!sel->phi_filter_enabled) {
		*out = a;
		*n_out = n;
		return 0;
	}
	for (int k = 0; k < n; k++)
		if (keep_angle(sel, a[k].phi_deg))
			a[kept++] = a[k];
	if (kept == 0) {
		list_angles(a, n, list, sizeof list);
		if (!sel->fallback_to_all_angles) {
			xf_fail(err, XF_ERR_DATA,
				"no map left after φ filtering: no angle of the q = %g ring lies "
				"in "
				"phi_filtering.target_ranges (available: %s), in %s",
				q_ring, list, raw->file_name);
			free(a);
			return XF_ERR_DATA;
		}
		/* the angles were overwritten only up to `kept` = 0: all n are still there */
		xf_warn("no angle lies in phi_filtering.target_ranges; fallback_to_all_angles: "
			"keeping all %d (%s)",
			n, list);
		kept = n;
	}
	*out = a;
	*n_out = kept;
	return 0;
}

int xf_select_frames(const xf_selection *sel, long n_rows, long *first_frame, int *n_frames,
		     xf_error *err)
{
	long start = sel->start_frame, end = sel->end_frame;
	if (end == -1)
		end = n_rows;
	if (start < 1) {
		xf_warn("analyzer_parameters.start_frame %ld is below 1: clamped to 1", start);
		start = 1;
	}
	if (start > n_rows)
		return xf_fail(
			err, XF_ERR_DATA,
			"analyzer_parameters.start_frame %ld is beyond the %ld stored frames",
			start, n_rows);
	if (end > n_rows) {
		xf_warn("analyzer_parameters.end_frame %ld is past the %ld stored frames: "
			"clamped to %ld",
			end, n_rows, n_rows);
		end = n_rows;
	}
	long n = end - start + 1;
	if (n > XF_WINDOW_FRAMES_MAX)
		return xf_fail(err, XF_ERR_DATA,
			       "frame window of %ld frames (start_frame %ld, end_frame %ld of %ld "
			       "stored) is above the limit of %ld frames: set "
			       "analyzer_parameters.start_frame and end_frame",
			       n, start, end, n_rows, XF_WINDOW_FRAMES_MAX);
	if (n < XF_MIN_FRAMES)
		return xf_fail(err, XF_ERR_DATA,
			       "fewer than %d frames left: start_frame %ld, end_frame %ld of %ld "
			       "stored frames",
			       XF_MIN_FRAMES, start, end, n_rows);
	*first_frame = start;
	*n_frames = (int)n;
	return 0;
}

int xf_select_dt(const xf_raw_file *raw, const xf_selection *sel, double *dt_s, char *source,
		 size_t source_len, xf_error *err)
{
	if (sel->has_dt) {
		if (!(sel->dt_s >= XF_DT_MIN_S && sel->dt_s <= XF_DT_MAX_S))
			return xf_fail(err, XF_ERR_CONFIG,
				       "analyzer_parameters.dt = %g s is outside %g to %g s, in %s",
				       sel->dt_s, XF_DT_MIN_S, XF_DT_MAX_S,
				       sel->config_path ? sel->config_path : "the config");
		*dt_s = sel->dt_s;
		snprintf(source, source_len, "config");
		if (raw->has_file_dt &&
		    fabs(raw->file_dt_s - sel->dt_s) > XF_DT_MISMATCH_FRACTION * sel->dt_s)
			xf_warn("analyzer_parameters.dt = %.9g s differs by more than 1%% from the "
				"file's %s = %.9g s; using the config's",
				sel->dt_s, raw->file_dt_desc, raw->file_dt_s);
		return 0;
	}
	if (!raw->has_file_dt)
		return xf_fail(err, XF_ERR_CONFIG,
			       "no dt: analyzer_parameters.dt is not set and %s has no frame "
			       "period (%s)",
			       raw->file_name,
			       raw->layout == XF_LAYOUT_APS_U
				       ? "/entry/instrument/detector_1/frame_time"
				       : "/measurement/instrument/detector/exposure_period");
	if (!(raw->file_dt_s >= XF_DT_MIN_S && raw->file_dt_s <= XF_DT_MAX_S))
		return xf_fail(err, XF_ERR_DATA,
			       "dt from the file is %g s (%s), outside %g to %g s: set "
			       "analyzer_parameters.dt, in %s",
			       raw->file_dt_s, raw->file_dt_desc, XF_DT_MIN_S, XF_DT_MAX_S,
			       raw->file_name);
	*dt_s = raw->file_dt_s;
	snprintf(source, source_len, "file: %s", raw->file_dt_desc);
	xf_info("dt = %.9g s from the file (%s)", *dt_s, raw->file_dt_desc);
	return 0;
}
