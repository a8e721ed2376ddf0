/* yaml_tree.h — a YAML document loaded by libyaml into a small read-only node tree
 * (scalars, sequences, mappings) that remembers where each node was written, so the
 * config reader can name file:line in its messages. Internal to src/config/. */
#ifndef XF_CONFIG_YAML_TREE_H
#define XF_CONFIG_YAML_TREE_H

#include <stddef.h>

#include "xpcsfit/error.h"

typedef enum xf_ynode_kind {
	XF_YNODE_SCALAR = 0,
	XF_YNODE_SEQUENCE,
	XF_YNODE_MAPPING,
} xf_ynode_kind;

typedef struct xf_ynode xf_ynode;

struct xf_ynode {
	xf_ynode_kind kind;
	int line;   /* 1-based line of the node's first character */
	int column; /* 1-based column */
	/* scalar */
	char *text; /* the scalar's value, NUL-terminated ("" for an empty value) */
	int plain;  /* 1 for an unquoted scalar: only those can be null/bool */
	/* sequence items, or mapping values (keys[] beside them) */
	size_t n;
	xf_ynode **items;
	char **keys;	/* mapping keys (scalar keys only), NULL for sequences */
	int *key_lines; /* line of each mapping key */
	/* where a node set by xf_yaml_set() came from ("o.csv:3, column dt"), for messages;
	 * NULL for the nodes of the file (line and column say where they are) */
	char *origin;
	/* 1 once a config reader has used this value (xf_ynode_mark_used); the key
	 * accounting (config_keys.c) lists the keys whose values stay unmarked */
	int used;
};

/* Parse a whole file: one document (a second one with content is refused), aliases
 * expanded and merge keys (<<) applied (yaml_build.c, adr/0049). On failure returns
 * XF_ERR_CONFIG with err set: a missing/unreadable file names the path; bad YAML gives
 * libyaml's problem and the line:column. An empty file gives *root = NULL and returns 0. */
int xf_yaml_load_file(const char *path, xf_ynode **root, xf_error *err);
/* Same from a string (a config read once, tests); name is used in messages. */
int xf_yaml_load_string(const char *text, const char *name, xf_ynode **root, xf_error *err);
/* The bytes of the config file at path, NUL-terminated and malloc'ed (*len their count),
 * as xf_yaml_load_file reads them: a regular file of at most 64 MiB holding no NUL byte.
 * NULL with err set (XF_ERR_CONFIG, or XF_ERR_NOMEM). */
char *xf_yaml_read_file(const char *path, size_t *len, xf_error *err);
void xf_yaml_free(xf_ynode *node);

/* Set the scalar at a dotted key path (XF_KEY_DT's, say) to value, as if the
 * file had said so: missing sections are created (an empty one becomes a mapping), an
 * existing scalar is replaced. The new nodes carry origin (copied) for messages and for
 * the unknown-key check. A part of the path that is a scalar or a list, a target that is
 * a section or a list, or a malformed path: XF_ERR_CONFIG naming origin. *root may be
 * NULL (an empty file): a mapping is made. Returns 0 or the error code (yaml_set.c). */
int xf_yaml_set(xf_ynode **root, const char *dotted, const char *value, const char *origin,
		xf_error *err);
/* Set the start value of name in the section at dotted (initial_parameters): its entry
 * of values beside parameter_names, replaced, or name and value appended to the two
 * lists (made when absent; values: null becomes one null per name). Returns 0 or the
 * error code, as xf_yaml_set. */
int xf_yaml_set_named(xf_ynode **root, const char *dotted, const char *name, const char *value,
		      const char *origin, xf_error *err);
/* Append a mapping {keys[i]: values[i]} to the list key of the section at dotted
 * (phi_filtering target_ranges); fresh: the list's items are dropped first. */
int xf_yaml_add_item(xf_ynode **root, const char *dotted, const char *key, const char *const *keys,
		     const char *const *values, size_t n, int fresh, const char *origin,
		     xf_error *err);
/* 1 when node or anything under it was set by xf_yaml_set(); *origin: the first origin. */
int xf_ynode_overridden(const xf_ynode *node, const char **origin);

/* Record that a reader used node (NULL: nothing). The tree is read through const
 * pointers; the mark is bookkeeping beside the content, which stays unchanged. */
void xf_ynode_mark_used(const xf_ynode *node);

/* Value of key in a mapping, or NULL (also NULL when map is not a mapping). */
const xf_ynode *xf_ynode_get(const xf_ynode *map, const char *key);
/* Line where key was written in map (0 when absent). */
int xf_ynode_key_line(const xf_ynode *map, const char *key);
/* 1 for a plain scalar that YAML 1.1 reads as null: "", "~", "null", "Null", "NULL". */
int xf_ynode_is_null(const xf_ynode *node);

#endif
