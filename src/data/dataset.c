/* dataset.c — xf_dataset_load: open an APS file, read its layout, select one q ring (or,
 * xf_dataset_load_rings, each of several rings as its own dataset: adr/0063), the
 * angles, the frame window and dt that an xf_selection asks for (selection.h; never the
 * config), and store each kept map as a packed upper triangle. Only the frame window of each map is read (a hyperslab), one map at a time, so memory
 * and time follow the window, never the declared map. */
#include "xpcsfit/dataset.h"

#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include "data/h5util.h"
#include "data/raw.h"
#include "data/select.h"
#include "util/profile.h"
#include "util/size.h"
#include "xpcsfit/dist.h"
#include "util/key_names.h"

static int read_raw(const char *path, xf_raw_file *raw, xf_error *err)
{
	memset(raw, 0, sizeof *raw);
	raw->file = -1;
	raw->file_name = path;
	int rc = xf_h5_open_read(path, &raw->file, err);
	if (!rc)
		rc = xf_detect_layout(raw->file, path, &raw->layout, err);
	if (!rc)
		rc = raw->layout == XF_LAYOUT_APS_U ? xf_read_aps_u(raw, err)
						    : xf_read_aps_old(raw, err);
	if (!rc)
		rc = xf_raw_check_shapes(raw, err);
	if (!rc)
		rc = xf_raw_check_values(raw, err);
	if (!rc && xf_raw_index_rings(raw))
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
	return rc;
}

/* Count non-finite values in the fitted part of the window (rows 1.., j > i) and in the
 * rest of the block's upper triangle (diagonal, t = 0 row, the rows read around the
 * window). The block is n × n; the window starts at row `first` of it. */
static void count_non_finite(const double *m, size_t n, size_t first, size_t n_win, size_t *fitted,
			     size_t *elsewhere)
{
	*fitted = *elsewhere = 0;
	for (size_t r = 0; r < n; r++)
		for (size_t c = r; c < n; c++) {
			if (isfinite(m[r * n + c]))
				continue;
			int in_win = r >= first && c < first + n_win;
			if (in_win && r > first && c > r)
				(*fitted)++;
			else
				(*elsewhere)++;
		}
}

/* The fitted points of one map must be usable (data.md, "Refused values"): every one
 * within the plausibility limit, and not all equal (a map with no variance carries no
 * information on any parameter). Locations are named in 1-based stored frames. */
static int check_fitted_values(const double *p, size_t nw, long first_frame, const xf_raw_map *rm,
			       double phi_deg, const char *file_name, xf_error *err)
{
	double lo = INFINITY, hi = -INFINITY;
	size_t pairs = xf_fitted_pairs(nw);
	for (size_t i = 1; i < nw; i++)
		for (size_t j = i + 1; j < nw; j++) {
			double v = p[xf_packed_index(nw, i, j)];
			if (fabs(v) > XF_C2_MAGNITUDE_MAX)
				return xf_fail(
					err, XF_ERR_DATA,
					"value %.6g at frames (t1, t2) = (%ld, %ld) of map %s "
					"(φ = %g) is beyond the plausibility limit |C2| <= %g, "
					"in %s",
					v, first_frame + (long)i, first_frame + (long)j, rm->path,
					phi_deg, XF_C2_MAGNITUDE_MAX, file_name);
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
		}
	if (pairs >= 2 && lo == hi)
		return xf_fail(err, XF_ERR_DATA,
			       "map %s (φ = %g) has no variance: every fitted point of frames %ld "
			       "to %ld equals %g, in %s",
			       rm->path, phi_deg, first_frame, first_frame + (long)nw - 1, lo,
			       file_name);
	return 0;
}

/* A band load (adr/0027): the whole-window statistics of angle a from its triangle, then
 * only the band's elements kept. */
static int keep_band(xf_dataset *ds, int a, xf_error *err)
{
	size_t nw = (size_t)ds->n_frames;
	const double *p = ds->c2[a];
	xf_angle_stats *st = &ds->stats[a];
	double *buf = NULL;
	if (xf_fitted_pairs(nw) >= XF_QUANTILE_MIN_POINTS) {
		buf = xf_malloc_array(xf_fitted_pairs(nw), sizeof *buf);
		if (!buf)
			return xf_fail(err, XF_ERR_NOMEM, "out of memory loading %s", ds->path);
	}
	xf_map_range(p, nw, &st->lo, &st->hi, &st->mean);
	xf_map_abs_sum(p, nw, &ds->abs_sum, &ds->abs_count);
	xf_map_quantiles(p, nw, buf, &st->q_offset, &st->q_ceiling);
	free(buf);
	double *b = xf_malloc_array(ds->c2_len ? ds->c2_len : 1, sizeof *b);
	if (!b)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory loading %s", ds->path);
	if (ds->c2_len)
		memcpy(b, p + ds->c2_base, sizeof *b * ds->c2_len);
	free(ds->c2[a]);
	ds->c2[a] = b;
	return 0;
}

