/* batch_overrides.c — `xpcsfit batch --overrides CSV` (batch_internal.h): per-file config
 * values for a series whose q or dt varies. The CSV is read here and its cells attached
 * to the inputs as xf_config_override items; their values are checked by the config
 * reader itself (xf_config_load_with), which names the CSV line and column. */
#include "cli/batch_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A CSV line longer than this is refused (a row is a path and a few numbers). */
#define XF_CSV_LINE_MAX 16384
/* More columns than this is not a table of overrides. */
#define XF_CSV_COLUMNS_MAX 256

typedef struct csv_row {
	char *cell[XF_CSV_COLUMNS_MAX];
	int n;
} csv_row;

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* Split line in place into cells: commas, "quoted cells" with "" for a quote. Returns 0,
 * or a static reason. */
static const char *split(char *line, csv_row *row)
{
	char *p = line;
	row->n = 0;
	for (;;) {
		if (row->n == XF_CSV_COLUMNS_MAX)
			return "more than 256 columns";
		while (*p == ' ' || *p == '\t')
			p++;
		char *cell = p, *w = p;
		int quoted = *p == '"';
		if (quoted) {
			cell = w = ++p;
			for (;;) {
				if (*p == '\0' || *p == '\n' || *p == '\r')
					return "a quoted cell is not closed on its line";
				if (*p == '"' && p[1] == '"') {
					*w++ = '"';
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					*w++ = *p++;
				}
			}
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p != ',' && *p != '\0' && *p != '\n' && *p != '\r')
				return "text after a quoted cell";
		} else {
			while (*p && *p != ',' && *p != '\n' && *p != '\r')
				w = ++p;
		}
		int last = *p != ',';
		*w = '\0';
		if (!last)
			p++;
		row->cell[row->n++] = quoted ? cell : trim(cell);
		if (last)
			return NULL;
	}
}

/* The input a row names: by path as listed, absolute path, or stem. */
static long find_input(const xf_batch *b, const char *file)
{
	for (size_t k = 0; k < b->n; k++)
		if (!strcmp(file, b->inputs[k].path) || !strcmp(file, b->inputs[k].abs_path))
			return (long)k;
	size_t n;
	const char *base = xf_batch_stem(file, &n);
	for (size_t k = 0; k < b->n; k++)
		if (strlen(b->inputs[k].name) == n && !strncmp(base, b->inputs[k].name, n))
			return (long)k;
	return -1;
}

typedef struct csv_state {
	xf_batch *b;
	const char *csv;
	xf_error *err;
	csv_row head;
	int *row_line; /* per input: the CSV line that set it, 0 when none */
} csv_state;

static int read_header(csv_state *s, int line)
{
	csv_row *h = &s->head;
	if (h->n < 2 || strcmp(h->cell[0], "file"))
		return xf_fail(s->err, XF_ERR_CONFIG,
			       "--overrides: the header must be 'file' then one column per "
			       "config key (dotted, or dt, q), in %s:%d",
			       s->csv, line);
	for (int c = 1; c < h->n; c++) {
		if (!h->cell[c][0])
			return xf_fail(s->err, XF_ERR_CONFIG,
				       "--overrides: column %d has no name, in %s:%d", c + 1,
				       s->csv, line);
		char *key = xf_batch_keep(s->b, h->cell[c]);
		if (!key)
			return xf_fail(s->err, XF_ERR_NOMEM, "out of memory reading %s", s->csv);
		h->cell[c] = key;
		for (int d = 1; d < c; d++)
			if (!strcmp(xf_config_key_alias(h->cell[d]), xf_config_key_alias(key)))
				return xf_fail(s->err, XF_ERR_CONFIG,
					       "--overrides: columns '%s' and '%s' set the same "
					       "key, in %s:%d",
					       h->cell[d], key, s->csv, line);
	}
	return 0;
}

