/* plot_dir.c — `xpcsfit plot DIR`: redraw <dir>/plots/ from <dir>/results.h5, an NLSQ
 * (/nlsq) or a CMC (/cmc: its corner.png too) result: values and per-angle scaling from
 * the method's group;
 * the maps from the stored surfaces when the fit wrote them (--surfaces), else the data
 * window reloaded from its file (/data: source file, angles, q, dt, first frame) and the
 * model recomputed at the values on the recorded geometry (adr/0059; a joint fit's rings
 * each reloaded at its q and joined, adr/0068). The angle pages
 * are drawn by one process per core: the file is closed before they fork and each opens
 * it for itself (no HDF5 handle crosses a fork). */
#include "data/h5util.h"
#include "util/files.h"
#include "util/profile.h"
#include "plot/plot_cmc.h"
#include "plot/plot_internal.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/plot.h"
#include "xpcsfit/vdev.h"

#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* an angle of the reloaded data is the recorded one when their φ differ by less (deg):
 * both are the same double from the same file, normalised the same way */
#define XF_PLOT_PHI_MATCH_DEG 1e-6

typedef struct h5_result {
	hid_t file;
	const char *path;
	const char *data_path;	   /* --data: the data file instead of /data's source_file */
	int cmc;		   /* /cmc, not /nlsq */
	char *combination, *route; /* cmc: combination_method, route_description */
	/* no surfaces: the data window reloaded and the model's estimate (adr/0059) */
	int reloaded;
	xf_dataset ds; /* a joint fit's: its rings joined (rings, n_rings) */
	xf_dataset *rings;
	int n_rings;
	double *slot_q; /* /data/slot_q: a joint fit's q per angle slot (adr/0068), or NULL */
	xf_estimate est;
	xf_plot_model_ctx model;
	hid_t d_c2, d_fit;
	pid_t opened_by; /* the process whose handles file, d_c2, d_fit are (0: none open) */
	int n_frames, n_phi;
	double *phi_deg, *t, q;
	int n_params, n_phys;
	char **names;
	double *values, *unc;
	int *is_fixed;
	double *contrast, *contrast_unc, *offset, *offset_unc;
	char *status, *stop_reason, *mode, *quality, *quality_reasons;
	xf_mode mode_id; /* what mode names (static when it names none) */
	double chi2, red_chi2, residual_sd;
	long long n_points;
	int iterations;
	int plot_dpi; /* XF_KEY_DPI of the run, 0: nominal */
	long first_frame;
} h5_result;

static int exists(hid_t file, const char *path)
{
	/* H5Lexists on each component: a missing group is not an error, just absent */
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *s = strchr(buf + 1, '/');; s = strchr(s + 1, '/')) {
		if (s)
			*s = '\0';
		if (H5Lexists(file, buf, H5P_DEFAULT) <= 0)
			return 0;
		if (!s)
			return 1;
		*s = '/';
	}
}

/* a numeric dataset of any shape as doubles; n receives the element count */
static double *read_doubles(h5_result *r, const char *name, size_t *n, xf_error *err)
{
	if (!exists(r->file, name)) {
		xf_fail(err, XF_ERR_DATA, "missing dataset %s, %s", name, r->path);
		return NULL;
	}
	hid_t d = H5Dopen2(r->file, name, H5P_DEFAULT);
	hid_t s = d >= 0 ? H5Dget_space(d) : -1;
	hssize_t count = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
	double *v = count >= 0 ? malloc((size_t)(count > 0 ? count : 1) * sizeof *v) : NULL;
	if (!v || H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) {
		free(v);
		v = NULL;
		xf_fail(err, XF_ERR_DATA, "cannot read dataset %s, %s", name, r->path);
	} else {
		*n = (size_t)count;
	}
	if (s >= 0)
		H5Sclose(s);
	if (d >= 0)
		H5Dclose(d);
	return v;
}

static double read_scalar(h5_result *r, const char *name)
{
	size_t n = 0;
	xf_error ignore = { 0 };
	double *v = read_doubles(r, name, &n, &ignore);
	double x = v && n == 1 ? v[0] : NAN;
	free(v);
	return x;
}

