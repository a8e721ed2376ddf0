/* config_read.c — xf_config_load: loads the YAML tree, checks the top-level keys and
 * runs the section readers in an order where each can rely on the ones before it
 * (mode first, bounds before the start-value check). Also the small sections read by
 * hand: analysis_mode, and experimental_data's path joined from its rows (the key
 * table's; analyzer_parameters' and phi_filtering's: config_analyzer.c, config_phi.c). */
#include "config/config_internal.h"
#include "util/key_names.h"

#include <stdlib.h>
#include <string.h>

/* homodyne top-level sections xpcsfit accepts without using them (spec/config.md) */
static const char *const top_ignored[] = {
	"metadata",
	"config_version",
	"analysis_settings",
	"noise_estimation",
	"performance",
	"quality_control",
	"validation",
	"v2_features",
	"data_filtering",
	"q_tolerance_fraction",
	/* not on the spec list: homodyne v2.1's comprehensive template (docs/config.md) */
	"hardware",
	"advanced",
	NULL,
};
/* the top-level keys read outside the table's rows: the mode, and homodyne's older
 * section that holds the angle filter (config_phi.c); the table's sections join them
 * (known_top_keys) */
static const char *const top_read[] = { XF_CONFIG_MODE_KEY, "optimization_config", NULL };
#define XF_CFG_TOP_KEYS_MAX 24

/* XF_KEY_SPACE_MODEL: homodyne's other place for the mode. Its short example configs
 * (homodyne_config_*.yaml) carry no analysis_mode at all, only this key. */
static int read_space_model(const xf_cfg_reader *r, const xf_ynode *root, int *index, int *given)
{
	const xf_ynode *space = xf_ynode_get(root, "parameter_space");
	*given = 0;
	if (!space || space->kind != XF_YNODE_MAPPING)
		return 0; /* a bad parameter_space is reported by its own reader */
	return xf_cfg_choice(r, space, "parameter_space", "model", xf_mode_names, index, given);
}

/* A model a program registered (adr/0116) named by analysis_mode: 1 and its mode. The
 * built-in names stay the choices a config is checked against (adr/0127). */
static int registered_mode(const xf_ynode *root, xf_mode *mode)
{
	const xf_ynode *node = xf_ynode_get(root, XF_CONFIG_MODE_KEY);
	if (!node || node->kind != XF_YNODE_SCALAR)
		return 0;
	for (int k = 0; xf_mode_names[k]; k++)
		if (!strcmp(node->text, xf_mode_names[k]))
			return 0;
	if (xf_mode_parse(node->text, mode) != 0)
		return 0;
	xf_ynode_mark_used(node);
	return 1;
}

int xf_cfg_read_mode(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	int index = 0, given = 0, model_index = 0, model_given = 0;
	xf_mode own;
	if (registered_mode(root, &own)) { /* its parameters' bounds are its own table's */
		cfg->mode = own;
		xf_model_bounds_default(xf_model_record_of(own), cfg->bounds);
		return 0;
	}
	int rc = xf_cfg_choice(r, root, "", XF_CONFIG_MODE_KEY, xf_mode_names, &index, &given);
	if (rc)
		return rc;
	if (given) {
		/* when analysis_mode is there, XF_KEY_SPACE_MODEL is only a label: an
		 * unreadable one is not worth an error, a contradicting one is worth a word */
		const xf_ynode *space = xf_ynode_get(root, "parameter_space");
		const xf_ynode *model = xf_ynode_get(space, "model");
		xf_ynode_mark_used(model); /* checked against analysis_mode below */
		for (int k = 0; model && model->kind == XF_YNODE_SCALAR && xf_mode_names[k]; k++)
			if (strcmp(model->text, xf_mode_names[k]) == 0 &&
			    xf_mode_named[k] != xf_mode_named[index])
				xf_warn(XF_KEY_SPACE_MODEL " '%s' disagrees with analysis_mode "
							   "'%s'; using analysis_mode, in %s:%d",
					model->text, xf_mode_names[index], r->file, model->line);
		cfg->mode = xf_mode_named[index];
		return 0;
	}
	rc = read_space_model(r, root, &model_index, &model_given);
	if (rc)
		return rc;
	if (!model_given)
		return xf_fail(r->err, XF_ERR_CONFIG,
			       "analysis_mode: missing (must be one of "
			       "static, laminar_flow, static_isotropic, "
			       "static_anisotropic; " XF_KEY_SPACE_MODEL
			       " is also accepted), in %s",
			       r->file);
	xf_warn("analysis_mode is missing; using " XF_KEY_SPACE_MODEL " '%s' as the mode, in %s:%d",
		xf_mode_names[model_index], r->file,
		xf_ynode_key_line(xf_ynode_get(root, "parameter_space"), "model"));
	cfg->mode = xf_mode_named[model_index];
	return 0;
}

