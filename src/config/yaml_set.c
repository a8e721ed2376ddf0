/* yaml_set.c — editing a loaded YAML tree by dotted key path (yaml_tree.h): what per-file
 * overrides (batch --overrides) and the later --set use, so that a value given outside
 * the file goes through the same readers, range checks and messages as one written in
 * it. Only mappings are walked: a list item has no dotted name. */
#include "config/yaml_tree.h"
#include "xpcsfit/params.h"
#include "util/key_names.h"

#include <stdlib.h>
#include <string.h>

/* Longest dotted path accepted (the reader prints paths up to 256 characters). */
#define XF_YAML_SET_PATH_MAX 256

static int no_memory(const char *origin, xf_error *err)
{
	return xf_fail(err, XF_ERR_NOMEM, "out of memory applying a config override, in %s",
		       origin);
}

static xf_ynode *new_node(xf_ynode_kind kind, const char *text, const char *origin)
{
	xf_ynode *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->kind = kind;
	n->plain = 1; /* read like an unquoted value: "null", "true", numbers */
	n->text = strdup(text ? text : "");
	n->origin = strdup(origin ? origin : "an override");
	if (!n->text || !n->origin) {
		xf_yaml_free(n);
		return NULL;
	}
	return n;
}

/* Append key: child to a mapping; child is freed on failure. */
static int append(xf_ynode *map, const char *key, xf_ynode *child)
{
	size_t n = map->n + 1;
	xf_ynode **items = realloc(map->items, n * sizeof *items);
	if (items)
		map->items = items;
	char **keys = items ? realloc(map->keys, n * sizeof *keys) : NULL;
	if (keys)
		map->keys = keys;
	int *lines = keys ? realloc(map->key_lines, n * sizeof *lines) : NULL;
	if (lines)
		map->key_lines = lines;
	char *copy = lines ? strdup(key) : NULL;
	if (!copy) {
		xf_yaml_free(child);
		return -1;
	}
	map->items[map->n] = child;
	map->keys[map->n] = copy;
	map->key_lines[map->n] = 0;
	map->n = n;
	return 0;
}

static long index_of(const xf_ynode *map, const char *key)
{
	for (size_t k = 0; k < map->n; k++)
		if (!strcmp(map->keys[k], key))
			return (long)k;
	return -1;
}

static const char *kind_name(const xf_ynode *node)
{
	return node->kind == XF_YNODE_SEQUENCE	? "a list"
	       : node->kind == XF_YNODE_MAPPING ? "a section"
						: "a value";
}

/* The mapping under key (created, or made from an empty value), or NULL with err set. */
static xf_ynode *section(xf_ynode *map, const char *key, const char *path, const char *origin,
			 xf_error *err)
{
	long k = index_of(map, key);
	if (k >= 0 && map->items[k]->kind == XF_YNODE_MAPPING)
		return map->items[k];
	if (k >= 0 && !xf_ynode_is_null(map->items[k])) {
		xf_fail(err, XF_ERR_CONFIG,
			"%s: the config has %s there, not a section of keys, in %s", path,
			kind_name(map->items[k]), origin);
		return NULL;
	}
	xf_ynode *sect = new_node(XF_YNODE_MAPPING, NULL, origin);
	if (!sect) {
		no_memory(origin, err);
		return NULL;
	}
	if (k >= 0) { /* "key:" with nothing after it */
		xf_yaml_free(map->items[k]);
		map->items[k] = sect;
		return sect;
	}
	if (append(map, key, sect) != 0) {
		no_memory(origin, err);
		return NULL;
	}
	return sect;
}

static int bad_path(const char *dotted, const char *origin, xf_error *err)
{
	return xf_fail(err, XF_ERR_CONFIG,
		       "'%.80s' is not a config key (must be dotted names like " XF_KEY_DT
		       "), in %s",
		       dotted, origin);
}

/* value "[a, b, ...]" read as YAML: a list of plain values, each node carrying origin
 * (the reader's messages then name the option, as for a single value). */
