/* json.c — numbers in JSON as the result files write them (spec/cli.md): C locale, the
 * shortest of 15..17 significant digits that reads back bitwise, null for NaN and
 * infinities. cJSON's own printer stops at 15 digits whenever the value is within an
 * epsilon, which is not round-trip exact, so numbers are written as raw text. */
#include <cjson/cJSON.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <limits.h>
#include <string.h>

#include "io/io_internal.h"
#include "io/utf8.h"
#include "util/profile.h"
#include "xpcsfit/params.h"

void xf_io_format_double(double x, char *buf, size_t size)
{
	if (!isfinite(x)) {
		snprintf(buf, size, "null");
		return;
	}
	/* snprintf/strtod follow LC_NUMERIC: pin this thread to "C" while formatting */
	locale_t c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	locale_t old = c_loc ? uselocale(c_loc) : (locale_t)0;
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, size, "%.*g", digits, x);
		if (digits == 17 || strtod(buf, NULL) == x)
			break;
	}
	if (c_loc) {
		uselocale(old);
		freelocale(c_loc);
	}
}

cJSON *xf_json_num(double x)
{
	char buf[32];
	xf_io_format_double(x, buf, sizeof buf);
	return cJSON_CreateRaw(buf);
}

cJSON *xf_json_int(long long v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%lld", v);
	return cJSON_CreateRaw(buf);
}

/* seeds are 0 … 2^64 − 1 (docs/config.md): written as such, never as negative */
cJSON *xf_json_u64(uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
	return cJSON_CreateRaw(buf);
}

cJSON *xf_json_numbers(const double *v, int n)
{
	cJSON *arr = cJSON_CreateArray();
	for (int k = 0; k < n; k++)
		cJSON_AddItemToArray(arr, xf_json_num(v ? v[k] : NAN));
	return arr;
}

static void add_unit(cJSON *obj, const char *name, const char *unit)
{
	if (name && !cJSON_GetObjectItemCaseSensitive(obj, name))
		cJSON_AddStringToObject(obj, name, unit);
}

cJSON *xf_json_parameter_units(const xf_estimate *est)
{
	cJSON *obj = cJSON_CreateObject();
	int n_phys = est->n_phys < est->n_params ? est->n_phys : est->n_params;
	for (int k = 0; k < n_phys; k++)
		add_unit(obj, est->names[k], est->units[k]);
	add_unit(obj, "contrast", "1");
	add_unit(obj, "offset", "1");
	for (int k = n_phys; k < est->n_params; k++)
		add_unit(obj, est->names[k], est->units[k]);
	return obj;
}

void xf_io_angle_summary(const double *v, const double *unc, int n, double *mean, double *rms)
{
	double sum = 0.0, sum_u2 = 0.0;
	for (int a = 0; a < n; a++) {
		sum += v ? v[a] : NAN;
		sum_u2 += unc ? unc[a] * unc[a] : NAN;
	}
	*mean = n > 0 ? sum / n : NAN;
	*rms = n > 0 ? sqrt(sum_u2 / n) : NAN;
}

void xf_io_cmc_angle_mean(const double *v, const double *sd, int n, double *mean, double *sd_rms)
{
	double m = 0.0, s2 = 0.0;
	for (int a = 0; a < n; a++) {
		m += v[a] / n;
		s2 += sd[a] * sd[a] / n;
	}
	*mean = m;
	*sd_rms = sqrt(s2);
}

/* what the result writer (results.c) reports about the files of this run */
static struct {
	xf_plots_outcome plots;
	char plots_error[512];
} outputs;

void xf_json_set_outputs(xf_plots_outcome plots, const char *plots_error)
{
	outputs.plots = plots;
	snprintf(outputs.plots_error, sizeof outputs.plots_error, "%s",
		 plots_error ? plots_error : "");
}

void xf_json_add_timings(cJSON *root)
{
	if (!xf_profile_enabled())
		return;
	xf_profile_phase_row rows[XF_PROFILE_MAX_PHASES];
	double total_s;
	int n = xf_profile_snapshot(rows, XF_PROFILE_MAX_PHASES, &total_s);
	cJSON *t = cJSON_CreateObject(), *phases = cJSON_CreateObject();
	for (int k = 0; k < n; k++) {
		cJSON *p = cJSON_CreateObject();
		cJSON_AddItemToObject(p, "wall_s", xf_json_num(rows[k].wall_s));
		cJSON_AddItemToObject(p, "peak_rss_mib", xf_json_num(rows[k].peak_mib));
		cJSON_AddItemToObject(phases, rows[k].name, p);
	}
	cJSON_AddItemToObject(t, "phases", phases);
	cJSON_AddItemToObject(t, "total_s", xf_json_num(total_s));
	cJSON_AddItemToObject(root, "timings", t);
}