/* string attribute, fixed or variable length; "" when missing */
static char *read_attr(hid_t obj, const char *name)
{
	char *out = NULL;
	if (H5Aexists(obj, name) > 0) {
		hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
		hid_t ft = H5Aget_type(a);
		if (H5Tget_class(ft) == H5T_STRING) {
			if (H5Tis_variable_str(ft) > 0) {
				char *vs = NULL;
				hid_t mt = H5Tcopy(H5T_C_S1);
				H5Tset_size(mt, H5T_VARIABLE);
				H5Tset_cset(mt, H5Tget_cset(ft));
				if (H5Aread(a, mt, &vs) >= 0 && vs)
					out = strdup(vs);
				H5free_memory(vs);
				H5Tclose(mt);
			} else {
				size_t len = H5Tget_size(ft);
				out = calloc(len + 1, 1);
				hid_t mt = H5Tcopy(H5T_C_S1);
				H5Tset_size(mt, len + 1);
				H5Tset_cset(mt, H5Tget_cset(ft));
				if (out && H5Aread(a, mt, out) < 0)
					out[0] = '\0';
				H5Tclose(mt);
			}
		}
		H5Tclose(ft);
		H5Aclose(a);
	}
	return out ? out : strdup("");
}

static char **read_strings(h5_result *r, const char *name, int *n_out, xf_error *err)
{
	if (!exists(r->file, name)) {
		xf_fail(err, XF_ERR_DATA, "missing dataset %s, %s", name, r->path);
		return NULL;
	}
	hid_t d = H5Dopen2(r->file, name, H5P_DEFAULT);
	hid_t ft = H5Dget_type(d);
	hid_t s = H5Dget_space(d);
	int n = (int)H5Sget_simple_extent_npoints(s);
	char **out = calloc((size_t)(n > 0 ? n : 1), sizeof *out);
	int ok = out != NULL && H5Tget_class(ft) == H5T_STRING;
	if (ok && H5Tis_variable_str(ft) > 0) {
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5T_VARIABLE);
		H5Tset_cset(mt, H5Tget_cset(ft));
		char **vs = calloc((size_t)(n > 0 ? n : 1), sizeof *vs);
		ok = vs && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, vs) >= 0;
		for (int k = 0; ok && k < n; k++)
			out[k] = strdup(vs[k] ? vs[k] : "");
		if (vs && ok)
			H5Dvlen_reclaim(mt, s, H5P_DEFAULT, vs);
		free(vs);
		H5Tclose(mt);
	} else if (ok) {
		size_t len = H5Tget_size(ft) + 1;
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, len);
		H5Tset_cset(mt, H5Tget_cset(ft));
		char *buf = calloc((size_t)(n > 0 ? n : 1), len);
		ok = buf && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
		for (int k = 0; ok && k < n; k++)
			out[k] = strdup(buf + (size_t)k * len);
		free(buf);
		H5Tclose(mt);
	}
	H5Sclose(s);
	H5Tclose(ft);
	H5Dclose(d);
	if (!ok) {
		if (out)
			for (int k = 0; k < n; k++)
				free(out[k]);
		free(out);
		xf_fail(err, XF_ERR_DATA, "cannot read strings %s, %s", name, r->path);
		return NULL;
	}
	*n_out = n;
	return out;
}

static int read_surface(hid_t d, int a, int n, double *out)
{
	hsize_t start[3] = { (hsize_t)a, 0, 0 }, count[3] = { 1, (hsize_t)n, (hsize_t)n };
	hid_t fs = H5Dget_space(d);
	hid_t ms = H5Screate_simple(3, count, NULL);
	herr_t st = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
	if (st >= 0)
		st = H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, out);
	H5Sclose(ms);
	H5Sclose(fs);
	return st < 0 ? -1 : 0;
}

static void close_handles(h5_result *r)
{
	if (r->d_c2 >= 0)
		H5Dclose(r->d_c2);
	if (r->d_fit >= 0)
		H5Dclose(r->d_fit);
	if (r->file >= 0)
		H5Fclose(r->file);
	r->d_c2 = r->d_fit = r->file = -1;
	r->opened_by = 0;
}

static int file_surfaces(void *p, int a, double *data, double *fit, xf_error *err)
{
	h5_result *r = p;
	if (r->opened_by != getpid()) { /* a drawing process: its own handles */
		H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
		r->d_c2 = r->d_fit = -1;
		r->file = xf_h5_fopen(r->path, H5F_ACC_RDONLY);
		if (r->file >= 0) {
			r->d_c2 = H5Dopen2(r->file, "/data/c2", H5P_DEFAULT);
			r->d_fit = H5Dopen2(r->file, "/nlsq/c2_fit", H5P_DEFAULT);
		}
		r->opened_by = getpid();
	}
	if (r->d_c2 < 0 || r->d_fit < 0 || read_surface(r->d_c2, a, r->n_frames, data) != 0 ||
	    read_surface(r->d_fit, a, r->n_frames, fit) != 0)
		return xf_fail(err, XF_ERR_DATA, "cannot read the surfaces of angle %d, %s", a,
			       r->path);
	return 0;
}

