/* config_output.c — the homodyne sections xpcsfit honours in part: output.base_directory
 * (or output.directory: the default result folder), output.surfaces (xpcsfit's own: the
 * fitted surfaces in results.h5 or not), logging.level (what the console shows), plotting.dpi
 * (PNG size), plotting.angle_pages (xpcsfit's own: which angles get a page) and, before the whole config is read, a quick look at
 * output.base_directory for the CLI's result-folder check. Their other keys are left to the key accounting (config_keys.c): listed by
 * `validate`, refused by --strict, no warning each. */
#include "config/config_internal.h"

#include <stdlib.h>
#include <string.h>

/* plotting.dpi: pages from a quarter to six times their nominal (100 dpi) size; a
 * larger one is a ~10000 px PNG per angle, too slow and big to be meant */
#define XF_PLOT_DPI_MIN 25
#define XF_PLOT_DPI_MAX 600

/* homodyne's Python logging level names; CRITICAL behaves as ERROR */
/* output.surfaces: the index is the value of xf_config.output_surfaces */
static const char *const surfaces_names[] = { "none", "full", NULL };
/* plotting.angle_pages: the index is the value of xf_config.plot_all_angles */
static const char *const angle_pages_names[] = { "auto", "all", NULL };

static const char *const level_names[] = {
	"DEBUG", "INFO",    "WARNING", "ERROR",	   "CRITICAL", "debug",
	"info",	 "warning", "error",   "critical", NULL,
};
static const xf_log_level level_values[] = {
	XF_VERBOSITY_DEBUG, XF_VERBOSITY_INFO,	XF_VERBOSITY_WARNING, XF_VERBOSITY_ERROR,
	XF_VERBOSITY_ERROR, XF_VERBOSITY_DEBUG, XF_VERBOSITY_INFO,    XF_VERBOSITY_WARNING,
	XF_VERBOSITY_ERROR, XF_VERBOSITY_ERROR,
};

int xf_cfg_read_output(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	const xf_ynode *out = NULL, *log = NULL, *plot = NULL;
	long dpi = 0;
	int has_dpi = 0;
	const char *base = NULL, *dir = NULL;
	int index = 0, given = 0, surfaces = 0, surfaces_given = 0, pages = 0, pages_given = 0;
	int rc = xf_cfg_section(r, root, "", "output", &out);
	if (!rc && out)
		rc = xf_cfg_string(r, out, "output", "base_directory", &base);
	if (!rc && out)
		rc = xf_cfg_string(r, out, "output", "directory", &dir);
	if (!rc && out)
		rc = xf_cfg_choice(r, out, "output", "surfaces", surfaces_names, &surfaces,
				   &surfaces_given);
	if (!rc)
		rc = xf_cfg_section(r, root, "", "logging", &log);
	if (!rc && log)
		rc = xf_cfg_choice(r, log, "logging", "level", level_names, &index, &given);
	if (!rc)
		rc = xf_cfg_section(r, root, "", "plotting", &plot);
	if (!rc && plot)
		rc = xf_cfg_int(r, plot, "plotting", "dpi", XF_PLOT_DPI_MIN, XF_PLOT_DPI_MAX, &dpi,
				&has_dpi);
	if (!rc && plot)
		rc = xf_cfg_choice(r, plot, "plotting", "angle_pages", angle_pages_names, &pages,
				   &pages_given);
	if (rc)
		return rc;
	if (has_dpi)
		cfg->plot_dpi = (int)dpi;
	if (given)
		cfg->verbosity = level_values[index];
	cfg->output_surfaces = surfaces_given ? surfaces : 0;
	cfg->plot_all_angles = pages_given ? pages : 0;
	if (!(base && base[0]))
		base = dir; /* homodyne's current templates' name; base_directory wins */
	if (base && base[0] && !(cfg->base_directory = strdup(base)))
		return xf_fail(r->err, XF_ERR_NOMEM, "out of memory reading %s", r->file);
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
