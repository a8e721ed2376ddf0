/* batch_record.c — <out>/<name>/batch.json, what one file of a batch left (adr/0023):
 * running/ok/failed, the message of a failure, the wall time, and the fingerprint of the
 * inputs it was made from (the data file's CRC-32 and size, the resolved settings of the
 * config with the file's overrides, adr/0057, and the method), which --resume compares
 * with the inputs as they are now, naming what changed. The summary is built from these
 * records, so it is right whichever process (a --task of a job array, or a later
 * --resume) finished which file. */
#include "cli/batch_internal.h"
#include "io/utf8.h"
#include "io/io_internal.h"
#include "util/checksum.h"
#include "util/files.h"
#include "util/rundir.h"
#include "util/verbosity.h"
#include "xpcsfit/config.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A batch.json is a few hundred bytes; a larger one is not ours. */
#define XF_RECORD_MAX_BYTES ((size_t)1 << 20)

int xf_batch_dir(const xf_batch *b, const xf_batch_input *in, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s", b->out, in->name);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The settings of the input's config after its overrides (xf_config.settings) and their
 * CRC-32. Its warnings were shown when the batch checked every config: not again. */
static int resolved_settings(const xf_batch *b, const xf_batch_input *in, xf_batch_record *rec,
			     xf_error *err)
{
	xf_config cfg;
	xf_error why = { 0 };
	xf_log_set_stderr(0, 0);
	int rc = xf_config_load_text(b->config, b->config_text, in->overrides, in->n_overrides,
				     &cfg, &why);
	xf_verbosity_apply_log();
	if (rc)
		return xf_fail(err, rc == XF_ERR_NOMEM ? rc : XF_ERR_CONFIG, "%s", why.msg);
	rec->settings = cfg.settings;
	cfg.settings = NULL;
	xf_config_free(&cfg);
	const char *s = rec->settings ? rec->settings : "";
	snprintf(rec->settings_crc32, sizeof rec->settings_crc32, "%08" PRIx32,
		 xf_crc32(0, s, strlen(s)));
	return 0;
}

int xf_batch_fingerprint(const xf_batch *b, const xf_batch_input *in, xf_batch_record *rec,
			 xf_error *err)
{
	uint32_t crc = 0;
	uint64_t bytes = 0;
	xf_error why = { 0 };
	/* as batch.json records it: UTF-8, a byte 0xFF as U+FFFD (adr/0075) */
	xf_utf8_clean_to(in->abs_path, rec->input, sizeof rec->input);
	const char *method = xf_batch_method_name(b->method);
	snprintf(rec->method, sizeof rec->method, "%s", method);
	rec->input_crc32[0] = '\0';
	rec->input_bytes = 0;
	rec->settings = NULL;
	/* an unreadable input is reported by the run itself, in nlsq's words */
	if (xf_file_crc32(in->path, &crc, &bytes, &why) == 0) {
		snprintf(rec->input_crc32, sizeof rec->input_crc32, "%08" PRIx32, crc);
		rec->input_bytes = bytes;
	} else if (why.code == XF_ERR_NOMEM) {
		return xf_fail(err, why.code, "%s", why.msg);
	}
	/* the config's bytes as the batch read them (not the file again) */
	crc = xf_crc32(0, b->config_text, b->config_len);
	for (size_t k = 0; k < in->n_overrides; k++) {
		const xf_config_override *o = &in->overrides[k];
		const char *key = xf_config_key_alias(o->key);
		crc = xf_crc32(crc, key, strlen(key) + 1);
		crc = xf_crc32(crc, o->value, strlen(o->value) + 1);
	}
	crc = xf_crc32(crc, method, strlen(method) + 1);
	snprintf(rec->config_crc32, sizeof rec->config_crc32, "%08" PRIx32, crc);
	return resolved_settings(b, in, rec, err);
}

void xf_batch_record_free(xf_batch_record *rec)
{
	free(rec->settings);
	rec->settings = NULL;
}

/* The settings lines as a JSON object {"dotted.path": "value"}, in their sorted order. */
static cJSON *settings_json(const char *settings)
{
	cJSON *obj = cJSON_CreateObject();
	char key[1024];
	for (const char *at = settings; obj && at && *at;) {
		const char *eq = strchr(at, '='), *end = strchr(at, '\n');
		if (!end)
			end = at + strlen(at);
		if (eq && eq < end && (size_t)(eq - at) < sizeof key) {
			memcpy(key, at, (size_t)(eq - at));
			key[eq - at] = '\0';
			char *value = strndup(eq + 1, (size_t)(end - eq - 1));
			if (value)
				cJSON_AddStringToObject(obj, key, value);
			free(value);
		}
		at = *end ? end + 1 : end;
	}
	return obj;
}

static const char *const state_names[XF_BATCH_N] = {
	[XF_BATCH_UNKNOWN] = "",      [XF_BATCH_RUNNING] = "running", [XF_BATCH_OK] = "ok",
	[XF_BATCH_FAILED] = "failed", [XF_BATCH_PENDING] = "pending",
};

const char *xf_batch_state_name(xf_batch_state s)
{
	return (unsigned)s < XF_BATCH_N ? state_names[s] : "";
}

xf_batch_state xf_batch_state_parse(const char *name)
{
	for (int k = 1; name && k < XF_BATCH_N; k++)
		if (!strcmp(name, state_names[k]))
			return (xf_batch_state)k;
	return XF_BATCH_UNKNOWN;
}

int xf_batch_record_write(const char *dir, const xf_batch_record *rec, xf_error *err)
{
	cJSON *root = cJSON_CreateObject();
	if (root) {
		cJSON_AddStringToObject(root, "status", xf_batch_state_name(rec->status));
		cJSON_AddStringToObject(root, "method", rec->method);
		cJSON_AddStringToObject(root, "input", rec->input);
		cJSON_AddItemToObject(root, "input_bytes",
				      xf_json_int((long long)rec->input_bytes));
		cJSON_AddStringToObject(root, "input_crc32", rec->input_crc32);
		cJSON_AddStringToObject(root, "config_crc32", rec->config_crc32);
		cJSON_AddStringToObject(root, "settings_crc32", rec->settings_crc32);
		cJSON_AddItemToObject(root, "settings", settings_json(rec->settings));
		cJSON_AddItemToObject(root, "wall_s", xf_json_num(rec->wall_s));
		cJSON_AddBoolToObject(root, "results", rec->results);
		cJSON_AddStringToObject(root, "message", rec->message);
		cJSON_AddStringToObject(root, "xpcsfit_version", XPCSFIT_VERSION);
	}
	return xf_json_write(dir, "batch.json", root, err);
}

cJSON *xf_batch_read_json(const char *path, size_t max_bytes, xf_error *err)
{
	xf_error why = { 0 };
	char *text = xf_read_small_file(path, max_bytes, &why);
	if (!text && why.code == XF_ERR_NOMEM)
		xf_fail(err, XF_ERR_NOMEM, "%s", why.msg);
	cJSON *root = text ? cJSON_Parse(text) : NULL;
	free(text);
	return root;
}

static void copy_string(const cJSON *root, const char *key, char *buf, size_t size)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
	snprintf(buf, size, "%s", cJSON_IsString(item) ? item->valuestring : "");
}

