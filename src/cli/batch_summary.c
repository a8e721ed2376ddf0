/* batch_summary.c — <out>/batch_summary.csv and <out>/batch_summary.json (docs/outputs.md
 * "Batch summary"), built from what is on disk for every input: its batch.json record
 * and the parameters.json of its result folders. Each input's row is read once at the
 * start and again when that file finishes (or, for the files of other tasks and ranks,
 * before the last write), and kept in memory: a rewrite formats rows and opens no record
 * (adr/0073; it used to reread every record, N² opens over a batch). Both files are
 * written atomically; a file whose record is missing, says running, names another input,
 * or whose folder is incomplete counts as pending. */
#include "cli/batch_internal.h"
#include "io/utf8.h"
#include "io/io_internal.h"
#include "xpcsfit/params.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A parameters.json is tens of KB (its covariance); a larger file is cut and not parsed. */
#define XF_PARAMS_MAX_BYTES ((size_t)16 << 20)
/* The physical parameters of the widest mode, then the two scaling columns. */
#define XF_SUMMARY_MAX_PARAMS (XF_N_PHYS + 2)

/* One row, as it is on disk. */
typedef struct row {
	xf_batch_state status; /* ok, failed, pending */
	double q, wall_s;
	/* the NLSQ fit's goodness, under the name that says what it is (adr/0062):
	 * chi2_red only with σ given; without σ the "reduced χ²" is the residual variance,
	 * reported as parameters.json does, residual_sd (the other NaN: an empty cell) */
	double chi2_red, residual_sd;
	long n_angles; /* -1: unknown */
	double value[XF_SUMMARY_MAX_PARAMS], sd[XF_SUMMARY_MAX_PARAMS];
	/* several rings (adr/0065 addendum): the file's own table, relative to --out
	 * ("<name>/nlsq/rings.csv" per ring, "<name>/nlsq_joint/parameters.json" joint);
	 * "" for one ring */
	char *rings;
	char *message; /* the failure's line (the record's message), NULL when none */
	int read;      /* read from disk at least once */
} row;

struct xf_batch_summary {
	row *rows; /* one per input, in input order */
	size_t n;
	size_t since; /* files finished since the last write */
	const char *names[XF_SUMMARY_MAX_PARAMS];
	int n_params;
	xf_batch_record *rec; /* scratch for reading a record (6 KB: not on every row) */
};

/* growing text for the CSV */
typedef struct text {
	char *s;
	size_t len, cap;
	int failed;
} text;

static void put(text *t, const char *s)
{
	size_t n = strlen(s);
	if (t->failed)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		while (cap < t->len + n + 1)
			cap *= 2;
		char *p = realloc(t->s, cap);
		if (!p) {
			t->failed = 1;
			return;
		}
		t->s = p;
		t->cap = cap;
	}
	memcpy(t->s + t->len, s, n + 1);
	t->len += n;
}

static void put_number(text *t, double x)
{
	char buf[32];
	if (!isfinite(x))
		return; /* empty cell */
	xf_io_format_double(x, buf, sizeof buf);
	put(t, buf);
}

/* a cell quoted when it holds a comma, a quote or a line break (RFC 4180) */
static void put_cell(text *t, const char *given)
{
	char *s = xf_utf8_clean(given); /* UTF-8: a byte 0xFF is U+FFFD (adr/0075) */
	if (!s) {
		t->failed = 1;
		return;
	}
	if (!strpbrk(s, ",\"\r\n")) {
		put(t, s);
		free(s);
		return;
	}
	put(t, "\"");
	for (const char *p = s; *p; p++)
		put(t, *p == '"' ? "\"\"" : (char[2]){ *p, '\0' });
	put(t, "\"");
	free(s);
}

static cJSON *read_json(const char *dir, const char *sub, xf_error *err)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s/parameters.json", dir, sub);
	return xf_batch_read_json(path, XF_PARAMS_MAX_BYTES, err);
}