static int check_surface_shape(h5_result *r, hid_t d, const char *name, xf_error *err)
{
	hsize_t dims[3] = { 0, 0, 0 };
	hid_t s = H5Dget_space(d);
	int rank = H5Sget_simple_extent_ndims(s);
	if (rank == 3)
		H5Sget_simple_extent_dims(s, dims, NULL);
	H5Sclose(s);
	if (rank != 3 || dims[0] != (hsize_t)r->n_phi || dims[1] != (hsize_t)r->n_frames ||
	    dims[2] != (hsize_t)r->n_frames)
		return xf_fail(err, XF_ERR_DATA,
			       "%s has the wrong shape (expected %d x %d x %d), "
			       "%s",
			       name, r->n_phi, r->n_frames, r->n_frames, r->path);
	return 0;
}

/* the group's dataset "<group>/<name>" */
static void group_path(const h5_result *r, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", r->cmc ? "/cmc" : "/nlsq", name);
}

/* NLSQ: values and 1σ; CMC: the posterior mean and sd, columns 0 and 1 of summary */
static int load_values(h5_result *r, xf_error *err)
{
	size_t n = 0, m = 0;
	char name[64];
	group_path(r, "parameter_names", name, sizeof name);
	if (!(r->names = read_strings(r, name, &r->n_params, err)))
		return err->code;
	if (r->cmc) {
		double *sum = read_doubles(r, "/cmc/summary", &n, err);
		if (!sum)
			return err->code;
		r->values = malloc(((size_t)r->n_params + 1) * sizeof *r->values);
		r->unc = malloc(((size_t)r->n_params + 1) * sizeof *r->unc);
		m = n == (size_t)r->n_params * 5 ? (size_t)r->n_params : 0;
		for (size_t k = 0; r->values && r->unc && k < m; k++) {
			r->values[k] = sum[5 * k];
			r->unc[k] = sum[5 * k + 1];
		}
		free(sum);
		if (!r->values || !r->unc)
			return xf_fail(err, XF_ERR_NOMEM, "out of memory, %s", r->path);
		n = m;
	} else if (!(r->values = read_doubles(r, "/nlsq/values", &n, err)) ||
		   !(r->unc = read_doubles(r, "/nlsq/uncertainties", &m, err))) {
		return err->code;
	}
	if ((int)n != r->n_params || (int)m != r->n_params)
		return xf_fail(err, XF_ERR_DATA, "the values do not match %s, %s", name, r->path);
	r->is_fixed = calloc((size_t)r->n_params + 1, sizeof *r->is_fixed);
	group_path(r, "fixed", name, sizeof name);
	double *fixed = exists(r->file, name) ? read_doubles(r, name, &n, err) : NULL;
	for (int k = 0; fixed && r->is_fixed && k < r->n_params && k < (int)n; k++)
		r->is_fixed[k] = fixed[k] != 0.0;
	free(fixed);
	double **per[4] = { &r->contrast, &r->offset, &r->contrast_unc, &r->offset_unc };
	const char *nlsq_names[4] = { "per_angle_contrast", "per_angle_offset",
				      "per_angle_contrast_uncertainty",
				      "per_angle_offset_uncertainty" };
	const char *cmc_names[4] = { "per_angle_contrast", "per_angle_offset",
				     "per_angle_contrast_sd", "per_angle_offset_sd" };
	for (int k = 0; k < 4; k++) {
		group_path(r, r->cmc ? cmc_names[k] : nlsq_names[k], name, sizeof name);
		if (!(*per[k] = read_doubles(r, name, &n, err)))
			return err->code;
		if ((int)n != r->n_phi)
			return xf_fail(err, XF_ERR_DATA, "%s has %zu values for %d angles, %s",
				       name, n, r->n_phi, r->path);
	}
	return 0;
}

