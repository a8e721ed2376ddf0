/* aps_old.c — reader of the legacy APS layout (data.md): /xpcs/dqlist and /xpcs/dphilist
 * (rank-agnostic), the maps of /exchange/C2T_all paired with the bins in the natural
 * order of their keys' trailing integers, and exposure_period × stride × avg. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "data/h5util.h"
#include "data/raw.h"
#include "util/size.h"

#define Q_LIST	 "/xpcs/dqlist"
#define PHI_LIST "/xpcs/dphilist"
#define MAPS	 "/exchange/C2T_all"
#define BINS	 "/xpcs/qphi_bin_to_process"
#define KEY_MAX	 128

typedef struct legacy_key {
	char name[KEY_MAX];
	size_t prefix_len; /* characters before the trailing integer */
	long number;	   /* the trailing integer (c2_2 before c2_10) */
} legacy_key;

typedef struct key_list {
	legacy_key *keys;
	size_t n, cap;
	int bad; /* a key has no trailing integer or is too long */
	char bad_name[KEY_MAX];
} key_list;

static herr_t add_key(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
	key_list *l = data;
	size_t len = strlen(name), p = len;
	(void)g;
	(void)info;
	while (p > 0 && isdigit((unsigned char)name[p - 1]))
		p--;
	if (len >= KEY_MAX || p == len || len - p > 15) {
		if (!l->bad)
			snprintf(l->bad_name, sizeof l->bad_name, "%.100s", name);
		l->bad = 1;
		return 0;
	}
	if (l->n >= XF_H5_LIST_MAX)
		return -1; /* more maps than a list may hold: "cannot list the maps" */
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		size_t bytes;
		legacy_key *k =
			xf_size_mul(cap, sizeof *k, &bytes) == 0 ? realloc(l->keys, bytes) : NULL;
		if (!k)
			return -1;
		l->keys = k;
		l->cap = cap;
	}
	legacy_key *k = &l->keys[l->n++];
	memcpy(k->name, name, len + 1);
	k->prefix_len = p;
	k->number = strtol(name + p, NULL, 10);
	return 0;
}

static int by_number(const void *a, const void *b)
{
	const legacy_key *x = a, *y = b;
	return (x->number > y->number) - (x->number < y->number);
}

static int list_keys(xf_raw_file *raw, key_list *l, xf_error *err)
{
	hid_t g = xf_h5_open_group(raw->file, raw->file_name, MAPS, err);
	if (g < 0)
		return XF_ERR_DATA;
	herr_t st = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, add_key, l);
	H5Gclose(g);
	H5Eclear2(H5E_DEFAULT);
	if (st < 0)
		return xf_fail(err, XF_ERR_DATA, "cannot list the maps of %s in %s", MAPS,
			       raw->file_name);
	if (l->bad)
		return xf_fail(err, XF_ERR_DATA,
			       "map key %s/%s has no trailing number to order it by, in %s", MAPS,
			       l->bad_name, raw->file_name);
	for (size_t k = 1; k < l->n; k++) {
		const legacy_key *a = &l->keys[0], *b = &l->keys[k];
		if (a->prefix_len != b->prefix_len || strncmp(a->name, b->name, a->prefix_len))
			return xf_fail(err, XF_ERR_DATA,
				       "map keys with mixed prefixes in %s (%s and %s), in %s",
				       MAPS, a->name, b->name, raw->file_name);
	}
	qsort(l->keys, l->n, sizeof *l->keys, by_number);
	for (size_t k = 1; k < l->n; k++)
		if (l->keys[k].number == l->keys[k - 1].number)
			return xf_fail(err, XF_ERR_DATA,
				       "map keys %s and %s in %s have the same number, in %s",
				       l->keys[k - 1].name, l->keys[k].name, MAPS, raw->file_name);
	return 0;
}

static int by_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* Bin (1-based index into dqlist/dphilist) of each map in natural key order. When there
 * are as many maps as bins, map i is bin i (data.md). Otherwise the qmap's lists cover
 * every bin and the correlator processed some of them: /xpcs/qphi_bin_to_process names
 * those. Keys either count the maps (g2_00001…, boost_corr) or carry the bin number
 * (MATLAB): when the key numbers are exactly the listed bins, key number = bin, else
 * map k is the k-th listed bin. */
