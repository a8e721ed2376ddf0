/* config_output.c — before the whole config is read, a quick look at
 * XF_KEY_BASE_DIRECTORY (or XF_KEY_OUTPUT_DIRECTORY) for the CLI's result-folder check. The
 * sections themselves (output, logging, plotting, parallel) are rows of the key table,
 * read by its section reader (config_table.c, adr/0119); homodyne's other keys of
 * output, logging and plotting are left to the key accounting (config_keys.c): listed by
 * `validate`, refused by --strict, no warning each. */
#include "config/config_internal.h"

#include <stdlib.h>
#include <string.h>

int xf_config_base_directory(const char *path, const char *text,
			     const xf_config_override *overrides, size_t n, char *buf, size_t size)
{
	xf_ynode *root = NULL;
	xf_error err = { 0 };
	int found = 0;
	if (!text)
		return 0;
	int rc = xf_yaml_load_string(text, path, &root, &err);
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
