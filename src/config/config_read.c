/* config_read.c — xf_config_load: loads the YAML tree, checks the top-level keys and
 * runs the section readers in an order where each can rely on the ones before it
 * (mode first, bounds before the start-value check). Also the small sections:
 * analysis_mode, experimental_data, analyzer_parameters, phi_filtering. */
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
/* the top-level keys read by hand (this file, config_params.c, config_optim.c); the key
 * table's sections join them (known_top_keys) */
static const char *const top_read[] = {
	XF_CONFIG_MODE_KEY, "experimental_data",   "analyzer_parameters",
	"phi_filtering",    "initial_parameters",  "parameter_space",
	"optimization",	    "optimization_config", NULL,
};
#define XF_CFG_TOP_KEYS_MAX 24

/* parameter_space.model: homodyne's other place for the mode. Its short example configs
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
		/* when analysis_mode is there, parameter_space.model is only a label: an
		 * unreadable one is not worth an error, a contradicting one is worth a word */
		const xf_ynode *space = xf_ynode_get(root, "parameter_space");
		const xf_ynode *model = xf_ynode_get(space, "model");
		xf_ynode_mark_used(model); /* checked against analysis_mode below */
		for (int k = 0; model && model->kind == XF_YNODE_SCALAR && xf_mode_names[k]; k++)
			if (strcmp(model->text, xf_mode_names[k]) == 0 &&
			    xf_mode_named[k] != xf_mode_named[index])
				xf_warn("parameter_space.model '%s' disagrees with analysis_mode "
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
			       "static, laminar_flow, static_isotropic, static_anisotropic; "
			       "parameter_space.model is also accepted), in %s",
			       r->file);
	xf_warn("analysis_mode is missing; using parameter_space.model '%s' as the mode, in %s:%d",
		xf_mode_names[model_index], r->file,
		xf_ynode_key_line(xf_ynode_get(root, "parameter_space"), "model"));
	cfg->mode = xf_mode_named[model_index];
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
		/* not on the spec list: homodyne v2.1 preprocessing switches (docs/config.md) */
		"preprocessing",
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
		xf_warn("experimental_data.data_folder_path is given without data_file_name "
			"(ignored), in %s:%d",
			r->file, xf_ynode_key_line(map, "data_folder_path"));
	if (file_path && file_path[0])
		return xf_cfg_resolve_data_path(file_path, r->file, cfg, r->err);
	return 0;
}

/* analyzer_parameters.temporal: homodyne v2.1's nested form of dt/start_frame/end_frame
 * ("both formats supported"). A value there is used when the flat key is absent; when
 * both are given the flat key wins, with a warning if they differ. */