/* status, quality, mode and the fit's numbers (a CMC result has no χ² minimum) */
static void load_run(h5_result *r)
{
	hid_t g = H5Gopen2(r->file, r->cmc ? "/cmc" : "/nlsq", H5P_DEFAULT);
	r->status = read_attr(g, "status");
	r->stop_reason = read_attr(g, "stop_reason");
	r->quality = read_attr(g, "quality");
	r->quality_reasons = read_attr(g, "quality_reasons");
	r->mode = read_attr(g, "analysis_mode");
	r->combination = read_attr(g, "combination_method");
	r->route = read_attr(g, "route_description");
	H5Gclose(g);
	if (!r->mode[0]) { /* /cmc records it on the root only */
		free(r->mode);
		r->mode = read_attr(r->file, "analysis_mode");
	}
	r->mode_id = xf_model_default()->mode;
	xf_mode_parse(r->mode, &r->mode_id);
	r->n_phys = xf_mode_n_phys(r->mode_id);
	if (r->n_phys > r->n_params)
		r->n_phys = r->n_params;
	r->chi2 = r->cmc ? NAN : read_scalar(r, "/nlsq/chi_squared");
	r->red_chi2 = r->cmc ? NAN : read_scalar(r, "/nlsq/reduced_chi_squared");
	r->residual_sd = r->cmc ? NAN : read_scalar(r, "/nlsq/residual_sd");
	r->n_points = r->cmc ? (long long)r->n_phi * (long long)xf_fitted_pairs((size_t)r->n_frames)
			     : (long long)read_scalar(r, "/nlsq/n_points");
	r->iterations = r->cmc ? 0 : (int)read_scalar(r, "/nlsq/iterations");
	/* absent in results.h5 older than XF_KEY_DPI, and in CMC's: nominal pages */
	double dpi = r->cmc ? NAN : read_scalar(r, "/nlsq/plot_dpi");
	r->plot_dpi = isfinite(dpi) && dpi >= 0 && dpi <= 10000 ? (int)dpi : 0;
}

/* the stored surfaces (an NLSQ fit run with --surfaces) */
static int open_surfaces(h5_result *r, xf_error *err)
{
	r->d_c2 = H5Dopen2(r->file, "/data/c2", H5P_DEFAULT);
	r->d_fit = H5Dopen2(r->file, "/nlsq/c2_fit", H5P_DEFAULT);
	if (r->d_c2 < 0 || r->d_fit < 0)
		return xf_fail(err, XF_ERR_DATA, "cannot open the c2 surfaces, %s", r->path);
	if (check_surface_shape(r, r->d_c2, "/data/c2", err) != 0 ||
	    check_surface_shape(r, r->d_fit, "/nlsq/c2_fit", err) != 0)
		return err->code;
	return 0;
}

/* the model's geometry recorded beside the values (io/grid_h5.c) */
static int load_grid(h5_result *r, xf_model_grid *grid, xf_error *err)
{
	char name[64];
	group_path(r, "stator_rotor_gap", name, sizeof name);
	double gap = read_scalar(r, name), first = read_scalar(r, "/data/first_frame");
	double dt = read_scalar(r, "/data/dt");
	hid_t g = H5Gopen2(r->file, r->cmc ? "/cmc" : "/nlsq", H5P_DEFAULT);
	char *shear = read_attr(g, "shear_model");
	H5Gclose(g);
	int pnas = !strcmp(shear, "pnas2024"), known = pnas || !strcmp(shear, "homodyne");
	free(shear);
	if (!known || !isfinite(gap) || !isfinite(first) || first < 1 || !(dt > 0))
		return xf_fail(err, XF_ERR_DATA,
			       "results.h5 has no c2 surfaces and does not record the model "
			       "geometry and data window to recompute them (written by an older "
			       "xpcsfit): rerun the fit (--surfaces keeps the maps), %s",
			       r->path);
	*grid = (xf_model_grid){
		.mode = r->mode_id,
		.shear_model = pnas ? XF_SHEAR_PNAS2024 : XF_SHEAR_HOMODYNE,
		.n_frames = r->n_frames,
		.dt_s = dt,
		.q = r->q,
		.gap_A = gap,
	};
	r->first_frame = (long)first;
	return 0;
}

/* 1 when the reloaded window is the recorded one: the same angles, frames and q ring
 * (a joint fit: each slot's ring, slot_q the reloaded rings' q per slot) */
static int same_window(const h5_result *r, const xf_dataset *ds, const double *slot_q)
{
	if (ds->n_phi != r->n_phi || ds->n_frames != r->n_frames ||
	    fabs(ds->q - r->q) > 1e-9 * fabs(r->q))
		return 0;
	for (int a = 0; a < r->n_phi; a++)
		if (fabs(ds->phi_deg[a] - r->phi_deg[a]) > XF_PLOT_PHI_MATCH_DEG ||
		    (r->slot_q && fabs(slot_q[a] - r->slot_q[a]) > 1e-9 * fabs(r->slot_q[a])))
			return 0;
	return 1;
}

/* The selection of the recorded angles [first, first + count) at ring q (ranges: room
 * for count) */