/* The band of rank of ranks: the fitted pairs of its blocks and the packed elements from
 * the first to the last of them. */
static void set_band(xf_dataset *ds, int rank, int ranks)
{
	size_t n = (size_t)ds->n_frames, n_pairs = xf_fitted_pairs(n);
	int n_blocks = (int)((n_pairs + XF_PAIRS_PER_BLOCK - 1) / XF_PAIRS_PER_BLOCK);
	int first, count;
	xf_dist_blocks(n_blocks, ranks, rank, &first, &count);
	size_t p0 = (size_t)first * XF_PAIRS_PER_BLOCK;
	size_t p1 = (size_t)(first + count) * XF_PAIRS_PER_BLOCK;
	p1 = p1 < n_pairs ? p1 : n_pairs;
	ds->band = 1;
	ds->c2_base = ds->c2_len = 0;
	ds->pair_first = p0;
	ds->pair_count = p1 > p0 ? p1 - p0 : 0;
	ds->pair_i0 = ds->pair_j0 = 0;
	if (!ds->pair_count)
		return;
	size_t lo = 0, hi = 0, pair = 0;
	for (size_t i = 1; i + 1 < n; i++) {
		size_t row = n - 1 - i; /* pairs (i, i+1..n−1) */
		if (p0 >= pair && p0 < pair + row) {
			ds->pair_i0 = (int)i;
			ds->pair_j0 = (int)(i + 1 + p0 - pair);
			lo = xf_packed_index(n, i, i + 1 + p0 - pair);
		}
		if (p1 - 1 >= pair && p1 - 1 < pair + row)
			hi = xf_packed_index(n, i, i + 1 + (p1 - 1 - pair)) + 1;
		pair += row;
	}
	ds->c2_base = lo;
	ds->c2_len = hi - lo;
}

/* Read the window of one map as the block of rows [lo, hi): the window plus one frame
 * on each side where the map has it, which the diagonal correction of the window's end
 * frames reads (data.md), so results equal those of a whole-map read. */
static int load_map(const xf_raw_file *raw, const xf_raw_map *rm, xf_dataset *ds, int a,
		    double *buf, xf_error *err)
{
	size_t n = raw->n_rows, first = (size_t)ds->first_frame - 1, nw = (size_t)ds->n_frames;
	size_t lo = first > 0 ? first - 1 : 0, hi = first + nw + 1 < n ? first + nw + 1 : n;
	size_t nb = hi - lo, off = first - lo;
	size_t bad_fit, bad_other;
	int rc = xf_h5_read_block(raw->file, raw->file_name, rm->path, lo, nb, buf, err);
	if (rc)
		return rc;
	xf_triangle_to_full(buf, nb, rm->path);
	count_non_finite(buf, nb, off, nw, &bad_fit, &bad_other);
	if (bad_fit)
		return xf_fail(err, XF_ERR_DATA,
			       "%zu NaN or Inf values among the points to be fitted of map %s "
			       "(φ = %g), in %s",
			       bad_fit, rm->path, ds->phi_deg[a], raw->file_name);
	if (bad_other)
		xf_warn("map %s holds %zu NaN or Inf values outside the fitted points "
			"(diagonal, t = 0 row or next to the frame window)",
			rm->path, bad_other);
	xf_diagonal_correct(buf, nb);
	double *p = xf_malloc_array(xf_packed_size(nw), sizeof *p);
	if (!p)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory storing map %s", rm->path);
	for (size_t i = 0; i < nw; i++)
		for (size_t j = i; j < nw; j++)
			p[xf_packed_index(nw, i, j)] = buf[(off + i) * nb + off + j];
	ds->c2[a] = p;
	rc = check_fitted_values(p, nw, ds->first_frame, rm, ds->phi_deg[a], raw->file_name, err);
	return rc ? rc : ds->band ? keep_band(ds, a, err) : 0;
}

