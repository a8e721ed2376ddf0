/* config_params.c — the parameter sections: XF_KEY_BOUNDS (bounds and priors)
 * and initial_parameters (start values matched by name, fixed parameters, per-angle
 * scaling starts), with the start values checked against the bounds. Their keys are own
 * rows of the key table (config_table.c, adr/0132), read here in table order. */
#include <math.h>
#include "config/config_internal.h"
#include "util/key_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XF_PARAM_NAMES_ALLOWED                                                                     \
	"one of D0, alpha, D_offset, gamma_dot_t0 (gamma_dot_0, gamma_dot_t_0), beta, "            \
	"gamma_dot_t_offset (gamma_dot_offset), phi0 (phi_0)"

/* What a parameter name may be for cfg's model: the built-in list, or a registered
 * model's own names (adr/0127) */
static const char *names_allowed(const xf_config *cfg, char *buf, size_t size)
{
	const xf_model_record *model = xf_model_record_of(cfg->mode);
	if (!model->params)
		return XF_PARAM_NAMES_ALLOWED;
	int len = snprintf(buf, size, "one of");
	for (int k = 0; k < model->n_phys && len > 0 && (size_t)len < size; k++)
		len += snprintf(buf + len, size - (size_t)len, "%s %s", k ? "," : "",
				xf_model_param_name(model, k));
	return buf;
}

static int oom(const xf_cfg_reader *r)
{
	return xf_fail(r->err, XF_ERR_NOMEM, "out of memory reading %s", r->file);
}

/* ---- parameter_space ---------------------------------------------------------------- */

static int read_bound(const xf_cfg_reader *r, const xf_ynode *item, int k, int seen[],
		      xf_config *cfg)
{
	static const char *const known[] = {
		"name", "min", "max", "prior_mu", "prior_sigma", "type", NULL,
	};
	/* homodyne labels each entry; nothing to use */
	static const char *const ignored[] = { "unit", "description", NULL };
	char path[XF_CFG_PATH_MAX];
	const char *name = NULL, *type = NULL;
	snprintf(path, sizeof path, XF_KEY_BOUNDS "[%d]", k);
	if (item->kind != XF_YNODE_MAPPING)
		return xf_cfg_bad_value(r, item, path,
					"a mapping {name, min, max, prior_mu, "
					"prior_sigma}");
	xf_cfg_check_keys(r, item, path, known, ignored);
	int rc = xf_cfg_string(r, item, path, "name", &name);
	if (!rc)
		rc = xf_cfg_string(r, item, path, "type", &type);
	if (rc)
		return rc;
	if (!name)
		return xf_fail(r->err, XF_ERR_CONFIG,
			       "%s.name: missing (must be a parameter "
			       "name), in %s:%d",
			       path, r->file, item->line);
	const xf_model_record *model = xf_model_record_of(cfg->mode);
	int idx = xf_model_param_index(model, name);
	char npath[XF_CFG_PATH_MAX], allowed[512], with_scaling[600];
	xf_cfg_path(npath, path, "name");
	if (idx < 0) {
		snprintf(with_scaling, sizeof with_scaling, "%s, contrast, offset",
			 names_allowed(cfg, allowed, sizeof allowed));
		return xf_cfg_bad_value(r, xf_ynode_get(item, "name"), npath, with_scaling);
	}
	if (seen[idx])
		return xf_fail(r->err, XF_ERR_CONFIG,
			       "%s: '%s' names %s, which already has "
			       "bounds at " XF_KEY_BOUNDS "[%d] (each parameter once), in %s:%d",
			       npath, name, xf_model_slot_name(model, idx), seen[idx] - 1, r->file,
			       item->line);
	seen[idx] = k + 1;

	xf_bound b = cfg->bounds[idx];
	int has_mu = 0, has_sigma = 0;
	if ((rc = xf_cfg_number(r, item, path, "min", XF_CHECK_FINITE, &b.lower, NULL)) ||
	    (rc = xf_cfg_number(r, item, path, "max", XF_CHECK_FINITE, &b.upper, NULL)) ||
	    (rc = xf_cfg_number(r, item, path, "prior_mu", XF_CHECK_FINITE, &b.prior_mu,
				&has_mu)) ||
	    (rc = xf_cfg_number(r, item, path, "prior_sigma", XF_CHECK_POSITIVE, &b.prior_sigma,
				&has_sigma)))
		return rc;
	if (!(b.lower < b.upper))
		return xf_fail(r->err, XF_ERR_CONFIG,
			       "%s: min %g >= max %g for %s is not "
			       "allowed (must be min < max), in %s:%d",
			       path, b.lower, b.upper, xf_model_slot_name(model, idx), r->file,
			       item->line);
	/* max − min overflows (±1e308): the fits' logit maps, the default prior and the
	 * "at a bound" test all divide by the width, which would be inf */
	if (!isfinite(b.upper - b.lower))
		return xf_fail(r->err, XF_ERR_CONFIG,
			       "%s: max - min = %g - (%g) for %s overflows (must be a finite "
			       "width, below 1.8e308), in %s:%d",
			       path, b.upper, b.lower, xf_model_slot_name(model, idx), r->file,
			       item->line);
	xf_bound middle = b;
	xf_cfg_default_prior(&middle);
	if (!has_mu)
		b.prior_mu = middle.prior_mu;
	if (!has_sigma)
		b.prior_sigma = middle.prior_sigma;
	cfg->bounds[idx] = b;
	return 0;
}