static int read_temporal(const xf_cfg_reader *r, const xf_ynode *map, int has_start, int has_end,
			 long *start_frame, long *end_frame, xf_config *cfg)
{
	static const char *const known[] = {
		"dt", "start_frame", "end_frame", "frame_interval", NULL,
	};
	const char *sect = "analyzer_parameters.temporal";
	const xf_ynode *tmp = NULL;
	double dt = 0;
	long start = 0, end = 0, interval = 1;
	int has_dt = 0, t_start = 0, t_end = 0, t_interval = 0;
	int rc = xf_cfg_section(r, map, "analyzer_parameters", "temporal", &tmp);
	if (rc || !tmp)
		return rc;
	xf_cfg_check_keys(r, tmp, sect, known, NULL);
	if ((rc = xf_cfg_number(r, tmp, sect, "dt", XF_CHECK_FRAME_TIME, &dt, &has_dt)) ||
	    (rc = xf_cfg_int(r, tmp, sect, "start_frame", -1000000000L, 1000000000L, &start,
			     &t_start)) ||
	    (rc = xf_cfg_int(r, tmp, sect, "end_frame", -1, 1000000000L, &end, &t_end)) ||
	    (rc = xf_cfg_int(r, tmp, sect, "frame_interval", 1, 1000000000L, &interval,
			     &t_interval)))
		return rc;
	if (t_end && end == 0)
		return xf_cfg_bad_value(r, xf_ynode_get(tmp, "end_frame"),
					"analyzer_parameters.temporal.end_frame",
					"-1 (the last frame) or an integer >= 1");
	if (has_dt && !cfg->has_dt) {
		cfg->dt_s = dt;
		cfg->has_dt = 1;
	} else if (has_dt && dt != cfg->dt_s) {
		xf_warn("analyzer_parameters.temporal.dt (%g) differs from analyzer_parameters.dt "
			"(%g); using analyzer_parameters.dt, in %s:%d",
			dt, cfg->dt_s, r->file, xf_ynode_key_line(tmp, "dt"));
	}
	if (t_start && !has_start)
		*start_frame = start;
	else if (t_start && start != *start_frame)
		xf_warn("analyzer_parameters.temporal.start_frame (%ld) differs from "
			"analyzer_parameters.start_frame (%ld); using the latter, in %s:%d",
			start, *start_frame, r->file, xf_ynode_key_line(tmp, "start_frame"));
	if (t_end && !has_end)
		*end_frame = end;
	else if (t_end && end != *end_frame)
		xf_warn("analyzer_parameters.temporal.end_frame (%ld) differs from "
			"analyzer_parameters.end_frame (%ld); using the latter, in %s:%d",
			end, *end_frame, r->file, xf_ynode_key_line(tmp, "end_frame"));
	/* skipping frames would change the lag grid the model is fitted on: not done */
	if (t_interval && interval != 1)
		xf_warn("analyzer_parameters.temporal.frame_interval %ld is not supported "
			"(every frame in the range is used), in %s:%d",
			interval, r->file, xf_ynode_key_line(tmp, "frame_interval"));
	return 0;
}

#define Q_KEY	  "analyzer_parameters.scattering.wavevector_q"
#define Q_ALLOWED "a number > 0, all, a list of numbers > 0 or {min: Q1, max: Q2}"

/* One q of a list or a range: a number > 0. */
static int q_value(const xf_cfg_reader *r, const xf_ynode *node, const char *path, double *out)
{
	if (!node || xf_cfg_scalar_number(node, out) || !(*out > 0))
		return xf_cfg_bad_value(r, node, path, "a number > 0 (1/angstrom)");
	return 0;
}

/* wavevector_q (docs/config.md, adr/0063): a number picks the nearest ring (as always);
 * `all`, a list or a {min, max} range picks several. A list of one value is that value. */
static int read_q_list(const xf_cfg_reader *r, const xf_ynode *node, xf_config *cfg)
{
	char path[XF_CFG_PATH_MAX];
	xf_q_choice *c = &cfg->q_rings;
	char where[1024]; /* a list given by --set is named by the option (adr/0075) */
	if (node->origin)
		snprintf(where, sizeof where, "%s", node->origin);
	else
		snprintf(where, sizeof where, "%s:%d", r->file, node->line);
	if (node->n < 1 || node->n > XF_Q_LIST_MAX)
		return xf_fail(r->err, XF_ERR_CONFIG,
			       "%s: a list of %zu values (want 1 to %d), in %s", Q_KEY, node->n,
			       XF_Q_LIST_MAX, where);
	for (size_t k = 0; k < node->n; k++) {
		snprintf(path, sizeof path, Q_KEY "[%zu]", k);
		if (q_value(r, node->items[k], path, &c->list[k]))
			return XF_ERR_CONFIG;
	}
	if (node->n == 1) {
		cfg->has_q = 1;
		cfg->wavevector_q = c->list[0];
		return 0;
	}
	c->pick = XF_Q_PICK_LIST;
	c->n_list = (int)node->n;
	return 0;
}

