/* config_analyzer.c — analyzer_parameters: its keys are rows of the key table
 * (config_table.c, adr/0132), read in table order by the readers here — dt, start_frame,
 * end_frame, shear_model, homodyne v2.1's nested temporal form, then scattering's
 * wavevector_q (one q, or several rings) and geometry's stator_rotor_gap. */
#include "config/config_internal.h"
#include "util/key_names.h"

#include <stdio.h>
#include <string.h>

#define END_FRAME_ALLOWED "-1 (the last frame) or an integer >= 1"

/* a key given a value (present and not null): the flat key beside the nested form */
static int given(const xf_ynode *map, const char *key)
{
	const xf_ynode *node = xf_ynode_get(map, key);
	return node && !xf_ynode_is_null(node);
}

/* XF_KEY_DT: s per stored frame; absent, the data file's */
int xf_cfg_read_dt(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		   xf_config *cfg)
{
	return xf_cfg_number(r, map, row->section, row->name, row->check, &cfg->dt_s, &cfg->has_dt);
}

/* XF_KEY_END_FRAME: 1-based, inclusive; -1 the last frame, 0 is no frame */
int xf_cfg_read_end_frame(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			  xf_config *cfg)
{
	char path[XF_CFG_PATH_MAX];
	long end = cfg->end_frame;
	int has_end = 0;
	int rc = xf_cfg_int(r, map, row->section, row->name, -1, 1000000000L, &end, &has_end);
	if (rc)
		return rc;
	if (has_end && end == 0)
		return xf_cfg_bad_value(r, xf_ynode_get(map, row->name),
					xf_cfg_path(path, row->section, row->name),
					END_FRAME_ALLOWED);
	cfg->end_frame = end;
	return 0;
}

const char *const xf_cfg_shear_model_names[] = { "homodyne", "pnas2024", NULL };

/* XF_KEY_SHEAR_MODEL: homodyne's γ̇ time integral or the paper's */
int xf_cfg_read_shear_model(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			    xf_config *cfg)
{
	int shear = 0, given_shear = 0;
	int rc = xf_cfg_choice(r, map, row->section, row->name, row->choices, &shear, &given_shear);
	if (!rc && given_shear)
		cfg->shear_model = shear ? XF_SHEAR_PNAS2024 : XF_SHEAR_HOMODYNE;
	return rc;
}

/* XF_KEY_TEMPORAL: homodyne v2.1's nested form of dt/start_frame/end_frame
 * ("both formats supported"). A value there is used when the flat key is absent; when
 * both are given the flat key wins, with a warning if they differ. */
int xf_cfg_read_temporal(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			 xf_config *cfg)
{
	static const char *const known[] = {
		"dt", "start_frame", "end_frame", "frame_interval", NULL,
	};
	char sect[XF_CFG_PATH_MAX];
	const xf_ynode *tmp = NULL;
	double dt = 0;
	long start = 0, end = 0, interval = 1;
	int has_dt = 0, t_start = 0, t_end = 0, t_interval = 0;
	int has_start = given(map, "start_frame"), has_end = given(map, "end_frame");
	xf_cfg_path(sect, row->section, row->name);
	int rc = xf_cfg_section(r, map, row->section, row->name, &tmp);
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
					XF_KEY_TEMPORAL ".end_frame", END_FRAME_ALLOWED);
	if (has_dt && !cfg->has_dt) {
		cfg->dt_s = dt;
		cfg->has_dt = 1;
	} else if (has_dt && dt != cfg->dt_s) {
		xf_warn(XF_KEY_TEMPORAL ".dt (%g) differs from " XF_KEY_DT " (%g); using " XF_KEY_DT
					", in %s:%d",
			dt, cfg->dt_s, r->file, xf_ynode_key_line(tmp, "dt"));
	}
	if (t_start && !has_start)
		cfg->start_frame = start;
	else if (t_start && start != cfg->start_frame)
		xf_warn(XF_KEY_TEMPORAL ".start_frame (%ld) differs from " XF_KEY_START_FRAME
					" (%ld); using the latter, in %s:%d",
			start, cfg->start_frame, r->file, xf_ynode_key_line(tmp, "start_frame"));
	if (t_end && !has_end)
		cfg->end_frame = end;
	else if (t_end && end != cfg->end_frame)
		xf_warn(XF_KEY_TEMPORAL ".end_frame (%ld) differs from " XF_KEY_END_FRAME
					" (%ld); using the latter, in %s:%d",
			end, cfg->end_frame, r->file, xf_ynode_key_line(tmp, "end_frame"));
	/* skipping frames would change the lag grid the model is fitted on: not done */
	if (t_interval && interval != 1)
		xf_warn(XF_KEY_TEMPORAL ".frame_interval %ld is not supported "
					"(every frame in the range is used), in %s:%d",
			interval, r->file, xf_ynode_key_line(tmp, "frame_interval"));
	return 0;
}
#define Q_KEY	  XF_KEY_Q
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

/* XF_KEY_Q */
int xf_cfg_read_wavevector_q(const xf_cfg_reader *r, const xf_ynode *scat, const xf_cfg_key *row,
			     xf_config *cfg)
{
	const xf_ynode *node = xf_ynode_get(scat, row->name);
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
	return xf_cfg_number(r, scat, row->section, row->name, XF_CHECK_POSITIVE,
			     &cfg->wavevector_q, &cfg->has_q);
}

/* XF_KEY_GAP: Å; absent, the default with a warning
 * for laminar_flow (config_read.c) */
int xf_cfg_read_gap(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		    xf_config *cfg)
{
	return xf_cfg_number(r, map, row->section, row->name, row->check, &cfg->gap_A,
			     &cfg->has_gap);
}

int xf_cfg_read_analyzer(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	const char *sect = "analyzer_parameters";
	const xf_ynode *map = NULL;
	int rc = xf_cfg_read_part(r, root, "", sect, NULL, &map, cfg);
	if (rc || !map || (rc = xf_cfg_read_part(r, map, sect, "scattering", NULL, NULL, cfg)))
		return rc;
	return xf_cfg_read_part(r, map, sect, "geometry", NULL, NULL, cfg);
}
