/* batch_record.c — <out>/<name>/batch.json, what one file of a batch left (adr/0023):
 * running/ok/failed, the message of a failure, the wall time, and the fingerprint of the
 * inputs it was made from (the data file's CRC-32 and size, the CRC-32 of the config
 * bytes, the file's overrides and the method), which --resume compares with the inputs
 * as they are now. The summary is built from these records, so it is right whichever
 * process (a --task of a job array, or a later --resume) finished which file. */
#include "cli/batch_internal.h"
#include "io/io_internal.h"
#include "util/checksum.h"
#include "util/files.h"
#include "util/rundir.h"

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

int xf_batch_fingerprint(const xf_batch *b, const xf_batch_input *in, xf_batch_record *rec,
			 xf_error *err)
{
	uint32_t crc = 0;
	uint64_t bytes = 0;
	xf_error why = { 0 };
	snprintf(rec->input, sizeof rec->input, "%s", in->abs_path);
	snprintf(rec->method, sizeof rec->method, "%s", b->method);
	rec->input_crc32[0] = '\0';
	rec->input_bytes = 0;
	/* an unreadable input is reported by the run itself, in nlsq's words */
	if (xf_file_crc32(in->path, &crc, &bytes, &why) == 0) {
		snprintf(rec->input_crc32, sizeof rec->input_crc32, "%08" PRIx32, crc);
		rec->input_bytes = bytes;
	} else if (why.code == XF_ERR_NOMEM) {
		return xf_fail(err, why.code, "%s", why.msg);
	}
	uint64_t config_bytes = 0;
	xf_error_clear(&why);
	if (xf_file_crc32(b->config, &crc, &config_bytes, &why) != 0)
		return xf_fail(err, why.code == XF_ERR_NOMEM ? why.code : XF_ERR_CONFIG,
			       "--config: %s", why.msg);
	for (size_t k = 0; k < in->n_overrides; k++) {
		const xf_config_override *o = &in->overrides[k];
		const char *key = xf_config_key_alias(o->key);
		crc = xf_crc32(crc, key, strlen(key) + 1);
		crc = xf_crc32(crc, o->value, strlen(o->value) + 1);
	}
	crc = xf_crc32(crc, b->method, strlen(b->method) + 1);
	snprintf(rec->config_crc32, sizeof rec->config_crc32, "%08" PRIx32, crc);
	return 0;
}

int xf_batch_record_write(const char *dir, const xf_batch_record *rec, xf_error *err)
{
	cJSON *root = cJSON_CreateObject();
	if (root) {
		cJSON_AddStringToObject(root, "status", rec->status);
		cJSON_AddStringToObject(root, "method", rec->method);
		cJSON_AddStringToObject(root, "input", rec->input);
		cJSON_AddItemToObject(root, "input_bytes",
				      xf_json_int((long long)rec->input_bytes));
		cJSON_AddStringToObject(root, "input_crc32", rec->input_crc32);
		cJSON_AddStringToObject(root, "config_crc32", rec->config_crc32);
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
	copy_string(root, "status", rec->status, sizeof rec->status);
	copy_string(root, "method", rec->method, sizeof rec->method);
	copy_string(root, "input", rec->input, sizeof rec->input);
	copy_string(root, "input_crc32", rec->input_crc32, sizeof rec->input_crc32);
	copy_string(root, "config_crc32", rec->config_crc32, sizeof rec->config_crc32);
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

static int whole(const char *dir, const char *method)
{
	char sub[PATH_MAX], probe[PATH_MAX + 32];
	struct stat st;
	if (snprintf(sub, sizeof sub, "%s/%s", dir, method) >= (int)sizeof sub ||
	    xf_rundir_incomplete(sub))
		return 0;
	snprintf(probe, sizeof probe, "%s/parameters.json", sub);
	return stat(probe, &st) == 0 && S_ISREG(st.st_mode);
}

int xf_batch_results_whole(const char *dir, const char *method)
{
	if (!strcmp(method, "nlsq"))
		return whole(dir, "nlsq");
	return whole(dir, "nlsq") && whole(dir, "cmc");
}