int xf_batch_record_read(const char *dir, xf_batch_record *rec, xf_error *err)
{
	char path[PATH_MAX];
	memset(rec, 0, sizeof *rec);
	rec->wall_s = NAN;
	if (snprintf(path, sizeof path, "%s/batch.json", dir) >= (int)sizeof path)
		return -1;
	cJSON *root = xf_batch_read_json(path, XF_RECORD_MAX_BYTES, err);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return err->code ? err->code : -1;
	}
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
	rec->status = xf_batch_state_parse(cJSON_IsString(status) ? status->valuestring : NULL);
	copy_string(root, "method", rec->method, sizeof rec->method);
	copy_string(root, "input", rec->input, sizeof rec->input);
	copy_string(root, "input_crc32", rec->input_crc32, sizeof rec->input_crc32);
	copy_string(root, "config_crc32", rec->config_crc32, sizeof rec->config_crc32);
	copy_string(root, "settings_crc32", rec->settings_crc32, sizeof rec->settings_crc32);
	copy_string(root, "message", rec->message, sizeof rec->message);
	rec->results = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "results"));
	const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(root, "input_bytes");
	const cJSON *wall = cJSON_GetObjectItemCaseSensitive(root, "wall_s");
	if (cJSON_IsNumber(bytes) && bytes->valuedouble >= 0)
		rec->input_bytes = (uint64_t)bytes->valuedouble;
	if (cJSON_IsNumber(wall))
		rec->wall_s = wall->valuedouble;
	cJSON_Delete(root);
	return 0;
}

