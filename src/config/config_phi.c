/* config_phi.c — the angle filter: phi_filtering, or homodyne's older
 * optimization_config.angle_filtering (the same keys, named as that section in messages).
 * Its keys are rows of the key table (config_table.c, adr/0132): enabled and
 * fallback_to_all_angles booleans, target_ranges a list of {min_angle, max_angle} read
 * here. */
#include "config/config_internal.h"

#include <stdio.h>
#include <stdlib.h>

static int read_phi_range(const xf_cfg_reader *r, const xf_ynode *item, const char *sect, int k,
			  xf_phi_range *out)
{
	/* description: homodyne's templates label each range; nothing to use */
	static const char *const known[] = { "min_angle", "max_angle", NULL };
	static const char *const ignored[] = { "description", NULL };
	char path[XF_CFG_PATH_MAX];
	snprintf(path, sizeof path, "%s.target_ranges[%d]", sect, k);
	if (item->kind != XF_YNODE_MAPPING)
		return xf_cfg_bad_value(r, item, path, "a mapping {min_angle, max_angle}");
	xf_cfg_check_keys(r, item, path, known, ignored);
	int has_min = 0, has_max = 0;
	int rc =
		xf_cfg_number(r, item, path, "min_angle", XF_CHECK_FINITE, &out->min_deg, &has_min);
	if (!rc)
		rc = xf_cfg_number(r, item, path, "max_angle", XF_CHECK_FINITE, &out->max_deg,
				   &has_max);
	if (rc)
		return rc;
	if (!has_min || !has_max)
		return xf_fail(r->err, XF_ERR_CONFIG,
			       "%s.%s: missing (must be a number in "
			       "degrees), in %s:%d",
			       path, has_min ? "max_angle" : "min_angle", r->file, item->line);
	return 0;
}

/* XF_KEY_TARGET_RANGES: the ranges an angle must fall in (degrees) */
int xf_cfg_read_target_ranges(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			      xf_config *cfg)
{
	char lpath[XF_CFG_PATH_MAX];
	const xf_ynode *list = xf_ynode_get(map, row->name);
	if (!list || xf_ynode_is_null(list))
		return 0;
	if (list->kind != XF_YNODE_SEQUENCE)
		return xf_cfg_bad_value(r, list, xf_cfg_path(lpath, row->section, row->name),
					"a list of {min_angle, max_angle}");
	if (list->n == 0)
		return 0;
	cfg->phi_ranges = calloc(list->n, sizeof *cfg->phi_ranges);
	if (!cfg->phi_ranges)
		return xf_fail(r->err, XF_ERR_NOMEM, "out of memory reading %s", r->file);
	for (size_t k = 0; k < list->n; k++) {
		int rc = read_phi_range(r, list->items[k], row->section, (int)k,
					&cfg->phi_ranges[k]);
		if (rc)
			return rc;
		cfg->n_phi_ranges = (int)k + 1;
	}
	return 0;
}

/* One phi-filter mapping: the table's phi_filtering rows, named sect in messages */
static int read_phi_section(const xf_cfg_reader *r, const xf_ynode *map, const char *sect,
			    xf_config *cfg)
{
	static const char *const ignored[] = {
		"algorithm",
		"tolerance",
		"quality_control",
		/* not on the spec list: an unused extra list in homodyne v2.1's
		 * comprehensive template (docs/config.md) */
		"laminar_flow_ranges",
		NULL,
	};
	const char *known[XF_CFG_SECTION_KEYS_MAX];
	xf_cfg_known_keys("phi_filtering", known, XF_CFG_SECTION_KEYS_MAX);
	xf_cfg_check_keys(r, map, sect, known, ignored);
	return xf_cfg_read_keys_as(r, map, "phi_filtering", sect, cfg);
}

int xf_cfg_read_phi_filtering(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	const char *legacy_sect = "optimization_config.angle_filtering";
	const xf_ynode *map = NULL, *oc = NULL, *legacy = NULL;
	int rc = xf_cfg_section(r, root, "", "phi_filtering", &map);
	if (rc)
		return rc;
	/* optimization_config is homodyne's older section (its loader read the angle
	 * filter there); only angle_filtering in it means anything to us */
	if ((rc = xf_cfg_section(r, root, "", "optimization_config", &oc)))
		return rc;
	if (oc && (rc = xf_cfg_section(r, oc, "optimization_config", "angle_filtering", &legacy)))
		return rc;
	if (map) {
		if (legacy)
			xf_warn("%s is ignored: phi_filtering is given and wins, in %s:%d",
				legacy_sect, r->file, xf_ynode_key_line(oc, "angle_filtering"));
		return read_phi_section(r, map, "phi_filtering", cfg);
	}
	if (!legacy)
		return 0;
	xf_warn("phi_filtering is absent; reading the angle filter from homodyne's older "
		"%s, in %s:%d",
		legacy_sect, r->file, xf_ynode_key_line(oc, "angle_filtering"));
	/* homodyne's loader took a missing enabled there as true */
	cfg->phi_filter_enabled = 1;
	return read_phi_section(r, legacy, legacy_sect, cfg);
}