static int fill(const xf_selection *selection, const xf_raw_file *raw, int rank, int ranks,
		xf_dataset *ds, xf_error *err)
{
	xf_selected_angle *sel = NULL;
	double *buf = NULL;
	xf_profile_phase("select");
	int rc = xf_select_q(raw, selection, &ds->q, err);
	if (!rc)
		rc = xf_select_angles(raw, selection, ds->q, &sel, &ds->n_phi, &ds->n_phi_in_ring,
				      err);
	if (!rc)
		rc = xf_select_frames(selection, (long)raw->n_rows, &ds->first_frame, &ds->n_frames,
				      err);
	if (!rc)
		rc = xf_select_dt(raw, selection, &ds->dt_s, ds->dt_source, sizeof ds->dt_source,
				  err);
	xf_profile_phase("load");
	if (rc)
		goto out;
	ds->n_q_rings = raw->n_q_rings;
	ds->n_frames_stored = (long)raw->n_rows;
	ds->phi_deg = xf_calloc_array((size_t)ds->n_phi, sizeof *ds->phi_deg);
	ds->map_number = xf_calloc_array((size_t)ds->n_phi, sizeof *ds->map_number);
	ds->c2 = xf_calloc_array((size_t)ds->n_phi, sizeof *ds->c2);
	ds->c2_len = xf_packed_size((size_t)ds->n_frames);
	if (ranks > 0) {
		set_band(ds, rank, ranks);
		ds->stats = xf_calloc_array((size_t)ds->n_phi, sizeof *ds->stats);
		if (!ds->stats) {
			rc = xf_fail(err, XF_ERR_NOMEM, "out of memory loading %s", raw->file_name);
			goto out;
		}
	}
	/* one block (window + a frame each side) at a time; the window size is bounded by
	 * xf_select_frames, the product is checked all the same */
	size_t nb = (size_t)ds->n_frames + 2 < raw->n_rows ? (size_t)ds->n_frames + 2 : raw->n_rows;
	size_t block;
	buf = xf_size_mul(nb, nb, &block) == 0 ? xf_malloc_array(block, sizeof *buf) : NULL;
	if (!ds->phi_deg || !ds->map_number || !ds->c2 || !buf) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory loading %s", raw->file_name);
		goto out;
	}
	for (int a = 0; a < ds->n_phi && !rc; a++) {
		const xf_raw_map *rm = &raw->maps[sel[a].raw_index];
		ds->phi_deg[a] = sel[a].phi_deg;
		ds->map_number[a] = rm->map_number;
		rc = load_map(raw, rm, ds, a, buf, err);
	}
	ds->n_points = (size_t)ds->n_phi * xf_fitted_pairs((size_t)ds->n_frames);
out:
	free(sel);
	free(buf);
	return rc;
}

/* the file to read: --data, else the config's; NULL when neither names one */
static const char *data_path(const xf_selection *selection, const char *path)
{
	if (!path)
		path = selection->data_path;
	return path && path[0] ? path : NULL;
}

static int no_data_file(xf_error *err)
{
	return xf_fail(err, XF_ERR_CONFIG,
		       "no data file: set " XF_KEY_FILE_PATH
		       " (or data_folder_path and data_file_name) in the config, or pass --data");
}

static int load(const xf_selection *selection, const char *path, int rank, int ranks,
		xf_dataset *ds, xf_error *err)
{
	xf_raw_file raw;
	memset(ds, 0, sizeof *ds);
	xf_h5_quiet();
	path = data_path(selection, path);
	if (!path)
		return no_data_file(err);
	ds->path = strdup(path);
	int rc = ds->path ? read_raw(path, &raw, err)
			  : xf_fail(err, XF_ERR_NOMEM, "out of memory loading %s", path);
	if (!rc) {
		ds->layout = raw.layout;
		rc = fill(selection, &raw, rank, ranks, ds, err);
	}
	if (ds->path)
		xf_raw_free(&raw);
	if (rc)
		xf_dataset_free(ds);
	return rc;
}

int xf_dataset_load(const xf_selection *selection, const char *path, xf_dataset *ds, xf_error *err)
{
	return load(selection, path, 0, 0, ds, err);
}

int xf_dataset_load_band(const xf_selection *selection, const char *path, int rank, int ranks,
			 xf_dataset *ds, xf_error *err)
{
	return load(selection, path, rank, ranks < 1 ? 1 : ranks, ds, err);
}

/* Ring r of the rings chosen: today's one-ring load with the ring's exact q. */
static int load_ring(const xf_selection *selection, const xf_raw_file *raw, const char *path,
		     double q_ring, xf_dataset *ds, xf_error *err)
{
	xf_selection one = *selection;
	memset(ds, 0, sizeof *ds);
	one.q.pick = XF_Q_PICK_ONE;
	one.has_q = 1;
	one.q_target_per_A = q_ring;
	ds->path = strdup(path);
	ds->layout = raw->layout;
	if (!ds->path)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory loading %s", path);
	return fill(&one, raw, 0, 0, ds, err);
}