static double number(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

/* n_params names: the mode's physical parameters, then contrast and offset */
static int param_names(const xf_batch *b, const char **names)
{
	/* the widest model's parameters: every file's have a column */
	int n = xf_model_default()->n_phys;
	for (size_t k = 0; k < b->n; k++)
		if (xf_mode_n_phys(b->inputs[k].mode) > n)
			n = xf_mode_n_phys(b->inputs[k].mode);
	for (int k = 0; k < n; k++)
		names[k] = xf_param_names[k];
	names[n] = "contrast";
	names[n + 1] = "offset";
	return n + 2;
}

/* values of the final method's parameters.json: value/uncertainty in nlsq's and cmc's
 * (adr/0062); mean/std in a cmc folder written before they shared these names */
static void fill_values(row *r, const cJSON *params, const char *const *names, int n)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(params, "parameters");
	for (int k = 0; k < n; k++) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(p, names[k]);
		r->value[k] = number(e, "value");
		if (!isfinite(r->value[k]))
			r->value[k] = number(e, "mean");
		r->sd[k] = number(e, "uncertainty");
		if (!isfinite(r->sd[k]))
			r->sd[k] = number(e, "std");
	}
}

/* chi2_red when σ was given, else residual_sd (the fit's own numbers, parameters.json) */
static void fill_goodness(row *r, const cJSON *nlsq)
{
	const cJSON *rule = cJSON_GetObjectItemCaseSensitive(nlsq, "sigma_rule");
	if (cJSON_IsString(rule) && !strcmp(rule->valuestring, "given"))
		r->chi2_red = number(nlsq, "reduced_chi_squared");
	else
		r->residual_sd = number(nlsq, "residual_sd");
}

