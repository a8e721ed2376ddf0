/* config_keys.c — key accounting: after the section readers have run, every value they
 * used carries a mark (xf_ynode_mark_used); this walk lists the keys of the file whose
 * values stayed unmarked, by dotted path in file order, into cfg->ignored_keys. Those
 * are the keys xpcsfit accepts without using (homodyne's, mostly): `validate` prints
 * them grouped by section and --strict refuses them (adr/0032). */
#include "config/config_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
