/* aps_u.c — reader of the APS-U ("nexus") layout (data.md): q and φ lists of the qmap,
 * processed_bins, the optional dynamic_index_mapping and dynamic_num_pts, the
 * correlation maps c2_00001… and the frame timing. Maps are not read here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "data/h5util.h"
#include "data/raw.h"
#include "util/size.h"

#define Q_LIST	  "/xpcs/qmap/dynamic_v_list_dim0"
#define PHI_LIST  "/xpcs/qmap/dynamic_v_list_dim1"
#define NUM_PTS	  "/xpcs/qmap/dynamic_num_pts"
#define INDEX_MAP "/xpcs/qmap/dynamic_index_mapping"
#define BINS	  "/xpcs/twotime/processed_bins"
#define MAPS	  "/xpcs/twotime/correlation_map"
#define MAP_NAMES "/xpcs/qmap/map_names"
#define NAME_LEN  32
/* names of map_names quoted in its error line */
#define MAP_NAMES_SHOWN 4

/* Warnings about skipped bins are summarised: a file may hold thousands of bins. */
#define SKIP_LIST_MAX 10

typedef struct aps_u_lists {
	double *q, *phi, *bins_d, *mapping_d;
	size_t n_q, n_phi, n_bins, n_mapping;
	long *bins, *mapping;
} aps_u_lists;

static void lists_free(aps_u_lists *l)
{
	free(l->q);
	free(l->phi);
	free(l->bins_d);
	free(l->mapping_d);
	free(l->bins);
	free(l->mapping);
}

static int check_num_pts(xf_raw_file *raw, const aps_u_lists *l, xf_error *err)
{
	double *np;
	size_t n;
	if (!xf_h5_present(raw->file, NUM_PTS))
		return 0;
	int rc = xf_h5_read_list(raw->file, raw->file_name, NUM_PTS, &np, &n, err);
	if (rc)
		return rc;
	if (n != 2)
		rc = xf_fail(err, XF_ERR_DATA,
			     "%s holds %zu numbers, not the 2 of [n_q, n_φ] (%zu q in %s, %zu φ in "
			     "%s), in %s",
			     NUM_PTS, n, l->n_q, Q_LIST, l->n_phi, PHI_LIST, raw->file_name);
	else if (np[0] != (double)l->n_q || np[1] != (double)l->n_phi)
		rc = xf_fail(err, XF_ERR_DATA,
			     "%s = [%g, %g] disagrees with the list lengths (%zu q in %s, %zu φ "
			     "in %s), in %s",
			     NUM_PTS, np[0], np[1], l->n_q, Q_LIST, l->n_phi, PHI_LIST,
			     raw->file_name);
	free(np);
	return rc;
}

/* The mask tool can partition the detector in other coordinates than q × φ (x × y
 * pixels, for one); the lists then hold those, and reading them as q and φ would fit
 * nonsense without a word. A third name is a third coordinate the two lists do not
 * describe: exactly [q, phi] is accepted. Files without map_names (older qmaps) are
 * q × φ. */
static int check_map_names(xf_raw_file *raw, xf_error *err)
{
	char names[MAP_NAMES_SHOWN][NAME_LEN], shown[MAP_NAMES_SHOWN * (NAME_LEN + 2) + 8];
	size_t n, len = 0;
	if (!xf_h5_present(raw->file, MAP_NAMES))
		return 0;
	int rc = xf_h5_read_string_list(raw->file, raw->file_name, MAP_NAMES, &names[0][0],
					NAME_LEN, MAP_NAMES_SHOWN, &n, err);
	if (rc)
		return rc;
	if (n == 2 && !strcasecmp(names[0], "q") && !strcasecmp(names[1], "phi"))
		return 0;
	shown[0] = '\0';
	for (size_t k = 0; k < n && k < MAP_NAMES_SHOWN; k++)
		len += (size_t)snprintf(shown + len, sizeof shown - len, "%s%s", k ? ", " : "",
					names[k]);
	if (n > MAP_NAMES_SHOWN)
		snprintf(shown + len, sizeof shown - len, ", …");
	return xf_fail(err, XF_ERR_DATA,
		       "%s is [%s]: the dynamic partition is not q × φ (xpcsfit needs exactly "
		       "[q, phi]: partition the qmap in q and φ), in %s",
		       MAP_NAMES, shown, raw->file_name);
}

