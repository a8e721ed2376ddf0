/* results_h5.c — <dir>/results.h5 of an NLSQ run (spec/cli.md "Result directory"):
 * /data (what was fitted) and /nlsq (the fit), every dataset with "units" and
 * "description" attributes. Object time tracking is off everywhere so the same
 * result gives the same bytes; the file is written under a temporary name and renamed.
 * Surfaces are written angle by angle so at most one N×N map is in memory. */
#include "io/grid_h5.h"
#include "io/h5write.h"
#include "io/io_internal.h"
#include "io/nexus.h"
#include "io/results_h5.h"
#include "surface/surface_chunks.h"
#include "surface/surfaces.h"
#include "util/profile.h"
#include "util/verbosity.h"
#include "xpcsfit/params.h"
#include "xpcsfit/results.h"
#include "xpcsfit/vdev.h"
#include "util/key_names.h"

#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* gzip level 1 with the run-length strategy (surface_chunks.c): noisy float32 maps gain
 * little from higher levels or longer matches, which cost 2-3x the time (adr/0005,
 * adr/0036) */
#define XF_H5_DEFLATE_LEVEL 1
/* a chunk larger than this (bytes) is split by rows: keeps chunks cheap to (de)compress
 * and inside HDF5's limits for very long series */
#define XF_H5_MAX_CHUNK_BYTES (1u << 20)

static int write_scalars(h5w *w, hid_t g, const xf_estimate *est, const xf_nlsq_appendix *app)
{
	xf_h5_put_f64(w, g, "chi_squared", app->chi_squared, "1",
		      "sum of squared weighted residuals r = (data - model)/sigma");
	xf_h5_put_f64(w, g, "reduced_chi_squared", app->reduced_chi_squared, "1",
		      "chi_squared / (n_points - n_free_parameters)");
	xf_h5_put_f64(w, g, "residual_sd", app->residual_sd, "1",
		      "sqrt(reduced chi squared) when sigma is not given, else NaN");
	xf_h5_put_f64(w, g, "sigma", app->sigma, "1",
		      "sigma of the data used in the fit (1 when not given)");
	xf_h5_put_i64(w, g, "n_points", (long long)app->n_points,
		      "fitted points: n_phi * (N-1)(N-2)/2 (t1, t2 > 0, off the diagonal)");
	xf_h5_put_i64(w, g, "n_free_parameters", app->n_free, "parameters varied by the fit");
	xf_h5_put_i64(w, g, "iterations", app->iterations, "iterations of the optimiser");
	return xf_h5_put_i64(w, g, "covariance_rank", est->cov_rank,
			     "rank of J^T J used for the covariance");
}

static int write_parameters(h5w *w, hid_t g, const xf_estimate *est)
{
	int n = est->n_params;
	signed char *fixed = calloc((size_t)(n > 0 ? n : 1), 1);
	if (!fixed)
		return xf_h5_fail(w, "/nlsq/parameter_names");
	for (int k = 0; k < n; k++)
		fixed[k] = est->is_fixed ? (signed char)(est->is_fixed[k] != 0) : 0;
	xf_h5_put_strings(w, g, "parameter_names", n, (const char *const *)est->names,
			  "every parameter in canonical order: the mode's physical parameters, "
			  "then the per-angle scaling coefficients");
	xf_h5_put_strings(w, g, "parameter_units", n, est->units, "units of each parameter");
	xf_h5_put_vec(w, g, "values", (size_t)n, est->values, "see parameter_units",
		      "fitted value of each parameter (fixed ones at their fixed value)");
	xf_h5_put_vec(w, g, "uncertainties", (size_t)n, est->sd, "see parameter_units",
		      "1-sigma standard error from the covariance; NaN for fixed parameters");
	hsize_t d1[1] = { (hsize_t)n };
	xf_h5_put(w, g, "fixed", H5T_NATIVE_SCHAR, H5T_STD_I8LE, 1, d1, fixed, "1",
		  "1 where the parameter was held fixed");
	if (est->covariance) {
		hsize_t d2[2] = { (hsize_t)n, (hsize_t)n };
		xf_h5_put(w, g, "covariance", H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, 2, d2,
			  est->covariance, "product of the two parameters' units",
			  "covariance of the parameters (row-major, order of parameter_names); "
			  "NaN rows/columns for fixed parameters");
	} else {
		double *nanm = malloc((size_t)(n > 0 ? n * n : 1) * sizeof *nanm);
		if (!nanm) {
			xf_h5_fail(w, "/nlsq/covariance");
		} else {
			for (int k = 0; k < n * n; k++)
				nanm[k] = NAN;
			hsize_t d2[2] = { (hsize_t)n, (hsize_t)n };
			xf_h5_put(w, g, "covariance", H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, 2, d2,
				  nanm, "product of the two parameters' units",
				  "covariance of the parameters (not available: NaN)");
			free(nanm);
		}
	}
	free(fixed);
	xf_h5_scale(w, g, "parameter_names");
	static const char *const by_parameter[] = { "parameter_units", "values", "uncertainties",
						    "fixed" };
	for (size_t k = 0; k < sizeof by_parameter / sizeof by_parameter[0]; k++)
		xf_h5_dims(w, g, by_parameter[k], "parameter_names", NULL);
	xf_h5_dims(w, g, "covariance", "parameter_names", "parameter_names", NULL);
	size_t np = (size_t)est->n_phi;
	xf_h5_put_vec(w, g, "per_angle_contrast", np, est->contrast, "1",
		      "contrast (beta) of each angle, order of /data/phi_deg");
	xf_h5_put_vec(w, g, "per_angle_offset", np, est->offset, "1",
		      "offset (baseline) of each angle, order of /data/phi_deg");
	xf_h5_put_vec(w, g, "per_angle_contrast_uncertainty", np, est->contrast_sd, "1",
		      "1-sigma standard error of each angle's contrast");
	xf_h5_put_vec(w, g, "per_angle_offset_uncertainty", np, est->offset_sd, "1",
		      "1-sigma standard error of each angle's offset");
	static const char *const by_angle[] = { "per_angle_contrast", "per_angle_offset",
						"per_angle_contrast_uncertainty",
						"per_angle_offset_uncertainty" };
	for (size_t k = 0; k < sizeof by_angle / sizeof by_angle[0]; k++)
		xf_h5_dims(w, g, by_angle[k], "/phi_deg", NULL);
	return w->failed ? -1 : 0;
}