static int flow_list(const char *dotted, const char *value, const char *origin, xf_ynode **list,
		     xf_error *err)
{
	xf_error perr = { 0 };
	*list = NULL;
	if (xf_yaml_load_string(value, origin, list, &perr) || !*list ||
	    (*list)->kind != XF_YNODE_SEQUENCE) {
		xf_yaml_free(*list);
		*list = NULL;
		if (perr.code == XF_ERR_NOMEM)
			return no_memory(origin, err);
		return xf_fail(err, XF_ERR_CONFIG,
			       "%s: '%.200s' is not a list (must be [V1, V2, ...]), in %s", dotted,
			       value, origin);
	}
	xf_ynode *seq = *list;
	for (size_t i = 0; i < seq->n; i++)
		if (seq->items[i]->kind != XF_YNODE_SCALAR) {
			xf_yaml_free(seq);
			*list = NULL;
			return xf_fail(err, XF_ERR_CONFIG,
				       "%s: '%.200s' holds a list or section as item %zu (must be "
				       "[V1, V2, ...] of single values), in %s",
				       dotted, value, i + 1, origin);
		}
	for (size_t i = 0; i <= seq->n; i++) {
		xf_ynode *node = i < seq->n ? seq->items[i] : seq;
		node->line = node->column = 0; /* not a line of the file */
		free(node->origin);
		node->origin = strdup(origin);
		if (!node->origin) {
			xf_yaml_free(seq);
			*list = NULL;
			return no_memory(origin, err);
		}
	}
	return 0;
}

int xf_yaml_set(xf_ynode **root, const char *dotted, const char *value, const char *origin,
		xf_error *err)
{
	char path[XF_YAML_SET_PATH_MAX];
	size_t len = strlen(dotted);
	if (len == 0 || len >= sizeof path || dotted[0] == '.' || dotted[len - 1] == '.' ||
	    strstr(dotted, "..") || strpbrk(dotted, " \t:[]{}"))
		return bad_path(dotted, origin, err);
	memcpy(path, dotted, len + 1);
	if (!*root || xf_ynode_is_null(*root)) {
		xf_ynode *map = new_node(XF_YNODE_MAPPING, NULL, origin);
		if (!map)
			return no_memory(origin, err);
		xf_yaml_free(*root);
		*root = map;
	}
	if ((*root)->kind != XF_YNODE_MAPPING)
		return xf_fail(err, XF_ERR_CONFIG,
			       "the top level of the config is not a mapping of keys, in %s",
			       origin);
	xf_ynode *map = *root;
	char *key = path;
	for (char *dot = strchr(key, '.'); dot; dot = strchr(key, '.')) {
		*dot = '\0';
		map = section(map, key, path, origin, err);
		if (!map)
			return err->code;
		*dot = '.';
		key = dot + 1;
	}
	long k = index_of(map, key);
	/* a value or a list replaces a value or a list; a section only its keys */
	if (k >= 0 && map->items[k]->kind == XF_YNODE_MAPPING)
		return xf_fail(err, XF_ERR_CONFIG,
			       "%s: the config has %s there, not a single value: set a key "
			       "inside it, in %s",
			       dotted, kind_name(map->items[k]), origin);
	xf_ynode *leaf = NULL;
	if (value[0] == '[') { /* a flow list, "[0.003, 0.008]" (adr/0075) */
		int rc = flow_list(dotted, value, origin, &leaf, err);
		if (rc)
			return rc;
	} else {
		leaf = new_node(XF_YNODE_SCALAR, value, origin);
	}
	if (!leaf)
		return no_memory(origin, err);
	if (k >= 0) {
		leaf->line = map->items[k]->line;
		xf_yaml_free(map->items[k]);
		map->items[k] = leaf;
		return 0;
	}
	return append(map, key, leaf) == 0 ? 0 : no_memory(origin, err);
}

/* The mapping at a dotted section path (created as xf_yaml_set creates sections). */
static xf_ynode *section_path(xf_ynode **root, const char *dotted, const char *origin,
			      xf_error *err)
{
	char path[XF_YAML_SET_PATH_MAX];
	size_t len = strlen(dotted);
	if (len == 0 || len >= sizeof path) {
		bad_path(dotted, origin, err);
		return NULL;
	}
	memcpy(path, dotted, len + 1);
	if (!*root || xf_ynode_is_null(*root)) {
		xf_ynode *map = new_node(XF_YNODE_MAPPING, NULL, origin);
		if (!map) {
			no_memory(origin, err);
			return NULL;
		}
		xf_yaml_free(*root);
		*root = map;
	}
	if ((*root)->kind != XF_YNODE_MAPPING) {
		xf_fail(err, XF_ERR_CONFIG,
			"the top level of the config is not a mapping of keys, in %s", origin);
		return NULL;
	}
	xf_ynode *map = *root;
	char *key = path;
	for (char *end = key; map && end;) {
		end = strchr(key, '.');
		if (end)
			*end = '\0';
		map = section(map, key, dotted, origin, err);
		if (end)
			key = end + 1;
	}
	return map;
}

