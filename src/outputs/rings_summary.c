/* rings_summary.c — the per-ring mode's summary files (adr/0065): rings.csv and
 * rings.json in DIR/nlsq/, one row / object per ring in ascending q, each number written
 * as parameters.json writes it (io/json.c: reads back as the same double). */
#include "outputs/rings_summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include "io/io_internal.h"
#include "xpcsfit/quality.h"
#include "util/files.h"

void xf_ring_record_fill(xf_ring_record *rec, const xf_estimate *est, const xf_nlsq_appendix *app)
{
	rec->written = 1;
	rec->failed = xf_fit_status_failed(est->status);
	snprintf(rec->status, sizeof rec->status, "%s", est->words.status);
	snprintf(rec->quality, sizeof rec->quality, "%s", est->words.quality);
	rec->chi_squared = app->chi_squared;
	rec->reduced_chi_squared = app->reduced_chi_squared;
	rec->residual_sd = app->residual_sd;
	rec->n_points = app->n_points;
	rec->iterations = app->iterations;
	rec->n_phys = est->n_phys < XF_N_PHYS ? est->n_phys : XF_N_PHYS;
	for (int k = 0; k < rec->n_phys; k++) {
		rec->names[k] = strdup(est->names[k]);
		rec->values[k] = est->values[k];
		rec->uncertainties[k] = est->sd[k];
		rec->is_fixed[k] = est->is_fixed[k];
	}
}

void xf_ring_record_fill_cmc(xf_ring_record *rec, const xf_estimate *est)
{
	rec->written = 1;
	rec->posterior = 1;
	rec->failed = est->status != XF_STATUS_CONVERGED;
	snprintf(rec->status, sizeof rec->status, "%s", est->words.status);
	snprintf(rec->quality, sizeof rec->quality, "%s", est->words.quality);
	rec->chi_squared = rec->reduced_chi_squared = rec->residual_sd = NAN;
	rec->n_points = 0;
	rec->iterations = est->n_draws;
	rec->n_phys = est->n_phys < XF_N_PHYS ? est->n_phys : XF_N_PHYS;
	for (int k = 0; k < rec->n_phys; k++) {
		int drawn = est->n_draws > 0;
		rec->names[k] = strdup(est->names[k]);
		rec->is_fixed[k] = est->is_fixed[k];
		/* as cmc_json.c writes them: a fixed parameter's value, else mean and sd */
		rec->values[k] = !drawn ? NAN : est->is_fixed[k] ? est->draws[k] : est->values[k];
		rec->uncertainties[k] = !drawn || est->is_fixed[k] ? NAN : est->sd[k];
	}
}

void xf_ring_record_free(xf_ring_record *rec)
{
	for (int k = 0; k < rec->n_phys; k++)
		free(rec->names[k]);
	rec->n_phys = 0;
}

/* q in fixed-point with sig significant digits, trailing zeros (and a bare '.') dropped */
static void q_text(double q, int sig, char *buf, size_t size)
{
	int decimals = sig - 1 - (int)floor(log10(fabs(q)));
	if (decimals < 0)
		decimals = 0;
	snprintf(buf, size, "q_%.*f", decimals, q);
	char *dot = strchr(buf, '.');
	if (!dot)
		return;
	char *end = buf + strlen(buf) - 1;
	while (end > dot && *end == '0')
		*end-- = '\0';
	if (end == dot)
		*end = '\0';
}

void xf_ring_folder_names(xf_ring_record *rec, int n)
{
	for (int sig = 4; sig <= 17; sig++) {
		int distinct = 1;
		for (int r = 0; r < n; r++) {
			q_text(rec[r].q_per_A, sig, rec[r].folder, XF_RING_NAME_MAX);
			if (r > 0 && !strcmp(rec[r].folder, rec[r - 1].folder))
				distinct = 0;
		}
		if (distinct)
			return;
	}
}

/* the physical parameter names of the run: those of the first written ring (every ring
 * of one run fits one mode) */
static const xf_ring_record *first_written(const xf_ring_record *r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i].written)
			return &r[i];
	return NULL;
}

static void csv_num(char **p, char *end, double v)
{
	char num[32] = "";
	if (isfinite(v))
		xf_io_format_double(v, num, sizeof num);
	*p += snprintf(*p, (size_t)(end - *p), ",%s", num);
}

