/* yaml_tree.c — reads a config file's bytes (or takes a string) and builds the xf_ynode
 * tree of yaml_tree.h from them (from libyaml's parser events, by yaml_build.c), plus the
 * tree's accessors. Why a tree of our own: the reader wants plain C arrays with line
 * numbers, duplicate mapping keys rejected once, and aliases and merge keys applied. */
#include "config/yaml_tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>
#include "util/files.h"

#include "config/yaml_build.h"

/* A config is a few KB; a file above this is not one (and libyaml would hold it all). */
#define XF_YAML_MAX_BYTES ((size_t)64 << 20)

void xf_yaml_free(xf_ynode *node)
{
	if (!node)
		return;
	free(node->text);
	free(node->origin);
	for (size_t k = 0; k < node->n; k++) {
		xf_yaml_free(node->items[k]);
		if (node->keys)
			free(node->keys[k]);
	}
	free(node->items);
	free(node->keys);
	free(node->key_lines);
	free(node);
}

int xf_yaml_load_file(const char *path, xf_ynode **root, xf_error *err)
{
	size_t len = 0;
	char *text = xf_yaml_read_file(path, &len, err);
	if (!text) {
		*root = NULL;
		return err->code;
	}
	int rc = xf_yaml_load_string(text, path, root, err);
	free(text);
	return rc;
}

char *xf_yaml_read_file(const char *path, size_t *len, xf_error *err)
{
	/* a FIFO would block the read, /dev/zero never end, and a folder or a device is no
	 * config: the one rule for files read by name (util/files.h); a NUL byte is refused
	 * with its line (YAML is text) */
	return xf_read_text_file(path, "config file", XF_YAML_MAX_BYTES, XF_ERR_CONFIG, len, err);
}

int xf_yaml_load_string(const char *text, const char *name, xf_ynode **root, xf_error *err)
{
	*root = NULL;
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", name);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	int rc = xf_yaml_build(&parser, name, root, err);
	yaml_parser_delete(&parser);
	return rc;
}

void xf_ynode_mark_used(const xf_ynode *node)
{
	if (node)
		((xf_ynode *)node)->used = 1;
}

const xf_ynode *xf_ynode_get(const xf_ynode *map, const char *key)
{
	if (!map || map->kind != XF_YNODE_MAPPING)
		return NULL;
	for (size_t k = 0; k < map->n; k++)
		if (strcmp(map->keys[k], key) == 0)
			return map->items[k];
	return NULL;
}

int xf_ynode_key_line(const xf_ynode *map, const char *key)
{
	if (!map || map->kind != XF_YNODE_MAPPING)
		return 0;
	for (size_t k = 0; k < map->n; k++)
		if (strcmp(map->keys[k], key) == 0)
			return map->key_lines[k];
	return 0;
}

int xf_ynode_is_null(const xf_ynode *node)
{
	if (!node || node->kind != XF_YNODE_SCALAR || !node->plain)
		return 0;
	return node->text[0] == '\0' || strcmp(node->text, "~") == 0 ||
	       strcmp(node->text, "null") == 0 || strcmp(node->text, "Null") == 0 ||
	       strcmp(node->text, "NULL") == 0;
}
