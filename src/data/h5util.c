/* h5util.c — HDF5 helpers of the data module: reads through HDF5's type conversion
 * (any integer/float width and byte order become double), rank-agnostic 1-D lists,
 * strings, and translation of HDF5 failures into one line. HDF5's own error stack is
 * never printed: users get "what, where", not forty lines of library internals. */
#include "data/h5util.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define XF_LIBLZF_SONAME "liblzf.so.1"

/* Debian's hdf5-plugin-lzf (3.7.0-8) calls lzf_compress/lzf_decompress from liblzf1
 * but does not record liblzf.so.1 as a needed library, so libhdf5's dlopen of the
 * plugin fails with "undefined symbol: lzf_decompress". Loading liblzf globally first
 * lets the plugin resolve them; where liblzf is absent nothing changes (the filter is
 * then reported missing with the package to install). */
static void preload_liblzf(void)
{
	static int done;
	if (!done) {
		done = 1;
		dlopen(XF_LIBLZF_SONAME, RTLD_NOW | RTLD_GLOBAL);
	}
}

void xf_h5_quiet(void)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	preload_liblzf();
}

struct walk_ctx {
	char *buf;
	size_t len;
	int done;
};

static herr_t walk_first(unsigned n, const H5E_error2_t *e, void *data)
{
	struct walk_ctx *c = data;
	(void)n;
	if (!c->done && e->desc && e->desc[0]) {
		snprintf(c->buf, c->len, "%s", e->desc);
		c->done = 1;
	}
	return 0;
}

void xf_h5_last_error(char *buf, size_t len)
{
	struct walk_ctx c = { buf, len, 0 };
	buf[0] = '\0';
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_first, &c);
	H5Eclear2(H5E_DEFAULT);
}

int xf_h5_exists(hid_t file, const char *path)
{
	char part[1024];
	size_t len = strlen(path);
	if (len >= sizeof part)
		return 0;
	/* H5Lexists fails (not "no") when a parent is missing: check every prefix. */
	for (size_t k = 1; k <= len; k++) {
		if (k < len && path[k] != '/')
			continue;
		memcpy(part, path, k);
		part[k] = '\0';
		if (H5Lexists(file, part, H5P_DEFAULT) <= 0)
			return 0;
	}
	return H5Oexists_by_name(file, path, H5P_DEFAULT) > 0;
}

int xf_h5_lzf_available(void)
{
	xf_h5_quiet();
	return H5Zfilter_avail(XF_H5_FILTER_LZF) > 0;
}

int xf_h5_open_read(const char *path, hid_t *file, xf_error *err)
{
	struct stat st;
	char why[512];
	xf_h5_quiet();
	if (stat(path, &st) != 0)
		return xf_fail(err, XF_EXIT_DATA, "data file not found: %s (%s)", path,
			       strerror(errno));
	if (!S_ISREG(st.st_mode))
		return xf_fail(err, XF_EXIT_DATA, "data file is not a regular file: %s", path);
	htri_t is = H5Fis_hdf5(path);
	if (is <= 0) {
		H5Eclear2(H5E_DEFAULT);
		return xf_fail(err, XF_EXIT_DATA, "not an HDF5 file (no HDF5 signature): %s", path);
	}
	*file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (*file < 0) {
		xf_h5_last_error(why, sizeof why);
		return xf_fail(err, XF_EXIT_DATA,
			       "cannot open HDF5 file, truncated or damaged (%s): %s",
			       why[0] ? why : "unknown HDF5 error", path);
	}
	return 0;
}

static int missing(const char *file_name, const char *path, xf_error *err)
{
	return xf_fail(err, XF_EXIT_DATA, "missing dataset %s in %s", path, file_name);
}

static hid_t open_dataset(hid_t file, const char *file_name, const char *path, xf_error *err)
{
	if (!xf_h5_exists(file, path)) {
		missing(file_name, path, err);
		return -1;
	}
	hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
	if (d < 0) {
		H5Eclear2(H5E_DEFAULT);
		xf_fail(err, XF_EXIT_DATA, "%s is not a dataset in %s", path, file_name);
	}
	return d;
}

/* 1 when the dataset uses a filter that cannot be applied here; names it in err. */
static int filter_missing(hid_t d, const char *file_name, const char *path, xf_error *err)
{
	hid_t dcpl = H5Dget_create_plist(d);
	int bad = 0;
	int nf = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0;
	for (int k = 0; k < nf && !bad; k++) {
		unsigned flags, cd[8];
		size_t ncd = 8;
		char name[128] = "";
		H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)k, &flags, &ncd, cd, sizeof name,
						 name, NULL);
		if (id < 0 || H5Zfilter_avail(id) > 0)
			continue;
		bad = 1;
		if (id == XF_H5_FILTER_LZF)
			xf_fail(err, XF_EXIT_DATA, XF_H5_LZF_MESSAGE ", needed by %s in %s", path,
				file_name);
		else
			xf_fail(err, XF_EXIT_DATA,
				"HDF5 filter %d (%s) needed by %s in %s is not available", (int)id,
				name[0] ? name : "unknown", path, file_name);
	}
	if (dcpl >= 0)
		H5Pclose(dcpl);
	H5Eclear2(H5E_DEFAULT);
	return bad;
}

