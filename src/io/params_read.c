/* params_read.c — an NLSQ result read back from its parameters.json as an estimate (the
 * warm start of `xpcsfit cmc --nlsq DIR`), and the check that it belongs to the data and config at
 * hand: the same file, mode, q, angles and frame window, else CMC would start from the
 * fit of something else. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/io_internal.h"
#include "util/files.h"
#include "io/utf8.h"
#include "xpcsfit/results.h"
#include "util/key_names.h"

/* parameters.json through the one rule for files read by name (util/files.h): a FIFO or
 * a device in its place is refused unread, not waited on */
#define XF_PARAMS_MAX_BYTES ((size_t)64 << 20)

static char *read_text(const char *path, xf_error *err)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		xf_fail(err, XF_ERR_CONFIG,
			"cannot read the NLSQ result %s (run `xpcsfit nlsq` first "
			"or give the folder that holds parameters.json)",
			path);
		return NULL;
	}
	return xf_read_text_file(path, "NLSQ result", XF_PARAMS_MAX_BYTES, XF_ERR_CONFIG, NULL,
				 err);
}

static double num_of(const cJSON *o)
{
	return cJSON_IsNumber(o) ? o->valuedouble : NAN; /* null (NaN, ±Inf) → NaN */
}

static int bad(xf_error *err, const char *path, const char *what)
{
	return xf_fail(err, XF_ERR_CONFIG, "%s is not an xpcsfit NLSQ result (%s)", path, what);
}

/* A JSON array of n numbers into dst; -1 when it is not one. */
static int numbers_into(const cJSON *arr, int n, double *dst)
{
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != n)
		return -1;
	for (int k = 0; k < n; k++)
		dst[k] = num_of(cJSON_GetArrayItem(arr, k));
	return 0;
}

/* Parameters, covariance and per-angle values, into e (allocated here). */
static int read_fit(const cJSON *root, const char *path, xf_mode mode, xf_estimate *e,
		    xf_error *err)
{
	const cJSON *cov = cJSON_GetObjectItem(root, "covariance");
	const cJSON *names = cJSON_GetObjectItem(cov, "names");
	const cJSON *matrix = cJSON_GetObjectItem(cov, "matrix");
	const cJSON *params = cJSON_GetObjectItem(root, "parameters");
	const cJSON *scaling = cJSON_GetObjectItem(root, "scaling_parameters");
	const cJSON *pa = cJSON_GetObjectItem(root, "per_angle");
	int n = cJSON_IsArray(names) ? cJSON_GetArraySize(names) : 0;
	if (n <= 0 || !cJSON_IsArray(matrix) || cJSON_GetArraySize(matrix) != n || !params || !pa)
		return bad(err, path, "no covariance, parameters or per_angle");
	const cJSON *phi = cJSON_GetObjectItem(pa, "phi_deg");
	int n_phi = cJSON_IsArray(phi) ? cJSON_GetArraySize(phi) : 0;
	if (n_phi <= 0)
		return bad(err, path, "per_angle values missing");
	if (xf_estimate_alloc(e, n, n_phi, 0, err) != 0)
		return err->code;
	e->grid.mode = mode;
	e->n_phys = xf_mode_n_phys(mode);
	e->covariance = malloc(sizeof(double) * (size_t)n * n);
	if (!e->covariance)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
	for (int k = 0; k < n; k++) {
		const cJSON *nm = cJSON_GetArrayItem(names, k);
		if (!cJSON_IsString(nm))
			return bad(err, path, "a parameter name is not a string");
		e->names[k] = strdup(nm->valuestring);
		e->units[k] = xf_model_param_unit(xf_model_record_of(mode), k);
		const cJSON *p = cJSON_GetObjectItem(params, nm->valuestring);
		if (!p)
			p = cJSON_GetObjectItem(scaling, nm->valuestring);
		if (!e->names[k] || !p)
			return bad(err, path, "a parameter of the covariance has no value");
		const cJSON *value = cJSON_GetObjectItem(p, "value");
		e->values[k] = num_of(value);
		/* a start CMC cannot use is refused here, not after a whole posterior run */
		if (!isfinite(e->values[k])) {
			char *text = value ? cJSON_PrintUnformatted(value) : NULL;
			char what[256];
			snprintf(what, sizeof what,
				 "parameters.%s.value %.40s is not a finite number",
				 nm->valuestring, text ? text : "missing");
			free(text);
			return bad(err, path, what);
		}
		e->sd[k] = num_of(cJSON_GetObjectItem(p, "uncertainty"));
		e->is_fixed[k] = cJSON_IsTrue(cJSON_GetObjectItem(p, "fixed"));
		if (numbers_into(cJSON_GetArrayItem(matrix, k), n, e->covariance + (size_t)k * n))
			return bad(err, path, "the covariance is not square");
	}
	if (numbers_into(phi, n_phi, e->phi_deg) ||
	    numbers_into(cJSON_GetObjectItem(pa, "contrast"), n_phi, e->contrast) ||
	    numbers_into(cJSON_GetObjectItem(pa, "contrast_uncertainty"), n_phi, e->contrast_sd) ||
	    numbers_into(cJSON_GetObjectItem(pa, "offset"), n_phi, e->offset) ||
	    numbers_into(cJSON_GetObjectItem(pa, "offset_uncertainty"), n_phi, e->offset_sd))
		return bad(err, path, "per_angle values missing");
	return 0;
}

