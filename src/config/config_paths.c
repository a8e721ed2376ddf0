/* config_paths.c — where a relative data path in a config points. homodyne resolves it
 * against the current directory; configs kept beside their data expect the config's
 * folder. We try the current directory first (homodyne's rule), then the config's
 * folder, and say which in cfg->data_path_note (run.log). */
#include "config/config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int exists(const char *path)
{
	return access(path, F_OK) == 0;
}

static int take(xf_config *cfg, const char *path, xf_error *err)
{
	free(cfg->data_path);
	cfg->data_path = strdup(path);
	if (!cfg->data_path)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory resolving data path %s", path);
	return 0;
}

/* "~/x" → "$HOME/x" as a shell (and Python's expanduser in homodyne) would; *out owned. */
static int expand_home(const char *written, char **out)
{
	const char *home = getenv("HOME");
	if (written[0] != '~' || written[1] != '/' || !home || !home[0]) {
		*out = strdup(written);
		return *out ? 0 : -1;
	}
	size_t len = strlen(home) + strlen(written);
	*out = malloc(len);
	if (!*out)
		return -1;
	snprintf(*out, len, "%s%s", home, written + 1);
	return 0;
}

int xf_cfg_resolve_data_path(const char *written, const char *config_path, xf_config *cfg,
			     xf_error *err)
{
	char *path = NULL;
	if (expand_home(written, &path))
		return xf_fail(err, XF_ERR_NOMEM, "out of memory resolving data path %s", written);
	int rc;
	if (path[0] == '/') {
		snprintf(cfg->data_path_note, sizeof cfg->data_path_note,
			 "data file path '%s' is absolute", path);
		rc = take(cfg, path, err);
		free(path);
		return rc;
	}
	if (exists(path)) {
		snprintf(cfg->data_path_note, sizeof cfg->data_path_note,
			 "data file path '%s' resolved against the current directory "
			 "(homodyne's rule)",
			 path);
		rc = take(cfg, path, err);
		free(path);
		return rc;
	}
	/* the config's folder: everything up to its last '/', or none for a bare name */
	const char *slash = config_path ? strrchr(config_path, '/') : NULL;
	if (slash) {
		size_t dir_len = (size_t)(slash - config_path) + 1;
		size_t len = dir_len + strlen(path) + 1;
		char *joined = malloc(len);
		if (!joined) {
			free(path);
			return xf_fail(err, XF_ERR_NOMEM, "out of memory resolving data path %s",
				       written);
		}
		memcpy(joined, config_path, dir_len);
		strcpy(joined + dir_len, path);
		if (exists(joined)) {
			snprintf(cfg->data_path_note, sizeof cfg->data_path_note,
				 "data file path '%s' not found relative to the current directory; "
				 "resolved against the config file's folder: %s",
				 path, joined);
			rc = take(cfg, joined, err);
			free(joined);
			free(path);
			return rc;
		}
		free(joined);
	}
	/* neither exists: keep homodyne's reading; the data reader reports the missing file */
	snprintf(cfg->data_path_note, sizeof cfg->data_path_note,
		 "data file path '%s' exists neither relative to the current directory nor "
		 "to the config file's folder; using it relative to the current directory",
		 path);
	rc = take(cfg, path, err);
	free(path);
	return rc;
}
