/* h5write.c — writing result files with HDF5 (h5write.h): a file under a temporary name
 * with object time tracking off (the same result gives the same bytes), datasets with
 * "units" and "description" attributes, committed by rename; HDF5's error stack is
 * turned into one line. Named dimensions (dimension scales) and NeXus classes (adr/0060). */
#include <hdf5.h>
#include <hdf5_hl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/h5write.h"
#include "io/utf8.h"
#include "data/h5util.h"
#include "util/files.h"

int xf_h5_fail(h5w *w, const char *what)
{
	w->failed = 1;
	return xf_fail(w->err, XF_ERR_IO, "cannot write %s, %s", what, w->path);
}

hid_t xf_h5_str_type(size_t len)
{
	hid_t t = H5Tcopy(H5T_C_S1);
	H5Tset_size(t, len > 0 ? len : 1);
	H5Tset_strpad(t, H5T_STR_NULLTERM);
	H5Tset_cset(t, H5T_CSET_UTF8);
	return t;
}

int xf_h5_attr_str(h5w *w, hid_t obj, const char *name, const char *value)
{
	if (w->failed)
		return -1;
	/* the type says UTF-8: a path's byte 0xFF is written as U+FFFD (adr/0075) */
	char *text = xf_utf8_clean(value);
	if (!text)
		return xf_h5_fail(w, name);
	hid_t t = xf_h5_str_type(strlen(text) + 1);
	hid_t s = H5Screate(H5S_SCALAR);
	hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
	herr_t st = a < 0 ? -1 : H5Awrite(a, t, text);
	if (a >= 0)
		H5Aclose(a);
	H5Sclose(s);
	H5Tclose(t);
	free(text);
	if (st < 0)
		return xf_h5_fail(w, name);
	return 0;
}

int xf_h5_describe(h5w *w, hid_t d, const char *units, const char *desc)
{
	xf_h5_attr_str(w, d, "units", units);
	return xf_h5_attr_str(w, d, "description", desc);
}

/* one numeric dataset of rank 0..2 (dims NULL for a scalar) */
int xf_h5_put(h5w *w, hid_t grp, const char *name, hid_t mem_type, hid_t file_type, int rank,
	      const hsize_t *dims, const void *data, const char *units, const char *desc)
{
	if (w->failed)
		return -1;
	hid_t s = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims, NULL);
	hid_t d = H5Dcreate2(grp, name, file_type, s, H5P_DEFAULT, w->dcpl, H5P_DEFAULT);
	herr_t st = d < 0 ? -1 : H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
	if (st >= 0)
		xf_h5_describe(w, d, units, desc);
	if (d >= 0)
		H5Dclose(d);
	H5Sclose(s);
	if (st < 0)
		return xf_h5_fail(w, name);
	return w->failed ? -1 : 0;
}

int xf_h5_put_vec(h5w *w, hid_t grp, const char *name, size_t n, const double *v, const char *units,
		  const char *desc)
{
	hsize_t dims[1] = { n };
	double *nan_fill = NULL;
	if (!v) { /* a failed fit may lack some arrays: store NaN, keep the shape */
		nan_fill = malloc((n ? n : 1) * sizeof *nan_fill);
		if (!nan_fill)
			return xf_h5_fail(w, name);
		for (size_t k = 0; k < n; k++)
			nan_fill[k] = NAN;
		v = nan_fill;
	}
	int rc =
		xf_h5_put(w, grp, name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, 1, dims, v, units, desc);
	free(nan_fill);
	return rc;
}

int xf_h5_put_f64(h5w *w, hid_t grp, const char *name, double v, const char *units,
		  const char *desc)
{
	return xf_h5_put(w, grp, name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, 0, NULL, &v, units, desc);
}

int xf_h5_put_i64(h5w *w, hid_t grp, const char *name, long long v, const char *desc)
{
	return xf_h5_put(w, grp, name, H5T_NATIVE_LLONG, H5T_STD_I64LE, 0, NULL, &v, "1", desc);
}

/* a seed, 0 … 2^64 − 1: unsigned, so that h5py reads it as written */
int xf_h5_put_u64(h5w *w, hid_t grp, const char *name, uint64_t v, const char *desc)
{
	unsigned long long u = v;
	return xf_h5_put(w, grp, name, H5T_NATIVE_ULLONG, H5T_STD_U64LE, 0, NULL, &u, "1", desc);
}

/* variable-length UTF-8 strings: netCDF-4 reads them as strings (netCDF-C 4.9 misreads
 * fixed-length string datasets: the first element, then garbage), h5py as bytes objects,
 * HDFView as text */