/* A per-ring run's top folder (adr/0065): rings.json, no parameters.json of its own. */
static int per_ring(const char *dir, const char *side)
{
	char path[PATH_MAX + 64];
	struct stat st;
	snprintf(path, sizeof path, "%s/%s/parameters.json", dir, side);
	if (stat(path, &st) == 0)
		return 0;
	snprintf(path, sizeof path, "%s/%s/rings.json", dir, side);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A copy of s into *slot (the old one freed); 0 or XF_ERR_NOMEM. */
static int keep(char **slot, const char *s, xf_error *err)
{
	free(*slot);
	*slot = NULL;
	if (!s || !s[0])
		return 0;
	*slot = strdup(s);
	return *slot ? 0 : xf_fail(err, XF_ERR_NOMEM, "out of memory for the batch summary");
}

/* The row of one input, read from its folder; 0, or XF_ERR_NOMEM (a row read without
 * memory would lie). */
static int read_row(const xf_batch *b, const xf_batch_input *in, xf_batch_summary *s, row *r,
		    xf_error *err)
{
	char dir[PATH_MAX], rings[PATH_MAX];
	xf_batch_record *rec = s->rec;
	r->read = 1;
	r->status = XF_BATCH_PENDING;
	r->q = r->chi2_red = r->residual_sd = r->wall_s = NAN;
	r->n_angles = -1;
	free(r->rings);
	free(r->message);
	r->rings = r->message = NULL;
	for (int k = 0; k < XF_SUMMARY_MAX_PARAMS; k++)
		r->value[k] = r->sd[k] = NAN;
	if (xf_batch_dir(b, in, dir, sizeof dir))
		return 0;
	int rc = xf_batch_record_read(dir, rec, err);
	char input[sizeof rec->input]; /* as the record holds it (adr/0075) */
	if (rc || strcmp(rec->input, xf_utf8_clean_to(in->abs_path, input, sizeof input)))
		return rc > 0 ? rc : 0;
	int whole = xf_batch_results_whole(dir, b->method, in->joint);
	if (rec->status == XF_BATCH_OK && whole)
		r->status = XF_BATCH_OK;
	else if (rec->status == XF_BATCH_FAILED)
		r->status = XF_BATCH_FAILED;
	else
		return 0;
	r->wall_s = rec->wall_s;
	if (r->status == XF_BATCH_FAILED && keep(&r->message, rec->message, err))
		return err->code;
	if (!whole || !rec->results)
		return 0; /* a failure that left no result of its own: its message only */
	const char *side = b->method == XF_BATCH_NLSQ ? "nlsq" : "cmc";
	if (per_ring(dir, side)) { /* a row per file: the rings are in the file's table */
		snprintf(rings, sizeof rings, "%s/%s/rings.csv", in->name, side);
		return keep(&r->rings, rings, err);
	}
	if (in->joint) {
		snprintf(rings, sizeof rings, "%s/%s/parameters.json", in->name,
			 xf_batch_folder(side, 1));
		if (keep(&r->rings, rings, err))
			return err->code;
	}
	cJSON *nlsq = read_json(dir, xf_batch_folder("nlsq", in->joint), err);
	cJSON *final = b->method != XF_BATCH_NLSQ && !err->code
			       ? read_json(dir, xf_batch_folder("cmc", in->joint), err)
			       : NULL;
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(nlsq, "data");
	r->q = in->joint ? NAN : number(data, "q"); /* a joint fit has a q per ring */
	double n_phi = number(data, "n_phi");
	r->n_angles = isfinite(n_phi) ? (long)n_phi : -1;
	fill_goodness(r, nlsq);
	fill_values(r, final ? final : nlsq, s->names, s->n_params);
	cJSON_Delete(final);
	cJSON_Delete(nlsq);
	return err->code;
}

static void csv_row(text *t, const xf_batch_input *in, const row *r, int n)
{
	char count[32] = "";
	put_cell(t, in->path);
	put(t, ",");
	put_cell(t, in->name);
	put(t, ",");
	put_number(t, r->q);
	if (r->n_angles >= 0)
		snprintf(count, sizeof count, "%ld", r->n_angles);
	put(t, ",");
	put(t, count);
	put(t, ",");
	put(t, xf_batch_state_name(r->status));
	put(t, ",");
	put_number(t, r->chi2_red);
	put(t, ",");
	put_number(t, r->residual_sd);
	for (int k = 0; k < n; k++) {
		put(t, ",");
		put_number(t, r->value[k]);
		put(t, ",");
		put_number(t, r->sd[k]);
	}
	put(t, ",");
	if (isfinite(r->wall_s)) { /* ms: the wall time is for people, never compared */
		char wall[32];
		snprintf(wall, sizeof wall, "%.3f", r->wall_s);
		put(t, wall);
	}
	put(t, ",");
	put_cell(t, r->message && r->status == XF_BATCH_FAILED ? r->message : "");
	put(t, ",");
	put_cell(t, r->rings ? r->rings : "");
	put(t, "\n");
}

static cJSON *json_row(const xf_batch_input *in, const row *r, const char *const *names, int n)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *p = cJSON_CreateObject();
	if (!o || !p) {
		cJSON_Delete(o);
		cJSON_Delete(p);
		return NULL;
	}
	cJSON_AddStringToObject(o, "file", in->path);
	cJSON_AddStringToObject(o, "name", in->name);
	cJSON_AddStringToObject(o, "status", xf_batch_state_name(r->status));
	cJSON_AddItemToObject(o, "q", xf_json_num(r->q));
	cJSON_AddItemToObject(o, "n_angles",
			      r->n_angles >= 0 ? xf_json_int(r->n_angles) : cJSON_CreateNull());
	cJSON_AddItemToObject(o, "chi2_red", xf_json_num(r->chi2_red));
	cJSON_AddItemToObject(o, "residual_sd", xf_json_num(r->residual_sd));
	for (int k = 0; k < n; k++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddItemToObject(e, "value", xf_json_num(r->value[k]));
		cJSON_AddItemToObject(e, "sd", xf_json_num(r->sd[k]));
		cJSON_AddItemToObject(p, names[k], e);
	}
	cJSON_AddItemToObject(o, "parameters", p);
	cJSON_AddItemToObject(o, "wall_s", xf_json_num(r->wall_s));
	cJSON_AddStringToObject(o, "message",
				r->message && r->status == XF_BATCH_FAILED ? r->message : "");
	cJSON_AddStringToObject(o, "rings", r->rings ? r->rings : "");
	return o;
}

static void csv_header(text *t, const char *const *names, int n)
{
	put(t, "file,name,q,n_angles,status,chi2_red,residual_sd");
	for (int k = 0; k < n; k++) {
		put(t, ",");
		put(t, names[k]);
		put(t, ",");
		put(t, names[k]);
		put(t, "_sd");
	}
	put(t, ",wall_s,message,rings\n");
}

