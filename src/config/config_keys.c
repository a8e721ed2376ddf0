/* config_keys.c — key accounting: after the section readers have run, every value they
 * used carries a mark (xf_ynode_mark_used); this walk lists the keys of the file whose
 * values stayed unmarked, by dotted path in file order, into cfg->ignored_keys. Those
 * are the keys xpcsfit accepts without using (homodyne's, mostly): `validate` prints
 * them grouped by section and --strict refuses them (adr/0032). A second walk writes the
 * used values in a canonical form, the settings a batch --resume compares (adr/0057). */
#include "config/config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct key_list {
	char **paths;
	size_t n, cap;
} key_list;

static int add_path(key_list *l, const char *path)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		char **grown = realloc(l->paths, cap * sizeof *grown);
		if (!grown)
			return -1;
		l->paths = grown;
		l->cap = cap;
	}
	if (!(l->paths[l->n] = strdup(path)))
		return -1;
	l->n++;
	return 0;
}

static int has_mapping_item(const xf_ynode *seq)
{
	for (size_t k = 0; k < seq->n; k++)
		if (seq->items[k]->kind == XF_YNODE_MAPPING)
			return 1;
	return 0;
}

/* A value is a leaf of the accounting unless it is a non-empty mapping or a list of
 * mappings (bounds, target_ranges): those are walked into, their keys counted one by
 * one. A marked node counts as used with everything under it. */
static int walk(const xf_cfg_reader *r, const xf_ynode *node, const char *path, key_list *l)
{
	const char *origin = NULL;
	char child[XF_CFG_PATH_MAX];
	if (node->used)
		return 0;
	if (node->kind == XF_YNODE_MAPPING && node->n > 0) {
		for (size_t k = 0; k < node->n; k++)
			if (walk(r, node->items[k], xf_cfg_path(child, path, node->keys[k]), l))
				return -1;
		return 0;
	}
	if (node->kind == XF_YNODE_SEQUENCE && has_mapping_item(node)) {
		for (size_t k = 0; k < node->n; k++) {
			snprintf(child, sizeof child, "%s[%zu]", path, k);
			if (walk(r, node->items[k], child, l))
				return -1;
		}
		return 0;
	}
	/* an override must change something (adr/0024): one no reader used is an error,
	 * recorded; read_all returns it once the walk is done */
	if (xf_ynode_overridden(node, &origin))
		xf_fail(r->err, XF_ERR_CONFIG,
			"config key '%s' is not used by xpcsfit: an override there changes "
			"nothing, in %s",
			path, origin);
	return add_path(l, path);
}

int xf_cfg_collect_unused(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	key_list l = { 0 };
	if (walk(r, root, "", &l)) {
		for (size_t k = 0; k < l.n; k++)
			free(l.paths[k]);
		free(l.paths);
		return xf_fail(r->err, XF_ERR_NOMEM, "out of memory reading %s", r->file);
	}
	cfg->ignored_keys = l.paths;
	cfg->n_ignored_keys = l.n;
	return 0;
}

/* The settings (adr/0057): one line "dotted.path=value" per value a reader used, the lines
 * sorted, so that comments, layout, key order, flow or block style and the spelling of a
 * number (1e3, 1000.0) change nothing. A scalar is written canonically: a plain number as
 * the shortest of %.15g, %.16g, %.17g that reads back exactly, a plain null or boolean in lower case, anything else as written (newlines
 * escaped). A used mapping or list counts with everything under it. */
static void canonical(const xf_ynode *node, char *buf, size_t size)
{
	static const char *const nulls[] = { "", "~", "null", NULL };
	static const char *const trues[] = { "true", "yes", "on", NULL };
	static const char *const falses[] = { "false", "no", "off", NULL };
	double v;
	if (node->plain) {
		for (int k = 0; nulls[k]; k++)
			if (!strcasecmp(node->text, nulls[k])) {
				snprintf(buf, size, "null");
				return;
			}
		for (int k = 0; trues[k]; k++) {
			int t = !strcasecmp(node->text, trues[k]);
			if (t || !strcasecmp(node->text, falses[k])) {
				snprintf(buf, size, "%s", t ? "true" : "false");
				return;
			}
		}
		if (xf_cfg_scalar_number(node, &v) == 0) {
			/* the shortest %g that reads back as the same double: 0.1, not
			 * 0.10000000000000001 (what a message shows) */
			for (int digits = 15; digits <= 17; digits++) {
				snprintf(buf, size, "%.*g", digits, v);
				if (strtod(buf, NULL) == v)
					break;
			}
			return;
		}
	}
	size_t n = 0;
	for (const char *p = node->text; *p && n + 3 < size; p++) {
		if (*p == '\n' || *p == '\\') {
			buf[n++] = '\\';
			buf[n++] = *p == '\n' ? 'n' : '\\';
		} else {
			buf[n++] = *p;
		}
	}
	buf[n] = '\0';
}

static int add_setting(key_list *l, const char *path, const char *value)
{
	char line[XF_CFG_PATH_MAX + 1024];
	snprintf(line, sizeof line, "%s=%s", path, value);
	return add_path(l, line);
}

static int walk_settings(const xf_ynode *node, const char *path, int used, key_list *l)
{
	char child[XF_CFG_PATH_MAX], value[1024];
	used |= node->used;
	if (node->kind == XF_YNODE_MAPPING) {
		if (node->n == 0)
			return used ? add_setting(l, path, "{}") : 0;
		for (size_t k = 0; k < node->n; k++)
			if (walk_settings(node->items[k], xf_cfg_path(child, path, node->keys[k]),
					  used, l))
				return -1;
		return 0;
	}
	if (node->kind == XF_YNODE_SEQUENCE) {
		if (node->n == 0)
			return used ? add_setting(l, path, "[]") : 0;
		for (size_t k = 0; k < node->n; k++) {
			snprintf(child, sizeof child, "%s[%zu]", path, k);
			if (walk_settings(node->items[k], child, used, l))
				return -1;
		}
		return 0;
	}
	if (!used)
		return 0;
	canonical(node, value, sizeof value);
	return add_setting(l, path, value);
}

static int by_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int xf_cfg_collect_settings(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	key_list l = { 0 };
	size_t total = 1;
	int rc = walk_settings(root, "", 0, &l);
	if (rc == 0) {
		qsort(l.paths, l.n, sizeof *l.paths, by_text);
		for (size_t k = 0; k < l.n; k++)
			total += strlen(l.paths[k]) + 1;
		rc = (cfg->settings = malloc(total)) ? 0 : -1;
	}
	if (rc == 0) {
		char *at = cfg->settings;
		*at = '\0';
		for (size_t k = 0; k < l.n; k++)
			at += sprintf(at, "%s\n", l.paths[k]);
	}
	for (size_t k = 0; k < l.n; k++)
		free(l.paths[k]);
	free(l.paths);
	return rc ? xf_fail(r->err, XF_ERR_NOMEM, "out of memory reading %s", r->file) : 0;
}

size_t xf_config_key_section(const char *path)
{
	size_t cut = 0;
	int depth = 0;
	for (size_t k = 0; path[k]; k++) {
		if (path[k] == '[')
			depth++;
		else if (path[k] == ']' && depth > 0)
			depth--;
		else if (path[k] == '.' && depth == 0)
			cut = k;
	}
	return cut;
}