int xf_cfg_read_experimental_data(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	static const char *const ignored[] = {
		"cache_file_path",
		"cache_filename_template",
		"cache_compression",
		"phi_angles_path",
		"phi_angles_file",
		"data_type",
		"file_format",
		"exchange_key",
		/* not on the spec list: homodyne v2.1 preprocessing switches (docs/config.md) */
		"preprocessing",
		NULL,
	};
	const char *sect = "experimental_data";
	const xf_ynode *map = NULL;
	const char *folder = NULL, *name = NULL, *file_path = NULL;
	/* the table's rows check each is a text; then they are joined here */
	int rc = xf_cfg_read_part(r, root, "", sect, ignored, &map, cfg);
	if (rc || !map)
		return rc;
	if ((rc = xf_cfg_string(r, map, sect, "data_folder_path", &folder)) ||
	    (rc = xf_cfg_string(r, map, sect, "data_file_name", &name)) ||
	    (rc = xf_cfg_string(r, map, sect, "file_path", &file_path)))
		return rc;
	if (folder && !folder[0])
		folder = NULL;
	if (name && !name[0])
		name = NULL;
	if (name) {
		/* homodyne's pair wins over file_path */
		size_t len = (folder ? strlen(folder) + 1 : 0) + strlen(name) + 1;
		char *joined = malloc(len);
		if (!joined)
			return xf_fail(r->err, XF_ERR_NOMEM, "out of memory reading %s", r->file);
		if (folder) {
			size_t flen = strlen(folder);
			int slash = folder[flen - 1] == '/';
			snprintf(joined, len, "%s%s%s", folder, slash ? "" : "/", name);
		} else {
			snprintf(joined, len, "%s", name);
		}
		rc = xf_cfg_resolve_data_path(joined, r->file, cfg, r->err);
		free(joined);
		return rc;
	}
	if (folder)
		xf_warn(XF_KEY_DATA_FOLDER " is given without data_file_name "
					   "(ignored), in %s:%d",
			r->file, xf_ynode_key_line(map, "data_folder_path"));
	if (file_path && file_path[0])
		return xf_cfg_resolve_data_path(file_path, r->file, cfg, r->err);
	return 0;
}

/* Short names of the keys a series of files varies most (docs/cli.md, batch --overrides):
 * dt the frame time, q the wavevector that picks the q ring. */
static const struct {
	const char *alias, *key;
} key_aliases[] = {
	{ "dt", XF_KEY_DT },
	{ "q", XF_KEY_Q },
};

const char *xf_config_key_alias(const char *name)
{
	for (size_t k = 0; k < sizeof key_aliases / sizeof key_aliases[0]; k++)
		if (!strcmp(name, key_aliases[k].alias))
			return key_aliases[k].key;
	return name;
}

/* The top-level keys read: those above, then the top-level sections of the key table's
 * rows (config_table.c) */
static void known_top_keys(const char **known, size_t cap)
{
	size_t n = 0;
	while (top_read[n] && n + 1 < cap) {
		known[n] = top_read[n];
		n++;
	}
	xf_cfg_table_top_keys(known + n, cap - n);
}

static int read_all(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	int rc;
	const char *top_known[XF_CFG_TOP_KEYS_MAX];
	known_top_keys(top_known, XF_CFG_TOP_KEYS_MAX);
	xf_cfg_check_keys(r, root, "", top_known, top_ignored);
	if ((rc = xf_cfg_read_mode(r, root, cfg)) ||
	    (rc = xf_cfg_read_experimental_data(r, root, cfg)) ||
	    (rc = xf_cfg_read_analyzer(r, root, cfg)) ||
	    (rc = xf_cfg_read_phi_filtering(r, root, cfg)) ||
	    (rc = xf_cfg_read_parameter_space(r, root, cfg)) ||
	    (rc = xf_cfg_read_initial_parameters(r, root, cfg)) ||
	    (rc = xf_cfg_read_optimization(r, root, cfg)) ||
	    (rc = xf_cfg_read_sections(r, root, 1, cfg)) ||
	    (rc = xf_cfg_read_sections(r, root, 0, cfg)) ||
	    (rc = xf_cfg_collect_unused(r, root, cfg)) ||
	    (rc = xf_cfg_collect_settings(r, root, cfg)))
		return rc;
	if (xf_model_record_of(cfg->mode)->shear && !cfg->has_gap)
		xf_warn(XF_KEY_GAP " is not set: laminar_flow uses the default %g A (200 um); set "
				   "the gap of your cell, in %s",
			cfg->gap_A, r->file);
	return r->err->code; /* an override of a key no reader uses (xf_cfg_check_keys) */
}

int xf_config_load(const char *path, xf_config *cfg, xf_error *err)
{
	return xf_config_load_with(path, NULL, 0, cfg, err);
}

int xf_config_load_with(const char *path, const xf_config_override *overrides, size_t n,
			xf_config *cfg, xf_error *err)
{
	char *text = xf_config_read_text(path, NULL, err);
	if (!text) {
		xf_config_defaults(cfg);
		return err->code;
	}
	int rc = xf_config_load_text(path, text, overrides, n, cfg, err);
	free(text);
	return rc;
}

char *xf_config_read_text(const char *path, size_t *len, xf_error *err)
{
	return xf_yaml_read_file(path, len, err);
}

int xf_config_load_text(const char *path, const char *text, const xf_config_override *overrides,
			size_t n, xf_config *cfg, xf_error *err)
{
	xf_ynode *root = NULL;
	xf_cfg_reader r = { path, err };
	xf_config_defaults(cfg);
	int rc = xf_yaml_load_string(text, path, &root, err);
	for (size_t k = 0; rc == 0 && k < n; k++)
		rc = xf_cfg_apply_override(&root, &overrides[k], err);
	if (rc) {
		xf_yaml_free(root);
		return rc;
	}
	if (!root || xf_ynode_is_null(root))
		rc = xf_fail(err, XF_ERR_CONFIG,
			     "config file is empty (analysis_mode is "
			     "required), in %s",
			     path);
	else if (root->kind != XF_YNODE_MAPPING)
		rc = xf_fail(err, XF_ERR_CONFIG,
			     "the top level of a config must be a mapping "
			     "of keys, in %s:%d",
			     path, root->line);
	else if (!(cfg->source_path = strdup(path)) || !(cfg->source_text = strdup(text)))
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
	else
		rc = read_all(&r, root, cfg);
	if (rc == 0) {
		cfg->source_len = strlen(text);
		rc = xf_cfg_record_overrides(overrides, n, cfg, err);
	}
	xf_yaml_free(root);
	if (rc)
		xf_config_free(cfg);
	return rc;
}
