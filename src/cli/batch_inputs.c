/* batch_inputs.c — the inputs of `xpcsfit batch` (batch_internal.h): the files of the
 * command line and of --list, their result folder names (stems) and the duplicate check,
 * all before anything runs. */
#include "cli/batch_internal.h"
#include "util/files.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* A list line longer than this is not a path (PATH_MAX is 4096). */
#define XF_BATCH_LINE_MAX 8192

char *xf_batch_keep(xf_batch *b, const char *s)
{
	if (b->n_strings == b->cap_strings) {
		size_t cap = b->cap_strings ? 2 * b->cap_strings : 16;
		char **p = realloc(b->strings, cap * sizeof *p);
		if (!p)
			return NULL;
		b->strings = p;
		b->cap_strings = cap;
	}
	char *copy = strdup(s);
	if (copy)
		b->strings[b->n_strings++] = copy;
	return copy;
}

int xf_batch_add(xf_batch *b, const char *path)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;
		xf_batch_input *p = realloc(b->inputs, cap * sizeof *p);
		if (!p)
			return XF_ERR_NOMEM;
		b->inputs = p;
		b->cap = cap;
	}
	xf_batch_input *in = &b->inputs[b->n];
	memset(in, 0, sizeof *in);
	if (!(in->path = strdup(path)))
		return XF_ERR_NOMEM;
	b->n++;
	return 0;
}

void xf_batch_free(xf_batch *b)
{
	for (size_t k = 0; k < b->n; k++) {
		free(b->inputs[k].path);
		free(b->inputs[k].abs_path);
		free(b->inputs[k].name);
		free(b->inputs[k].overrides);
	}
	free(b->inputs);
	free(b->config_text);
	for (size_t k = 0; k < b->n_strings; k++)
		free(b->strings[k]);
	free(b->strings);
	xf_cli_overrides_free(&b->cli);
	xf_batch_summary_free(b->summary);
	b->summary = NULL;
	b->inputs = NULL;
	b->strings = NULL;
	b->n = b->cap = b->n_strings = b->cap_strings = 0;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* entry joined to the list file's folder when relative */
static int add_listed(xf_batch *b, const char *list, const char *entry, int line, xf_error *err)
{
	char path[PATH_MAX];
	const char *slash = strrchr(list, '/');
	int n;
	if (entry[0] == '/' || !slash)
		n = snprintf(path, sizeof path, "%s", entry);
	else
		n = snprintf(path, sizeof path, "%.*s/%s", (int)(slash - list), list, entry);
	if (n < 0 || (size_t)n >= sizeof path)
		return xf_fail(err, XF_ERR_CONFIG, "--list: the path is too long, in %s:%d", list,
			       line);
	if (xf_batch_add(b, path))
		return xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", list);
	return 0;
}

char *xf_batch_read_text(const char *path, const char *what, xf_error *err)
{
	return xf_read_text_file(path, what, XF_BATCH_TEXT_MAX_BYTES, XF_ERR_CONFIG, NULL, err);
}

char *xf_batch_next_line(char **cursor)
{
	char *line = *cursor;
	if (!*line)
		return NULL;
	char *nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*cursor = nl + 1;
	} else {
		*cursor = line + strlen(line);
	}
	return line;
}

int xf_batch_read_list(xf_batch *b, const char *list, xf_error *err)
{
	char *text = xf_batch_read_text(list, "--list file", err);
	if (!text)
		return err->code;
	char *cursor = text, *buf;
	int line = 0, rc = 0;
	while (rc == 0 && (buf = xf_batch_next_line(&cursor))) {
		line++;
		if (strlen(buf) > XF_BATCH_LINE_MAX - 2) {
			rc = xf_fail(err, XF_ERR_CONFIG,
				     "--list: line longer than %d bytes, in %s:%d",
				     XF_BATCH_LINE_MAX - 2, list, line);
			break;
		}
		char *entry = trim(buf);
		if (!entry[0] || entry[0] == '#')
			continue;
		rc = add_listed(b, list, entry, line, err);
	}
	free(text);
	return rc;
}

const char *xf_batch_stem(const char *path, size_t *len)
{
	static const char *const ext[] = { ".h5", ".hdf5", ".hdf" };
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base);
	for (size_t k = 0; k < sizeof ext / sizeof ext[0]; k++) {
		size_t e = strlen(ext[k]);
		if (n > e && !strcasecmp(base + n - e, ext[k])) {
			n -= e;
			break;
		}
	}
	*len = n;
	return base;
}

static char *stem(const char *path)
{
	size_t n;
	const char *base = xf_batch_stem(path, &n);
	return strndup(base, n);
}

static char *absolute(const char *path)
{
	if (path[0] == '/')
		return strdup(path);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return strdup(path);
	size_t n = strlen(cwd) + strlen(path) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", cwd, path[0] == '.' && path[1] == '/' ? path + 2 : path);
	return p;
}

int xf_batch_name_inputs(xf_batch *b, xf_error *err)
{
	for (size_t k = 0; k < b->n; k++) {
		xf_batch_input *in = &b->inputs[k];
		in->name = stem(in->path);
		in->abs_path = absolute(in->path);
		if (!in->name || !in->abs_path)
			return xf_fail(err, XF_ERR_NOMEM, "out of memory naming the inputs");
		if (!in->name[0] || !strcmp(in->name, ".") || !strcmp(in->name, ".."))
			return xf_fail(err, XF_ERR_CONFIG,
				       "batch: no result folder name can be made from the input "
				       "path (its name is empty once .h5 is removed), %s",
				       in->path);
		for (size_t j = 0; j < k; j++)
			if (!strcmp(b->inputs[j].name, in->name))
				return xf_fail(err, XF_ERR_CONFIG,
					       "batch: two inputs would share the result folder "
					       "'%s': rename one, %s and %s",
					       in->name, b->inputs[j].path, in->path);
	}
	return 0;
}
