/* report_html.c — the page of report_html.h: sections in a fixed order (status and
 * quality, parameters, fit, data, config, plots, versions and timing), plain HTML with an
 * inline style sheet, no script. Text from the user goes through xf_html_text. */
#include "io/report_html.h"
#include "io/html_text.h"
#include "io/io_internal.h"
#include "util/numfmt.h"

#include <dirent.h>
#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* a PNG larger than this is not embedded (ours are < 1 MiB; the page must stay openable) */
#define MAX_PNG_BYTES ((size_t)64 << 20)
/* The summary pages (overview, corner, forest) are embedded when at most this size, so
 * the page alone shows the result; the per-angle and per-shard pages are linked
 * (plots/NAME, shown when report.html is opened in its folder): 23 angles embedded were
 * 24 MB of base64, now the report stays under 2 MB whatever the angles (adr/0059). */
#define XF_REPORT_EMBED_MAX_BYTES ((size_t)512 << 10)
#define MAX_PLOTS		  4096 /* plots/ holds one PNG per angle and an overview */

static const char style[] =
	"body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;"
	"color:#111;background:#fff}\n"
	"h1{font-size:1.5em;border-bottom:2px solid #345}h2{font-size:1.2em;color:#345}\n"
	"table{border-collapse:collapse;margin:.5em 0}\n"
	"th,td{border:1px solid #bbb;padding:.2em .6em;text-align:left;vertical-align:top}\n"
	"td.num{font-family:monospace;text-align:right}thead th{background:#e8eef4}\n"
	".good{color:#063}.marginal{color:#850}.poor,.failed{color:#a00}\n"
	"tr.flagged td,tr.failed td{background:#fbeaea}\n"
	"figure{margin:1em 0;page-break-inside:avoid;break-inside:avoid}\n"
	"img{max-width:100%;height:auto;border:1px solid #ddd}\n"
	"@media print{body{max-width:none}h2{page-break-after:avoid}}\n";

void xf_report_add(xf_report *r, xf_report_section s, const char *label, const char *fmt, ...)
{
	if (r->n_rows[s] >= XF_REPORT_MAX_ROWS)
		return;
	xf_report_row *row = &r->rows[s][r->n_rows[s]++];
	row->label = label;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(row->text, sizeof row->text, fmt, ap);
	va_end(ap);
}

/* u, the uncertainty of v, to its 2 significant digits; an em dash for none */
static void put_unc(xf_html *h, double v, double u)
{
	char buf[XF_NUM_TEXT];
	if (!isfinite(u)) {
		xf_html_put(h, "&mdash;");
		return;
	}
	xf_num_unc(v, u, buf, sizeof buf);
	xf_html_put(h, buf);
}

static void put_rows(xf_html *h, const char *title, const xf_report_row *rows, int n)
{
	if (n == 0)
		return;
	xf_html_putf(h, "<h2>%s</h2>\n<table>\n", title);
	for (int k = 0; k < n; k++) {
		xf_html_put(h, "<tr><th>");
		xf_html_text(h, rows[k].label);
		xf_html_put(h, "</th><td>");
		xf_html_text(h, rows[k].text);
		xf_html_put(h, "</td></tr>\n");
	}
	xf_html_put(h, "</table>\n");
}

/* a ridge (adr/0047): the combinations the data identify, what they do not, the fix */
static void put_identified(xf_html *h, const xf_identified *id)
{
	if (id->n_combos == 0)
		return;
	xf_html_put(h, "<h2>What the data identify</h2>\n<p>The fit ended on a ridge: a set of "
		       "equally good fits. These combinations are pinned down (sd from the "
		       "well-determined directions of J<sup>T</sup>J):</p>\n<table>\n<thead><tr>"
		       "<th>combination</th><th>value</th><th>sd</th></tr></thead>\n");
	for (int k = 0; k < id->n_combos; k++) {
		xf_html_put(h, "<tr><th>");
		xf_html_text(h, id->combo[k].text);
		xf_html_put(h, "</th><td class=\"num\">");
		xf_html_value(h, id->combo[k].value, id->combo[k].sd);
		xf_html_put(h, "</td><td class=\"num\">");
		put_unc(h, id->combo[k].value, id->combo[k].sd);
		xf_html_put(h, "</td></tr>\n");
	}
	xf_html_put(h, "</table>\n<p>Not identified one by one: ");
	for (int k = 0; k < id->n_not_identified; k++) {
		xf_html_put(h, k ? ", " : "");
		xf_html_text(h, id->not_identified[k]);
	}
	xf_html_put(h, ". Fix: <code>");
	xf_html_text(h, id->fix);
	xf_html_put(h, "</code></p>\n");
}

