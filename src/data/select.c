/* select.c — which part of a file is fitted (data.md "Selection"): the q ring nearest
 * to the configured q, or several rings (all, a list, a range: adr/0063; rings are
 * never mixed within one dataset), its angles normalised, filtered
 * and ordered ascending, the frame window with homodyne's clamping, and dt; what to
 * select comes as an xf_selection (selection.h), built from the config by src/cli/. */
#include "data/select.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/size.h"
#include "util/key_names.h"

/* A configured wavevector_q farther than this fraction from every ring is an error
 * (adr/0031, docs/config.md "q and geometry checks"). */
#define XF_Q_TARGET_TOLERANCE 0.05
/* Two angles closer than this (degrees) are the same angle. */
#define XF_PHI_SAME_DEG 1e-9
/* Config and file dt that differ by more than this fraction get a warning. */
#define XF_DT_MISMATCH_FRACTION 0.01
#define XF_MIN_FRAMES		3

static int in_ring(double q, double q_ring);
static int several_rings(const xf_raw_file *raw, const xf_selection *sel, double *q_ring,
			 xf_error *err);

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

/* 1 when the layout declares q (its qmap's q list) but no map holds that ring: no
 * processed bin of it (adr/0063). */
static int declared_empty(const xf_raw_file *raw, double q)
{
	if (raw->indexed)
		return !xf_raw_has_map_near(raw, q);
	xf_raw_visit((size_t)raw->n_maps);
	for (int m = 0; m < raw->n_maps; m++)
		if (in_ring(raw->maps[m].q, q))
			return 0;
	return 1;
}

/* A q the layout declares within the tolerance of want that no map holds (the
 * nearest such), or 0. */
static double declared_without_map(const xf_raw_file *raw, double want)
{
	double found = 0;
	for (size_t k = 0; k < raw->n_q_declared; k++) {
		double q = raw->q_declared[k];
		if (declared_empty(raw, q) && fabs(q - want) <= XF_Q_TARGET_TOLERANCE * want &&
		    (found == 0 || fabs(q - want) < fabs(found - want)))
			found = q;
	}
	return found;
}

/* The ring nearest to want (key names the value in messages): the rule of adr/0031,
 * within XF_Q_TARGET_TOLERANCE of a ring, else an error naming the nearest rings. */
static int match_ring(const xf_raw_file *raw, const char *key, double want, double *q_ring,
		      xf_error *err)
{
	int best = 0, second = -1;
	if (raw->indexed) {
		*q_ring = xf_raw_nearest_q(raw, want);
	} else {
		xf_raw_visit((size_t)raw->n_maps);
		for (int m = 1; m < raw->n_maps; m++)
			if (fabs(raw->maps[m].q - want) < fabs(raw->maps[best].q - want))
				best = m;
		*q_ring = raw->maps[best].q;
	}
	if (fabs(*q_ring - want) <= XF_Q_TARGET_TOLERANCE * want)
		return 0;
	/* an error: one scan for the message */
	/* the next ring the other way round, for the message */
	for (int m = 0; m < raw->n_maps; m++)
		if (!in_ring(raw->maps[m].q, *q_ring) &&
		    (second < 0 || fabs(raw->maps[m].q - want) < fabs(raw->maps[second].q - want)))
			second = m;
	char next[96] = "";
	int rings = raw->indexed ? raw->n_q_rings : xf_raw_count_q_rings(raw);
	if (second >= 0)
		snprintf(next, sizeof next, ", next %.6g 1/A", raw->maps[second].q);
	double empty = declared_without_map(raw, want);
	if (empty > 0)
		return xf_fail(err, XF_ERR_DATA,
			       "%s = %g 1/A matches the q = %.6g ring of the qmap, which has no "
			       "map (no processed bin of it; the nearest rings with maps are "
			       "%.6g 1/A%s), in %s",
			       key, want, empty, *q_ring, next, raw->file_name);
	return xf_fail(err, XF_ERR_DATA,
		       "%s = %g 1/A is %.0f%% from the "
		       "nearest q ring of the file (%.6g 1/A%s; must be within %.0f%% of a ring; "
		       "the file's %d ring%s span %.6g to %.6g 1/A), in %s",
		       key, want, 100.0 * fabs(*q_ring - want) / want, *q_ring, next,
		       100.0 * XF_Q_TARGET_TOLERANCE, rings, rings == 1 ? "" : "s", q_min(raw),
		       q_max(raw), raw->file_name);
}