static int read_doubles(hid_t d, const char *file_name, const char *path, double *out,
			xf_error *err)
{
	hid_t t = H5Dget_type(d);
	H5T_class_t cls = H5Tget_class(t);
	H5Tclose(t);
	if (cls != H5T_INTEGER && cls != H5T_FLOAT)
		return xf_fail(err, XF_EXIT_DATA, "dataset %s in %s is not numeric", path,
			       file_name);
	if (filter_missing(d, file_name, path, err))
		return XF_EXIT_DATA;
	if (H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
		char why[512];
		xf_h5_last_error(why, sizeof why);
		return xf_fail(err, XF_EXIT_DATA, "cannot read dataset %s in %s (%s)", path,
			       file_name, why[0] ? why : "unknown HDF5 error");
	}
	return 0;
}

int xf_h5_read_list(hid_t file, const char *file_name, const char *path, double **out, size_t *n,
		    xf_error *err)
{
	*out = NULL;
	*n = 0;
	hid_t d = open_dataset(file, file_name, path, err);
	if (d < 0)
		return XF_EXIT_DATA;
	hid_t s = H5Dget_space(d);
	int rank = H5Sget_simple_extent_ndims(s);
	hsize_t dims[H5S_MAX_RANK];
	int rc = 0;
	if (rank < 0 || rank > H5S_MAX_RANK) {
		rc = xf_fail(err, XF_EXIT_DATA, "cannot read the shape of %s in %s", path,
			     file_name);
		goto out;
	}
	H5Sget_simple_extent_dims(s, dims, NULL);
	int long_dims = 0;
	for (int k = 0; k < rank; k++)
		long_dims += dims[k] > 1;
	if (long_dims > 1) {
		rc = xf_fail(err, XF_EXIT_DATA,
			     "dataset %s in %s should be a 1-D list (scalar, (M,), (1, M) or "
			     "(M, 1)) but has rank %d with %d dimensions longer than 1",
			     path, file_name, rank, long_dims);
		goto out;
	}
	hssize_t np = H5Sget_simple_extent_npoints(s);
	if (np <= 0) {
		rc = xf_fail(err, XF_EXIT_DATA, "dataset %s in %s is empty", path, file_name);
		goto out;
	}
	/* a declared size is not a promise of data: a damaged header can claim 2⁴⁰ entries
	 * (found by fuzz_h5); no q/φ list, bin list or mapping comes near this */
	if ((uint64_t)np > XF_H5_MAX_LIST) {
		rc = xf_fail(err, XF_EXIT_DATA,
			     "dataset %s in %s declares %lld entries, more than the %lld a list "
			     "may hold",
			     path, file_name, (long long)np, (long long)XF_H5_MAX_LIST);
		goto out;
	}
	*out = malloc((size_t)np * sizeof **out);
	if (!*out) {
		rc = xf_fail(err, XF_EXIT_DATA, "out of memory reading %s", path);
		goto out;
	}
	rc = read_doubles(d, file_name, path, *out, err);
	if (rc) {
		free(*out);
		*out = NULL;
	} else {
		*n = (size_t)np;
	}
out:
	H5Sclose(s);
	H5Dclose(d);
	return rc;
}

int xf_h5_read_scalar(hid_t file, const char *file_name, const char *path, double *out,
		      xf_error *err)
{
	double *v;
	size_t n;
	int rc = xf_h5_read_list(file, file_name, path, &v, &n, err);
	if (rc)
		return rc;
	if (n != 1)
		rc = xf_fail(err, XF_EXIT_DATA, "dataset %s in %s should hold one number, not %zu",
			     path, file_name, n);
	else
		*out = v[0];
	free(v);
	return rc;
}

int xf_h5_read_string(hid_t file, const char *file_name, const char *path, char *buf, size_t len,
		      xf_error *err)
{
	buf[0] = '\0';
	hid_t d = open_dataset(file, file_name, path, err);
	if (d < 0)
		return XF_EXIT_DATA;
	int rc = 0;
	hid_t t = H5Dget_type(d), s = H5Dget_space(d);
	if (H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(s) != 1) {
		rc = xf_fail(err, XF_EXIT_DATA, "dataset %s in %s is not a single string", path,
			     file_name);
	} else if (H5Tis_variable_str(t) > 0) {
		char *v = NULL;
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5T_VARIABLE);
		if (H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0) {
			rc = xf_fail(err, XF_EXIT_DATA, "cannot read string %s in %s", path,
				     file_name);
		} else {
			snprintf(buf, len, "%s", v ? v : "");
			H5Dvlen_reclaim(mt, s, H5P_DEFAULT, &v);
		}
		H5Tclose(mt);
	} else {
		size_t sz = H5Tget_size(t);
		char *tmp = calloc(sz + 1, 1);
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, sz + 1);
		if (!tmp || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, tmp) < 0)
			rc = xf_fail(err, XF_EXIT_DATA, "cannot read string %s in %s", path,
				     file_name);
		else
			snprintf(buf, len, "%s", tmp);
		free(tmp);
		H5Tclose(mt);
	}
	H5Eclear2(H5E_DEFAULT);
	H5Tclose(t);
	H5Sclose(s);
	H5Dclose(d);
	return rc;
}