static void put_status(xf_html *h, const xf_report *r)
{
	const char *grade = r->quality ? xf_quality_level_name(r->quality->overall) : "-";
	const char *status = xf_fit_status_name(r->status);
	xf_html_put(h, "<h2>Status</h2>\n<table>\n<tr><th>status</th><td class=\"");
	xf_html_text(h, xf_fit_status_failed(r->status) ? "failed" : "");
	xf_html_put(h, "\">");
	xf_html_text(h, status);
	xf_html_put(h, "</td></tr>\n<tr><th>quality</th><td class=\"");
	xf_html_text(h, grade);
	xf_html_put(h, "\">");
	xf_html_text(h, grade);
	xf_html_put(h, "</td></tr>\n</table>\n");
	if (!r->quality || r->quality->n_reasons == 0) {
		xf_html_put(h, "<p>No reason lowers the grade.</p>\n");
		return;
	}
	xf_html_put(h, "<ul class=\"reasons\">\n");
	for (int k = 0; k < r->quality->n_reasons; k++) {
		xf_html_put(h, "<li>");
		xf_html_text(h, r->quality->reasons[k]);
		xf_html_put(h, "</li>\n");
	}
	xf_html_put(h, "</ul>\n");
	put_identified(h, &r->quality->identified);
}

/* The parameter table: name, value, uncertainty, (CMC) interval, unit and note, every
 * column with its head; numbers to the precision their uncertainty supports. */
static void put_params(xf_html *h, const xf_report *r)
{
	xf_html_put(h, "<h2>Parameters</h2>\n<table class=\"params\">\n<thead><tr><th>name</th>"
		       "<th>");
	xf_html_text(h, r->value_head);
	xf_html_put(h, "</th><th>");
	xf_html_text(h, r->unc_head);
	if (r->interval_head) {
		xf_html_put(h, "</th><th>");
		xf_html_text(h, r->interval_head);
	}
	xf_html_put(h, "</th><th>unit</th><th>note</th></tr></thead>\n");
	for (int k = 0; k < r->n_params; k++) {
		const xf_report_param *p = &r->params[k];
		double unc = p->fixed ? NAN : p->unc;
		xf_html_put(h, "<tr><th>");
		xf_html_text(h, p->name);
		xf_html_put(h, "</th><td class=\"num\">");
		xf_html_value(h, p->value, unc);
		xf_html_put(h, "</td><td class=\"num\">");
		put_unc(h, p->value, unc);
		if (r->interval_head) {
			xf_html_put(h, "</td><td class=\"num\">");
			if (p->has_interval && !p->fixed) {
				xf_html_value(h, p->lo, unc);
				xf_html_put(h, " &ndash; ");
				xf_html_value(h, p->hi, unc);
			} else {
				xf_html_value(h, NAN, NAN);
			}
		}
		xf_html_put(h, "</td><td>");
		/* the SI "1" of parameters.json reads as a value in a table (alpha, beta,
		 * contrast, offset) */
		xf_html_text(h, p->unit && !strcmp(p->unit, "1") ? "dimensionless" : p->unit);
		xf_html_put(h, "</td><td>");
		xf_html_text(h, p->note);
		xf_html_put(h, "</td></tr>\n");
	}
	xf_html_put(h, "</table>\n");
}