int xf_select_q(const xf_raw_file *raw, const xf_selection *sel, double *q_ring, xf_error *err)
{
	if (raw->n_maps == 0)
		return xf_fail(err, XF_ERR_DATA, "no map left: every bin is out of range, in %s",
			       raw->file_name);
	if (sel->q.pick != XF_Q_PICK_ONE)
		return several_rings(raw, sel, q_ring, err);
	if (!sel->has_q) {
		int rings = xf_raw_count_q_rings(raw);
		if (rings != 1)
			return xf_fail(err, XF_ERR_CONFIG,
				       XF_KEY_Q
				       " is not set and %s holds %d q rings: set it to choose one",
				       raw->file_name, rings);
		*q_ring = raw->maps[0].q;
		return 0;
	}
	return match_ring(raw, XF_KEY_Q, sel->q_target_per_A, q_ring, err);
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int by_ring_q(const void *a, const void *b)
{
	return by_value(&((const xf_ring_info *)a)->q, &((const xf_ring_info *)b)->q);
}

/* The distinct rings of the file, ascending; each is the q of its first map. */
static int file_rings(const xf_raw_file *raw, double *rings)
{
	if (raw->indexed) {
		memcpy(rings, raw->rings.q, sizeof *rings * (size_t)raw->rings.n);
		xf_raw_visit((size_t)raw->rings.n);
		return raw->rings.n;
	}
	xf_raw_visit((size_t)raw->n_maps * (size_t)raw->n_maps);
	int n = 0;
	for (int m = 0; m < raw->n_maps; m++) {
		int seen = 0;
		for (int k = 0; k < n && !seen; k++)
			seen = in_ring(raw->maps[m].q, rings[k]);
		if (!seen)
			rings[n++] = raw->maps[m].q;
	}
	qsort(rings, (size_t)n, sizeof *rings, by_value);
	return n;
}

int xf_select_ring_table(const xf_raw_file *raw, xf_ring_info *out)
{
	double *q = xf_malloc_array((size_t)(raw->n_maps ? raw->n_maps : 1), sizeof *q);
	if (!q)
		return -1;
	int n = file_rings(raw, q);
	for (int r = 0; r < n; r++) {
		out[r].q = q[r];
		out[r].n_angles = 0;
		if (raw->indexed) { /* ring r's own maps (file_rings kept the index's order) */
			const xf_ring_index *ix = &raw->rings;
			for (int i = ix->start[r]; i < ix->start[r + 1]; i++)
				out[r].n_angles += in_ring(raw->maps[ix->order[i]].q, q[r]);
			xf_raw_visit((size_t)(ix->start[r + 1] - ix->start[r]));
			continue;
		}
		xf_raw_visit((size_t)raw->n_maps);
		for (int m = 0; m < raw->n_maps; m++)
			out[r].n_angles += in_ring(raw->maps[m].q, q[r]);
	}
	free(q);
	/* the qmap's rings without maps, listed with 0 angles (validate shows them), each
	 * once: a declared q with a map near it is that map's ring */
	int with_maps = n;
	for (size_t k = 0; k < raw->n_q_declared; k++) {
		double d = raw->q_declared[k];
		int seen = !declared_empty(raw, d);
		for (int r = with_maps; r < n && !seen; r++)
			seen = in_ring(d, out[r].q);
		if (!seen)
			out[n++] = (xf_ring_info){ d, 0 };
	}
	qsort(out, (size_t)n, sizeof *out, by_ring_q);
	return n;
}

/* The qmap's rings without maps that a choice of every ring (lo..hi: all, or a range)
 * covers: skipped, each named in one warning (adr/0063 addendum) — they cannot be
 * fitted, and failing the run would refuse every `all` of a file with one such ring. */
static void warn_empty_rings(const xf_raw_file *raw, double lo, double hi, const char *choice)
{
	for (size_t k = 0; k < raw->n_q_declared; k++) {
		double q = raw->q_declared[k];
		int dup = 0;
		if (q < lo || q > hi || !declared_empty(raw, q))
			continue; /* first: a ring with maps is not looked for again */
		for (size_t j = 0; j < k && !dup; j++)
			dup = in_ring(raw->q_declared[j], q);
		if (!dup)
			xf_warn(XF_KEY_Q " %s: the q = %.6g ring of the qmap has no map (no "
					 "processed bin of it) and is skipped, "
					 "in %s",
				choice, q, raw->file_name);
	}
}

static void list_values(const double *v, int n, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int k = 0; k < n && used + 32 < len; k++)
		used += (size_t)snprintf(buf + used, len - used, "%s%.6g", k ? ", " : "", v[k]);
	if (used + 32 >= len)
		snprintf(buf + used, len - used, ", …");
}

