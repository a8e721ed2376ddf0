/* config_value.c — typed access to config values with the error and warning wording of
 * spec/config.md: a bad value names its key path, the value, what is allowed and
 * file:line; an unknown key gets one warning with its key path. */
#include "config/config_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Values longer than this are cut in messages (an error line must stay one line). */
#define XF_CFG_VALUE_SHOWN 80

const char *xf_cfg_path(char buf[XF_CFG_PATH_MAX], const char *parent, const char *key)
{
	if (!parent || !parent[0])
		snprintf(buf, XF_CFG_PATH_MAX, "%s", key);
	else
		snprintf(buf, XF_CFG_PATH_MAX, "%s.%s", parent, key);
	return buf;
}

int xf_cfg_bad_value(const xf_cfg_reader *r, const xf_ynode *node, const char *path,
		     const char *allowed)
{
	/* a value set outside the file (an override) is named by where it was given */
	char where[1024];
	if (node && node->origin)
		snprintf(where, sizeof where, "%s", node->origin);
	else
		snprintf(where, sizeof where, "%s:%d", r->file, node ? node->line : 0);
	if (node && node->kind == XF_YNODE_SCALAR)
		return xf_fail(r->err, XF_ERR_CONFIG,
			       "%s: '%.*s' is not allowed (must be %s), in %s", path,
			       XF_CFG_VALUE_SHOWN, node->text, allowed, where);
	const char *what = node && node->kind == XF_YNODE_SEQUENCE ? "a list" : "a mapping";
	return xf_fail(r->err, XF_ERR_CONFIG, "%s: %s is not allowed (must be %s), in %s", path,
		       what, allowed, where);
}

static int in_list(const char *key, const char *const *list)
{
	for (; list && *list; list++)
		if (strcmp(key, *list) == 0)
			return 1;
	return 0;
}

void xf_cfg_check_keys(const xf_cfg_reader *r, const xf_ynode *map, const char *path,
		       const char *const *known, const char *const *ignored)
{
	char buf[XF_CFG_PATH_MAX];
	if (!map || map->kind != XF_YNODE_MAPPING)
		return;
	for (size_t k = 0; k < map->n; k++) {
		const char *origin = NULL;
		int known_key = in_list(map->keys[k], known);
		if (known_key)
			continue;
		/* an override must change something: one the reader would pass over is an
		 * error (recorded; read_all returns it once the sections are read) */
		if (xf_ynode_overridden(map->items[k], &origin)) {
			xf_fail(r->err, XF_ERR_CONFIG,
				in_list(map->keys[k], ignored)
					? "config key '%s' is accepted for homodyne but not used "
					  "by xpcsfit: an override there changes nothing, in %s"
					: "unknown config key '%s', in %s",
				xf_cfg_path(buf, path, map->keys[k]), origin);
			continue;
		}
		if (in_list(map->keys[k], ignored))
			continue;
		xf_warn("unknown config key '%s' (ignored), in %s:%d",
			xf_cfg_path(buf, path, map->keys[k]), r->file, map->key_lines[k]);
	}
}

int xf_cfg_section(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
		   const xf_ynode **out)
{
	char buf[XF_CFG_PATH_MAX];
	const xf_ynode *node = xf_ynode_get(map, key);
	*out = NULL;
	if (!node || xf_ynode_is_null(node)) {
		xf_ynode_mark_used(node); /* a null section: its defaults apply */
		return 0;
	}
	if (node->kind != XF_YNODE_MAPPING)
		return xf_cfg_bad_value(r, node, xf_cfg_path(buf, parent, key),
					"a mapping of keys");
	*out = node;
	return 0;
}

/* The scalar under key, NULL when absent or null; *bad set when present but not a scalar. */
static const xf_ynode *scalar_at(const xf_ynode *map, const char *key, int *bad)
{
	const xf_ynode *node = xf_ynode_get(map, key);
	*bad = 0;
	xf_ynode_mark_used(node); /* read, even when null: the default applies */
	if (!node || xf_ynode_is_null(node))
		return NULL;
	if (node->kind != XF_YNODE_SCALAR)
		*bad = 1;
	return node;
}