static int read_q_range(const xf_cfg_reader *r, const xf_ynode *node, xf_config *cfg)
{
	static const char *const known[] = { "min", "max", NULL };
	xf_q_choice *c = &cfg->q_rings;
	const xf_ynode *lo = xf_ynode_get(node, "min"), *hi = xf_ynode_get(node, "max");
	xf_cfg_check_keys(r, node, Q_KEY, known, NULL);
	xf_ynode_mark_used(lo);
	xf_ynode_mark_used(hi);
	if (!lo || !hi)
		return xf_fail(r->err, XF_ERR_CONFIG,
			       "%s.%s: missing (a q range needs both min and max, 1/angstrom), "
			       "in %s:%d",
			       Q_KEY, lo ? "max" : "min", r->file, node->line);
	if (q_value(r, lo, Q_KEY ".min", &c->range_min) ||
	    q_value(r, hi, Q_KEY ".max", &c->range_max))
		return XF_ERR_CONFIG;
	if (c->range_min > c->range_max)
		return xf_fail(r->err, XF_ERR_CONFIG,
			       "%s: min %g is above max %g (want min <= max), in %s:%d", Q_KEY,
			       c->range_min, c->range_max, r->file, node->line);
	c->pick = XF_Q_PICK_RANGE;
	return 0;
}

static int read_wavevector_q(const xf_cfg_reader *r, const xf_ynode *scat, xf_config *cfg)
{
	const xf_ynode *node = xf_ynode_get(scat, "wavevector_q");
	if (node && node->kind == XF_YNODE_SEQUENCE) {
		xf_ynode_mark_used(node);
		return read_q_list(r, node, cfg);
	}
	if (node && node->kind == XF_YNODE_MAPPING) /* min and max marked: other keys listed */
		return read_q_range(r, node, cfg);
	if (node && node->kind == XF_YNODE_SCALAR && !strcmp(node->text, "all")) {
		xf_ynode_mark_used(node);
		cfg->q_rings.pick = XF_Q_PICK_ALL;
		return 0;
	}
	double v = 0;
	if (node && node->kind == XF_YNODE_SCALAR && !xf_ynode_is_null(node) &&
	    (xf_cfg_scalar_number(node, &v) || !(v > 0))) {
		xf_ynode_mark_used(node);
		return xf_cfg_bad_value(r, node, Q_KEY, Q_ALLOWED);
	}
	return xf_cfg_number(r, scat, "analyzer_parameters.scattering", "wavevector_q",
			     XF_CHECK_POSITIVE, &cfg->wavevector_q, &cfg->has_q);
}

int xf_cfg_read_analyzer(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	static const char *const known[] = {
		"dt",	    "start_frame", "end_frame", "scattering",
		"geometry", "shear_model", "temporal",	NULL,
	};
	static const char *const shear_names[] = { "homodyne", "pnas2024", NULL };
	const char *sect = "analyzer_parameters";
	const xf_ynode *map = NULL, *scat = NULL, *geom = NULL;
	int rc = xf_cfg_section(r, root, "", sect, &map);
	if (rc || !map)
		return rc;
	xf_cfg_check_keys(r, map, sect, known, NULL);
	int shear = 0, given = 0, has_start = 0, has_end = 0;
	long end_frame = cfg->end_frame;
	if ((rc = xf_cfg_number(r, map, sect, "dt", XF_CHECK_FRAME_TIME, &cfg->dt_s,
				&cfg->has_dt)) ||
	    /* start_frame below 1 is clamped with a warning by the reader (data.md) */
	    (rc = xf_cfg_int(r, map, sect, "start_frame", -1000000000L, 1000000000L,
			     &cfg->start_frame, &has_start)) ||
	    (rc = xf_cfg_int(r, map, sect, "end_frame", -1, 1000000000L, &end_frame, &has_end)) ||
	    (rc = xf_cfg_choice(r, map, sect, "shear_model", shear_names, &shear, &given)))
		return rc;
	if (has_end && end_frame == 0)
		return xf_cfg_bad_value(r, xf_ynode_get(map, "end_frame"),
					"analyzer_parameters.end_frame",
					"-1 (the last frame) or an integer >= 1");
	if ((rc = read_temporal(r, map, has_start, has_end, &cfg->start_frame, &end_frame, cfg)))
		return rc;
	cfg->end_frame = end_frame;
	if (given)
		cfg->shear_model = shear ? XF_SHEAR_PNAS2024 : XF_SHEAR_HOMODYNE;

	if ((rc = xf_cfg_section(r, map, sect, "scattering", &scat)))
		return rc;
	if (scat) {
		static const char *const skeys[] = { "wavevector_q", NULL };
		xf_cfg_check_keys(r, scat, "analyzer_parameters.scattering", skeys, NULL);
		if ((rc = read_wavevector_q(r, scat, cfg)))
			return rc;
	}
	if ((rc = xf_cfg_section(r, map, sect, "geometry", &geom)))
		return rc;
	if (geom) {
		static const char *const gkeys[] = { "stator_rotor_gap", NULL };
		xf_cfg_check_keys(r, geom, "analyzer_parameters.geometry", gkeys, NULL);
		rc = xf_cfg_number(r, geom, "analyzer_parameters.geometry", "stator_rotor_gap",
				   XF_CHECK_POSITIVE, &cfg->gap_A, &cfg->has_gap);
		if (rc)
			return rc;
	}
	return 0;
}

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