/* XF_KEY_BOUNDS: a list of {name, min, max, prior_mu, prior_sigma} */
int xf_cfg_read_bounds(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		       xf_config *cfg)
{
	char path[XF_CFG_PATH_MAX];
	int seen[XF_N_BOUND_SLOTS] = { 0 }; /* entry index + 1 per slot, 0 = none yet */
	const xf_ynode *list = xf_ynode_get(map, row->name);
	if (!list || xf_ynode_is_null(list))
		return 0;
	if (list->kind != XF_YNODE_SEQUENCE)
		return xf_cfg_bad_value(r, list, xf_cfg_path(path, row->section, row->name),
					"a list of {name, min, max, prior_mu, prior_sigma}");
	for (size_t k = 0; k < list->n; k++) {
		int rc = read_bound(r, list->items[k], (int)k, seen, cfg);
		if (rc)
			return rc;
	}
	return 0;
}

/* A row another reader reads: XF_KEY_SPACE_MODEL (analysis_mode's reader, before
 * every section), XF_KEY_VALUES (with parameter_names) */
int xf_cfg_read_elsewhere(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			  xf_config *cfg)
{
	(void)r, (void)map, (void)row, (void)cfg;
	return 0;
}

int xf_cfg_read_parameter_space(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	/* not on the spec list: homodyne's data-driven contrast/offset priors for its
	 * MCMC (docs/config.md); our priors come from the bounds entries */
	static const char *const ignored[] = { "priors", NULL };
	return xf_cfg_read_part(r, root, "", "parameter_space", ignored, NULL, cfg);
}

/* ---- initial_parameters ------------------------------------------------------------- */

static int outside_bounds(const xf_cfg_reader *r, const char *path, const char *name, double v,
			  const xf_bound *b, const xf_ynode *node)
{
	/* a value given on the command line is named by its option */
	char where[1024];
	if (node->origin)
		snprintf(where, sizeof where, "%s", node->origin);
	else
		snprintf(where, sizeof where, "%s:%d", r->file, node->line);
	return xf_fail(r->err, XF_ERR_CONFIG,
		       "%s: %s = %g is outside its bounds [%g, %g] "
		       "(must lie within " XF_KEY_BOUNDS " or the default bounds), in %s",
		       path, name, v, b->lower, b->upper, where);
}

/* A start value outside its bounds is moved onto the nearer bound with a warning: the
 * fit starts inside the box anyway, and homodyne's own templates ship such starts
 * (D0 = 1e-6 with bounds from 1). A fixed value outside its bounds stays an error. */
static double clamp_start(const xf_cfg_reader *r, const char *path, const char *name, double v,
			  const xf_bound *b, int line)
{
	double c = v < b->lower ? b->lower : v > b->upper ? b->upper : v;
	if (c != v)
		xf_warn("%s: %s = %g is outside its bounds [%g, %g]; the fit starts at %g, "
			"in %s:%d",
			path, name, v, b->lower, b->upper, c, r->file, line);
	return c;
}

/* Index of a physical parameter name for initial_parameters: -1 (after a warning) for a
 * parameter of the other mode, which is ignored; an error for unknown names and for
 * contrast/offset, whose starts have their own key. */
static int phys_index(const xf_cfg_reader *r, const xf_ynode *name_node, const char *path,
		      const xf_config *cfg, int *idx)
{
	char allowed[512], with_note[640];
	const char *names = names_allowed(cfg, allowed, sizeof allowed);
	*idx = -1;
	if (name_node->kind != XF_YNODE_SCALAR)
		return xf_cfg_bad_value(r, name_node, path, names);
	int k = xf_model_param_index(xf_model_record_of(cfg->mode), name_node->text);
	if (k < 0)
		return xf_cfg_bad_value(r, name_node, path, names);
	if (k >= XF_N_PHYS) {
		snprintf(with_note, sizeof with_note,
			 "%s; contrast and offset starts go in " XF_KEY_SCALING_STARTS, names);
		return xf_cfg_bad_value(r, name_node, path, with_note);
	}
	if (k >= xf_mode_n_phys(cfg->mode)) {
		/* a static config copied from a laminar one: harmless, but say so */
		xf_warn("%s: '%s' is not a parameter of %s mode (ignored), in %s:%d", path,
			name_node->text, xf_mode_name(cfg->mode), r->file, name_node->line);
		return 0;
	}
	*idx = k;
	return 0;
}