static int write_csv(const char *dir, const xf_ring_record *r, int n, xf_error *err)
{
	const xf_ring_record *head = first_written(r, n);
	size_t size = 4096 + (size_t)n * 1024;
	char *text = malloc(size), *p = text, *end = text + size;
	if (!text)
		return xf_fail(err, XF_ERR_DATA, "out of memory writing rings.csv");
	p += snprintf(p, (size_t)(end - p),
		      "q_per_A,folder,status,quality,chi_squared,"
		      "reduced_chi_squared,residual_sd,n_points,iterations");
	for (int k = 0; head && k < head->n_phys; k++)
		p += snprintf(p, (size_t)(end - p), ",%s,%s_sd", head->names[k], head->names[k]);
	p += snprintf(p, (size_t)(end - p), "\n");
	for (int i = 0; i < n; i++) {
		const xf_ring_record *x = &r[i];
		char q[32];
		xf_io_format_double(x->q_per_A, q, sizeof q);
		p += snprintf(p, (size_t)(end - p), "%s,%s,%s,%s", q, x->written ? x->folder : "",
			      x->status, x->quality);
		if (!x->written) {
			p += snprintf(p, (size_t)(end - p), ",,,,,");
			for (int k = 0; head && k < head->n_phys; k++)
				p += snprintf(p, (size_t)(end - p), ",,");
			p += snprintf(p, (size_t)(end - p), "\n");
			continue;
		}
		csv_num(&p, end, x->chi_squared);
		csv_num(&p, end, x->reduced_chi_squared);
		csv_num(&p, end, x->residual_sd);
		if (x->posterior) /* CMC: no χ² minimum, no points or iterations of its own */
			p += snprintf(p, (size_t)(end - p), ",,");
		else
			p += snprintf(p, (size_t)(end - p), ",%zu,%d", x->n_points, x->iterations);
		for (int k = 0; head && k < head->n_phys; k++) {
			csv_num(&p, end, x->values[k]);
			csv_num(&p, end, x->is_fixed[k] ? NAN : x->uncertainties[k]);
		}
		p += snprintf(p, (size_t)(end - p), "\n");
	}
	char path[4096];
	int rc = xf_path_join(path, sizeof path, dir, "rings.csv", err);
	if (!rc)
		rc = xf_write_file_atomic(path, text, (size_t)(p - text), err);
	free(text);
	return rc;
}

static void json_num(cJSON *o, const char *key, double v)
{
	cJSON_AddItemToObject(o, key, xf_json_num(v)); /* null when not finite */
}

static cJSON *ring_json(const xf_ring_record *x)
{
	cJSON *o = cJSON_CreateObject();
	json_num(o, "q_per_A", x->q_per_A);
	if (x->written)
		cJSON_AddStringToObject(o, "folder", x->folder);
	else
		cJSON_AddNullToObject(o, "folder");
	cJSON_AddStringToObject(o, "status", x->status);
	cJSON_AddBoolToObject(o, "failed", x->failed);
	if (!x->written)
		return o;
	cJSON_AddStringToObject(o, "quality", x->quality);
	json_num(o, "chi_squared", x->chi_squared);
	json_num(o, "reduced_chi_squared", x->reduced_chi_squared);
	json_num(o, "residual_sd", x->residual_sd);
	if (x->posterior) {
		cJSON_AddItemToObject(o, "n_draws", xf_json_int(x->iterations));
	} else {
		cJSON_AddItemToObject(o, "n_points", xf_json_int((long long)x->n_points));
		cJSON_AddItemToObject(o, "iterations", xf_json_int(x->iterations));
	}
	cJSON *params = cJSON_AddObjectToObject(o, "parameters");
	for (int k = 0; k < x->n_phys; k++) {
		cJSON *p = cJSON_AddObjectToObject(params, x->names[k]);
		json_num(p, "value", x->values[k]);
		json_num(p, "uncertainty", x->is_fixed[k] ? NAN : x->uncertainties[k]);
		cJSON_AddBoolToObject(p, "fixed", x->is_fixed[k]);
	}
	return o;
}

static int write_json(const char *dir, const char *method, const char *mode_name,
		      const xf_ring_record *r, int n, xf_error *err)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "method", method);
	cJSON_AddStringToObject(root, "analysis_mode", mode_name);
	cJSON_AddStringToObject(root, "q_unit", "1/angstrom");
	cJSON *arr = cJSON_AddArrayToObject(root, "rings");
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, ring_json(&r[i]));
	return xf_json_write(dir, "rings.json", root, err);
}

int xf_rings_write_summary(const char *dir, const char *method, const char *mode_name,
			   const xf_ring_record *r, int n, xf_error *err)
{
	int rc = write_csv(dir, r, n, err);
	if (!rc)
		rc = write_json(dir, method, mode_name, r, n, err);
	return rc;
}