static void put_data(xf_html *h, const xf_output_info *info, const xf_dataset *ds)
{
	char num[XF_NUM_TEXT];
	xf_html_put(h, "<h2>Data</h2>\n<table>\n<tr><th>file</th><td>");
	xf_html_text(h, ds->path ? ds->path : "");
	xf_html_put(h, "</td></tr>\n<tr><th>layout</th><td>");
	xf_html_text(h, xf_layout_name(ds->layout));
	xf_num_value(ds->q, NAN, num, sizeof num);
	/* a joint fit's data are its rings side by side: ds->q is the first ring's */
	xf_html_putf(h, "</td></tr>\n<tr><th>q</th><td>%s 1/&Aring;%s</td></tr>\n", num,
		     info && info->rings_json ? " (the first ring; every ring under Rings)" : "");
	xf_num_value(ds->dt_s, NAN, num, sizeof num);
	xf_html_putf(h, "<tr><th>dt</th><td>%s s (", num);
	xf_html_text(h, ds->dt_source);
	xf_html_putf(h, ")</td></tr>\n<tr><th>angles</th><td>%d:", ds->n_phi);
	for (int a = 0; a < ds->n_phi && ds->phi_deg; a++)
		xf_html_putf(h, " %.2f&deg;", ds->phi_deg[a]);
	xf_html_putf(h,
		     "</td></tr>\n<tr><th>frames</th><td>%d (from stored row %ld)</td></tr>\n"
		     "<tr><th>points</th><td>%zu</td></tr>\n<tr><th>config</th><td>",
		     ds->n_frames, ds->first_frame, ds->n_points);
	xf_html_text(h, info && info->config_path ? info->config_path : "");
	xf_html_put(h, "</td></tr>\n</table>\n");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the whole of a binary file, malloc'ed; NULL with err set */
static unsigned char *read_binary(const char *path, size_t *size, xf_error *err)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	if (!f || fstat(fileno(f), &st) != 0) {
		int e = errno;
		if (f)
			fclose(f);
		xf_fail(err, XF_ERR_IO, "cannot read plot for the report: %s, %s", strerror(e),
			path);
		return NULL;
	}
	if (st.st_size < 0 || (size_t)st.st_size > MAX_PNG_BYTES) {
		fclose(f);
		xf_fail(err, XF_ERR_DATA, "plot too large for the report (%lld bytes), %s",
			(long long)st.st_size, path);
		return NULL;
	}
	*size = (size_t)st.st_size;
	unsigned char *buf = malloc(*size ? *size : 1);
	if (!buf) {
		fclose(f);
		xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
		return NULL;
	}
	size_t got = fread(buf, 1, *size, f);
	fclose(f);
	if (got != *size) {
		free(buf);
		xf_fail(err, XF_ERR_IO, "cannot read plot for the report: short read, %s", path);
		return NULL;
	}
	return buf;
}

/* the *.png names of dir sorted, malloc'ed; *n 0 and NULL when none or no folder */
static char **list_pngs(const char *dir, int *n, xf_error *err)
{
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	char **names = calloc(MAX_PLOTS, sizeof *names);
	if (!names) {
		closedir(d);
		xf_fail(err, XF_ERR_NOMEM, "out of memory listing %s", dir);
		return NULL;
	}
	struct dirent *e;
	while ((e = readdir(d)) != NULL && *n < MAX_PLOTS) {
		size_t len = strlen(e->d_name);
		if (len <= 4 || strcmp(e->d_name + len - 4, ".png"))
			continue;
		if (!(names[*n] = strdup(e->d_name))) {
			closedir(d);
			for (int k = 0; k < *n; k++)
				free(names[k]);
			free(names);
			*n = 0;
			xf_fail(err, XF_ERR_NOMEM, "out of memory listing %s", dir);
			return NULL;
		}
		(*n)++;
	}
	closedir(d);
	qsort(names, (size_t)*n, sizeof *names, by_name);
	return names;
}

/* 1 for the pages that sum up the whole result: embedded when small */
static int summary_page(const char *name)
{
	static const char *const pages[] = { "overview.png", "corner.png", "forest.png" };
	for (size_t k = 0; k < sizeof pages / sizeof pages[0]; k++)
		if (!strcmp(name, pages[k]))
			return 1;
	return 0;
}

int xf_report_html_embed_png(xf_html *h, const char *path, const char *caption, xf_error *err)
{
	size_t size = 0;
	unsigned char *png = read_binary(path, &size, err);
	if (!png)
		return err->code;
	xf_html_put(h, "<figure><img alt=\"");
	xf_html_text(h, caption);
	xf_html_put(h, "\" src=\"data:image/png;base64,");
	xf_html_base64(h, png, size);
	xf_html_put(h, "\"><figcaption>");
	xf_html_text(h, caption);
	xf_html_put(h, "</figcaption></figure>\n");
	free(png);
	return 0;
}