static xf_selection window_selection(const h5_result *r, const char *file, double q,
				     const xf_model_grid *grid, int first, int count,
				     xf_phi_range *ranges)
{
	for (int a = 0; a < count; a++)
		ranges[a] = (xf_phi_range){ r->phi_deg[first + a] - XF_PLOT_PHI_MATCH_DEG,
					    r->phi_deg[first + a] + XF_PLOT_PHI_MATCH_DEG };
	return (xf_selection){
		.data_path = file,
		.has_q = 1,
		.q_target_per_A = q,
		.phi_filter_enabled = 1,
		.n_phi_ranges = count,
		.phi_ranges = ranges,
		.start_frame = r->first_frame,
		.end_frame = r->first_frame + r->n_frames - 1,
		.has_dt = 1,
		.dt_s = grid->dt_s,
	};
}

/* A joint fit's window (adr/0068): each ring's recorded slots loaded at its q (slots of
 * one ring are consecutive), then joined as the fit joined them; *slot_q the joined q */
static int reload_rings(h5_result *r, const char *file, const xf_model_grid *grid,
			xf_phi_range *ranges, double **slot_q, xf_error *err)
{
	int n = 0;
	for (int a = 0; a < r->n_phi; a++)
		n += a == 0 || r->slot_q[a] != r->slot_q[a - 1];
	r->rings = calloc((size_t)n, sizeof *r->rings);
	if (!r->rings)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory, %s", r->path);
	int rc = 0;
	for (int first = 0, end; first < r->n_phi && rc == 0; first = end) {
		for (end = first + 1; end < r->n_phi && r->slot_q[end] == r->slot_q[first]; end++)
			;
		xf_selection sel = window_selection(r, file, r->slot_q[first], grid, first,
						    end - first, ranges);
		rc = xf_dataset_load(&sel, file, &r->rings[r->n_rings], err);
		r->n_rings += rc == 0;
		if (rc) { /* the loader speaks of a config's selection: say which ring */
			xf_error why = *err;
			err->code = 0; /* xf_fail keeps a first error: replace it */
			rc = xf_fail(err, why.code,
				     "the data file does not hold the fitted window of ring q %g "
				     "1/A (%s)",
				     r->slot_q[first], why.msg);
		}
	}
	if (rc == 0)
		rc = xf_dataset_join_rings(r->rings, r->n_rings, &r->ds, slot_q, err);
	return rc;
}

/* No surfaces: read the fitted window again from the data file (the recorded source
 * file, or --data) with a selection of exactly the recorded angles, frames, q and dt,
 * and evaluate the model at the values on the recorded geometry (adr/0059). */
static int reload_data(h5_result *r, xf_error *err)
{
	xf_model_grid grid;
	if (load_grid(r, &grid, err) != 0)
		return err->code;
	hid_t g = H5Gopen2(r->file, "/data", H5P_DEFAULT);
	char *source = read_attr(g, "source_file");
	H5Gclose(g);
	const char *file = r->data_path ? r->data_path : source;
	double *slot_q = NULL; /* the reloaded rings' */
	xf_phi_range *ranges = malloc((size_t)r->n_phi * sizeof *ranges);
	int rc = 0;
	if (!ranges) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory, %s", r->path);
	} else if (access(file, R_OK) != 0) {
		rc = xf_fail(err, XF_ERR_DATA,
			     "results.h5 holds no c2 surfaces and the data file it was fitted "
			     "to cannot be read (%s; name it with `xpcsfit plot DIR --data "
			     "FILE.h5`, or rerun the fit with --surfaces), %s",
			     file, r->path);
	} else if (r->slot_q) {
		rc = reload_rings(r, file, &grid, ranges, &slot_q, err);
		xf_profile_phase("plots"); /* the loader's phases were load and select */
		r->reloaded = rc == 0;
	} else {
		xf_selection sel = window_selection(r, file, r->q, &grid, 0, r->n_phi, ranges);
		rc = xf_dataset_load(&sel, file, &r->ds, err);
		xf_profile_phase("plots"); /* the loader's phases were load and select */
		r->reloaded = rc == 0;
	}
	if (rc == 0 && !same_window(r, &r->ds, slot_q))
		rc = xf_fail(err, XF_ERR_DATA,
			     "the data file does not hold the fitted window (%d angles "
			     "of %d frames at q = %g recorded, %d of %d at %g read), %s",
			     r->n_phi, r->n_frames, r->q, r->ds.n_phi, r->ds.n_frames, r->ds.q,
			     file);
	free(slot_q);
	free(ranges);
	free(source);
	if (rc)
		return rc;
	r->est = (xf_estimate){ .grid = grid,
				.n_params = r->n_params,
				.n_phys = r->n_phys,
				.values = r->values,
				.n_phi = r->n_phi,
				.contrast = r->contrast,
				.offset = r->offset,
				.slot_q = r->slot_q };
	xf_estimate_seal(&r->est);
	r->model = (xf_plot_model_ctx){ &r->ds, &r->est };
	return 0;
}