/* The list under key of map; absent or null: a new empty list. */
static xf_ynode *list_at(xf_ynode *map, const char *key, const char *path, const char *origin,
			 xf_error *err)
{
	long k = index_of(map, key);
	if (k >= 0 && map->items[k]->kind == XF_YNODE_SEQUENCE)
		return map->items[k];
	if (k >= 0 && !xf_ynode_is_null(map->items[k])) {
		xf_fail(err, XF_ERR_CONFIG, "%s.%s: the config has %s there, not a list, in %s",
			path, key, kind_name(map->items[k]), origin);
		return NULL;
	}
	xf_ynode *list = new_node(XF_YNODE_SEQUENCE, NULL, origin);
	if (!list) {
		no_memory(origin, err);
		return NULL;
	}
	if (k >= 0) {
		xf_yaml_free(map->items[k]);
		map->items[k] = list;
	} else if (append(map, key, list) != 0) {
		no_memory(origin, err);
		return NULL;
	}
	return list;
}

/* Append an item to a list; the item is freed on failure. */
static int push(xf_ynode *list, xf_ynode *item)
{
	xf_ynode **items = realloc(list->items, (list->n + 1) * sizeof *items);
	if (!items) {
		xf_yaml_free(item);
		return -1;
	}
	list->items = items;
	list->items[list->n++] = item;
	return 0;
}

int xf_yaml_set_named(xf_ynode **root, const char *dotted, const char *name, const char *value,
		      const char *origin, xf_error *err)
{
	xf_ynode *map = section_path(root, dotted, origin, err);
	xf_ynode *names = map ? list_at(map, "parameter_names", dotted, origin, err) : NULL;
	xf_ynode *values = names ? list_at(map, "values", dotted, origin, err) : NULL;
	if (!values)
		return err->code;
	/* values: null beside names: each name starts at the middle of its bounds */
	while (values->n < names->n) {
		xf_ynode *null = new_node(XF_YNODE_SCALAR, "null", origin);
		if (!null || push(values, null) != 0)
			return no_memory(origin, err);
	}
	xf_ynode *leaf = new_node(XF_YNODE_SCALAR, value, origin);
	if (!leaf)
		return no_memory(origin, err);
	/* the same parameter under another of its names (homodyne's gamma_dot_0 for
	 * gamma_dot_t0) is the same slot, not a second entry */
	int param = xf_param_index(name);
	for (size_t k = 0; k < names->n && k < values->n; k++) {
		if (names->items[k]->kind == XF_YNODE_SCALAR &&
		    (!strcmp(names->items[k]->text, name) ||
		     (param >= 0 && xf_param_index(names->items[k]->text) == param))) {
			leaf->line = values->items[k]->line;
			xf_yaml_free(values->items[k]);
			values->items[k] = leaf;
			return 0;
		}
	}
	xf_ynode *key = new_node(XF_YNODE_SCALAR, name, origin);
	if (!key || push(names, key) != 0) {
		xf_yaml_free(leaf);
		return no_memory(origin, err);
	}
	return push(values, leaf) == 0 ? 0 : no_memory(origin, err);
}

int xf_yaml_add_item(xf_ynode **root, const char *dotted, const char *key, const char *const *keys,
		     const char *const *values, size_t n, int fresh, const char *origin,
		     xf_error *err)
{
	xf_ynode *map = section_path(root, dotted, origin, err);
	xf_ynode *list = map ? list_at(map, key, dotted, origin, err) : NULL;
	if (!list)
		return err->code;
	if (fresh) { /* the first item given replaces the file's list */
		for (size_t k = 0; k < list->n; k++)
			xf_yaml_free(list->items[k]);
		list->n = 0;
	}
	xf_ynode *item = new_node(XF_YNODE_MAPPING, NULL, origin);
	if (!item)
		return no_memory(origin, err);
	for (size_t k = 0; k < n; k++) {
		xf_ynode *leaf = new_node(XF_YNODE_SCALAR, values[k], origin);
		if (!leaf || append(item, keys[k], leaf) != 0) {
			xf_yaml_free(item);
			return no_memory(origin, err);
		}
	}
	return push(list, item) == 0 ? 0 : no_memory(origin, err);
}

int xf_ynode_overridden(const xf_ynode *node, const char **origin)
{
	if (!node)
		return 0;
	if (node->origin) {
		*origin = node->origin;
		return 1;
	}
	for (size_t k = 0; k < node->n; k++)
		if (xf_ynode_overridden(node->items[k], origin))
			return 1;
	return 0;
}