void xf_batch_summary_free(xf_batch_summary *s)
{
	if (!s)
		return;
	for (size_t k = 0; s->rows && k < s->n; k++) {
		free(s->rows[k].rings);
		free(s->rows[k].message);
	}
	free(s->rows);
	free(s->rec);
	free(s);
}

int xf_batch_summary_load(const xf_batch *b, xf_batch_summary **out, xf_error *err)
{
	xf_batch_summary *s = calloc(1, sizeof *s);
	*out = NULL;
	if (s) {
		s->rows = calloc(b->n ? b->n : 1, sizeof *s->rows);
		s->rec = malloc(sizeof *s->rec);
	}
	if (!s || !s->rows || !s->rec) {
		xf_batch_summary_free(s);
		return xf_fail(err, XF_ERR_NOMEM,
			       "out of memory for the batch summary of %zu files", b->n);
	}
	s->n = b->n;
	s->n_params = param_names(b, s->names);
	for (size_t k = 0; k < b->n; k++)
		if (read_row(b, &b->inputs[k], s, &s->rows[k], err)) {
			xf_batch_summary_free(s);
			return err->code;
		}
	*out = s;
	return 0;
}

int xf_batch_summary_reread(const xf_batch *b, xf_batch_summary *s, size_t k, xf_error *err)
{
	if (k >= s->n)
		return 0;
	return read_row(b, &b->inputs[k], s, &s->rows[k], err);
}

int xf_batch_summary_reread_others(const xf_batch *b, xf_batch_summary *s, xf_error *err)
{
	for (size_t k = 0; k < s->n; k++)
		if (!b->inputs[k].mine && read_row(b, &b->inputs[k], s, &s->rows[k], err))
			return err->code;
	return 0;
}

int xf_batch_summary_due(xf_batch_summary *s)
{
	s->since++;
	return s->since * XF_BATCH_SUMMARY_WRITES >= s->n;
}

int xf_batch_summary_write(const xf_batch *b, xf_batch_summary *s, size_t *n_ok, size_t *n_failed,
			   size_t *n_pending, xf_error *err)
{
	const char *const *names = s->names;
	int n = s->n_params;
	size_t ok = 0, failed = 0, pending = 0;
	text t = { 0 };
	cJSON *root = cJSON_CreateObject(), *files = cJSON_CreateArray();
	if (!root || !files) {
		cJSON_Delete(root);
		cJSON_Delete(files);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory writing the batch summary");
	}
	s->since = 0;
	csv_header(&t, names, n);
	for (size_t k = 0; k < s->n; k++) {
		const row *r = &s->rows[k];
		ok += r->status == XF_BATCH_OK;
		failed += r->status == XF_BATCH_FAILED;
		pending += r->status == XF_BATCH_PENDING;
		csv_row(&t, &b->inputs[k], r, n);
		cJSON *o = json_row(&b->inputs[k], r, names, n);
		if (!o)
			t.failed = 1;
		else
			cJSON_AddItemToArray(files, o);
	}
	cJSON_AddStringToObject(root, "config", b->config);
	cJSON_AddStringToObject(root, "method", xf_batch_method_name(b->method));
	cJSON_AddItemToObject(root, "n_files", xf_json_int((long long)b->n));
	cJSON_AddItemToObject(root, "n_ok", xf_json_int((long long)ok));
	cJSON_AddItemToObject(root, "n_failed", xf_json_int((long long)failed));
	cJSON_AddItemToObject(root, "n_pending", xf_json_int((long long)pending));
	cJSON_AddItemToObject(root, "files", files);
	cJSON_AddStringToObject(root, "xpcsfit_version", XPCSFIT_VERSION);
	char path[PATH_MAX];
	int rc = err->code  ? err->code
		 : t.failed ? xf_fail(err, XF_ERR_NOMEM, "out of memory writing the batch summary")
			    : xf_path_join(path, sizeof path, b->out, "batch_summary.csv", err);
	if (rc == 0)
		rc = xf_write_file_atomic(path, t.s, t.len, err);
	if (rc == 0)
		rc = xf_json_write(b->out, "batch_summary.json", root, err);
	else
		cJSON_Delete(root);
	free(t.s);
	if (n_ok)
		*n_ok = ok;
	if (n_failed)
		*n_failed = failed;
	if (n_pending)
		*n_pending = pending;
	return rc;
}