static int legacy_bins(xf_raw_file *raw, const key_list *keys, size_t n_lists, long *bins,
		       xf_error *err)
{
	double *v = NULL;
	long *sorted = NULL;
	size_t n = 0;
	int rc = 0;
	if (keys->n == n_lists) {
		for (size_t k = 0; k < keys->n; k++)
			bins[k] = (long)k + 1;
		return 0;
	}
	if (!xf_h5_present(raw->file, BINS))
		return xf_fail(err, XF_ERR_DATA,
			       "%s and %s list %zu bins but %s holds %zu maps, and there is no %s "
			       "to say which bins the maps are, in %s",
			       Q_LIST, PHI_LIST, n_lists, MAPS, keys->n, BINS, raw->file_name);
	rc = xf_h5_read_list(raw->file, raw->file_name, BINS, &v, &n, err);
	if (!rc && n != keys->n)
		rc = xf_fail(err, XF_ERR_DATA, "%s lists %zu bins but %s holds %zu maps, in %s",
			     BINS, n, MAPS, keys->n, raw->file_name);
	if (!rc)
		rc = xf_h5_list_to_long(v, n, bins, raw->file_name, BINS, err);
	if (!rc && !(sorted = xf_malloc_array(n, sizeof *sorted)))
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", BINS);
	if (!rc) {
		int same = 1;
		memcpy(sorted, bins, n * sizeof *sorted);
		qsort(sorted, n, sizeof *sorted, by_long);
		for (size_t k = 0; k < n && same; k++)
			same = sorted[k] == keys->keys[k].number;
		if (same)
			for (size_t k = 0; k < n; k++)
				bins[k] = keys->keys[k].number;
		xf_info("legacy APS layout: %zu maps of the %zu bins of %s, paired through %s "
			"(%s)",
			n, n_lists, Q_LIST, BINS,
			same ? "key number = bin" : "k-th map = k-th bin");
	}
	free(v);
	free(sorted);
	return rc;
}

/* Maps whose bin lies outside the lists are skipped with one warning (as APS-U). */
static void fill_maps(xf_raw_file *raw, const key_list *keys, const long *bins, const double *q,
		      const double *phi, size_t n_lists)
{
	char skipped[256] = "";
	size_t len = 0;
	int n_skipped = 0;
	for (size_t k = 0; k < keys->n; k++) {
		long b = bins[k];
		if (b < 1 || (size_t)b > n_lists) {
			if (n_skipped++ < 10 && len < sizeof skipped - 32)
				len += (size_t)snprintf(skipped + len, sizeof skipped - len,
							"%s%ld", len ? ", " : "", b);
			continue;
		}
		xf_raw_map *m = &raw->maps[raw->n_maps++];
		snprintf(m->path, sizeof m->path, MAPS "/%s", keys->keys[k].name);
		m->map_number = (int)k + 1;
		m->q = q[b - 1];
		m->phi_deg = phi[b - 1];
	}
	if (n_skipped)
		xf_warn("%d of %zu bins of %s lie outside %s (%zu bins) and were skipped: %s%s, "
			"in %s",
			n_skipped, keys->n, BINS, Q_LIST, n_lists, skipped,
			n_skipped > 10 ? ", …" : "", raw->file_name);
}

int xf_read_aps_old(xf_raw_file *raw, xf_error *err)
{
	double *q = NULL, *phi = NULL;
	size_t n_q = 0, n_phi = 0;
	key_list keys = { NULL, 0, 0, 0, "" };
	long *bins = NULL;
	char version[64];
	int rc = xf_h5_read_list(raw->file, raw->file_name, Q_LIST, &q, &n_q, err);
	if (!rc)
		rc = xf_h5_read_list(raw->file, raw->file_name, PHI_LIST, &phi, &n_phi, err);
	if (!rc && n_q != n_phi)
		rc = xf_fail(err, XF_ERR_DATA, "%s has %zu entries but %s has %zu, in %s", Q_LIST,
			     n_q, PHI_LIST, n_phi, raw->file_name);
	if (!rc)
		rc = list_keys(raw, &keys, err);
	if (!rc && !(bins = xf_malloc_array(keys.n, sizeof *bins)))
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", raw->file_name);
	if (!rc)
		rc = legacy_bins(raw, &keys, n_q, bins, err);
	if (!rc && !(raw->maps = xf_calloc_array(keys.n, sizeof *raw->maps)))
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", raw->file_name);
	if (!rc)
		fill_maps(raw, &keys, bins, q, phi, n_q);
	free(q);
	free(phi);
	free(bins);
	free(keys.keys);
	if (rc)
		return rc;
	if (xf_h5_present(raw->file, "/xpcs/Version") &&
	    xf_h5_read_string(raw->file, raw->file_name, "/xpcs/Version", version, sizeof version,
			      NULL) == 0)
		xf_info("legacy APS layout, /xpcs/Version %s", version);
	return xf_raw_read_dt(raw, "/measurement/instrument/detector/exposure_period",
			      "exposure_period", "/xpcs/stride_frames", "/xpcs/avg_frames", err);
}
