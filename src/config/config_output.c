/* config_output.c — the homodyne sections xpcsfit honours in part: output.base_directory
 * (or output.directory: the default result folder), output.surfaces (xpcsfit's own: the
 * fitted surfaces in results.h5 or not), logging.level (what the console shows),
 * plotting.dpi (PNG size), plotting.angle_pages (xpcsfit's own: which angles get a page),
 * read by the key table's rows (config_table.c); and, before the whole config is read, a
 * quick look at output.base_directory for the CLI's result-folder check. Their other keys
 * are left to the key accounting (config_keys.c): listed by `validate`, refused by
 * --strict, no warning each. */
#include "config/config_internal.h"

#include <stdlib.h>
#include <string.h>

/* The sections' keys are rows of the key table (config_table.c, adr/0119), read in its
 * order; no unknown-key check here: homodyne's many other keys of these sections are
 * left to the key accounting. */
int xf_cfg_read_output(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	static const char *const sections[] = { "output", "logging", "plotting" };
	for (size_t k = 0; k < sizeof sections / sizeof sections[0]; k++) {
		const xf_ynode *map = NULL;
		int rc = xf_cfg_section(r, root, "", sections[k], &map);
		if (!rc && map)
			rc = xf_cfg_read_keys(r, map, sections[k], cfg);
		if (rc)
			return rc;
	}
	return 0;
}

int xf_config_base_directory(const char *path, const xf_config_override *overrides, size_t n,
			     char *buf, size_t size)
{
	xf_ynode *root = NULL;
	xf_error err = { 0 };
	int found = 0;
	int rc = xf_yaml_load_file(path, &root, &err);
	for (size_t k = 0; rc == 0 && k < n; k++)
		rc = xf_yaml_set(&root, xf_config_key_alias(overrides[k].key), overrides[k].value,
				 overrides[k].origin, &err);
	static const char *const keys[] = { "base_directory", "directory" };
	for (int k = 0; rc == 0 && !found && k < 2; k++) {
		const xf_ynode *base = xf_ynode_get(xf_ynode_get(root, "output"), keys[k]);
		if (base && base->kind == XF_YNODE_SCALAR && base->text[0] &&
		    !xf_ynode_is_null(base) && strlen(base->text) < size) {
			memcpy(buf, base->text, strlen(base->text) + 1);
			found = 1;
		}
	}
	xf_yaml_free(root);
	return found;
}