static int load(h5_result *r, xf_error *err)
{
	size_t n = 0;
	r->cmc = !exists(r->file, "/nlsq") && exists(r->file, "/cmc");
	if (!r->cmc && !exists(r->file, "/nlsq"))
		return xf_fail(err, XF_ERR_DATA, "results.h5 holds neither /nlsq nor /cmc, %s",
			       r->path);
	if (!(r->phi_deg = read_doubles(r, "/data/phi_deg", &n, err)))
		return err->code;
	r->n_phi = (int)n;
	if (!(r->t = read_doubles(r, "/data/t", &n, err)))
		return err->code;
	r->n_frames = (int)n;
	if (r->n_phi < 1 || r->n_frames < 3)
		return xf_fail(err, XF_ERR_DATA, "nothing to plot (%d angles, %d frames), %s",
			       r->n_phi, r->n_frames, r->path);
	r->q = read_scalar(r, "/data/q");
	if (exists(r->file, "/data/slot_q")) { /* a joint fit over q rings (adr/0068) */
		if (!(r->slot_q = read_doubles(r, "/data/slot_q", &n, err)))
			return err->code;
		if ((int)n != r->n_phi)
			return xf_fail(err, XF_ERR_DATA,
				       "/data/slot_q has %zu values for %d angles, %s", n, r->n_phi,
				       r->path);
	}
	if (load_values(r, err) != 0)
		return err->code;
	load_run(r);
	if (!r->cmc && !r->data_path && exists(r->file, "/data/c2") &&
	    exists(r->file, "/nlsq/c2_fit"))
		return open_surfaces(r, err);
	return reload_data(r, err);
}

static void release(h5_result *r)
{
	if (r->opened_by == getpid())
		close_handles(r);
	for (int k = 0; r->names && k < r->n_params; k++)
		free(r->names[k]);
	free(r->names);
	free(r->phi_deg);
	free(r->t);
	free(r->values);
	free(r->unc);
	free(r->is_fixed);
	free(r->contrast);
	free(r->contrast_unc);
	free(r->offset);
	free(r->offset_unc);
	free(r->status);
	free(r->stop_reason);
	free(r->quality);
	free(r->quality_reasons);
	free(r->mode);
	free(r->combination);
	free(r->route);
	if (r->reloaded && r->rings)
		xf_dataset_free_joined(&r->ds);
	else if (r->reloaded)
		xf_dataset_free(&r->ds);
	if (r->rings)
		xf_dataset_free_rings(r->rings, r->n_rings);
	free(r->slot_q);
}

/* A CMC result's title lines (plot_cmc.c's, from what results.h5 records): the shards
 * kept, the route */
static void cmc_text(h5_result *r, char *kept, size_t kept_size, char *run0, size_t size)
{
	size_t n = 0;
	xf_error ignore = { 0 };
	double *k = exists(r->file, "/cmc/shards/kept")
			    ? read_doubles(r, "/cmc/shards/kept", &n, &ignore)
			    : NULL;
	long n_kept = 0;
	for (size_t s = 0; k && s < n; s++)
		n_kept += k[s] != 0.0;
	free(k);
	/* one shard or the importance route: no shards to speak of (issue 34) */
	if (n > 1)
		snprintf(kept, kept_size, "%ld of %zu shards kept", n_kept, n);
	else
		snprintf(kept, kept_size, "%s", n == 0 ? "importance sampling" : "exact NUTS");
	if (n == 0) /* the importance route (adr/0045) */
		snprintf(run0, size, "status: %s,  exact posterior by importance sampling",
			 r->status);
	else if (n == 1)
		snprintf(run0, size, "status: %s,  exact posterior by NUTS", r->status);
	else
		snprintf(run0, size, "status: %s,  %s (%s)", r->status, kept, r->combination);
}

/* the extents of a dataset (rank up to 4); its rank, or -1 */
static int dataset_dims(h5_result *r, const char *name, hsize_t dims[4])
{
	if (!exists(r->file, name))
		return -1;
	hid_t d = H5Dopen2(r->file, name, H5P_DEFAULT);
	hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
	int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
	if (rank >= 0 && rank <= 4)
		H5Sget_simple_extent_dims(sp, dims, NULL);
	else
		rank = -1;
	if (sp >= 0)
		H5Sclose(sp);
	if (d >= 0)
		H5Dclose(d);
	return rank;
}