const char *xf_batch_folder(const char *side, int joint)
{
	if (!joint)
		return side;
	return strcmp(side, "nlsq") ? "cmc_joint" : "nlsq_joint";
}

static int regular_file(const char *sub, const char *name)
{
	char probe[PATH_MAX + 32];
	struct stat st;
	snprintf(probe, sizeof probe, "%s/%s", sub, name);
	return stat(probe, &st) == 0 && S_ISREG(st.st_mode);
}

/* A one-ring or joint folder holds parameters.json; a per-ring top folder holds the
 * rings' summary rings.json (each ring's folder below it is whole once it is written) */
static int whole(const char *dir, const char *side, int joint)
{
	char sub[PATH_MAX];
	if (snprintf(sub, sizeof sub, "%s/%s", dir, xf_batch_folder(side, joint)) >=
		    (int)sizeof sub ||
	    xf_rundir_incomplete(sub))
		return 0;
	return regular_file(sub, "parameters.json") || (!joint && regular_file(sub, "rings.json"));
}

const char *xf_batch_method_name(xf_batch_method m)
{
	return m == XF_BATCH_CMC ? "cmc" : m == XF_BATCH_FIT ? "fit" : "nlsq";
}

int xf_batch_method_parse(const char *word, xf_batch_method *m)
{
	for (int k = XF_BATCH_NLSQ; word && k <= XF_BATCH_FIT; k++)
		if (!strcmp(word, xf_batch_method_name((xf_batch_method)k))) {
			*m = (xf_batch_method)k;
			return 0;
		}
	return -1;
}

int xf_batch_results_whole(const char *dir, xf_batch_method method, int joint)
{
	if (method == XF_BATCH_NLSQ)
		return whole(dir, "nlsq", joint);
	return whole(dir, "nlsq", joint) && whole(dir, "cmc", joint);
}

/* A value for a message: at most 60 characters. */
static void shown(const char *value, char *buf, size_t size)
{
	if (!value)
		snprintf(buf, size, "unset");
	else if (strlen(value) > 60)
		snprintf(buf, size, "%.57s...", value);
	else
		snprintf(buf, size, "%s", value);
}

/* The first setting that differs between the record in <dir> and now (and how many more
 * do), into why. */