/* one figure: the PNG's bytes as a data URI, or a relative link to plots/NAME */
static int put_figure(xf_html *h, const char *plots, const char *name, xf_error *err)
{
	char path[PATH_MAX];
	struct stat st;
	if (xf_path_join(path, sizeof path, plots, name, err) != 0)
		return err->code;
	int embed = summary_page(name) && stat(path, &st) == 0 &&
		    (size_t)st.st_size <= XF_REPORT_EMBED_MAX_BYTES;
	xf_html_put(h, "<figure>");
	if (embed) {
		size_t size = 0;
		unsigned char *png = read_binary(path, &size, err);
		if (!png)
			return err->code;
		xf_html_put(h, "<img alt=\"");
		xf_html_text(h, name);
		xf_html_put(h, "\" src=\"data:image/png;base64,");
		xf_html_base64(h, png, size);
		xf_html_put(h, "\">");
		free(png);
	} else {
		xf_html_put(h, "<a href=\"plots/");
		xf_html_text(h, name);
		xf_html_put(h, "\"><img alt=\"");
		xf_html_text(h, name);
		xf_html_put(h, "\" src=\"plots/");
		xf_html_text(h, name);
		xf_html_put(h, "\" loading=\"lazy\"></a>");
	}
	xf_html_put(h, "<figcaption>");
	xf_html_text(h, name);
	xf_html_put(h, "</figcaption></figure>\n");
	return 0;
}

static int put_plots(xf_html *h, const char *dir, xf_error *err)
{
	char plots[PATH_MAX];
	if (xf_path_join(plots, sizeof plots, dir, "plots", err) != 0)
		return err->code;
	int n = 0, rc = 0;
	err->code = 0;
	char **names = list_pngs(plots, &n, err);
	if (err->code)
		return err->code;
	xf_html_put(h, "<h2>Plots</h2>\n");
	if (n == 0)
		xf_html_put(h, "<p>No plot was written (see run.log).</p>\n");
	else
		xf_html_put(h, "<p>The summary pages are embedded; the others are the files "
			       "in plots/ beside this page.</p>\n");
	/* the summary pages first, then the rest in name order */
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < n && rc == 0; k++)
			if (summary_page(names[k]) == !pass)
				rc = put_figure(h, plots, names[k], err);
	for (int k = 0; k < n; k++)
		free(names[k]);
	free(names);
	return rc;
}

static void put_versions(xf_html *h)
{
	unsigned maj = 0, min = 0, rel = 0;
	H5get_libversion(&maj, &min, &rel);
	xf_html_putf(h,
		     "<h2>Versions</h2>\n<table>\n<tr><th>xpcsfit</th><td>%s</td></tr>\n"
		     "<tr><th>HDF5</th><td>%u.%u.%u</td></tr>\n</table>\n",
		     XPCSFIT_VERSION, maj, min, rel);
}

void xf_report_html_begin(xf_html *h, const char *title)
{
	xf_html_put(h, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		       "<title>");
	xf_html_text(h, title);
	xf_html_putf(h, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", style);
}

int xf_report_html_end(xf_html *h, const char *path, int rc, xf_error *err)
{
	put_versions(h);
	xf_html_put(h, "</body>\n</html>\n");
	if (rc == 0 && h->failed)
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory building the report, %s", path);
	if (rc == 0)
		rc = xf_write_file_atomic(path, h->s, h->len, err);
	xf_html_free(h);
	return rc;
}

int xf_report_html_write(const char *dir, const xf_report *r, const xf_output_info *info,
			 const xf_dataset *ds, int with_plots, xf_error *err)
{
	char path[PATH_MAX];
	if (xf_path_join(path, sizeof path, dir, "report.html", err) != 0)
		return err->code;
	xf_html h = { 0 };
	char title[64];
	snprintf(title, sizeof title, "xpcsfit %s report", xf_method_name(r->method));
	xf_report_html_begin(&h, title);
	xf_html_putf(&h, "<h1>xpcsfit %s result</h1>\n", xf_method_name(r->method));
	put_status(&h, r);
	put_params(&h, r);
	/* a joint fit over q rings: each ring's numbers (report_rings.c, adr/0066) */
	int rc = info && info->rings_json
			 ? xf_report_rings_section(&h, dir, info->rings_json, ds, err)
			 : 0;
	put_rows(&h, "Fit", r->rows[XF_REPORT_FIT], r->n_rows[XF_REPORT_FIT]);
	put_data(&h, info, ds);
	put_rows(&h, "Config", r->rows[XF_REPORT_CONFIG], r->n_rows[XF_REPORT_CONFIG]);
	if (rc == 0 && with_plots)
		rc = put_plots(&h, dir, err);
	put_rows(&h, "Timing", r->rows[XF_REPORT_TIMING], r->n_rows[XF_REPORT_TIMING]);
	return xf_report_html_end(&h, path, rc, err);
}
