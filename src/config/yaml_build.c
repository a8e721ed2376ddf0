/* yaml_build.c — builds the xf_ynode tree of yaml_tree.h from libyaml's event stream.
 * Why events and not libyaml's document API: its loader looks every anchor and alias up
 * in a list, so 50 000 anchors took 18 s and 100 000 up to 81 s; here anchors are hashed
 * and the load is linear in the nodes made (capped, docs/config.md "Limits"). Reading the
 * events also lets the builder refuse a second document instead of ignoring it, and
 * apply YAML 1.1 merge keys (<<) as PyYAML does, so merged keys are read and checked like
 * written ones (adr/0049). */
#include "config/yaml_build.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/size.h"

/* ---- a table from names to nodes (open addressing), for anchors and merged keys ---- */

typedef struct name_slot {
	const char *name; /* NULL: an empty slot */
	xf_ynode *node;
	int line;
} name_slot;

typedef struct name_table {
	name_slot *slots;
	size_t cap, n; /* cap: a power of two, at least twice n */
} name_table;

static size_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

static name_slot *table_slot(const name_table *t, const char *name)
{
	size_t k = name_hash(name) & (t->cap - 1);
	while (t->slots[k].name && strcmp(t->slots[k].name, name) != 0)
		k = (k + 1) & (t->cap - 1);
	return &t->slots[k];
}

/* The entry of name, or NULL. */
static name_slot *table_find(const name_table *t, const char *name)
{
	if (t->cap == 0)
		return NULL;
	name_slot *s = table_slot(t, name);
	return s->name ? s : NULL;
}

static int table_grow(name_table *t)
{
	size_t cap = t->cap ? 2 * t->cap : 64;
	name_slot *old = t->slots, *slots = xf_calloc_array(cap, sizeof *slots);
	if (!slots)
		return -1;
	size_t old_cap = t->cap;
	t->slots = slots;
	t->cap = cap;
	for (size_t k = 0; k < old_cap; k++)
		if (old[k].name)
			*table_slot(t, old[k].name) = old[k];
	free(old);
	return 0;
}

/* The slot for name: the existing entry, or a new one holding name (borrowed: the caller
 * keeps it alive as long as the table). NULL when memory is short. */
static name_slot *table_put(name_table *t, const char *name)
{
	if (2 * (t->n + 1) > t->cap && table_grow(t))
		return NULL;
	name_slot *s = table_slot(t, name);
	if (!s->name) {
		s->name = name;
		t->n++;
	}
	return s;
}

/* ---- the builder ---- */

/* A sequence or mapping being filled; its parent is the frame below. */
typedef struct frame {
	xf_ynode *node;
	size_t cap;	  /* slots allocated in node's arrays */
	char *anchor;	  /* registered once the node is complete */
	char *key;	  /* mapping: the key read, waiting for its value */
	int key_line;	  /* and where it was written */
	int key_is_merge; /* the key is the merge key << (plain) */
	xf_ynode *merge;  /* mapping: the value of its merge key */
	int merge_line;
} frame;

typedef struct builder {
	yaml_parser_t *parser;
	const char *name; /* the file, for messages */
	xf_error *err;
	size_t nodes_left;
	int expanded; /* an alias or merge was copied: the cap's message says so */
	frame stack[XF_YAML_MAX_DEPTH + 1];
	int depth; /* frames in use; a new node's nesting level */
	name_table anchors;
	char **anchor_names; /* the anchors' names, owned here */
	size_t n_anchor_names, cap_anchor_names;
	xf_ynode **kept; /* nodes out of the tree an anchor may name (merge values) */
	size_t n_kept, cap_kept;
	xf_ynode *root;
	int documents;
} builder;

static int out_of_memory(builder *b)
{
	return xf_fail(b->err, XF_ERR_NOMEM, "out of memory reading %s", b->name);
}

/* Append p to a growing array of pointers. */
static int push_pointer(void ***items, size_t *n, size_t *cap, void *p)
{
	if (*n == *cap) {
		size_t grown = *cap ? 2 * *cap : 16;
		void **more = realloc(*items, grown * sizeof *more);
		if (!more)
			return -1;
		*items = more;
		*cap = grown;
	}
	(*items)[(*n)++] = p;
	return 0;
}

static int keep_node(builder *b, xf_ynode *node)
{
	if (push_pointer((void ***)&b->kept, &b->n_kept, &b->cap_kept, node)) {
		xf_yaml_free(node);
		return out_of_memory(b);
	}
	return 0;
}