/* homodyne's convergence_status names */
static const char *convergence_status(xf_fit_status status)
{
	if (status == XF_STATUS_CONVERGED)
		return "converged";
	if (status == XF_STATUS_MAX_ITERATIONS)
		return "max_iter";
	return "failed";
}

cJSON *xf_json_result_head(const xf_estimate *est)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "method", est->words.method);
	cJSON_AddStringToObject(root, "analysis_mode", est->words.mode);
	cJSON_AddStringToObject(root, "status", est->words.status);
	cJSON_AddStringToObject(root, "convergence_status", convergence_status(est->status));
	return root;
}

cJSON *xf_json_quality(const xf_quality *q)
{
	cJSON *obj = cJSON_CreateObject(), *reasons = cJSON_CreateArray();
	for (int k = 0; k < q->n_reasons; k++)
		cJSON_AddItemToArray(reasons, cJSON_CreateString(q->reasons[k]));
	cJSON_AddStringToObject(obj, "overall", xf_quality_level_name(q->overall));
	cJSON_AddItemToObject(obj, "reasons", reasons);
	return obj;
}

void xf_json_add_provenance(cJSON *root, const xf_output_info *info, const xf_dataset *ds)
{
	if (outputs.plots != XF_PLOTS_UNSAID) {
		static const char *const plots_name[] = { "", "written", "skipped", "failed" };
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "status",
					outputs.plots == XF_PLOTS_FAILED ? "partial" : "complete");
		cJSON_AddStringToObject(o, "plots", plots_name[outputs.plots]);
		cJSON_AddStringToObject(o, "report", "report.html");
		if (outputs.plots_error[0])
			cJSON_AddStringToObject(o, "plots_error", outputs.plots_error);
		cJSON_AddItemToObject(root, "outputs", o);
	}
	cJSON *data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "file", ds->path ? ds->path : "");
	cJSON_AddStringToObject(data, "layout", xf_layout_name(ds->layout));
	cJSON_AddItemToObject(data, "q", xf_json_num(ds->q));
	cJSON_AddItemToObject(data, "n_phi", xf_json_int(ds->n_phi));
	cJSON_AddItemToObject(data, "n_frames", xf_json_int(ds->n_frames));
	cJSON_AddItemToObject(data, "n_points", xf_json_int((long long)ds->n_points));
	cJSON_AddItemToObject(data, "dt_s", xf_json_num(ds->dt_s));
	cJSON_AddItemToObject(data, "first_frame", xf_json_int(ds->first_frame));
	cJSON_AddItemToObject(root, "data", data);
	cJSON_AddStringToObject(root, "config", info && info->config_path ? info->config_path : "");
	cJSON_AddStringToObject(root, "xpcsfit_version", XPCSFIT_VERSION);
}

int xf_json_write(const char *dir, const char *name, cJSON *root, xf_error *err)
{
	char path[PATH_MAX];
	if (xf_path_join(path, sizeof path, dir, name, err) != 0) {
		cJSON_Delete(root);
		return err->code;
	}
	char *text = root ? cJSON_Print(root) : NULL;
	cJSON_Delete(root);
	if (text && !xf_utf8_valid(text)) { /* a path's byte 0xFF: U+FFFD (adr/0075) */
		char *clean = xf_utf8_clean(text);
		cJSON_free(text);
		text = clean ? cJSON_malloc(strlen(clean) + 1) : NULL;
		if (text)
			memcpy(text, clean, strlen(clean) + 1);
		free(clean);
	}
	if (!text)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory building JSON, %s", path);
	size_t len = strlen(text);
	/* a trailing newline: friendlier to cat and to line-based tools */
	char *withnl = malloc(len + 2);
	if (!withnl) {
		cJSON_free(text);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory building JSON, %s", path);
	}
	memcpy(withnl, text, len);
	memcpy(withnl + len, "\n", 2);
	cJSON_free(text);
	int rc = xf_write_file_atomic(path, withnl, len + 1, err);
	free(withnl);
	return rc;
}

cJSON *xf_json_overrides(const xf_output_info *info)
{
	cJSON *list = cJSON_CreateArray();
	for (size_t k = 0; list && info && k < info->n_overrides; k++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "option", info->overrides[k].option);
		cJSON_AddStringToObject(o, "key", info->overrides[k].key);
		cJSON_AddStringToObject(o, "value", info->overrides[k].value);
		cJSON_AddItemToArray(list, o);
	}
	return list;
}