int xf_dataset_load_rings(const xf_selection *selection, const char *path, xf_dataset **rings,
			  int *n_rings, xf_error *err)
{
	xf_raw_file raw;
	double *q = NULL;
	int n = 0, done = 0;
	*rings = NULL;
	*n_rings = 0;
	xf_h5_quiet();
	path = data_path(selection, path);
	if (!path)
		return no_data_file(err);
	int rc = read_raw(path, &raw, err);
	if (!rc)
		rc = xf_select_rings(&raw, selection, &q, &n, err);
	xf_dataset *ds = rc ? NULL : xf_calloc_array((size_t)n, sizeof *ds);
	if (!rc && !ds)
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory loading %s", path);
	while (!rc && done < n) {
		rc = load_ring(selection, &raw, path, q[done], &ds[done], err);
		done++; /* a ring that failed half-loaded is freed with the rest */
	}
	xf_raw_free(&raw);
	free(q);
	if (rc) {
		for (int r = 0; r < done; r++)
			xf_dataset_free(&ds[r]);
		free(ds);
		return rc;
	}
	*rings = ds;
	*n_rings = n;
	return 0;
}

int xf_dataset_file_rings(const xf_selection *selection, const char *path, xf_ring_info **rings,
			  int *n_rings, xf_error *err)
{
	xf_raw_file raw;
	*rings = NULL;
	*n_rings = 0;
	xf_h5_quiet();
	path = path ? path : selection->data_path;
	if (!path || !path[0])
		return xf_fail(err, XF_ERR_CONFIG, "no data file to list the q rings of");
	int rc = read_raw(path, &raw, err);
	xf_ring_info *t =
		rc ? NULL : xf_calloc_array((size_t)raw.n_maps + raw.n_q_declared + 1, sizeof *t);
	int n = t ? xf_select_ring_table(&raw, t) : -1;
	if (!rc && n < 0)
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory listing the q rings of %s", path);
	xf_raw_free(&raw);
	if (rc) {
		free(t);
		return rc;
	}
	*rings = t;
	*n_rings = n;
	return 0;
}

int xf_dataset_selected_rings(const xf_selection *selection, const char *path, double **q,
			      int *n_rings, int **n_kept, xf_error *err)
{
	xf_raw_file raw;
	*q = NULL;
	*n_rings = 0;
	if (n_kept)
		*n_kept = NULL;
	xf_h5_quiet();
	path = path ? path : selection->data_path;
	if (!path || !path[0])
		return xf_fail(err, XF_ERR_CONFIG, "no data file to list the q rings of");
	int rc = read_raw(path, &raw, err);
	if (!rc)
		rc = xf_select_rings(&raw, selection, q, n_rings, err);
	/* each ring keeps an angle after φ filtering: checked on the metadata before any ring
	 * is fitted, so that a per-ring run refuses the selection whole (one line, nothing
	 * written) instead of failing that ring after fitting the others */
	int *kept = rc ? NULL : xf_calloc_array((size_t)*n_rings + 1, sizeof *kept);
	if (!rc && !kept)
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory listing the q rings of %s", path);
	for (int r = 0; !rc && r < *n_rings; r++) {
		xf_selected_angle *a = NULL;
		int n_in_ring;
		rc = xf_select_angles(&raw, selection, (*q)[r], &a, &kept[r], &n_in_ring, err);
		free(a);
	}
	xf_raw_free(&raw);
	if (rc) {
		free(*q);
		free(kept);
		*q = NULL;
		*n_rings = 0;
		return rc;
	}
	if (n_kept)
		*n_kept = kept;
	else
		free(kept);
	return 0;
}

void xf_dataset_free_rings(xf_dataset *rings, int n_rings)
{
	for (int r = 0; rings && r < n_rings; r++)
		xf_dataset_free(&rings[r]);
	free(rings);
}

void xf_dataset_free(xf_dataset *ds)
{
	if (!ds)
		return;
	if (ds->c2)
		for (int a = 0; a < ds->n_phi; a++)
			free(ds->c2[a]);
	free(ds->c2);
	free(ds->stats);
	free(ds->phi_deg);
	free(ds->map_number);
	free(ds->path);
	memset(ds, 0, sizeof *ds);
}

void xf_dataset_full_matrix(const xf_dataset *ds, int a, double *out)
{
	size_t n = (size_t)ds->n_frames;
	const double *p = ds->c2[a];
	for (size_t i = 0; i < n; i++)
		for (size_t j = i; j < n; j++) {
			double v = p[xf_packed_index(n, i, j)];
			out[i * n + j] = v;
			out[j * n + i] = v;
		}
}