static char *dup_bytes(const unsigned char *s, size_t len)
{
	char *p = malloc(len + 1);
	if (!p)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* A fresh node of kind at line:column, counted against the node cap. */
static int new_node(builder *b, xf_ynode_kind kind, int line, int column, int depth, xf_ynode **out)
{
	*out = NULL;
	if (depth > XF_YAML_MAX_DEPTH)
		return xf_fail(b->err, XF_ERR_CONFIG, "YAML nested deeper than %d levels, in %s:%d",
			       XF_YAML_MAX_DEPTH, b->name, line);
	if (b->nodes_left == 0) {
		if (b->expanded)
			return xf_fail(b->err, XF_ERR_CONFIG,
				       "YAML aliases expand to more than %d nodes, in %s:%d",
				       XF_YAML_MAX_NODES, b->name, line);
		return xf_fail(b->err, XF_ERR_CONFIG, "YAML has more than %d nodes, in %s:%d",
			       XF_YAML_MAX_NODES, b->name, line);
	}
	b->nodes_left--;
	xf_ynode *n = calloc(1, sizeof *n);
	if (!n)
		return out_of_memory(b);
	n->kind = kind;
	n->line = line;
	n->column = column;
	*out = n;
	return 0;
}

/* Room for one more item (and key) in f's node. */
static int reserve_item(builder *b, xf_ynode *node, size_t *cap)
{
	if (node->n < *cap)
		return 0;
	size_t grown = *cap ? 2 * *cap : 8;
	xf_ynode **items = realloc(node->items, grown * sizeof *items);
	if (!items)
		return out_of_memory(b);
	node->items = items;
	if (node->kind == XF_YNODE_MAPPING) {
		char **keys = realloc(node->keys, grown * sizeof *keys);
		if (keys)
			node->keys = keys;
		int *lines = keys ? realloc(node->key_lines, grown * sizeof *lines) : NULL;
		if (!lines)
			return out_of_memory(b);
		node->key_lines = lines;
	}
	*cap = grown;
	return 0;
}

/* Append value (and key, taken over, for a mapping) to node. On failure both are freed. */
static int append_item(builder *b, xf_ynode *node, size_t *cap, char *key, int key_line,
		       xf_ynode *value)
{
	if (reserve_item(b, node, cap)) {
		free(key);
		xf_yaml_free(value);
		return b->err->code;
	}
	if (node->kind == XF_YNODE_MAPPING) {
		node->keys[node->n] = key;
		node->key_lines[node->n] = key_line;
	}
	node->items[node->n++] = value;
	return 0;
}

/* A copy of src (an alias's node, a merged value) placed at nesting level depth; line:
 * where the alias or merge key was written, for the caps' messages. */
static int copy_tree(builder *b, const xf_ynode *src, int depth, int line, xf_ynode **out)
{
	int rc = new_node(b, src->kind, line, src->column, depth, out);
	if (rc)
		return rc;
	xf_ynode *dst = *out;
	dst->line = src->line;
	dst->plain = src->plain;
	if (src->kind == XF_YNODE_SCALAR) {
		dst->text = strdup(src->text);
		return dst->text ? 0 : out_of_memory(b);
	}
	size_t cap = 0;
	for (size_t k = 0; k < src->n; k++) {
		char *key = NULL;
		xf_ynode *item = NULL;
		if (src->keys && !(key = strdup(src->keys[k])))
			return out_of_memory(b);
		if ((rc = copy_tree(b, src->items[k], depth + 1, line, &item))) {
			free(key);
			xf_yaml_free(item);
			return rc;
		}
		if ((rc = append_item(b, dst, &cap, key, src->keys ? src->key_lines[k] : 0, item)))
			return rc;
	}
	return 0;
}

/* Remember anchor (taken over; NULL: none) as naming node. An anchor written twice is
 * refused, as PyYAML does: which of the two an alias meant is a guess. */
static int register_anchor(builder *b, char *anchor, xf_ynode *node, int line)
{
	if (!anchor)
		return 0;
	if (push_pointer((void ***)&b->anchor_names, &b->n_anchor_names, &b->cap_anchor_names,
			 anchor)) {
		free(anchor);
		return out_of_memory(b);
	}
	name_slot *s = table_put(&b->anchors, anchor);
	if (!s)
		return out_of_memory(b);
	if (s->node)
		return xf_fail(b->err, XF_ERR_CONFIG,
			       "duplicated anchor '&%s' (first written at line %d), in %s:%d",
			       anchor, s->line, b->name, line);
	s->node = node;
	s->line = line;
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
static int check_duplicate_keys(builder *b, const xf_ynode *map)
{
	if (map->n < 2)
		return 0;
	key_at *order = xf_malloc_array(map->n, sizeof *order);
	if (!order)
		return out_of_memory(b);
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
	return xf_fail(b->err, XF_ERR_CONFIG,
		       "duplicated key '%s' (first written at line %d), in %s:%d",
		       map->keys[repeat], map->key_lines[first], b->name, map->key_lines[repeat]);
}

static int bad_merge(builder *b, int line)
{
	return xf_fail(b->err, XF_ERR_CONFIG,
		       "the merge key '<<' takes a mapping or a list of mappings "
		       "(<<: *name or <<: [*a, *b]), in %s:%d",
		       b->name, line);
}

/* Merge the keys of src that map lacks (YAML 1.1 merge: written keys win, and of the
 * merged maps the earlier in the list wins; seen holds the keys map has so far). */
static int merge_from(builder *b, frame *f, const xf_ynode *src, name_table *seen, int depth)
{
	xf_ynode *map = f->node;
	for (size_t k = 0; k < src->n; k++) {
		if (table_find(seen, src->keys[k]))
			continue;
		char *key = strdup(src->keys[k]);
		xf_ynode *value = NULL;
		int rc = key ? copy_tree(b, src->items[k], depth + 1, f->merge_line, &value)
			     : out_of_memory(b);
		if (rc) {
			free(key);
			xf_yaml_free(value);
			return rc;
		}
		if ((rc = append_item(b, map, &f->cap, key, src->key_lines[k], value)))
			return rc;
		if (!table_put(seen, map->keys[map->n - 1]))
			return out_of_memory(b);
	}
	return 0;
}

/* Apply the merge key of the mapping in f, at nesting level depth. */
static int apply_merge(builder *b, frame *f, int depth)
{
	const xf_ynode *m = f->merge;
	size_t n_src = m->kind == XF_YNODE_SEQUENCE ? m->n : 1;
	const xf_ynode *const *src =
		m->kind == XF_YNODE_SEQUENCE ? (const xf_ynode *const *)m->items : &m;
	if (m->kind == XF_YNODE_SCALAR)
		return bad_merge(b, f->merge_line);
	for (size_t s = 0; s < n_src; s++)
		if (src[s]->kind != XF_YNODE_MAPPING)
			return bad_merge(b, f->merge_line);
	name_table seen = { 0 };
	int rc = 0;
	for (size_t k = 0; k < f->node->n && !rc; k++)
		if (!table_put(&seen, f->node->keys[k]))
			rc = out_of_memory(b);
	b->expanded = 1;
	for (size_t s = 0; s < n_src && !rc; s++)
		rc = merge_from(b, f, src[s], &seen, depth);
	free(seen.slots);
	return rc;
}

/* Hand a complete node to where it belongs: the root, the sequence, or the mapping's
 * pending key (the merge value when that key is <<). */
static int attach(builder *b, xf_ynode *node)
{
	if (b->depth == 0) {
		b->root = node;
		return 0;
	}
	frame *f = &b->stack[b->depth - 1];
	if (f->node->kind == XF_YNODE_SEQUENCE)
		return append_item(b, f->node, &f->cap, NULL, 0, node);
	char *key = f->key;
	f->key = NULL;
	if (!f->key_is_merge)
		return append_item(b, f->node, &f->cap, key, f->key_line, node);
	free(key);
	if (f->merge) {
		int rc = xf_fail(b->err, XF_ERR_CONFIG,
				 "duplicated key '<<' (first written at line %d), in %s:%d",
				 f->merge_line, b->name, f->key_line);
		xf_yaml_free(node);
		return rc;
	}
	f->merge = node;
	f->merge_line = f->key_line;
	return 0;
}

static int awaiting_key(const builder *b)
{
	const frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;
	return f && f->node->kind == XF_YNODE_MAPPING && !f->key;
}

static char *event_anchor(const yaml_char_t *anchor, int *oom)
{
	char *a = anchor ? strdup((const char *)anchor) : NULL;
	*oom = anchor && !a;
	return a;
}

static int not_a_name(builder *b, int line)
{
	return xf_fail(b->err, XF_ERR_CONFIG,
		       "a mapping key that is not a plain name is not supported, in %s:%d", b->name,
		       line);
}

/* The mapping's next key: text (copied), written at line. may_merge: the key was written
 * plain with no tag but !!merge, the only << that YAML 1.1 resolves as the merge key
 * ("<<" quoted or !!str << is an ordinary key). */
static int take_key(builder *b, const char *text, size_t len, int may_merge, int line)
{
	frame *f = &b->stack[b->depth - 1];
	if (!(f->key = dup_bytes((const unsigned char *)text, len)))
		return out_of_memory(b);
	f->key_line = line;
	f->key_is_merge = may_merge && strcmp(f->key, "<<") == 0;
	return 0;
}

/* A NUL inside a scalar ("base.h5\0" in a double-quoted string) would cut the C string
 * short: the path read would be another than the one written. Refused in every key and
 * value. */
static int refuse_nul(builder *b, const yaml_char_t *value, size_t len, int line)
{
	if (!memchr(value, '\0', len))
		return 0;
	return xf_fail(b->err, XF_ERR_CONFIG,
		       "a NUL character (\\0) inside a string is not allowed, in %s:%d", b->name,
		       line);
}

static int on_scalar(builder *b, const yaml_event_t *ev)
{
	int line = (int)ev->start_mark.line + 1, oom;
	const yaml_char_t *value = ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	if (refuse_nul(b, value, len, line))
		return b->err->code;
	int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
		    ev->data.scalar.style == YAML_ANY_SCALAR_STYLE;
	const char *tag = (const char *)ev->data.scalar.tag;
	int may_merge = plain && (!tag || strcmp(tag, "tag:yaml.org,2002:merge") == 0);
	xf_ynode *node = NULL;
	char *anchor = event_anchor(ev->data.scalar.anchor, &oom);
	int key = awaiting_key(b);
	if (oom)
		return out_of_memory(b);
	if (key && !anchor)
		return take_key(b, (const char *)value, len, may_merge, line);
	int rc =
		new_node(b, XF_YNODE_SCALAR, line, (int)ev->start_mark.column + 1, b->depth, &node);
	if (!rc && !(node->text = dup_bytes(value, len)))
		rc = out_of_memory(b);
	if (rc) {
		free(anchor);
		xf_yaml_free(node);
		return rc;
	}
	node->plain = plain;
	if ((rc = register_anchor(b, anchor, node, line))) {
		xf_yaml_free(node);
		return rc;
	}
	if (!key)
		return attach(b, node);
	/* an anchored key: the anchor names a scalar kept beside the tree */
	rc = take_key(b, node->text, len, may_merge, line);
	return keep_node(b, node) ? b->err->code : rc;
}

/* An alias: a copy of the node its anchor names (or, as a key, that node's text). */
static int on_alias(builder *b, const yaml_event_t *ev)
{
	int line = (int)ev->start_mark.line + 1;
	const char *name = (const char *)ev->data.alias.anchor;
	const name_slot *s = table_find(&b->anchors, name);
	if (!s) {
		for (int k = 0; k < b->depth; k++)
			if (b->stack[k].anchor && strcmp(b->stack[k].anchor, name) == 0)
				return xf_fail(b->err, XF_ERR_CONFIG,
					       "alias '*%s' lies inside the node it names "
					       "(a recursive alias), in %s:%d",
					       name, b->name, line);
		return xf_fail(b->err, XF_ERR_CONFIG,
			       "alias '*%s' has no anchor '&%s' written before it, in %s:%d", name,
			       name, b->name, line);
	}
	if (awaiting_key(b)) {
		if (s->node->kind != XF_YNODE_SCALAR)
			return not_a_name(b, line);
		return take_key(b, s->node->text, strlen(s->node->text), s->node->plain, line);
	}
	xf_ynode *copy = NULL;
	b->expanded = 1;
	int rc = copy_tree(b, s->node, b->depth, line, &copy);
	if (rc) {
		xf_yaml_free(copy);
		return rc;
	}
	return attach(b, copy);
}

static int on_start(builder *b, const yaml_event_t *ev, xf_ynode_kind kind)
{
	int line = (int)ev->start_mark.line + 1, oom;
	if (awaiting_key(b))
		return not_a_name(b, line);
	const yaml_char_t *a = kind == XF_YNODE_MAPPING ? ev->data.mapping_start.anchor
							: ev->data.sequence_start.anchor;
	xf_ynode *node = NULL;
	int rc = new_node(b, kind, line, (int)ev->start_mark.column + 1, b->depth, &node);
	if (rc)
		return rc;
	frame *f = &b->stack[b->depth];
	*f = (frame){ .node = node, .anchor = event_anchor(a, &oom) };
	b->depth++; /* from here on the frame owns node: freed with the stack on failure */
	return oom ? out_of_memory(b) : 0;
}

static int on_end(builder *b)
{
	frame *f = &b->stack[b->depth - 1];
	int rc = 0;
	if (f->node->kind == XF_YNODE_MAPPING) {
		rc = check_duplicate_keys(b, f->node);
		if (!rc && f->merge)
			rc = apply_merge(b, f, b->depth - 1);
		if (f->merge) {
			/* an anchor may name the merge value: kept until the load ends */
			int kept = keep_node(b, f->merge);
			f->merge = NULL;
			rc = rc ? rc : kept;
		}
	}
	if (rc)
		return rc;
	xf_ynode *node = f->node;
	char *anchor = f->anchor;
	*f = (frame){ 0 };
	b->depth--;
	if ((rc = register_anchor(b, anchor, node, node->line))) {
		xf_yaml_free(node);
		return rc;
	}
	return attach(b, node);
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

/* A document after the first: refused unless it is empty (a lone `---` at the end, which
 * carries no setting; a `...` ends the first document and starts none). The next event
 * is its root: an empty one is a plain "" scalar with no anchor or tag. */
static int later_document(builder *b, int line)
{
	yaml_event_t ev;
	if (!yaml_parser_parse(b->parser, &ev))
		return parser_error(b->parser, b->name, b->err);
	int empty = ev.type == YAML_SCALAR_EVENT && ev.data.scalar.length == 0 &&
		    !ev.data.scalar.anchor && !ev.data.scalar.tag &&
		    ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	yaml_event_delete(&ev);
	if (empty)
		return 0;
	return xf_fail(b->err, XF_ERR_CONFIG,
		       "a second YAML document starts at this line (a config is one "
		       "document: remove the '---' or split the file), in %s:%d",
		       b->name, line);
}

static int on_event(builder *b, const yaml_event_t *ev, int *done)
{
	switch (ev->type) {
	case YAML_STREAM_END_EVENT: *done = 1; return 0;
	case YAML_DOCUMENT_START_EVENT:
		if (++b->documents > 1)
			return later_document(b, (int)ev->start_mark.line + 1);
		return 0;
	case YAML_SCALAR_EVENT: return on_scalar(b, ev);
	case YAML_ALIAS_EVENT: return on_alias(b, ev);
	case YAML_SEQUENCE_START_EVENT: return on_start(b, ev, XF_YNODE_SEQUENCE);
	case YAML_MAPPING_START_EVENT: return on_start(b, ev, XF_YNODE_MAPPING);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: return on_end(b);
	default: return 0; /* stream start, document end */
	}
}

static void free_builder(builder *b)
{
	for (int k = 0; k < b->depth; k++) {
		xf_yaml_free(b->stack[k].node);
		xf_yaml_free(b->stack[k].merge);
		free(b->stack[k].anchor);
		free(b->stack[k].key);
	}
	for (size_t k = 0; k < b->n_kept; k++)
		xf_yaml_free(b->kept[k]);
	for (size_t k = 0; k < b->n_anchor_names; k++)
		free(b->anchor_names[k]);
	free(b->kept);
	free(b->anchor_names);
	free(b->anchors.slots);
}

int xf_yaml_build(yaml_parser_t *parser, const char *name, xf_ynode **root, xf_error *err)
{
	builder b = { .parser = parser, .name = name, .err = err, .nodes_left = XF_YAML_MAX_NODES };
	int rc = 0, done = 0;
	while (!rc && !done) {
		yaml_event_t ev;
		if (!yaml_parser_parse(parser, &ev)) {
			rc = parser_error(parser, name, err);
			break;
		}
		rc = on_event(&b, &ev, &done);
		yaml_event_delete(&ev);
	}
	free_builder(&b);
	if (rc) {
		xf_yaml_free(b.root);
		b.root = NULL;
	}
	*root = b.root;
	return rc;
}
