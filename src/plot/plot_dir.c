/* plot_dir.c — `xpcsfit plot DIR`: redraw <dir>/plots/ from <dir>/results.h5 alone
 * (surfaces read back angle by angle, values and per-angle scaling from /nlsq). A file
 * written with --no-surfaces cannot be drawn: that is said plainly. The angle pages are
 * drawn by one process per core: the file is closed before they fork and each opens
 * it for itself (no HDF5 handle crosses a fork). */
#include "data/h5util.h"
#include "util/files.h"
#include "plot/plot_internal.h"
#include "xpcsfit/plot.h"
#include "xpcsfit/vdev.h"

#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct h5_result {
	hid_t file;
	const char *path;
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
	double chi2, red_chi2, residual_sd;
	long long n_points;
	int iterations;
	int plot_dpi; /* plotting.dpi of the run, 0: nominal */
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

static int load(h5_result *r, xf_error *err)
{
	size_t n = 0, m = 0;
	/* a CMC result keeps no surfaces and its trace/rank pages need the shard store and
	 * the config's bounds: `xpcsfit cmc --resume` redraws them in seconds */
	if (exists(r->file, "/cmc") && !exists(r->file, "/nlsq"))
		return xf_fail(err, XF_ERR_DATA,
			       "results.h5 holds a CMC result, whose plots are drawn by the cmc "
			       "run: rerun `xpcsfit cmc --config C.yaml --nlsq NLSQ_DIR --out OUT "
			       "--resume` to redraw them (from the kept shards, or the "
			       "importance route run again: the same bytes), %s",
			       r->path);
	if (!exists(r->file, "/data/c2") || !exists(r->file, "/nlsq/c2_fit"))
		return xf_fail(err, XF_ERR_DATA,
			       "results.h5 has no c2 surfaces (the fit was "
			       "run with --no-surfaces): rerun the fit without --no-surfaces "
			       "to draw plots, %s",
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
	if (!(r->names = read_strings(r, "/nlsq/parameter_names", &r->n_params, err)))
		return err->code;
	if (!(r->values = read_doubles(r, "/nlsq/values", &n, err)) ||
	    !(r->unc = read_doubles(r, "/nlsq/uncertainties", &m, err)))
		return err->code;
	if ((int)n != r->n_params || (int)m != r->n_params)
		return xf_fail(err, XF_ERR_DATA,
			       "/nlsq/values does not match "
			       "/nlsq/parameter_names, %s",
			       r->path);
	r->is_fixed = calloc((size_t)r->n_params + 1, sizeof *r->is_fixed);
	double *fixed =
		exists(r->file, "/nlsq/fixed") ? read_doubles(r, "/nlsq/fixed", &n, err) : NULL;
	for (int k = 0; fixed && r->is_fixed && k < r->n_params && k < (int)n; k++)
		r->is_fixed[k] = fixed[k] != 0.0;
	free(fixed);
	double **per[4] = { &r->contrast, &r->offset, &r->contrast_unc, &r->offset_unc };
	const char *per_names[4] = { "/nlsq/per_angle_contrast", "/nlsq/per_angle_offset",
				     "/nlsq/per_angle_contrast_uncertainty",
				     "/nlsq/per_angle_offset_uncertainty" };
	for (int k = 0; k < 4; k++) {
		if (!(*per[k] = read_doubles(r, per_names[k], &n, err)))
			return err->code;
		if ((int)n != r->n_phi)
			return xf_fail(err, XF_ERR_DATA, "%s has %zu values for %d angles, %s",
				       per_names[k], n, r->n_phi, r->path);
	}
	hid_t g = H5Gopen2(r->file, "/nlsq", H5P_DEFAULT);
	r->status = read_attr(g, "status");
	r->stop_reason = read_attr(g, "stop_reason");
	r->quality = read_attr(g, "quality");
	r->quality_reasons = read_attr(g, "quality_reasons");
	r->mode = read_attr(g, "analysis_mode");
	H5Gclose(g);
	r->n_phys = !strcmp(r->mode, "laminar_flow") ? 7 : 3;
	if (r->n_phys > r->n_params)
		r->n_phys = r->n_params;
	r->chi2 = read_scalar(r, "/nlsq/chi_squared");
	r->red_chi2 = read_scalar(r, "/nlsq/reduced_chi_squared");
	r->residual_sd = read_scalar(r, "/nlsq/residual_sd");
	r->n_points = (long long)read_scalar(r, "/nlsq/n_points");
	r->iterations = (int)read_scalar(r, "/nlsq/iterations");
	/* absent in results.h5 older than plotting.dpi: nominal pages */
	double dpi = read_scalar(r, "/nlsq/plot_dpi");
	r->plot_dpi = isfinite(dpi) && dpi >= 0 && dpi <= 10000 ? (int)dpi : 0;
	r->d_c2 = H5Dopen2(r->file, "/data/c2", H5P_DEFAULT);
	r->d_fit = H5Dopen2(r->file, "/nlsq/c2_fit", H5P_DEFAULT);
	if (r->d_c2 < 0 || r->d_fit < 0)
		return xf_fail(err, XF_ERR_DATA, "cannot open the c2 surfaces, %s", r->path);
	if (check_surface_shape(r, r->d_c2, "/data/c2", err) != 0 ||
	    check_surface_shape(r, r->d_fit, "/nlsq/c2_fit", err) != 0)
		return err->code;
	return 0;
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
}

int xf_plot_result_dir(const char *dir, xf_error *err)
{
	char path[PATH_MAX], plots[PATH_MAX];
	if (xf_path_join(path, sizeof path, dir, "results.h5", err) != 0 ||
	    xf_path_join(plots, sizeof plots, dir, "plots", err) != 0)
		return err->code;
	H5E_auto2_t old_fn;
	void *old_data;
	H5Eget_auto2(H5E_DEFAULT, &old_fn, &old_data);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	h5_result r = { .file = -1, .path = path, .d_c2 = -1, .d_fit = -1 };
	int rc;
	if (H5Fis_hdf5(path) <= 0) {
		rc = xf_fail(err, XF_ERR_DATA, "no readable results.h5 in the result folder, %s",
			     path);
	} else {
		r.file = xf_h5_fopen(path, H5F_ACC_RDONLY);
		r.opened_by = getpid();
		rc = r.file < 0 ? xf_fail(err, XF_ERR_DATA, "cannot open, %s", path)
				: load(&r, err);
	}
	if (rc == 0) {
		xf_plot_src src = {
			.n_phi = r.n_phi,
			.phi_deg = r.phi_deg,
			.n_frames = r.n_frames,
			.dt_s = r.t[1] - r.t[0],
			.q = r.q,
			.mode_name = r.mode,
			.status = r.status,
			.stop_reason = r.stop_reason,
			.quality = r.quality,
			.quality_reasons = r.quality_reasons,
			.chi_squared = r.chi2,
			.reduced_chi_squared = r.red_chi2,
			.residual_sd = r.residual_sd,
			.n_points = r.n_points,
			.iterations = r.iterations,
			.n_params = r.n_params,
			.n_phys = r.n_phys,
			.names = r.names,
			.units = (const char *const *)xf_param_units,
			.values = r.values,
			.uncertainties = r.unc,
			.is_fixed = r.is_fixed,
			.contrast = r.contrast,
			.contrast_unc = r.contrast_unc,
			.offset = r.offset,
			.offset_unc = r.offset_unc,
			.surfaces = file_surfaces,
			.ctx = &r,
			.workers = xf_online_cores(),
		};
		xf_pl_set_dpi(r.plot_dpi);
		close_handles(&r); /* each drawing process opens the file itself */
		rc = xf_plot_draw_all(plots, &src, err);
	}
	release(&r);
	H5Eset_auto2(H5E_DEFAULT, old_fn, old_data);
	return rc;
}
