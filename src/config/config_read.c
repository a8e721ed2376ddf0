/* config_read.c — xf_config_load: loads the YAML tree, checks the top-level keys and
 * runs the section readers in an order where each can rely on the ones before it
 * (mode first, bounds before the start-value check). Also the small sections:
 * analysis_mode, experimental_data, analyzer_parameters, phi_filtering, parallel. */
#include "config/config_internal.h"

#include <stdlib.h>
#include <string.h>

/* homodyne top-level sections xpcsfit accepts without using them (spec/config.md) */
static const char *const top_ignored[] = {
	"metadata",
	"config_version",
	"analysis_settings",
	"noise_estimation",
	"performance",
	"logging",
	"quality_control",
	"plotting",
	"output",
	"validation",
	"v2_features",
	"data_filtering",
	"q_tolerance_fraction",
	NULL,
};
static const char *const top_known[] = {
	"analysis_mode", "experimental_data",  "analyzer_parameters",
	"phi_filtering", "initial_parameters", "parameter_space",
	"optimization",	 "parallel",	       NULL,
};

int xf_cfg_read_mode(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	/* the two homodyne static names behave as static here (model.md) */
	static const char *const names[] = {
		"static", "laminar_flow", "static_isotropic", "static_anisotropic", NULL,
	};
	static const xf_mode modes[] = {
		XF_MODE_STATIC,
		XF_MODE_LAMINAR,
		XF_MODE_STATIC,
		XF_MODE_STATIC,
	};
	int index = 0, given = 0;
	int rc = xf_cfg_choice(r, root, "", "analysis_mode", names, &index, &given);
	if (rc)
		return rc;
	if (!given)
		return xf_fail(r->err, XF_EXIT_CONFIG,
			       "analysis_mode: missing (must be one of "
			       "static, laminar_flow, static_isotropic, static_anisotropic), in %s",
			       r->file);
	cfg->mode = modes[index];
	return 0;
}

int xf_cfg_read_experimental_data(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	static const char *const known[] = {
		"data_folder_path",
		"data_file_name",
		"file_path",
		NULL,
	};
	static const char *const ignored[] = {
		"cache_file_path",
		"cache_filename_template",
		"cache_compression",
		"phi_angles_path",
		"phi_angles_file",
		"data_type",
		"file_format",
		"exchange_key",
		NULL,
	};
	const char *sect = "experimental_data";
	const xf_ynode *map = NULL;
	const char *folder = NULL, *name = NULL, *file_path = NULL;
	int rc = xf_cfg_section(r, root, "", sect, &map);
	if (rc || !map)
		return rc;
	xf_cfg_check_keys(r, map, sect, known, ignored);
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
			return xf_fail(r->err, XF_EXIT_CONFIG, "out of memory reading %s", r->file);
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
		xf_warn("experimental_data.data_folder_path is given without data_file_name "
			"(ignored), in %s:%d",
			r->file, xf_ynode_key_line(map, "data_folder_path"));
	if (file_path && file_path[0])
		return xf_cfg_resolve_data_path(file_path, r->file, cfg, r->err);
	return 0;
}

int xf_cfg_read_analyzer(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	static const char *const known[] = {
		"dt", "start_frame", "end_frame", "scattering", "geometry", "shear_model", NULL,
	};
	static const char *const shear_names[] = { "homodyne", "pnas2024", NULL };
	const char *sect = "analyzer_parameters";
	const xf_ynode *map = NULL, *scat = NULL, *geom = NULL;
	int rc = xf_cfg_section(r, root, "", sect, &map);
	if (rc || !map)
		return rc;
	xf_cfg_check_keys(r, map, sect, known, NULL);
	int shear = 0, given = 0;
	long end_frame = cfg->end_frame;
	if ((rc = xf_cfg_number(r, map, sect, "dt", XF_CHECK_POSITIVE, &cfg->dt_s, &cfg->has_dt)) ||
	    /* start_frame below 1 is clamped with a warning by the reader (data.md) */
	    (rc = xf_cfg_int(r, map, sect, "start_frame", -1000000000L, 1000000000L,
			     &cfg->start_frame, NULL)) ||
	    (rc = xf_cfg_int(r, map, sect, "end_frame", -1, 1000000000L, &end_frame, NULL)) ||
	    (rc = xf_cfg_choice(r, map, sect, "shear_model", shear_names, &shear, &given)))
		return rc;
	if (end_frame == 0)
		return xf_cfg_bad_value(r, xf_ynode_get(map, "end_frame"),
					"analyzer_parameters.end_frame",
					"-1 (the last frame) or an integer >= 1");
	cfg->end_frame = end_frame;
	if (given)
		cfg->shear_model = shear ? XF_SHEAR_PNAS2024 : XF_SHEAR_HOMODYNE;

	if ((rc = xf_cfg_section(r, map, sect, "scattering", &scat)))
		return rc;
	if (scat) {
		static const char *const skeys[] = { "wavevector_q", NULL };
		xf_cfg_check_keys(r, scat, "analyzer_parameters.scattering", skeys, NULL);
		rc = xf_cfg_number(r, scat, "analyzer_parameters.scattering", "wavevector_q",
				   XF_CHECK_POSITIVE, &cfg->wavevector_q, &cfg->has_q);
		if (rc)
			return rc;
	}
	if ((rc = xf_cfg_section(r, map, sect, "geometry", &geom)))
		return rc;
	if (geom) {
		static const char *const gkeys[] = { "stator_rotor_gap", NULL };
		xf_cfg_check_keys(r, geom, "analyzer_parameters.geometry", gkeys, NULL);
		rc = xf_cfg_number(r, geom, "analyzer_parameters.geometry", "stator_rotor_gap",
				   XF_CHECK_POSITIVE, &cfg->gap_A, NULL);
		if (rc)
			return rc;
	}
	return 0;
}