int xf_cfg_scalar_number(const xf_ynode *node, double *out)
{
	if (!node || node->kind != XF_YNODE_SCALAR || node->text[0] == '\0')
		return -1;
	char *end = NULL;
	errno = 0;
	double v = strtod(node->text, &end);
	if (end == node->text || *end != '\0' || !isfinite(v) || errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}

const char *xf_cfg_check_allowed(xf_cfg_check check)
{
	switch (check) {
	case XF_CHECK_POSITIVE: return "a number > 0";
	case XF_CHECK_NONNEGATIVE: return "a number >= 0";
	case XF_CHECK_OPEN_UNIT: return "a number between 0 and 1, both excluded";
	case XF_CHECK_FRACTION: return "a number from 0 to 1";
	case XF_CHECK_HALF_OPEN_UNIT: return "a number > 0 and <= 1";
	case XF_CHECK_AT_LEAST_ONE: return "a number >= 1";
	case XF_CHECK_FRAME_TIME: return "a number of seconds from 1e-12 to 86400";
	case XF_CHECK_FINITE:
	default: return "a finite number";
	}
}

static int check_passes(xf_cfg_check check, double v, const char **allowed)
{
	*allowed = xf_cfg_check_allowed(check);
	switch (check) {
	case XF_CHECK_POSITIVE: return v > 0;
	case XF_CHECK_NONNEGATIVE: return v >= 0;
	case XF_CHECK_OPEN_UNIT: return v > 0 && v < 1;
	case XF_CHECK_FRACTION: return v >= 0 && v <= 1;
	case XF_CHECK_HALF_OPEN_UNIT: return v > 0 && v <= 1;
	case XF_CHECK_AT_LEAST_ONE: return v >= 1;
	case XF_CHECK_FRAME_TIME: return v >= XF_DT_MIN_S && v <= XF_DT_MAX_S;
	case XF_CHECK_FINITE:
	default: return 1;
	}
}

int xf_cfg_number(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
		  xf_cfg_check check, double *out, int *given)
{
	char buf[XF_CFG_PATH_MAX];
	const char *allowed = NULL;
	int bad;
	double v = 0;
	const xf_ynode *node = scalar_at(map, key, &bad);
	if (given)
		*given = 0;
	if (!node)
		return 0;
	int ok = !bad && xf_cfg_scalar_number(node, &v) == 0;
	if (!check_passes(check, v, &allowed) || !ok)
		return xf_cfg_bad_value(r, node, xf_cfg_path(buf, parent, key), allowed);
	*out = v;
	if (given)
		*given = 1;
	return 0;
}

int xf_cfg_int(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
	       long lo, long hi, long *out, int *given)
{
	char buf[XF_CFG_PATH_MAX], allowed[96];
	int bad;
	double v = 0;
	const xf_ynode *node = scalar_at(map, key, &bad);
	if (given)
		*given = 0;
	if (!node)
		return 0;
	if (hi >= INT_MAX)
		snprintf(allowed, sizeof allowed, "an integer >= %ld", lo);
	else
		snprintf(allowed, sizeof allowed, "an integer from %ld to %ld", lo, hi);
	if (bad || xf_cfg_scalar_number(node, &v) != 0 || v != floor(v) || v < (double)lo ||
	    v > (double)hi)
		return xf_cfg_bad_value(r, node, xf_cfg_path(buf, parent, key), allowed);
	*out = (long)v;
	if (given)
		*given = 1;
	return 0;
}

int xf_cfg_int_or_auto(const xf_cfg_reader *r, const xf_ynode *map, const char *parent,
		       const char *key, long hi, long *out)
{
	char buf[XF_CFG_PATH_MAX], allowed[96];
	int bad;
	double v = 0;
	const xf_ynode *node = scalar_at(map, key, &bad);
	if (!node)
		return 0;
	if (!bad && strcmp(node->text, "auto") == 0) {
		*out = 0;
		return 0;
	}
	if (hi >= INT_MAX)
		snprintf(allowed, sizeof allowed, "auto or an integer >= 1");
	else
		snprintf(allowed, sizeof allowed, "auto or an integer from 1 to %ld", hi);
	if (bad || xf_cfg_scalar_number(node, &v) != 0 || v != floor(v) || v < 1 ||
	    v > (double)(hi < INT_MAX ? hi : INT_MAX))
		return xf_cfg_bad_value(r, node, xf_cfg_path(buf, parent, key), allowed);
	*out = (long)v;
	return 0;
}

int xf_cfg_u64(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
	       uint64_t *out)
{
	char buf[XF_CFG_PATH_MAX];
	int bad;
	const xf_ynode *node = scalar_at(map, key, &bad);
	if (!node)
		return 0;
	/* strtoull, not strtod: seeds above 2^53 must keep every digit */
	const char *s = node->text;
	char *end = NULL;
	int digits_only = !bad && s[0] != '\0';
	for (const char *c = s; digits_only && *c; c++)
		if (*c < '0' || *c > '9')
			digits_only = 0;
	errno = 0;
	unsigned long long v = digits_only ? strtoull(s, &end, 10) : 0;
	if (!digits_only || errno == ERANGE)
		return xf_cfg_bad_value(r, node, xf_cfg_path(buf, parent, key),
					"an integer from 0 to 18446744073709551615");
	*out = (uint64_t)v;
	return 0;
}

int xf_cfg_bool(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
		int *out)
{
	static const char *const yes[] = { "true", "yes", "on", NULL };
	static const char *const no[] = { "false", "no", "off", NULL };
	char buf[XF_CFG_PATH_MAX];
	int bad;
	const xf_ynode *node = scalar_at(map, key, &bad);
	if (!node)
		return 0;
	for (int k = 0; !bad && yes[k]; k++) {
		if (strcasecmp(node->text, yes[k]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(node->text, no[k]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return xf_cfg_bad_value(r, node, xf_cfg_path(buf, parent, key), "true or false (yes/no)");
}

int xf_cfg_string(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
		  const char **out)
{
	char buf[XF_CFG_PATH_MAX];
	int bad;
	const xf_ynode *node = scalar_at(map, key, &bad);
	if (!node)
		return 0;
	if (bad)
		return xf_cfg_bad_value(r, node, xf_cfg_path(buf, parent, key), "a text value");
	*out = node->text;
	return 0;
}

int xf_cfg_choice(const xf_cfg_reader *r, const xf_ynode *map, const char *parent, const char *key,
		  const char *const *choices, int *index, int *given)
{
	char buf[XF_CFG_PATH_MAX], allowed[256] = "one of ";
	int bad;
	const xf_ynode *node = scalar_at(map, key, &bad);
	if (given)
		*given = 0;
	if (!node)
		return 0;
	for (int k = 0; !bad && choices[k]; k++) {
		if (strcmp(node->text, choices[k]) == 0) {
			*index = k;
			if (given)
				*given = 1;
			return 0;
		}
	}
	for (int k = 0; choices[k]; k++) {
		size_t len = strlen(allowed);
		snprintf(allowed + len, sizeof allowed - len, "%s%s", k ? ", " : "", choices[k]);
	}
	return xf_cfg_bad_value(r, node, xf_cfg_path(buf, parent, key), allowed);
}