static void settings_diff(const char *dir, const char *now, char *why, size_t size)
{
	char path[PATH_MAX], first[512] = "", a[64], b[64], key[300];
	xf_error err = { 0 };
	int n = 0;
	snprintf(path, sizeof path, "%s/batch.json", dir);
	cJSON *root = xf_batch_read_json(path, XF_RECORD_MAX_BYTES, &err);
	const cJSON *was = cJSON_GetObjectItemCaseSensitive(root, "settings");
	for (const char *at = now; cJSON_IsObject(was) && at && *at;) {
		const char *eq = strchr(at, '='), *end = strchr(at, '\n');
		if (!end)
			end = at + strlen(at);
		if (eq && eq < end && (size_t)(eq - at) < sizeof key) {
			memcpy(key, at, (size_t)(eq - at));
			key[eq - at] = '\0';
			const cJSON *old = cJSON_GetObjectItemCaseSensitive(was, key);
			size_t len = (size_t)(end - eq - 1);
			const char *v = cJSON_IsString(old) ? old->valuestring : NULL;
			if (!v || strlen(v) != len || strncmp(v, eq + 1, len)) {
				char value[1024];
				snprintf(value, sizeof value, "%.*s", (int)len, eq + 1);
				shown(v, a, sizeof a);
				shown(value, b, sizeof b);
				if (n++ == 0)
					snprintf(first, sizeof first, "%s %s -> %s", key, a, b);
			}
		}
		at = *end ? end + 1 : end;
	}
	/* the keys set before and not now */
	const cJSON *item, *list = cJSON_IsObject(was) ? was : NULL;
	cJSON_ArrayForEach(item, list)
	{
		size_t len = strlen(item->string);
		int found = 0;
		for (const char *at = now; at && *at && !found;) {
			found = !strncmp(at, item->string, len) && at[len] == '=';
			const char *end = strchr(at, '\n');
			at = end ? end + 1 : at + strlen(at);
		}
		if (!found && n++ == 0) {
			shown(cJSON_IsString(item) ? item->valuestring : "?", a, sizeof a);
			snprintf(first, sizeof first, "%s %s -> unset", item->string, a);
		}
	}
	cJSON_Delete(root);
	if (n == 0)
		snprintf(why, size, "rerun: settings fingerprint changed");
	else if (n == 1)
		snprintf(why, size, "rerun: settings changed (%s)", first);
	else
		snprintf(why, size, "rerun: settings changed (%s, and %d more)", first, n - 1);
}

int xf_batch_rerun_reason(const char *dir, xf_batch_method method, int joint,
			  const xf_batch_record *now, int *skip, char *why, size_t size,
			  xf_error *err)
{
	xf_batch_record was;
	*skip = 0;
	why[0] = '\0';
	int rc = xf_batch_record_read(dir, &was, err);
	if (rc) /* no record: a first run, or a record that is not ours (run again) */
		return rc > 0 ? rc : 0;
	if (was.status != XF_BATCH_OK)
		snprintf(why, size, "rerun: previous run %s",
			 was.status == XF_BATCH_FAILED ? "failed" : "incomplete");
	else if (!xf_batch_results_whole(dir, method, joint))
		snprintf(why, size,
			 "rerun: previous run incomplete (its result folder is not whole)");
	else if (!now->input_crc32[0]) /* unreadable now: the run says why */
		snprintf(why, size, "rerun: input unreadable");
	else if (strcmp(was.input_crc32, now->input_crc32) || was.input_bytes != now->input_bytes)
		snprintf(why, size,
			 "rerun: input changed (%" PRIu64 " -> %" PRIu64 " bytes, CRC-32 %s -> %s)",
			 was.input_bytes, now->input_bytes, was.input_crc32, now->input_crc32);
	else if (strcmp(was.method, now->method))
		snprintf(why, size, "rerun: method changed (%s -> %s)", was.method, now->method);
	else if (was.settings_crc32[0] && strcmp(was.settings_crc32, now->settings_crc32))
		settings_diff(dir, now->settings, why, size);
	else if (!was.settings_crc32[0] && strcmp(was.config_crc32, now->config_crc32))
		/* a record of an xpcsfit before adr/0057: the config's bytes decide */
		snprintf(why, size,
			 "rerun: settings fingerprint changed (the config's bytes; the "
			 "record has no settings)");
	*skip = why[0] == '\0';
	return 0;
}