/* Rows of a surface chunk: the whole N×N map of an angle when it is small, else row
 * blocks of at most XF_H5_MAX_CHUNK_BYTES, so that the chunks prepared in parallel stay
 * small next to the data. */
static size_t surface_chunk_rows(size_t n)
{
	size_t rows = XF_H5_MAX_CHUNK_BYTES / (n * sizeof(float));
	return rows < 1 ? 1 : rows > n ? n : rows;
}

/* (n_phi, N, N) float32, chunked per angle (rows split when large), shuffle + gzip */
static hid_t surface_dataset(h5w *w, hid_t g, const char *name, int n_phi, size_t n,
			     const char *desc)
{
	if (w->failed)
		return -1;
	hsize_t dims[3] = { (hsize_t)n_phi, n, n };
	hsize_t chunk[3] = { 1, surface_chunk_rows(n), n };
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_obj_track_times(dcpl, 0);
	H5Pset_chunk(dcpl, 3, chunk);
	H5Pset_shuffle(dcpl);
	H5Pset_deflate(dcpl, XF_H5_DEFLATE_LEVEL);
	float fill = NAN; /* an angle never written reads as NaN, not as a plausible 0 */
	H5Pset_fill_value(dcpl, H5T_NATIVE_FLOAT, &fill);
	hid_t s = H5Screate_simple(3, dims, NULL);
	hid_t d = H5Dcreate2(g, name, H5T_IEEE_F32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	H5Sclose(s);
	H5Pclose(dcpl);
	if (d < 0) {
		xf_h5_fail(w, name);
		return -1;
	}
	xf_h5_describe(w, d, "1", desc);
	xf_h5_attr_str(w, d, "axes", "phi, t1, t2 (see /data/phi_deg and /data/t)");
	xf_h5_dims(w, g, name, "/phi_deg", "/t", "/t", NULL);
	return d;
}

/* Prepare chunks on the pool in batches of one unit per thread, write them in chunk
 * order: the bytes of the file do not depend on the thread count. A unit is one chunk,
 * or with a sink one angle's chunks, from its fitted map computed whole (the model once,
 * shared with the sink). */
typedef struct chunk_batch {
	const xf_estimate *est; /* the model: grid, values, per-angle scaling */
	const xf_dataset *ds;
	const xf_surface_sink *sink; /* NULL: units are chunks */
	size_t per_angle;	     /* chunks per angle */
	const int *take;	     /* [unit]: the sink takes this angle */
	xf_surface_chunk *chunks;
} chunk_batch;

static void prepare_chunk(void *ctx, int k)
{
	chunk_batch *b = ctx;
	xf_surface_chunk_compute(b->est, b->ds, XF_H5_DEFLATE_LEVEL, &b->chunks[k]);
}

static void prepare_angle(void *ctx, int k)
{
	chunk_batch *b = ctx;
	xf_surface_chunk *c = b->chunks + (size_t)k * b->per_angle;
	int a = c[0].angle;
	size_t n = (size_t)b->ds->n_frames;
	double *fit = malloc(n * n * sizeof *fit);
	int failed = !fit || xf_surface_fit(b->est, b->ds, a, fit) != 0;
	for (size_t q = 0; q < b->per_angle; q++)
		if (failed || xf_surface_chunk_from(b->ds, fit + c[q].row0 * n, XF_H5_DEFLATE_LEVEL,
						    &c[q]) != 0)
			c[q].failed = failed = 1;
	if (!failed && b->take[k])
		b->sink->take(b->sink->ctx, a, b->ds->c2[a], fit);
	free(fit);
}

static int write_surfaces(h5w *w, hid_t nlsq, const xf_estimate *est, const xf_dataset *ds,
			  int threads, const xf_surface_sink *sink)
{
	size_t n = (size_t)ds->n_frames, rows = surface_chunk_rows(n);
	hid_t data = H5Gopen2(w->file, "/data", H5P_DEFAULT);
	hid_t dsets[XF_N_SURFACES];
	dsets[XF_SURF_DATA] = surface_dataset(w, data, "c2", ds->n_phi, n,
					      "measured c2(t1, t2), full symmetric matrix rebuilt "
					      "from the stored triangle, diagonal-corrected");
	dsets[XF_SURF_FIT] = surface_dataset(w, nlsq, "c2_fit", ds->n_phi, n,
					     "fitted model c2(t1, t2) at the fitted values");
	dsets[XF_SURF_RESIDUALS] = surface_dataset(w, nlsq, "residuals", ds->n_phi, n,
						   "data - fit; NaN where not fitted (t1 = 0 or "
						   "t2 = 0 row and column, the diagonal)");
	static const char *const names[XF_N_SURFACES] = { "/data/c2", "/nlsq/c2_fit",
							  "/nlsq/residuals" };
	size_t per_angle = (n + rows - 1) / rows;
	size_t per_unit = sink ? per_angle : 1;
	size_t n_units = sink ? (size_t)ds->n_phi : per_angle * (size_t)ds->n_phi;
	xf_count_progress progress = { 0 };
	size_t shown = 0;
	int sink_open = sink != NULL;
	xf_pool *pool = xf_pool_create(threads);
	xf_surface_chunk *batch = calloc((size_t)threads * per_unit, sizeof *batch);
	int *take = calloc((size_t)threads, sizeof *take);
	if (!pool || !batch || !take)
		xf_h5_fail(w, "surfaces (out of memory)");
	for (size_t first = 0; first < n_units && !w->failed; first += (size_t)threads) {
		int count = (int)(n_units - first < (size_t)threads ? n_units - first
								    : (size_t)threads);
		size_t n_chunks = (size_t)count * per_unit;
		for (size_t k = 0; k < n_chunks; k++) {
			size_t c = first * per_unit + k;
			memset(&batch[k], 0, sizeof batch[k]);
			batch[k].angle = (int)(c / per_angle);
			batch[k].row0 = (c % per_angle) * rows;
			batch[k].row1 = batch[k].row0 + rows < n ? batch[k].row0 + rows : n;
			batch[k].chunk_rows = rows;
		}
		for (int k = 0; k < count && sink; k++) {
			int a = (int)(first + (size_t)k);
			if (sink_open && sink->reserve(sink->ctx, a) != 0)
				sink_open = 0;
			take[k] = sink_open;
		}
		chunk_batch ctx = { est, ds, sink, per_angle, take, batch };
		xf_pool_run(pool, count, sink ? prepare_angle : prepare_chunk, &ctx);
		for (int k = 0; k < count && sink; k++)
			if (take[k] && !batch[(size_t)k * per_unit].failed)
				sink->ready(sink->ctx, (int)(first + (size_t)k));
		for (size_t k = 0; k < n_chunks && !w->failed; k++) {
			if (batch[k].failed) {
				xf_h5_fail(w, "surfaces (model evaluation or compression failed)");
				break;
			}
			hsize_t offset[3] = { (hsize_t)batch[k].angle, batch[k].row0, 0 };
			for (int s = 0; s < XF_N_SURFACES && !w->failed; s++)
				if (H5Dwrite_chunk(dsets[s], H5P_DEFAULT, 0, offset,
						   batch[k].size[s], batch[k].bytes[s]) < 0)
					xf_h5_fail(w, names[s]);
		}
		for (size_t k = 0; k < n_chunks; k++)
			xf_surface_chunk_free(&batch[k]);
		size_t angles = (first + (size_t)count) * per_unit / per_angle;
		if (!w->failed && angles > shown) {
			xf_progress_count(&progress, "surfaces", (int)angles, ds->n_phi, "angles");
			shown = angles;
		}
	}
	free(take);
	free(batch);
	xf_pool_destroy(pool);
	for (int s = 0; s < XF_N_SURFACES; s++)
		if (dsets[s] >= 0)
			H5Dclose(dsets[s]);
	if (data >= 0)
		H5Gclose(data);
	return w->failed ? -1 : 0;
}

static char *join_names(int n, char *const *names)
{
	size_t len = 1;
	for (int k = 0; k < n; k++)
		len += strlen(names[k]) + 2;
	char *s = calloc(len, 1);
	if (!s)
		return NULL;
	for (int k = 0; k < n; k++) {
		if (k)
			strcat(s, ", ");
		strcat(s, names[k]);
	}
	return s;
}

/* the quality reasons, one per line (plots read them back) */
static char *join_reasons(const xf_quality *q)
{
	size_t len = 1;
	for (int k = 0; k < q->n_reasons; k++)
		len += strlen(q->reasons[k]) + 1;
	char *s = calloc(len, 1);
	if (!s)
		return NULL;
	for (int k = 0; k < q->n_reasons; k++) {
		if (k)
			strcat(s, "\n");
		strcat(s, q->reasons[k]);
	}
	return s;
}

static int write_nlsq_group(h5w *w, const xf_dataset *ds, const xf_estimate *est,
			    const xf_nlsq_appendix *app, int plot_dpi, int surface_threads,
			    const xf_surface_sink *sink)
{
	hid_t g = xf_h5_group(w, "/nlsq");
	if (g < 0)
		return -1;
	xf_h5_attr_str(w, g, "status", est->words.status);
	xf_h5_attr_str(w, g, "stop_reason", app->stop_reason ? app->stop_reason : "");
	xf_h5_attr_str(w, g, "sigma_rule", xf_sigma_rule_name(app->sigma_rule));
	xf_h5_attr_str(w, g, "analysis_mode", est->words.mode);
	xf_h5_attr_str(w, g, "per_angle_mode", est->words.scaling);
	xf_h5_attr_str(w, g, "surfaces",
		       surface_threads > 0 ? "written"
					   : "skipped (not asked for: --surfaces writes them)");
	char *at = join_names(app->at_bounds ? app->n_at_bounds : 0, app->at_bounds);
	xf_h5_attr_str(w, g, "parameters_at_bounds", at ? at : "");
	free(at);
	xf_h5_attr_str(w, g, "quality", est->words.quality);
	char *reasons = join_reasons(&est->quality);
	xf_h5_attr_str(w, g, "quality_reasons", reasons ? reasons : "");
	free(reasons);
	char identified[256] = ""; /* a ridge (adr/0047): what the data identify, the fix */
	if (est->quality.identified.n_combos)
		xf_identified_text(&est->quality.identified, identified, sizeof identified);
	xf_h5_attr_str(w, g, "quality_identified", identified);
	write_parameters(w, g, est);
	write_scalars(w, g, est, app);
	xf_h5_model_grid(w, g, est, ds);
	xf_h5_put_i64(w, g, "plot_dpi", plot_dpi,
		      XF_KEY_DPI " of the run (0: nominal 100 dpi pages); `xpcsfit plot DIR` "
				 "redraws at it");
	xf_h5_nexus(w, ds, est, g);
	if (surface_threads > 0) {
		xf_profile_phase("surfaces");
		write_surfaces(w, g, est, ds, surface_threads, sink);
		xf_profile_phase("writing");
	}
	H5Gclose(g);
	return w->failed ? -1 : 0;
}

int xf_io_write_nlsq_results_h5(const char *dir, const xf_output_info *info, const xf_dataset *ds,
				const xf_estimate *est, const xf_nlsq_appendix *app,
				int surface_threads, xf_error *err)
{
	return xf_io_write_nlsq_h5(dir, ds, est, app, info ? info->plot_dpi : 0, surface_threads,
				   NULL, err);
}

int xf_io_write_nlsq_h5(const char *dir, const xf_dataset *ds, const xf_estimate *est,
			const xf_nlsq_appendix *app, int plot_dpi, int surface_threads,
			const xf_surface_sink *sink, xf_error *err)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	if (est->n_phi != ds->n_phi)
		return xf_fail(err, XF_ERR_DATA, "result has %d angles but the data %d, in %s",
			       est->n_phi, ds->n_phi, dir);
	h5w w;
	int rc = xf_h5_open(&w, dir, "results.h5", path, tmp, sizeof path, err);
	if (rc)
		return rc;
	xf_h5_result_head(&w, ds, est);
	write_nlsq_group(&w, ds, est, app, plot_dpi, surface_threads, sink);
	return xf_h5_close(&w, tmp, path);
}
