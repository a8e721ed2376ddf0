/* yaml_build.h — the step of yaml_tree.c's loaders that turns libyaml's event stream into
 * the xf_ynode tree: one document, aliases expanded, merge keys applied. Internal to
 * src/config/ (yaml_build.c). */
#ifndef XF_CONFIG_YAML_BUILD_H
#define XF_CONFIG_YAML_BUILD_H

#include <yaml.h>

#include "config/yaml_tree.h"

/* Deeper nesting than this is not a config (docs/config.md "Limits"). */
#define XF_YAML_MAX_DEPTH 64
/* Nodes made, aliases and merge keys expanded by copying: a "billion laughs" file or a
 * million-item list fails fast at this cap instead of filling memory. */
#define XF_YAML_MAX_NODES 1000000

/* Read the parser's events to the end of the stream into *root (NULL for a stream with
 * no document). Refused with XF_ERR_CONFIG naming name:line: a second document with
 * content, an alias with no anchor before it, a malformed merge key, a mapping key that
 * is not a scalar, a repeated key or anchor, nesting or node counts above the caps;
 * libyaml's own errors as its problem and place. On failure *root is NULL. */
int xf_yaml_build(yaml_parser_t *parser, const char *name, xf_ynode **root, xf_error *err);

#endif