int xf_h5_read_string_list(hid_t file, const char *file_name, const char *path, char *names,
			   size_t len, size_t max, size_t *n, xf_error *err)
{
	*n = 0;
	hid_t d = open_dataset(file, file_name, path, err);
	if (d < 0)
		return XF_EXIT_DATA;
	int rc = 0;
	hid_t t = H5Dget_type(d), s = H5Dget_space(d), mt = -1;
	hssize_t np = H5Sget_simple_extent_npoints(s);
	size_t sz = H5Tget_size(t);
	void *buf = NULL;
	if (H5Tget_class(t) != H5T_STRING || np < 1) {
		rc = xf_fail(err, XF_EXIT_DATA, "dataset %s in %s is not a list of strings", path,
			     file_name);
		goto out;
	}
	/* a damaged header can declare 2²⁷ names or 2³¹-byte cells (found by fuzz_h5: 1.8 GB
	 * for a list of two names) */
	if ((uint64_t)np > XF_H5_MAX_STRINGS || sz > XF_H5_MAX_STRING_BYTES) {
		rc = xf_fail(err, XF_EXIT_DATA,
			     "dataset %s in %s declares %lld strings of %zu bytes, more than a "
			     "list of names may hold (%d of %d bytes)",
			     path, file_name, (long long)np, sz, XF_H5_MAX_STRINGS,
			     XF_H5_MAX_STRING_BYTES);
		goto out;
	}
	/* read in the file's own string kind: variable length as char *, fixed as
	 * sz-byte cells (not necessarily NUL-terminated) */
	int vlen = H5Tis_variable_str(t) > 0;
	mt = H5Tcopy(H5T_C_S1);
	H5Tset_size(mt, vlen ? H5T_VARIABLE : sz);
	H5Tset_cset(mt, H5Tget_cset(t));
	buf = calloc((size_t)np, vlen ? sizeof(char *) : sz);
	if (!buf || H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
		rc = xf_fail(err, XF_EXIT_DATA, "cannot read strings %s in %s", path, file_name);
		goto out;
	}
	for (size_t k = 0; k < (size_t)np && k < max; k++) {
		char *dst = names + k * len;
		if (vlen) {
			const char *v = ((char **)buf)[k];
			snprintf(dst, len, "%s", v ? v : "");
		} else {
			size_t m = sz < len - 1 ? sz : len - 1;
			memcpy(dst, (char *)buf + k * sz, m);
			dst[m] = '\0';
		}
	}
	*n = (size_t)np;
	if (vlen)
		H5Dvlen_reclaim(mt, s, H5P_DEFAULT, buf);
out:
	free(buf);
	if (mt >= 0)
		H5Tclose(mt);
	H5Eclear2(H5E_DEFAULT);
	H5Tclose(t);
	H5Sclose(s);
	H5Dclose(d);
	return rc;
}

int xf_h5_matrix_shape(hid_t file, const char *file_name, const char *path, size_t *rows,
		       size_t *cols, xf_error *err)
{
	hid_t d = open_dataset(file, file_name, path, err);
	if (d < 0)
		return XF_EXIT_DATA;
	hid_t s = H5Dget_space(d);
	hsize_t dims[H5S_MAX_RANK];
	int rank = H5Sget_simple_extent_ndims(s);
	int rc = 0;
	if (rank != 2) {
		rc = xf_fail(err, XF_EXIT_DATA, "map %s in %s should be 2-D but has rank %d", path,
			     file_name, rank);
	} else {
		H5Sget_simple_extent_dims(s, dims, NULL);
		*rows = (size_t)dims[0];
		*cols = (size_t)dims[1];
	}
	H5Sclose(s);
	H5Dclose(d);
	return rc;
}

int xf_h5_read_matrix(hid_t file, const char *file_name, const char *path, double *out,
		      xf_error *err)
{
	hid_t d = open_dataset(file, file_name, path, err);
	if (d < 0)
		return XF_EXIT_DATA;
	int rc = read_doubles(d, file_name, path, out, err);
	H5Dclose(d);
	return rc;
}

int xf_h5_list_to_long(const double *v, size_t n, long *out, const char *file_name,
		       const char *path, xf_error *err)
{
	for (size_t k = 0; k < n; k++) {
		if (!isfinite(v[k]) || v[k] != floor(v[k]) || fabs(v[k]) > 9.0e15)
			return xf_fail(err, XF_EXIT_DATA,
				       "dataset %s in %s should hold integers, entry %zu is %.17g",
				       path, file_name, k, v[k]);
		out[k] = (long)v[k];
	}
	return 0;
}
