/* yaml_tree.c — loads a YAML file with libyaml's document API and copies it into the
 * xf_ynode tree of yaml_tree.h. Why a copy: the reader wants plain C arrays with line
 * numbers, duplicate mapping keys rejected once here, and aliases already expanded. */
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
#include "util/size.h"

/* Deeper nesting than this is not a config; it also stops alias expansion loops. */
#define XF_YAML_MAX_DEPTH 64
/* Aliases are expanded by copying: cap the copies so a "billion laughs" file fails fast. */
#define XF_YAML_MAX_NODES 1000000
/* A config is a few KB; a file above this is not one (and libyaml would hold it all). */
#define XF_YAML_MAX_BYTES ((size_t)64 << 20)

/* What every copy step needs: the libyaml document, the name for messages, the error
 * and the node budget left. */
typedef struct copy_ctx {
	yaml_document_t *doc;
	const char *name;
	xf_error *err;
	size_t nodes_left;
} copy_ctx;

static char *dup_bytes(const unsigned char *s, size_t len)
{
	char *p = malloc(len + 1);
	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

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

static int copy_node(copy_ctx *c, yaml_node_t *src, int depth, xf_ynode **out);

static int out_of_memory(copy_ctx *c)
{
	return xf_fail(c->err, XF_ERR_NOMEM, "out of memory reading %s", c->name);
}

/* A NUL inside a scalar ("base.h5\0" in a double-quoted string) would cut the C string
 * short: the path read would be another than the one written. Refused in every key and
 * value. */
static int refuse_nul(copy_ctx *c, const yaml_node_t *src)
{
	if (!memchr(src->data.scalar.value, '\0', src->data.scalar.length))
		return 0;
	return xf_fail(c->err, XF_ERR_CONFIG,
		       "a NUL character (\\0) inside a string is not allowed, in %s:%d", c->name,
		       (int)src->start_mark.line + 1);
}

static int copy_scalar(copy_ctx *c, yaml_node_t *src, xf_ynode *dst)
{
	dst->kind = XF_YNODE_SCALAR;
	if (refuse_nul(c, src))
		return c->err->code;
	dst->plain = src->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
		     src->data.scalar.style == YAML_ANY_SCALAR_STYLE;
	dst->text = dup_bytes(src->data.scalar.value, src->data.scalar.length);
	return dst->text ? 0 : out_of_memory(c);
}

static int copy_sequence(copy_ctx *c, yaml_node_t *src, int depth, xf_ynode *dst)
{
	yaml_node_item_t *first = src->data.sequence.items.start;
	size_t n = (size_t)(src->data.sequence.items.top - first);
	dst->kind = XF_YNODE_SEQUENCE;
	if (n == 0)
		return 0;
	dst->items = xf_calloc_array(n, sizeof *dst->items);
	if (!dst->items)
		return out_of_memory(c);
	for (size_t k = 0; k < n; k++) {
		/* n counts the filled slots so that a failure below frees only those */
		dst->n = k + 1;
		int rc = copy_node(c, yaml_document_get_node(c->doc, first[k]), depth + 1,
				   &dst->items[k]);
		if (rc)
			return rc;
	}
	return 0;
}

/* A key and where it was written, for the duplicate check. */
typedef struct key_at {
	const char *key;
	size_t index;
} key_at;

static int by_key_then_index(const void *a, const void *b)
{
	const key_at *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* A key written twice: sort the keys (O(n log n); 100 000 keys took 14 s with the
 * pairwise check) and report the repeat written first, naming both lines. */
static int check_duplicate_keys(copy_ctx *c, const xf_ynode *map)
{
	key_at *order = xf_malloc_array(map->n, sizeof *order);
	if (!order)
		return out_of_memory(c);
	for (size_t k = 0; k < map->n; k++)
		order[k] = (key_at){ map->keys[k], k };
	qsort(order, map->n, sizeof *order, by_key_then_index);
	size_t first = 0, repeat = map->n; /* the earliest second occurrence */
	for (size_t k = 1; k < map->n; k++)
		if (strcmp(order[k].key, order[k - 1].key) == 0 && order[k].index < repeat) {
			repeat = order[k].index;
			first = order[k - 1].index;
		}
	free(order);
	if (repeat == map->n)
		return 0;
	return xf_fail(c->err, XF_ERR_CONFIG,
		       "duplicated key '%s' (first written at line %d), in %s:%d",
		       map->keys[repeat], map->key_lines[first], c->name, map->key_lines[repeat]);
}

static int copy_mapping(copy_ctx *c, yaml_node_t *src, int depth, xf_ynode *dst)
{
	yaml_node_pair_t *first = src->data.mapping.pairs.start;
	size_t n = (size_t)(src->data.mapping.pairs.top - first);
	dst->kind = XF_YNODE_MAPPING;
	if (n == 0)
		return 0;
	dst->items = xf_calloc_array(n, sizeof *dst->items);
	dst->keys = xf_calloc_array(n, sizeof *dst->keys);
	dst->key_lines = xf_calloc_array(n, sizeof *dst->key_lines);
	if (!dst->items || !dst->keys || !dst->key_lines)
		return out_of_memory(c);
	/* keys first, so that a repeated key is reported before anything in the values */
	for (size_t k = 0; k < n; k++) {
		yaml_node_t *key = yaml_document_get_node(c->doc, first[k].key);
		int line = key ? (int)key->start_mark.line + 1 : 0;
		if (!key || key->type != YAML_SCALAR_NODE)
			return xf_fail(c->err, XF_ERR_CONFIG,
				       "a mapping key that is not a "
				       "plain name is not supported, in %s:%d",
				       c->name, line);
		if (refuse_nul(c, key))
			return c->err->code;
		char *text = dup_bytes(key->data.scalar.value, key->data.scalar.length);
		if (!text)
			return out_of_memory(c);
		dst->n = k + 1;
		dst->keys[k] = text;
		dst->key_lines[k] = line;
	}
	int rc = check_duplicate_keys(c, dst);
	for (size_t k = 0; k < n && !rc; k++)
		rc = copy_node(c, yaml_document_get_node(c->doc, first[k].value), depth + 1,
			       &dst->items[k]);
	return rc;
}

static int copy_node(copy_ctx *c, yaml_node_t *src, int depth, xf_ynode **out)
{
	*out = NULL;
	if (!src)
		return xf_fail(c->err, XF_ERR_CONFIG, "malformed YAML document, in %s", c->name);
	if (depth > XF_YAML_MAX_DEPTH)
		return xf_fail(c->err, XF_ERR_CONFIG,
			       "YAML nested deeper than %d levels, "
			       "in %s:%d",
			       XF_YAML_MAX_DEPTH, c->name, (int)src->start_mark.line + 1);
	if (c->nodes_left == 0)
		return xf_fail(c->err, XF_ERR_CONFIG,
			       "YAML aliases expand to more than %d "
			       "nodes, in %s:%d",
			       XF_YAML_MAX_NODES, c->name, (int)src->start_mark.line + 1);
	c->nodes_left--;
	xf_ynode *dst = calloc(1, sizeof *dst);
	if (!dst)
		return out_of_memory(c);
	*out = dst;
	dst->line = (int)src->start_mark.line + 1;
	dst->column = (int)src->start_mark.column + 1;
	switch (src->type) {
	case YAML_SCALAR_NODE: return copy_scalar(c, src, dst);
	case YAML_SEQUENCE_NODE: return copy_sequence(c, src, depth, dst);
	case YAML_MAPPING_NODE: return copy_mapping(c, src, depth, dst);
	default:
		return xf_fail(c->err, XF_ERR_CONFIG, "malformed YAML node, in %s:%d", c->name,
			       dst->line);
	}
}

static int parser_error(const yaml_parser_t *parser, const char *name, xf_error *err)
{
	const char *problem = parser->problem ? parser->problem : "unknown problem";
	if (parser->error == YAML_MEMORY_ERROR)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", name);
	if (parser->error == YAML_READER_ERROR)
		return xf_fail(err, XF_ERR_CONFIG, "invalid YAML: %s (byte offset %zu), in %s",
			       problem, parser->problem_offset, name);
	if (parser->context) {
		/* libyaml's contexts read "while parsing a ..."; keep the "parsing a ..." */
		const char *ctx = parser->context;
		if (strncmp(ctx, "while ", 6) == 0)
			ctx += 6;
		return xf_fail(err, XF_ERR_CONFIG,
			       "invalid YAML: %s (%s started at line "
			       "%d), in %s:%d:%d",
			       problem, ctx, (int)parser->context_mark.line + 1, name,
			       (int)parser->problem_mark.line + 1,
			       (int)parser->problem_mark.column + 1);
	}
	return xf_fail(err, XF_ERR_CONFIG, "invalid YAML: %s, in %s:%d:%d", problem, name,
		       (int)parser->problem_mark.line + 1, (int)parser->problem_mark.column + 1);
}

/* Shared tail of both loaders: the parser already has its input. */
static int load_with_parser(yaml_parser_t *parser, const char *name, xf_ynode **root, xf_error *err)
{
	yaml_document_t doc;
	*root = NULL;
	if (!yaml_parser_load(parser, &doc))
		return parser_error(parser, name, err);
	int rc = 0;
	yaml_node_t *top = yaml_document_get_root_node(&doc);
	if (top) {
		copy_ctx c = { &doc, name, err, XF_YAML_MAX_NODES };
		rc = copy_node(&c, top, 0, root);
	}
	yaml_document_delete(&doc);
	if (rc) {
		xf_yaml_free(*root);
		*root = NULL;
	}
	return rc;
}

int xf_yaml_load_file(const char *path, xf_ynode **root, xf_error *err)
{
	*root = NULL;
	/* a FIFO would block the read, /dev/zero never end, and a folder or a device is no
	 * config: the one rule for files read by name (util/files.h) */
	int fd = xf_open_input_file(path, "config file", XF_YAML_MAX_BYTES, XF_ERR_CONFIG, err);
	if (fd < 0)
		return err->code;
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		int e = errno;
		close(fd);
		return xf_fail(err, XF_ERR_CONFIG, "cannot open config file: %s, %s", strerror(e),
			       path);
	}
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser)) {
		fclose(f);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
	}
	yaml_parser_set_input_file(&parser, f);
	int rc = load_with_parser(&parser, path, root, err);
	yaml_parser_delete(&parser);
	if (ferror(f) && rc == 0) {
		xf_yaml_free(*root);
		*root = NULL;
		rc = xf_fail(err, XF_ERR_CONFIG, "read error, in %s", path);
	}
	fclose(f);
	return rc;
}

int xf_yaml_load_string(const char *text, const char *name, xf_ynode **root, xf_error *err)
{
	*root = NULL;
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", name);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	int rc = load_with_parser(&parser, name, root, err);
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
