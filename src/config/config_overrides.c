/* config_overrides.c — applying the values given outside the YAML file (batch
 * --overrides, the command-line overrides of src/cli/overrides.c) to the config tree
 * before it is read, and keeping a record of each for run.log and parameters.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_internal.h"
#include "util/key_names.h"

/* Longest "MIN:MAX" text of an angle range. */
#define XF_RANGE_TEXT_MAX 128

const char *xf_config_override_key(const xf_config_override *o, char *buf, size_t size)
{
	if (o->kind == XF_OVERRIDE_START)
		xf_cfg_start_key(o->key, buf, size);
	else if (o->kind == XF_OVERRIDE_RANGE || o->kind == XF_OVERRIDE_RANGE_FIRST)
		snprintf(buf, size, XF_KEY_TARGET_RANGES);
	else
		snprintf(buf, size, "%s", xf_config_key_alias(o->key));
	return buf;
}

/* "MIN:MAX" into the two keys of a target_ranges item. */
static int apply_range(xf_ynode **root, const xf_config_override *o, xf_error *err)
{
	char text[XF_RANGE_TEXT_MAX];
	if (strlen(o->value) >= sizeof text || !strchr(o->value, ':'))
		return xf_fail(err, XF_ERR_CONFIG,
			       "'%.60s' is not an angle range (must be MIN:MAX in degrees), in %s",
			       o->value, o->origin);
	snprintf(text, sizeof text, "%s", o->value);
	char *colon = strchr(text, ':');
	*colon = '\0';
	static const char *const keys[] = { "min_angle", "max_angle" };
	const char *values[] = { text, colon + 1 };
	return xf_yaml_add_item(root, "phi_filtering", "target_ranges", keys, values, 2,
				o->kind == XF_OVERRIDE_RANGE_FIRST, o->origin, err);
}

int xf_cfg_apply_override(xf_ynode **root, const xf_config_override *o, xf_error *err)
{
	switch (o->kind) {
	case XF_OVERRIDE_START: return xf_cfg_set_start(root, o->key, o->value, o->origin, err);
	case XF_OVERRIDE_RANGE:
	case XF_OVERRIDE_RANGE_FIRST: return apply_range(root, o, err);
	case XF_OVERRIDE_SET:
	default: return xf_yaml_set(root, xf_config_key_alias(o->key), o->value, o->origin, err);
	}
}

int xf_cfg_record_overrides(const xf_config_override *o, size_t n, xf_config *cfg, xf_error *err)
{
	if (n == 0)
		return 0;
	cfg->overrides = calloc(n, sizeof *cfg->overrides);
	if (!cfg->overrides)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory keeping the config overrides");
	for (size_t k = 0; k < n; k++) {
		char key[XF_CFG_PATH_MAX];
		xf_override_record *r = &cfg->overrides[k];
		cfg->n_overrides = k + 1;
		r->option = strdup(o[k].option ? o[k].option : o[k].origin);
		r->key = strdup(xf_config_override_key(&o[k], key, sizeof key));
		r->value = strdup(o[k].value);
		if (!r->option || !r->key || !r->value)
			return xf_fail(err, XF_ERR_NOMEM,
				       "out of memory keeping the config overrides");
	}
	return 0;
}

void xf_cfg_free_overrides(xf_config *cfg)
{
	for (size_t k = 0; k < cfg->n_overrides; k++) {
		free(cfg->overrides[k].option);
		free(cfg->overrides[k].key);
		free(cfg->overrides[k].value);
	}
	free(cfg->overrides);
	cfg->overrides = NULL;
	cfg->n_overrides = 0;
}