int xf_h5_put_strings(h5w *w, hid_t grp, const char *name, int n, const char *const *v,
		      const char *desc)
{
	if (w->failed)
		return -1;
	char **buf = calloc((size_t)(n > 0 ? n : 1), sizeof *buf);
	if (!buf)
		return xf_h5_fail(w, name);
	int ok = 1;
	for (int k = 0; k < n; k++) /* UTF-8 by type: invalid bytes become U+FFFD */
		ok &= (buf[k] = xf_utf8_clean(v[k])) != NULL;
	if (!ok) {
		for (int k = 0; k < n; k++)
			free(buf[k]);
		free(buf);
		return xf_h5_fail(w, name);
	}
	hid_t t = H5Tcopy(H5T_C_S1);
	H5Tset_size(t, H5T_VARIABLE);
	H5Tset_cset(t, H5T_CSET_UTF8);
	hsize_t dims[1] = { (hsize_t)n };
	int rc = xf_h5_put(w, grp, name, t, t, 1, dims, buf, "", desc);
	H5Tclose(t);
	for (int k = 0; k < n; k++)
		free(buf[k]);
	free(buf);
	return rc;
}

hid_t xf_h5_group(h5w *w, const char *name)
{
	if (w->failed)
		return -1;
	hid_t g = H5Gcreate2(w->file, name, H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
	if (g < 0)
		xf_h5_fail(w, name);
	return g;
}

int xf_h5_result_head(h5w *w, const xf_dataset *ds, const xf_estimate *est)
{
	xf_h5_attr_str(w, w->file, "creator", "xpcsfit " XPCSFIT_VERSION);
	xf_h5_attr_str(w, w->file, "method", est->words.method);
	xf_h5_attr_str(w, w->file, "analysis_mode", est->words.mode);
	return xf_h5_data_group(w, ds);
}

int xf_h5_data_group(h5w *w, const xf_dataset *ds)
{
	xf_h5_root_coords(w, ds);
	hid_t g = xf_h5_group(w, "/data");
	if (g < 0)
		return -1;
	xf_h5_nx_class(w, g, "NXcollection");
	size_t n = (size_t)ds->n_frames;
	double *t = malloc(n * sizeof *t);
	if (!t) {
		H5Gclose(g);
		return xf_h5_fail(w, "/data/t");
	}
	for (size_t k = 0; k < n; k++)
		t[k] = (double)k * ds->dt_s;
	xf_h5_attr_str(w, g, "source_file", ds->path);
	xf_h5_attr_str(w, g, "layout", xf_layout_name(ds->layout));
	xf_h5_attr_str(w, g, "dt_source", ds->dt_source);
	xf_h5_put_vec(w, g, "phi_deg", (size_t)ds->n_phi, ds->phi_deg, "deg",
		      "scattering angle of each fitted map, normalised to (-180, 180], ascending; "
		      "indexes every per-angle array");
	xf_h5_put_vec(w, g, "t", n, t, "s",
		      "frame times t_k = k*dt relative to the first kept frame (axes t1, t2 "
		      "of the surfaces)");
	xf_h5_dims(w, g, "phi_deg", "/phi_deg", NULL);
	xf_h5_dims(w, g, "t", "/t", NULL);
	xf_h5_put_f64(w, g, "q", ds->q, "1/angstrom", "wavevector q of the fitted ring");
	xf_h5_put_f64(w, g, "dt", ds->dt_s, "s", "time between stored frames");
	H5Gclose(g);
	free(t);
	return w->failed ? -1 : 0;
}

int xf_h5_open(h5w *w, const char *dir, const char *name, char *path, char *tmp, size_t size,
	       xf_error *err)
{
	memset(w, 0, sizeof *w);
	w->file = -1;
	w->err = err;
	if (xf_path_join(path, size, dir, name, err) != 0)
		return err->code;
	if (xf_tmp_name(path, tmp, size) != 0)
		return xf_fail(err, XF_ERR_DATA, "path too long, %s", path);
	w->path = path;
	H5Eget_auto2(H5E_DEFAULT, &w->old_fn, &w->old_data);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	w->dcpl = H5Pcreate(H5P_DATASET_CREATE);
	w->gcpl = H5Pcreate(H5P_GROUP_CREATE);
	H5Pset_obj_track_times(w->dcpl, 0);
	H5Pset_obj_track_times(w->gcpl, 0);
	hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
	H5Pset_obj_track_times(fcpl, 0); /* the root group */
	/* this process's own temporary name: a link there is removed, not written through */
	(void)unlink(tmp);
	w->file = xf_h5_fcreate(tmp, fcpl);
	H5Pclose(fcpl);
	if (w->file < 0) {
		H5Pclose(w->dcpl);
		H5Pclose(w->gcpl);
		H5Eset_auto2(H5E_DEFAULT, w->old_fn, w->old_data);
		return xf_fail(err, XF_ERR_IO, "cannot create file (folder not writable?), %s",
			       path);
	}
	return 0;
}

int xf_h5_close(h5w *w, const char *tmp, const char *path)
{
	H5Pclose(w->dcpl);
	H5Pclose(w->gcpl);
	if (H5Fclose(w->file) < 0 && !w->failed)
		xf_h5_fail(w, "file (close)");
	H5Eset_auto2(H5E_DEFAULT, w->old_fn, w->old_data);
	if (w->failed) {
		unlink(tmp);
		return w->err->code ? w->err->code : XF_ERR_DATA;
	}
	return xf_commit_tmp(tmp, path, w->err);
}

/* Dimension scales (HDF5 high-level library): netCDF-4 and xarray read a scale as a
 * named dimension and every dataset attached to it as varying along it; a dataset axis
 * without one reads as phony_dim_N. netCDF resolves a scale only in the dataset's own
 * group or an ancestor, so a scale shared by sibling groups lives at the root. */
int xf_h5_scale(h5w *w, hid_t grp, const char *name)
{
	if (w->failed)
		return -1;
	hid_t d = H5Dopen2(grp, name, H5P_DEFAULT);
	herr_t st = d < 0 ? -1 : H5DSset_scale(d, name);
	if (d >= 0)
		H5Dclose(d);
	return st < 0 ? xf_h5_fail(w, name) : 0;
}

int xf_h5_index_scale(h5w *w, hid_t grp, const char *name, size_t n, const char *desc)
{
	if (w->failed)
		return -1;
	long long *v = malloc((n ? n : 1) * sizeof *v);
	if (!v)
		return xf_h5_fail(w, name);
	for (size_t k = 0; k < n; k++)
		v[k] = (long long)k;
	/* shuffled and deflated: 0..n-1 shrinks to a few hundred bytes (8 n stored) */
	hid_t dcpl = H5Pcopy(w->dcpl);
	hsize_t dims[1] = { n }, chunk[1] = { n ? n : 1 };
	if (n > 0) {
		H5Pset_chunk(dcpl, 1, chunk);
		H5Pset_shuffle(dcpl);
		H5Pset_deflate(dcpl, 1);
	}
	hid_t s = H5Screate_simple(1, dims, NULL);
	hid_t d = H5Dcreate2(grp, name, H5T_STD_I64LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	herr_t st = d < 0 ? -1 : H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
	if (st >= 0)
		xf_h5_describe(w, d, "1", desc);
	if (d >= 0)
		H5Dclose(d);
	H5Sclose(s);
	H5Pclose(dcpl);
	free(v);
	if (st < 0)
		return xf_h5_fail(w, name);
	return xf_h5_scale(w, grp, name);
}

int xf_h5_dims(h5w *w, hid_t grp, const char *name, ...)
{
	if (w->failed)
		return -1;
	hid_t d = H5Dopen2(grp, name, H5P_DEFAULT);
	if (d < 0)
		return xf_h5_fail(w, name);
	va_list ap;
	va_start(ap, name);
	const char *scale;
	for (unsigned axis = 0; (scale = va_arg(ap, const char *)) != NULL && !w->failed; axis++) {
		hid_t s = H5Dopen2(grp, scale, H5P_DEFAULT);
		if (s < 0 || H5DSattach_scale(d, s, axis) < 0)
			xf_h5_fail(w, name);
		if (s >= 0)
			H5Dclose(s);
	}
	va_end(ap);
	H5Dclose(d);
	return w->failed ? -1 : 0;
}

int xf_h5_nx_class(h5w *w, hid_t obj, const char *nx_class)
{
	return xf_h5_attr_str(w, obj, "NX_class", nx_class);
}

/* /phi_deg and /t: the coordinates of the angle and frame-time dimensions that /data,
 * /nlsq and /cmc share (the same values as /data/phi_deg and /data/t) */
int xf_h5_root_coords(h5w *w, const xf_dataset *ds)
{
	size_t n = (size_t)ds->n_frames;
	double *t = malloc((n ? n : 1) * sizeof *t);
	if (!t)
		return xf_h5_fail(w, "/t");
	for (size_t k = 0; k < n; k++)
		t[k] = (double)k * ds->dt_s;
	xf_h5_put_vec(w, w->file, "phi_deg", (size_t)ds->n_phi, ds->phi_deg, "deg",
		      "dimension coordinate: the scattering angles (= /data/phi_deg)");
	xf_h5_put_vec(w, w->file, "t", n, t, "s",
		      "dimension coordinate: the frame times (= /data/t)");
	free(t);
	xf_h5_scale(w, w->file, "phi_deg");
	return xf_h5_scale(w, w->file, "t");
}