/* columns 0 and 1 (mean, sd) of a (p, 5) summary into mean and sd; 0 or -1 */
static int summary_columns(h5_result *r, const char *name, double **mean, double **sd,
			   xf_error *err)
{
	size_t n = 0, p = (size_t)r->n_params;
	double *sum = read_doubles(r, name, &n, err);
	*mean = malloc((p + 1) * sizeof **mean);
	*sd = malloc((p + 1) * sizeof **sd);
	int ok = sum && *mean && *sd && n == 5 * p;
	for (size_t k = 0; ok && k < p; k++) {
		(*mean)[k] = sum[5 * k];
		(*sd)[k] = sum[5 * k + 1];
	}
	free(sum);
	return ok ? 0 : -1;
}

/* corner.png of a CMC result from what results.h5 keeps of it (plot_cmc_corner.c reads no
 * more): the published draws, summaries and covariance, the shards kept, the self-check's
 * k̂ and, when it corrected the posterior, the plain consensus draws and summaries; the
 * importance route's check. The forest, trace and rank pages need the sampler's bounds,
 * which results.h5 does not keep: they stay as the run drew them. */
static int redraw_corner(h5_result *r, const char *plots, xf_error *err)
{
	xf_estimate est;
	xf_cmc_appendix app;
	xf_cmc_check check, approx;
	memset(&est, 0, sizeof est);
	memset(&app, 0, sizeof app);
	memset(&check, 0, sizeof check);
	memset(&approx, 0, sizeof approx);
	app.check = &check;
	app.approx = &approx;
	size_t n = 0, nc = 0, p = (size_t)r->n_params, nk = 0;
	hsize_t dims[4] = { 0, 0, 0, 0 };
	est.method = XF_METHOD_CMC;
	est.grid.mode = r->mode_id;
	est.n_params = r->n_params;
	est.n_phys = r->n_phys;
	est.names = r->names;
	est.is_fixed = r->is_fixed;
	est.values = r->values;
	est.sd = r->unc;
	est.sd_table = r->unc;	/* the summary's sd column */
	xf_estimate_seal(&est); /* its words: the mode's name, the status */
	if (xf_combination_rule_parse(r->combination, &app.combination))
		app.combination = XF_COMBINE_N; /* not one we know: named "" */
	double *draws = read_doubles(r, "/cmc/draws", &n, err);
	est.draws = draws;
	est.covariance = draws ? read_doubles(r, "/cmc/covariance", &nc, err) : NULL;
	int rc = draws && est.covariance && nc == p * p && p > 0 ? 0 : -1;
	est.n_draws = (int)(p ? n / p : 0);
	double *kept = exists(r->file, "/cmc/shards/kept")
			       ? read_doubles(r, "/cmc/shards/kept", &nk, err)
			       : NULL;
	app.n_shards = (long)nk;
	for (size_t k = 0; kept && k < nk; k++)
		app.n_kept += kept[k] != 0.0;
	free(kept);
	if (dataset_dims(r, "/cmc/shard_draws", dims) == 4)
		app.n_chains = (int)dims[1];
	if (rc == 0 && exists(r->file, "/cmc/consensus_check")) {
		hid_t g = H5Gopen2(r->file, "/cmc/consensus_check", H5P_DEFAULT);
		char *published = read_attr(g, "published");
		H5Gclose(g);
		check.done = 1;
		check.khat = read_scalar(r, "/cmc/consensus_check/khat");
		check.corrected = published && !strcmp(published, "importance_weighted");
		free(published);
	}
	if (rc == 0 && check.corrected) {
		check.draws = read_doubles(r, "/cmc/consensus/draws", &n, err);
		rc = check.draws && n == (size_t)est.n_draws * p
			     ? summary_columns(r, "/cmc/consensus/summary", &check.mean, &check.sd,
					       err)
			     : -1;
	}
	if (rc == 0 && exists(r->file, "/cmc/importance_check")) {
		approx.done = 1;
		approx.m = (int)read_scalar(r, "/cmc/importance_check/M");
		approx.khat = read_scalar(r, "/cmc/importance_check/khat");
		approx.ess = read_scalar(r, "/cmc/importance_check/is_ess");
	}
	char path[PATH_MAX];
	if (rc != 0)
		rc = xf_fail(err, XF_ERR_DATA, "cannot read the posterior draws, %s", r->path);
	else if ((rc = xf_mkdir_here(plots, err)) == 0 &&
		 (rc = xf_path_join(path, sizeof path, plots, "corner.png", err)) == 0)
		rc = xf_plot_cmc_corner(path, &est, &app, err);
	free(draws);
	free(est.covariance);
	free(check.draws);
	free(check.mean);
	free(check.sd);
	return rc;
}