/* One phi-filter mapping: phi_filtering, or homodyne's legacy
 * optimization_config.angle_filtering (same keys). sect names it in messages. */
static int read_phi_section(const xf_cfg_reader *r, const xf_ynode *map, const char *sect,
			    xf_config *cfg)
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
		/* not on the spec list: an unused extra list in homodyne v2.1's
		 * comprehensive template (docs/config.md) */
		"laminar_flow_ranges",
		NULL,
	};
	char lpath[XF_CFG_PATH_MAX];
	int rc;
	xf_cfg_check_keys(r, map, sect, known, ignored);
	if ((rc = xf_cfg_bool(r, map, sect, "enabled", &cfg->phi_filter_enabled)) ||
	    (rc = xf_cfg_bool(r, map, sect, "fallback_to_all_angles",
			      &cfg->fallback_to_all_angles)))
		return rc;
	const xf_ynode *list = xf_ynode_get(map, "target_ranges");
	if (!list || xf_ynode_is_null(list))
		return 0;
	if (list->kind != XF_YNODE_SEQUENCE)
		return xf_cfg_bad_value(r, list, xf_cfg_path(lpath, sect, "target_ranges"),
					"a list of {min_angle, max_angle}");
	if (list->n == 0)
		return 0;
	cfg->phi_ranges = calloc(list->n, sizeof *cfg->phi_ranges);
	if (!cfg->phi_ranges)
		return xf_fail(r->err, XF_ERR_NOMEM, "out of memory reading %s", r->file);
	for (size_t k = 0; k < list->n; k++) {
		rc = read_phi_range(r, list->items[k], sect, (int)k, &cfg->phi_ranges[k]);
		if (rc)
			return rc;
		cfg->n_phi_ranges = (int)k + 1;
	}
	return 0;
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

/* Short names of the keys a series of files varies most (docs/cli.md, batch --overrides):
 * dt the frame time, q the wavevector that picks the q ring. */
static const struct {
	const char *alias, *key;
} key_aliases[] = {
	{ "dt", "analyzer_parameters.dt" },
	{ "q", "analyzer_parameters.scattering.wavevector_q" },
};

const char *xf_config_key_alias(const char *name)
{
	for (size_t k = 0; k < sizeof key_aliases / sizeof key_aliases[0]; k++)
		if (!strcmp(name, key_aliases[k].alias))
			return key_aliases[k].key;
	return name;
}

/* The top-level keys read: the sections read here and by their readers, then the key
 * table's own sections (config_table.c) */
static void known_top_keys(const char **known, size_t cap)
{
	size_t n = 0;
	while (top_read[n] && n + 1 < cap) {
		known[n] = top_read[n];
		n++;
	}
	xf_cfg_table_sections(known + n, cap - n);
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
		xf_warn("analyzer_parameters.geometry.stator_rotor_gap is not set: laminar_flow "
			"uses the default %g A (200 um); set the gap of your cell, in %s",
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
	xf_ynode *root = NULL;
	xf_cfg_reader r = { path, err };
	xf_config_defaults(cfg);
	int rc = xf_yaml_load_file(path, &root, err);
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
	else if (!(cfg->source_path = strdup(path)))
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
	else
		rc = read_all(&r, root, cfg);
	if (rc == 0)
		rc = xf_cfg_record_overrides(overrides, n, cfg, err);
	xf_yaml_free(root);
	if (rc)
		xf_config_free(cfg);
	return rc;
}
