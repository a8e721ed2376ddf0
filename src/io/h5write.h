/* h5write.h — the HDF5 writing primitives of the result files (h5write.c), shared by
 * the NLSQ and CMC writers. Every call after a failure does nothing, so a writer can
 * issue its calls in a row and look at w->failed once. */
#ifndef XPCSFIT_IO_H5WRITE_H
#define XPCSFIT_IO_H5WRITE_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/estimate.h"

typedef struct h5w {
	hid_t file;
	hid_t dcpl; /* contiguous datasets, no time tracking */
	hid_t gcpl; /* groups, no time tracking */
	const char *path;
	xf_error *err;
	int failed;
	H5E_auto2_t old_fn; /* the error printer restored on close */
	void *old_data;
} h5w;

/* <dir>/<name> created under its temporary name (path and tmp receive both). */
int xf_h5_open(h5w *w, const char *dir, const char *name, char *path, char *tmp, size_t size,
	       xf_error *err);
/* Close; commit by rename when nothing failed, else remove the temporary file. */
int xf_h5_close(h5w *w, const char *tmp, const char *path);

int xf_h5_fail(h5w *w, const char *what);
hid_t xf_h5_str_type(size_t len);
int xf_h5_attr_str(h5w *w, hid_t obj, const char *name, const char *value);
int xf_h5_describe(h5w *w, hid_t d, const char *units, const char *desc);
/* one numeric dataset of rank 0..n (dims NULL for a scalar) */
int xf_h5_put(h5w *w, hid_t grp, const char *name, hid_t mem_type, hid_t file_type, int rank,
	      const hsize_t *dims, const void *data, const char *units, const char *desc);
/* a vector of doubles (NULL: NaN of the same length) */
int xf_h5_put_vec(h5w *w, hid_t grp, const char *name, size_t n, const double *v, const char *units,
		  const char *desc);
int xf_h5_put_f64(h5w *w, hid_t grp, const char *name, double v, const char *units,
		  const char *desc);
int xf_h5_put_i64(h5w *w, hid_t grp, const char *name, long long v, const char *desc);
int xf_h5_put_u64(h5w *w, hid_t grp, const char *name, uint64_t v, const char *desc);
/* variable-length UTF-8 strings (netCDF-4 strings; h5py reads bytes objects) */
int xf_h5_put_strings(h5w *w, hid_t grp, const char *name, int n, const char *const *v,
		      const char *desc);
hid_t xf_h5_group(h5w *w, const char *name);
/* grp/name (a 1-D dataset) becomes a dimension scale named after itself */
int xf_h5_scale(h5w *w, hid_t grp, const char *name);
/* grp/name: 0, 1, ..., n-1 (int64) as a dimension scale (an index dimension) */
int xf_h5_index_scale(h5w *w, hid_t grp, const char *name, size_t n, const char *desc);
/* attach the scales (paths relative to grp or absolute, NULL-terminated) to axes 0, 1,
 * ... of grp/name: netCDF/xarray then name its dimensions (adr/0060) */
int xf_h5_dims(h5w *w, hid_t grp, const char *name, ...);
/* the NeXus class attribute NX_class of a group */
int xf_h5_nx_class(h5w *w, hid_t obj, const char *nx_class);
/* /phi_deg and /t at the root: the dimension coordinates every group shares */
int xf_h5_root_coords(h5w *w, const xf_dataset *ds);
/* /data: angles, frame times, q, dt and where they came from */
int xf_h5_data_group(h5w *w, const xf_dataset *ds);
/* The head of either method's results.h5, written once for both: the root's creator,
 * method and analysis_mode, then /data (xf_h5_data_group) */
int xf_h5_result_head(h5w *w, const xf_dataset *ds, const xf_estimate *est);

#endif