static int read_lists(xf_raw_file *raw, aps_u_lists *l, xf_error *err)
{
	int rc = check_map_names(raw, err);
	if (!rc)
		rc = xf_h5_read_list(raw->file, raw->file_name, Q_LIST, &l->q, &l->n_q, err);
	if (!rc)
		rc = xf_h5_read_list(raw->file, raw->file_name, PHI_LIST, &l->phi, &l->n_phi, err);
	if (!rc)
		rc = check_num_pts(raw, l, err);
	if (!rc)
		rc = xf_h5_read_list(raw->file, raw->file_name, BINS, &l->bins_d, &l->n_bins, err);
	if (rc)
		return rc;
	l->bins = xf_malloc_array(l->n_bins, sizeof *l->bins);
	if (!l->bins)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", BINS);
	rc = xf_h5_list_to_long(l->bins_d, l->n_bins, l->bins, raw->file_name, BINS, err);
	if (rc || !xf_h5_present(raw->file, INDEX_MAP))
		return rc;
	rc = xf_h5_read_list(raw->file, raw->file_name, INDEX_MAP, &l->mapping_d, &l->n_mapping,
			     err);
	if (rc)
		return rc;
	l->mapping = xf_malloc_array(l->n_mapping, sizeof *l->mapping);
	if (!l->mapping)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", INDEX_MAP);
	return xf_h5_list_to_long(l->mapping_d, l->n_mapping, l->mapping, raw->file_name, INDEX_MAP,
				  err);
}

static int count_maps(xf_raw_file *raw, size_t *n, xf_error *err)
{
	H5G_info_t info;
	hid_t g = xf_h5_open_group(raw->file, raw->file_name, MAPS, err);
	if (g < 0)
		return XF_ERR_DATA;
	herr_t st = H5Gget_info(g, &info);
	H5Gclose(g);
	if (st < 0) {
		H5Eclear2(H5E_DEFAULT);
		return xf_fail(err, XF_ERR_DATA, "%s in %s is not a group of maps", MAPS,
			       raw->file_name);
	}
	*n = (size_t)info.nlinks;
	return 0;
}

/* flat (q, φ) index of bin `bin`, or -1 with the reason when it is out of range */
static long bin_to_flat(const aps_u_lists *l, long bin, const char **why)
{
	long flat = bin - 1;
	if (l->mapping) {
		if (bin < 1 || (size_t)bin > l->n_mapping) {
			*why = "outside " INDEX_MAP;
			return -1;
		}
		flat = l->mapping[bin - 1];
	}
	if (flat < 0 || (size_t)flat >= l->n_q * l->n_phi) {
		*why = "outside the q × φ grid";
		return -1;
	}
	return flat;
}

static int fill_maps(xf_raw_file *raw, const aps_u_lists *l)
{
	char skipped[256] = "";
	size_t skipped_len = 0;
	int n_skipped = 0;
	const char *why = "";
	raw->maps = xf_calloc_array(l->n_bins, sizeof *raw->maps);
	if (!raw->maps)
		return -1;
	for (size_t k = 0; k < l->n_bins; k++) {
		long flat = bin_to_flat(l, l->bins[k], &why);
		if (flat < 0) {
			if (n_skipped++ < SKIP_LIST_MAX && skipped_len < sizeof skipped - 32)
				skipped_len += (size_t)snprintf(
					skipped + skipped_len, sizeof skipped - skipped_len,
					"%s%ld", skipped_len ? ", " : "", l->bins[k]);
			continue;
		}
		xf_raw_map *m = &raw->maps[raw->n_maps++];
		snprintf(m->path, sizeof m->path, MAPS "/c2_%05zu", k + 1);
		m->map_number = (int)k + 1;
		m->q = l->q[(size_t)flat / l->n_phi];
		m->phi_deg = l->phi[(size_t)flat % l->n_phi];
	}
	if (n_skipped)
		xf_warn("%d of %zu processed bins are out of range (%s) and were skipped: %s%s, "
			"in %s",
			n_skipped, l->n_bins, why, skipped, n_skipped > SKIP_LIST_MAX ? ", …" : "",
			raw->file_name);
	return 0;
}

int xf_read_aps_u(xf_raw_file *raw, xf_error *err)
{
	aps_u_lists l;
	size_t n_stored = 0;
	memset(&l, 0, sizeof l);
	int rc = read_lists(raw, &l, err);
	if (!rc)
		rc = count_maps(raw, &n_stored, err);
	if (!rc && n_stored != l.n_bins)
		rc = xf_fail(err, XF_ERR_DATA, "%s lists %zu bins but %s holds %zu maps, in %s",
			     BINS, l.n_bins, MAPS, n_stored, raw->file_name);
	if (!rc && fill_maps(raw, &l))
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", raw->file_name);
	if (!rc) { /* kept for naming a ring without maps (select.c) */
		raw->q_declared = l.q;
		raw->n_q_declared = l.n_q;
		l.q = NULL;
	}
	lists_free(&l);
	if (rc)
		return rc;
	return xf_raw_read_dt(raw, "/entry/instrument/detector_1/frame_time", "frame_time",
			      "/xpcs/twotime/config/stride_frame", "/xpcs/twotime/config/avg_frame",
			      err);
}