static int read_row(csv_state *s, csv_row *row, int line)
{
	xf_batch *b = s->b;
	if (row->n != s->head.n)
		return xf_fail(s->err, XF_ERR_CONFIG,
			       "--overrides: %d cells where the header has %d, in %s:%d", row->n,
			       s->head.n, s->csv, line);
	long k = find_input(b, row->cell[0]);
	if (k < 0)
		return xf_fail(s->err, XF_ERR_CONFIG,
			       "--overrides: '%.200s' names none of the input files (by path or "
			       "name), in %s:%d",
			       row->cell[0], s->csv, line);
	xf_batch_input *in = &b->inputs[k];
	if (s->row_line[k])
		return xf_fail(s->err, XF_ERR_CONFIG,
			       "--overrides: a second row for %s (the first is line %d), in %s:%d",
			       in->path, s->row_line[k], s->csv, line);
	s->row_line[k] = line;
	in->overrides = calloc((size_t)row->n, sizeof *in->overrides);
	if (!in->overrides)
		return xf_fail(s->err, XF_ERR_NOMEM, "out of memory reading %s", s->csv);
	for (int c = 1; c < row->n; c++) {
		if (!row->cell[c][0])
			continue; /* empty: the config's value */
		char origin[PATH_MAX + 300];
		snprintf(origin, sizeof origin, "%s:%d, column %.200s", s->csv, line,
			 s->head.cell[c]);
		xf_config_override *o = &in->overrides[in->n_overrides];
		o->key = s->head.cell[c];
		o->value = xf_batch_keep(b, row->cell[c]);
		o->origin = xf_batch_keep(b, origin);
		if (!o->value || !o->origin)
			return xf_fail(s->err, XF_ERR_NOMEM, "out of memory reading %s", s->csv);
		in->n_overrides++;
	}
	return 0;
}

int xf_batch_read_overrides(xf_batch *b, const char *csv, xf_error *err)
{
	char *all = xf_batch_read_text(csv, "--overrides file", err);
	if (!all)
		return err->code;
	char *cursor = all, *buf;
	csv_row *row = malloc(sizeof *row);
	csv_state s = { b, csv, err, { { 0 }, 0 }, calloc(b->n ? b->n : 1, sizeof(int)) };
	int rc = 0, line = 0, have_head = 0;
	if (!row || !s.row_line)
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", csv);
	while (rc == 0 && (buf = xf_batch_next_line(&cursor))) {
		line++;
		if (strlen(buf) > XF_CSV_LINE_MAX - 2) {
			rc = xf_fail(err, XF_ERR_CONFIG,
				     "--overrides: line longer than %d bytes, in %s:%d",
				     XF_CSV_LINE_MAX - 2, csv, line);
			break;
		}
		char *text = trim(buf);
		if (!text[0] || text[0] == '#')
			continue;
		const char *why = split(text, have_head ? row : &s.head);
		if (why) {
			rc = xf_fail(err, XF_ERR_CONFIG, "--overrides: %s, in %s:%d", why, csv,
				     line);
			break;
		}
		if (!have_head) {
			have_head = 1;
			/* the header's cells point into the text: read_header keeps the keys */
			rc = read_header(&s, line);
			s.head.cell[0] = "file";
			continue;
		}
		rc = read_row(&s, row, line);
	}
	if (rc == 0 && !have_head)
		rc = xf_fail(err, XF_ERR_CONFIG,
			     "--overrides: the file is empty (a header 'file,KEY,...' is needed), "
			     "%s",
			     csv);
	free(s.row_line);
	free(row);
	free(all);
	return rc;
}

int xf_batch_merge_overrides(xf_batch *b, xf_error *err)
{
	size_t nc = b->cli.n;
	for (size_t k = 0; nc && k < b->n; k++) {
		xf_batch_input *in = &b->inputs[k];
		xf_config_override *all = calloc(nc + in->n_overrides, sizeof *all);
		if (!all)
			return xf_fail(err, XF_ERR_NOMEM, "out of memory applying the overrides");
		memcpy(all, b->cli.items, nc * sizeof *all);
		if (in->n_overrides)
			memcpy(all + nc, in->overrides, in->n_overrides * sizeof *all);
		free(in->overrides);
		in->overrides = all;
		in->n_overrides += nc;
	}
	return 0;
}