int xf_plot_result_dir(const char *dir, xf_error *err)
{
	return xf_plot_result_dir_data(dir, NULL, err);
}

int xf_plot_result_dir_data(const char *dir, const char *data_path, xf_error *err)
{
	char path[PATH_MAX], plots[PATH_MAX], kept[96] = "", run0[512] = "";
	if (xf_path_join(path, sizeof path, dir, "results.h5", err) != 0 ||
	    xf_path_join(plots, sizeof plots, dir, "plots", err) != 0)
		return err->code;
	H5E_auto2_t old_fn;
	void *old_data;
	H5Eget_auto2(H5E_DEFAULT, &old_fn, &old_data);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	h5_result r = { .file = -1, .path = path, .data_path = data_path, .d_c2 = -1, .d_fit = -1 };
	int rc;
	struct stat st;
	/* a FIFO or a device there would block HDF5's open: refused unopened (adr/0071) */
	int fd = xf_open_regular(path, 0, &st);
	if (fd >= 0)
		close(fd);
	if (fd < 0 && errno == EINVAL) {
		rc = xf_fail(err, XF_ERR_DATA, "results.h5 is not a regular file (%s), %s",
			     xf_node_kind(st.st_mode), path);
	} else if (H5Fis_hdf5(path) <= 0) {
		rc = xf_fail(err, XF_ERR_DATA, "no readable results.h5 in the result folder, %s",
			     path);
	} else {
		r.file = xf_h5_fopen(path, H5F_ACC_RDONLY);
		r.opened_by = getpid();
		rc = r.file < 0 ? xf_fail(err, XF_ERR_DATA, "cannot open, %s", path)
				: load(&r, err);
	}
	if (rc == 0 && r.cmc)
		cmc_text(&r, kept, sizeof kept, run0, sizeof run0);
	if (rc == 0) {
		xf_quality_level grade = XF_QUALITY_MARGINAL;
		int graded = xf_quality_level_parse(r.quality, &grade) == 0;
		const xf_model_record *model = xf_model_record_of(r.mode_id);
		const char *units[XF_N_BOUND_SLOTS]; /* the model's, then the table's slots */
		for (int k = 0; k < XF_N_BOUND_SLOTS; k++)
			units[k] = k < model->n_phys ? xf_model_param_unit(model, k)
						     : xf_param_units[k];
		xf_plot_src src = {
			.n_phi = r.n_phi,
			.phi_deg = r.phi_deg,
			.n_frames = r.n_frames,
			.dt_s = r.t[1] - r.t[0],
			.q = r.q,
			.slot_q = r.slot_q,
			.mode_name = r.mode,
			.status = r.status,
			.stop_reason = r.stop_reason,
			.quality_known = graded,
			.quality = grade,
			.quality_reasons = r.quality_reasons,
			.chi_squared = r.chi2,
			.reduced_chi_squared = r.red_chi2,
			.residual_sd = r.residual_sd,
			.n_points = r.n_points,
			.iterations = r.iterations,
			.n_params = r.n_params,
			.n_phys = r.n_phys,
			.names = r.names,
			.units = units,
			.values = r.values,
			.uncertainties = r.unc,
			.is_fixed = r.is_fixed,
			.contrast = r.contrast,
			.contrast_unc = r.contrast_unc,
			.offset = r.offset,
			.offset_unc = r.offset_unc,
			.surfaces = r.reloaded ? xf_plot_model_surfaces : file_surfaces,
			.ctx = r.reloaded ? (void *)&r.model : (void *)&r,
			.workers = xf_online_cores(),
			.method = r.cmc ? "CMC" : NULL,
			.run_text = { r.cmc ? run0 : NULL, r.cmc ? r.route : NULL },
		};
		if (r.cmc)
			src.stop_reason = kept;
		xf_pl_set_dpi(r.plot_dpi);
		xf_plot_set_angle_pages(1); /* an explicit redraw: every angle's page */
		if (r.cmc)
			rc = redraw_corner(&r, plots, err);
		close_handles(&r); /* each drawing process opens the file itself */
		if (rc == 0)
			rc = xf_plot_draw_all(plots, &src, err);
	}
	release(&r);
	H5Eset_auto2(H5E_DEFAULT, old_fn, old_data);
	return rc;
}