static int pick_list(const xf_raw_file *raw, const xf_q_choice *c, double *out, int *n,
		     xf_error *err)
{
	char key[96];
	*n = 0;
	for (int k = 0; k < c->n_list; k++) {
		double q;
		int dup = -1;
		snprintf(key, sizeof key, XF_KEY_Q "[%d]", k);
		if (match_ring(raw, key, c->list[k], &q, err))
			return err->code;
		for (int j = 0; j < *n && dup < 0; j++)
			dup = in_ring(out[j], q) ? j : -1;
		if (dup >= 0)
			xf_warn("%s = %g matches the q = %.6g ring that an earlier value matched: "
				"the ring is selected once",
				key, c->list[k], q);
		else
			out[(*n)++] = q;
	}
	return 0;
}

static int pick_range(const xf_raw_file *raw, const xf_q_choice *c, const double *rings,
		      int n_rings, double *out, int *n, xf_error *err)
{
	char below[48] = "none", above[48] = "none";
	*n = 0;
	for (int k = 0; k < n_rings; k++) {
		if (rings[k] >= c->range_min && rings[k] <= c->range_max)
			out[(*n)++] = rings[k];
		else if (rings[k] < c->range_min)
			snprintf(below, sizeof below, "%.6g 1/A", rings[k]);
		else if (!strcmp(above, "none"))
			snprintf(above, sizeof above, "%.6g 1/A", rings[k]);
	}
	if (*n)
		return 0;
	char empty[96] = ""; /* a ring of the qmap in the range that no map holds */
	for (size_t k = 0; k < raw->n_q_declared && !empty[0]; k++) {
		double q = raw->q_declared[k];
		if (q >= c->range_min && q <= c->range_max && declared_empty(raw, q))
			snprintf(empty, sizeof empty,
				 "; the q = %.6g ring of the qmap lies in it but has no map", q);
	}
	return xf_fail(err, XF_ERR_DATA,
		       "no q ring of the file lies in " XF_KEY_Q
		       " {min: %g, max: %g} (nearest rings: %s below, %s above; the "
		       "file's %d ring%s span %.6g to %.6g 1/A%s), in %s",
		       c->range_min, c->range_max, below, above, n_rings, n_rings == 1 ? "" : "s",
		       q_min(raw), q_max(raw), empty, raw->file_name);
}

int xf_select_rings(const xf_raw_file *raw, const xf_selection *sel, double **rings, int *n_rings,
		    xf_error *err)
{
	*rings = NULL;
	*n_rings = 0;
	if (raw->n_maps == 0)
		return xf_fail(err, XF_ERR_DATA, "no map left: every bin is out of range, in %s",
			       raw->file_name);
	double *all = xf_malloc_array((size_t)raw->n_maps, sizeof *all);
	double *out = xf_malloc_array((size_t)raw->n_maps, sizeof *out);
	int n_all = all ? file_rings(raw, all) : 0, n = 0, rc = 0;
	if (!all || !out) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory selecting q rings");
	} else if (sel->q.pick == XF_Q_PICK_ONE) {
		rc = xf_select_q(raw, sel, &out[0], err);
		n = 1;
	} else if (sel->q.pick == XF_Q_PICK_ALL) {
		memcpy(out, all, sizeof *out * (size_t)n_all);
		n = n_all;
		warn_empty_rings(raw, 0.0, INFINITY, "all");
	} else if (sel->q.pick == XF_Q_PICK_LIST) {
		rc = pick_list(raw, &sel->q, out, &n, err);
		qsort(out, (size_t)n, sizeof *out, by_value);
	} else {
		rc = pick_range(raw, &sel->q, all, n_all, out, &n, err);
		if (!rc)
			warn_empty_rings(raw, sel->q.range_min, sel->q.range_max, "range");
	}
	free(all);
	if (rc) {
		free(out);
		return rc;
	}
	*rings = out;
	*n_rings = n;
	return 0;
}

/* A one-ring load (every fit today) under a several-ring choice: fine when the choice
 * comes down to one ring, refused otherwise, before anything is read or written. */