int xf_results_read_nlsq(const char *dir, xf_estimate *e, xf_nlsq_origin *origin, xf_error *err)
{
	char path[PATH_MAX];
	memset(e, 0, sizeof *e);
	memset(origin, 0, sizeof *origin);
	if (xf_path_join(path, sizeof path, dir, "parameters.json", err))
		return err->code;
	char *text = read_text(path, err);
	if (!text)
		return err->code;
	cJSON *root = cJSON_Parse(text);
	free(text);
	int rc = 0;
	const cJSON *method = cJSON_GetObjectItem(root, "method");
	const cJSON *mode = cJSON_GetObjectItem(root, "analysis_mode");
	const cJSON *pam = cJSON_GetObjectItem(root, "per_angle_mode");
	const cJSON *data = cJSON_GetObjectItem(root, "data");
	if (!root || !cJSON_IsString(method) || strcmp(method->valuestring, "nlsq") ||
	    !cJSON_IsString(mode) || !cJSON_IsString(pam) || !data) {
		rc = bad(err, path, "no method nlsq, analysis_mode, per_angle_mode or data");
		goto done;
	}
	xf_mode fit_mode = xf_model_default()->mode; /* a name that is none: static */
	xf_mode_parse(mode->valuestring, &fit_mode);
	if ((rc = read_fit(root, path, fit_mode, e, err)))
		goto done;
	e->method = XF_METHOD_NLSQ;
	const char *modes[4] = { "shared", "individual", "constant", "fourier" };
	const xf_scaling_mode values[4] = { XF_SCALING_AUTO, XF_SCALING_INDIVIDUAL,
					    XF_SCALING_CONSTANT, XF_SCALING_FOURIER };
	e->scaling_mode = XF_SCALING_INDIVIDUAL;
	for (int k = 0; k < 4; k++)
		if (!strcmp(pam->valuestring, modes[k]))
			e->scaling_mode = values[k];
	if (!strcmp(pam->valuestring, "auto")) /* an older parameters.json: shared */
		e->scaling_mode = XF_SCALING_AUTO;
	const cJSON *status = cJSON_GetObjectItem(root, "status");
	origin->has_status = cJSON_IsString(status) &&
			     !xf_fit_status_parse(status->valuestring, &origin->status);
	e->status = origin->has_status ? origin->status : XF_STATUS_FAILED;
	const cJSON *file = cJSON_GetObjectItem(data, "file");
	snprintf(origin->file, sizeof origin->file, "%s",
		 cJSON_IsString(file) ? file->valuestring : "");
	origin->q = num_of(cJSON_GetObjectItem(data, "q"));
	origin->n_frames = (long)num_of(cJSON_GetObjectItem(data, "n_frames"));
	origin->first_frame = (long)num_of(cJSON_GetObjectItem(data, "first_frame"));
	xf_estimate_seal(e);
done:
	cJSON_Delete(root);
	if (rc)
		xf_estimate_free(e);
	return rc;
}

/* A physical value outside this config's bounds: CMC's map of the box has no place for
 * it (it used to run and fail on R-hat); 0 or the error. */
static int check_bounds(const char *dir, const xf_estimate *res, const xf_bound *bounds,
			xf_error *err)
{
	for (int k = 0; bounds && k < res->n_params; k++) {
		int idx = xf_param_index(res->names[k]);
		if (idx < 0 || idx >= XF_N_PHYS || res->is_fixed[k])
			continue;
		const xf_bound *b = &bounds[idx];
		double v = res->values[k];
		if (v >= b->lower && v <= b->upper)
			continue;
		return xf_fail(err, XF_ERR_CONFIG,
			       "the NLSQ result in %s/parameters.json has %s = %.17g outside this "
			       "config's bounds [%g, %g]: fit it again with this config or "
			       "widen " XF_KEY_BOUNDS,
			       dir, res->names[k], v, b->lower, b->upper);
	}
	return 0;
}

int xf_io_check_nlsq(const char *dir, const xf_estimate *res, const xf_nlsq_origin *o, xf_mode mode,
		     const xf_bound *bounds, const xf_dataset *ds, xf_error *err)
{
	char a[PATH_MAX], b[PATH_MAX], clean[3 * PATH_MAX];
	int same_file = o->file[0] && ds->path && realpath(o->file, a) && realpath(ds->path, b) &&
			!strcmp(a, b);
	/* a path that is not UTF-8 was recorded with U+FFFD for each bad byte (adr/0075) */
	if (!same_file && o->file[0] && ds->path && !xf_utf8_valid(ds->path) &&
	    realpath(ds->path, b))
		same_file = !strcmp(xf_utf8_clean_to(b, clean, sizeof clean), o->file);
	const char *why = NULL;
	if (!same_file)
		why = "another data file";
	else if (res->grid.mode != mode)
		why = "another analysis_mode";
	else if (!(fabs(o->q - ds->q) <= 1e-12 * fabs(ds->q)))
		why = "another q";
	else if (o->n_frames != ds->n_frames || o->first_frame != ds->first_frame)
		why = "another frame window";
	else if (res->n_phi != ds->n_phi)
		why = "other angles";
	for (int k = 0; !why && k < res->n_phi; k++)
		if (!(fabs(res->phi_deg[k] - ds->phi_deg[k]) <= 1e-9))
			why = "other angles";
	if (!why)
		return check_bounds(dir, res, bounds, err);
	return xf_fail(err, XF_ERR_CONFIG,
		       "the NLSQ result in %s was fitted to %s (%s, mode %s, q %.6g, %d angles, "
		       "%ld frames) than this run (%s, mode %s, q %.6g, %d angles, %d frames): "
		       "fit it again or give the matching --nlsq",
		       dir, why, o->file, xf_mode_name(res->grid.mode), o->q, res->n_phi,
		       o->n_frames, ds->path ? ds->path : "?", xf_mode_name(mode), ds->q, ds->n_phi,
		       ds->n_frames);
}