int xf_cfg_read_start_values(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			     xf_config *cfg)
{
	(void)row;
	const char *sect = "initial_parameters";
	const xf_ynode *names = xf_ynode_get(map, "parameter_names");
	const xf_ynode *values = xf_ynode_get(map, "values");
	char path[XF_CFG_PATH_MAX];
	int seen[XF_N_PHYS] = { 0 }; /* list position + 1 of each canonical name */
	xf_ynode_mark_used(names);
	xf_ynode_mark_used(values);
	if (names && xf_ynode_is_null(names))
		names = NULL;
	if (values && xf_ynode_is_null(values))
		values = NULL;
	if (names && names->kind != XF_YNODE_SEQUENCE)
		return xf_cfg_bad_value(r, names, XF_KEY_PARAMETER_NAMES,
					"a list of parameter names");
	if (values && values->kind != XF_YNODE_SEQUENCE)
		return xf_cfg_bad_value(r, values, XF_KEY_VALUES,
					"null or a list of numbers, one per parameter_names entry");
	if (values && !names)
		return xf_fail(
			r->err, XF_ERR_CONFIG,
			XF_KEY_PARAMETER_NAMES
			": missing (values are matched to parameter_names by name), in %s:%d",
			r->file, values->line);
	if (values && values->n != names->n)
		return xf_fail(r->err, XF_ERR_CONFIG,
			       XF_KEY_VALUES ": %zu values for %zu parameter_names is not allowed "
					     "(must be one value per "
					     "name), in %s:%d",
			       values->n, names->n, r->file, values->line);
	for (size_t i = 0; names && i < names->n; i++) {
		int idx;
		snprintf(path, sizeof path, "%s.parameter_names[%zu]", sect, i);
		int rc = phys_index(r, names->items[i], path, cfg, &idx);
		if (rc)
			return rc;
		if (idx < 0)
			continue;
		if (seen[idx])
			return xf_fail(r->err, XF_ERR_CONFIG,
				       "%s: '%s' names %s a second time "
				       "(first at parameter_names[%d]; each parameter once), "
				       "in %s:%d",
				       path, names->items[i]->text,
				       xf_model_slot_name(xf_model_record_of(cfg->mode), idx),
				       seen[idx] - 1, r->file, names->items[i]->line);
		seen[idx] = (int)i + 1;
		if (!values)
			continue;
		const xf_ynode *v = values->items[i];
		snprintf(path, sizeof path, "%s.values[%zu]", sect, i);
		if (xf_ynode_is_null(v))
			continue; /* a null entry: middle of the bounds, like values: null */
		if (xf_cfg_scalar_number(v, &cfg->values[idx]) != 0)
			return xf_cfg_bad_value(r, v, path, "a finite number or null");
		cfg->values[idx] =
			clamp_start(r, path, xf_model_slot_name(xf_model_record_of(cfg->mode), idx),
				    cfg->values[idx], &cfg->bounds[idx], v->line);
		cfg->value_given[idx] = 1;
	}
	return 0;
}

int xf_cfg_read_fixed(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		      xf_config *cfg)
{
	(void)row;
	const char *sect = XF_KEY_FIXED;
	const xf_ynode *fixed = NULL;
	char path[XF_CFG_PATH_MAX];
	int rc = xf_cfg_section(r, map, "initial_parameters", "fixed_parameters", &fixed);
	if (rc || !fixed)
		return rc;
	for (size_t i = 0; i < fixed->n; i++) {
		xf_ynode key = { .kind = XF_YNODE_SCALAR,
				 .line = fixed->key_lines[i],
				 .text = fixed->keys[i],
				 .plain = 1 };
		const xf_ynode *v = fixed->items[i];
		int idx;
		xf_cfg_path(path, sect, fixed->keys[i]);
		rc = phys_index(r, &key, path, cfg, &idx);
		if (rc)
			return rc;
		if (idx < 0)
			continue; /* left unmarked: listed among the ignored keys */
		xf_ynode_mark_used(v);
		double value;
		if (xf_cfg_scalar_number(v, &value) != 0)
			return xf_cfg_bad_value(r, v, path, "a finite number");
		const xf_bound *b = &cfg->bounds[idx];
		if (value < b->lower || value > b->upper)
			return outside_bounds(
				r, path, xf_model_slot_name(xf_model_record_of(cfg->mode), idx),
				value, b, v);
		cfg->values[idx] = value;
		cfg->value_given[idx] = 1;
		cfg->is_fixed[idx] = 1;
	}
	return 0;
}