static int several_rings(const xf_raw_file *raw, const xf_selection *sel, double *q_ring,
			 xf_error *err)
{
	double *rings;
	int n;
	char list[256];
	int rc = xf_select_rings(raw, sel, &rings, &n, err);
	if (rc)
		return rc;
	if (n == 1) {
		*q_ring = rings[0];
		free(rings);
		return 0;
	}
	list_values(rings, n, list, sizeof list);
	free(rings);
	return xf_fail(err, XF_ERR_CONFIG,
		       XF_KEY_Q " selects %d q rings (%s 1/A): fitting several rings is not built "
				"yet; select one (a single value), "
				"in %s",
		       n, list, raw->file_name);
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
	int ring = raw->indexed ? xf_raw_ring_of(raw, q_ring) : -1;
	int from = ring >= 0 ? raw->rings.start[ring] : 0;
	int to = ring >= 0 ? raw->rings.start[ring + 1] : raw->indexed ? 0 : raw->n_maps;
	xf_raw_visit((size_t)(to - from));
	for (int i = from; i < to; i++) { /* the ring's maps, or every map without the index */
		int m = ring >= 0 ? raw->rings.order[i] : i;
		if (in_ring(raw->maps[m].q, q_ring)) {
			a[n].raw_index = m;
			a[n++].phi_deg = xf_phi_normalise(raw->maps[m].phi_deg);
		}
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
				"in " XF_KEY_TARGET_RANGES " (available: %s), in %s",
				q_ring, list, raw->file_name);
			free(a);
			return XF_ERR_DATA;
		}
		/* the angles were overwritten only up to `kept` = 0: all n are still there */
		xf_warn("no angle lies in " XF_KEY_TARGET_RANGES
			"; fallback_to_all_angles: keeping all %d (%s)",
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
		xf_warn(XF_KEY_START_FRAME " %ld is below 1: clamped to 1", start);
		start = 1;
	}
	if (start > n_rows)
		return xf_fail(err, XF_ERR_DATA,
			       XF_KEY_START_FRAME " %ld is beyond the %ld stored frames", start,
			       n_rows);
	if (end > n_rows) {
		xf_warn(XF_KEY_END_FRAME " %ld is past the %ld stored frames: "
					 "clamped to %ld",
			end, n_rows, n_rows);
		end = n_rows;
	}
	long n = end - start + 1;
	if (n > XF_WINDOW_FRAMES_MAX)
		return xf_fail(err, XF_ERR_DATA,
			       "frame window of %ld frames (start_frame %ld, end_frame %ld of %ld "
			       "stored) is above the limit of %ld frames: set " XF_KEY_START_FRAME
			       " and end_frame",
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
				       XF_KEY_DT " = %g s is outside %g to %g s, in %s", sel->dt_s,
				       XF_DT_MIN_S, XF_DT_MAX_S,
				       sel->config_path ? sel->config_path : "the config");
		*dt_s = sel->dt_s;
		snprintf(source, source_len, "config");
		if (raw->has_file_dt &&
		    fabs(raw->file_dt_s - sel->dt_s) > XF_DT_MISMATCH_FRACTION * sel->dt_s)
			xf_warn(XF_KEY_DT " = %.9g s differs by more than 1%% from the "
					  "file's %s = %.9g s; using the config's",
				sel->dt_s, raw->file_dt_desc, raw->file_dt_s);
		return 0;
	}
	if (!raw->has_file_dt)
		return xf_fail(err, XF_ERR_CONFIG,
			       "no dt: " XF_KEY_DT " is not set and %s has no frame "
			       "period (%s)",
			       raw->file_name,
			       raw->layout == XF_LAYOUT_APS_U
				       ? "/entry/instrument/detector_1/frame_time"
				       : "/measurement/instrument/detector/exposure_period");
	if (!(raw->file_dt_s >= XF_DT_MIN_S && raw->file_dt_s <= XF_DT_MAX_S))
		return xf_fail(err, XF_ERR_DATA,
			       "dt from the file is %g s (%s), outside %g to %g s: set " XF_KEY_DT
			       ", in %s",
			       raw->file_dt_s, raw->file_dt_desc, XF_DT_MIN_S, XF_DT_MAX_S,
			       raw->file_name);
	*dt_s = raw->file_dt_s;
	snprintf(source, source_len, "file: %s", raw->file_dt_desc);
	xf_info("dt = %.9g s from the file (%s)", *dt_s, raw->file_dt_desc);
	return 0;
}