static int read_phi_range(const xf_cfg_reader *r, const xf_ynode *item, int k, xf_phi_range *out)
{
	/* description: homodyne's templates label each range; nothing to use */
	static const char *const known[] = { "min_angle", "max_angle", NULL };
	static const char *const ignored[] = { "description", NULL };
	char path[XF_CFG_PATH_MAX];
	snprintf(path, sizeof path, "phi_filtering.target_ranges[%d]", k);
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
		return xf_fail(r->err, XF_EXIT_CONFIG,
			       "%s.%s: missing (must be a number in "
			       "degrees), in %s:%d",
			       path, has_min ? "max_angle" : "min_angle", r->file, item->line);
	return 0;
}

int xf_cfg_read_phi_filtering(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	static const char *const known[] = {
		"enabled",
		"target_ranges",
		"fallback_to_all_angles",
		NULL,
	};
	static const char *const ignored[] = {
		"algorithm",
		"tolerance",
		"quality_control",
		NULL,
	};
	const char *sect = "phi_filtering";
	const xf_ynode *map = NULL;
	int rc = xf_cfg_section(r, root, "", sect, &map);
	if (rc || !map)
		return rc;
	xf_cfg_check_keys(r, map, sect, known, ignored);
	if ((rc = xf_cfg_bool(r, map, sect, "enabled", &cfg->phi_filter_enabled)) ||
	    (rc = xf_cfg_bool(r, map, sect, "fallback_to_all_angles",
			      &cfg->fallback_to_all_angles)))
		return rc;
	const xf_ynode *list = xf_ynode_get(map, "target_ranges");
	if (!list || xf_ynode_is_null(list))
		return 0;
	if (list->kind != XF_YNODE_SEQUENCE)
		return xf_cfg_bad_value(r, list, "phi_filtering.target_ranges",
					"a list of {min_angle, max_angle}");
	if (list->n == 0)
		return 0;
	cfg->phi_ranges = calloc(list->n, sizeof *cfg->phi_ranges);
	if (!cfg->phi_ranges)
		return xf_fail(r->err, XF_EXIT_CONFIG, "out of memory reading %s", r->file);
	for (size_t k = 0; k < list->n; k++) {
		rc = read_phi_range(r, list->items[k], (int)k, &cfg->phi_ranges[k]);
		if (rc)
			return rc;
		cfg->n_phi_ranges = (int)k + 1;
	}
	return 0;
}

int xf_cfg_read_parallel(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	static const char *const known[] = { "virtual_devices", NULL };
	const xf_ynode *map = NULL;
	long devices = 0;
	int rc = xf_cfg_section(r, root, "", "parallel", &map);
	if (rc || !map)
		return rc;
	xf_cfg_check_keys(r, map, "parallel", known, NULL);
	rc = xf_cfg_int_or_auto(r, map, "parallel", "virtual_devices", &devices);
	if (rc)
		return rc;
	cfg->virtual_devices = (int)devices;
	return 0;
}

static int read_all(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	int rc;
	xf_cfg_check_keys(r, root, "", top_known, top_ignored);
	if ((rc = xf_cfg_read_mode(r, root, cfg)) ||
	    (rc = xf_cfg_read_experimental_data(r, root, cfg)) ||
	    (rc = xf_cfg_read_analyzer(r, root, cfg)) ||
	    (rc = xf_cfg_read_phi_filtering(r, root, cfg)) ||
	    (rc = xf_cfg_read_parameter_space(r, root, cfg)) ||
	    (rc = xf_cfg_read_initial_parameters(r, root, cfg)) ||
	    (rc = xf_cfg_read_optimization(r, root, cfg)) ||
	    (rc = xf_cfg_read_parallel(r, root, cfg)))
		return rc;
	return 0;
}

int xf_config_load(const char *path, xf_config *cfg, xf_error *err)
{
	xf_ynode *root = NULL;
	xf_cfg_reader r = { path, err };
	xf_config_defaults(cfg);
	int rc = xf_yaml_load_file(path, &root, err);
	if (rc)
		return rc;
	if (!root || xf_ynode_is_null(root))
		rc = xf_fail(err, XF_EXIT_CONFIG,
			     "config file is empty (analysis_mode is "
			     "required), in %s",
			     path);
	else if (root->kind != XF_YNODE_MAPPING)
		rc = xf_fail(err, XF_EXIT_CONFIG,
			     "the top level of a config must be a mapping "
			     "of keys, in %s:%d",
			     path, root->line);
	else if (!(cfg->source_path = strdup(path)))
		rc = xf_fail(err, XF_EXIT_CONFIG, "out of memory reading %s", path);
	else
		rc = read_all(&r, root, cfg);
	xf_yaml_free(root);
	if (rc)
		xf_config_free(cfg);
	return rc;
}