/* per_angle_scaling.<key>: a number or a list of numbers, each within the slot's bounds */
static int read_scaling_list(const xf_cfg_reader *r, const xf_ynode *map, const char *key,
			     const xf_bound *b, int *n_out, double **out)
{
	char path[XF_CFG_PATH_MAX], item_path[XF_CFG_PATH_MAX + 32];
	const xf_ynode *node = xf_ynode_get(map, key);
	xf_cfg_path(path, XF_KEY_SCALING_STARTS, key);
	xf_ynode_mark_used(node);
	if (!node || xf_ynode_is_null(node))
		return 0;
	if (node->kind == XF_YNODE_MAPPING)
		return xf_cfg_bad_value(r, node, path, "a number or a list of numbers");
	int is_list = node->kind == XF_YNODE_SEQUENCE;
	size_t n = is_list ? node->n : 1;
	if (n == 0)
		return 0;
	double *values = calloc(n, sizeof *values);
	if (!values)
		return oom(r);
	for (size_t i = 0; i < n; i++) {
		const xf_ynode *v = is_list ? node->items[i] : node;
		if (is_list)
			snprintf(item_path, sizeof item_path, "%s[%zu]", path, i);
		else
			snprintf(item_path, sizeof item_path, "%s", path);
		int rc = 0;
		if (xf_cfg_scalar_number(v, &values[i]) != 0)
			rc = xf_cfg_bad_value(r, v, item_path, "a finite number");
		else
			values[i] = clamp_start(r, item_path, key, values[i], b, v->line);
		if (rc) {
			free(values);
			return rc;
		}
	}
	free(*out);
	*out = values;
	*n_out = (int)n;
	return 0;
}

int xf_cfg_read_per_angle_scaling(const xf_cfg_reader *r, const xf_ynode *map,
				  const xf_cfg_key *row, xf_config *cfg)
{
	(void)row;
	static const char *const known[] = { "contrast", "offset", NULL };
	const char *sect = XF_KEY_SCALING_STARTS;
	const xf_ynode *pas = NULL;
	int rc = xf_cfg_section(r, map, "initial_parameters", "per_angle_scaling", &pas);
	if (rc || !pas)
		return rc;
	xf_cfg_check_keys(r, pas, sect, known, NULL);
	rc = read_scaling_list(r, pas, "contrast", &cfg->bounds[XF_P_CONTRAST],
			       &cfg->n_contrast_start, &cfg->contrast_start);
	if (!rc)
		rc = read_scaling_list(r, pas, "offset", &cfg->bounds[XF_P_OFFSET],
				       &cfg->n_offset_start, &cfg->offset_start);
	return rc;
}

/* active_parameters: homodyne fits only the named physical parameters and holds the
 * others at their start values. Mapped onto is_fixed; null or absent = all fitted. */
int xf_cfg_read_active(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		       xf_config *cfg)
{
	(void)row;
	const char *sect = XF_KEY_ACTIVE;
	const xf_ynode *list = xf_ynode_get(map, "active_parameters");
	char path[XF_CFG_PATH_MAX];
	int active[XF_N_PHYS] = { 0 };
	xf_ynode_mark_used(list);
	if (!list || xf_ynode_is_null(list))
		return 0;
	/* an empty list would hold everything fixed: nothing to fit, surely not meant */
	if (list->kind != XF_YNODE_SEQUENCE || list->n == 0)
		return xf_cfg_bad_value(r, list, sect,
					"null or a list naming at least one parameter to fit");
	for (size_t i = 0; i < list->n; i++) {
		int idx;
		snprintf(path, sizeof path, "%s[%zu]", sect, i);
		int rc = phys_index(r, list->items[i], path, cfg, &idx);
		if (rc)
			return rc;
		if (idx >= 0)
			active[idx] = 1;
	}
	for (int k = 0; k < xf_mode_n_phys(cfg->mode); k++) {
		if (active[k] || cfg->is_fixed[k])
			continue;
		cfg->values[k] = xf_config_start_value(cfg, k);
		cfg->value_given[k] = 1;
		cfg->is_fixed[k] = 1;
	}
	return 0;
}

int xf_cfg_read_initial_parameters(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	/* homodyne writes the units beside the names; nothing to use */
	static const char *const ignored[] = { "units", NULL };
	return xf_cfg_read_part(r, root, "", "initial_parameters", ignored, NULL, cfg);
}

void xf_cfg_start_key(const char *name, char *buf, size_t size)
{
	snprintf(buf, size, XF_KEY_VALUES "[%s]", name);
}

int xf_cfg_set_start(xf_ynode **root, const char *name, const char *value, const char *origin,
		     xf_error *err)
{
	return xf_yaml_set_named(root, "initial_parameters", name, value, origin, err);
}
