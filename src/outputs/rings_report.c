/* rings_report.c — what a person opens of a set of q rings: report.html of a per-ring
 * run's top folder (DIR/nlsq/, DIR/cmc/; adr/0065), in the look of every report.html
 * (io/report_html.h), and params_vs_q.png of a joint fit (adr/0066), drawn from the
 * "rings" member its parameters.json holds. The page answers "is each parameter one
 * value across q?" first (xf_rings_constancy: weighted mean and the χ²/dof of a
 * constant), then shows the plot and a row per ring linking that ring's own page. No
 * timing on the page: the same rings give the same bytes. */
#include "outputs/rings_summary.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/html_text.h"
#include "io/report_html.h"
#include "util/files.h"
#include "util/numfmt.h"
#include "xpcsfit/quality.h"

/* below this p a parameter is read as varying with q */
#define XF_RINGS_CONSTANT_P 0.01

static const xf_ring_record *first_written(const xf_ring_record *r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i].written)
			return &r[i];
	return NULL;
}

/* "D0 (Å²/s^(1+α))", or the name alone */
static void put_param_head(xf_html *h, const char *name)
{
	const char *unit = xf_param_unit_text(name);
	xf_html_text(h, name);
	if (*unit) {
		xf_html_put(h, " (");
		xf_html_text(h, unit);
		xf_html_put(h, ")");
	}
}

static void put_intro(xf_html *h, xf_method method, const char *mode_name, const xf_ring_record *r,
		      int n)
{
	int converged = 0;
	for (int i = 0; i < n; i++)
		converged += r[i].written && !r[i].failed;
	xf_html_putf(h, "<h1>xpcsfit %s: parameters against q</h1>\n<table>\n",
		     xf_method_name(method));
	xf_html_putf(h, "<tr><th>rings</th><td class=\"%s\">%d of %d %s</td></tr>\n",
		     converged == n ? "good" : "failed", converged, n,
		     method == XF_METHOD_CMC ? "converged (posterior)" : "converged");
	xf_html_put(h, "<tr><th>mode</th><td>");
	xf_html_text(h, mode_name);
	xf_html_put(h, "</td></tr>\n<tr><th>how</th><td>each ring fitted on its own, as a run "
		       "with that ring's q (its page: the link in its row)</td></tr>\n"
		       "<tr><th>tables</th><td><a href=\"rings.csv\">rings.csv</a>, "
		       "<a href=\"rings.json\">rings.json</a> (every digit)</td></tr>\n</table>\n");
}

/* one row of the constancy table */
static void put_constancy_row(xf_html *h, const xf_ring_record *r, int n, int k)
{
	xf_ring_constancy c;
	xf_rings_constancy(r, n, k, &c);
	xf_html_put(h, "<tr><th>");
	put_param_head(h, first_written(r, n)->names[k]);
	xf_html_put(h, "</th><td class=\"num\">");
	xf_html_pm(h, c.mean, c.sd);
	xf_html_putf(h, "</td><td class=\"num\">%d</td><td class=\"num\">", c.n);
	if (c.n >= 2) {
		xf_html_putf(h, "%.3g (%d)</td><td class=\"num\">%.2g</td>", c.chi2_per_dof,
			     c.n - 1, c.p);
		int constant = c.p >= XF_RINGS_CONSTANT_P;
		xf_html_putf(h, "<td class=\"%s\">%s</td></tr>\n", constant ? "good" : "marginal",
			     constant ? "one value across q, within the errors"
				      : "varies with q beyond the errors");
	} else {
		xf_html_put(h, "&mdash;</td><td class=\"num\">&mdash;</td><td>fewer than two "
			       "converged rings: not tested</td></tr>\n");
	}
}

static void put_constancy(xf_html *h, const xf_ring_record *r, int n, const char *what)
{
	const xf_ring_record *head = first_written(r, n);
	xf_html_put(h, "<h2>One value across q?</h2>\n<table class=\"constancy\">\n<thead><tr>"
		       "<th>parameter</th><th>weighted mean</th><th>rings</th>"
		       "<th>&chi;&sup2;/dof (dof)</th><th>p</th><th>reading</th></tr></thead>\n");
	for (int k = 0; k < head->n_phys; k++)
		if (!head->is_fixed[k])
			put_constancy_row(h, r, n, k);
	xf_html_putf(h,
		     "</table>\n<p>Over the converged rings, each %s v<sub>i</sub> &plusmn; "
		     "s<sub>i</sub> weighted by w<sub>i</sub> = 1/s<sub>i</sub>&sup2;: mean m = "
		     "&Sigma; w<sub>i</sub>v<sub>i</sub> / &Sigma; w<sub>i</sub> &plusmn; 1/"
		     "sqrt(&Sigma; w<sub>i</sub>); &chi;&sup2; = &Sigma; w<sub>i</sub>"
		     "(v<sub>i</sub> &minus; m)&sup2; on n &minus; 1 degrees of freedom, p = "
		     "P(&chi;&sup2;<sub>n&minus;1</sub> &ge; &chi;&sup2;). &chi;&sup2;/dof near 1 "
		     "(p &ge; %.2g): the rings agree on one value; far above 1: the parameter "
		     "depends on q (or the sds are too small).</p>\n",
		     what, XF_RINGS_CONSTANT_P);
}

static void put_ring_row(xf_html *h, const xf_ring_record *x, const xf_ring_record *head,
			 int chi2_col)
{
	xf_html_putf(h, "<tr%s><td class=\"num\">", x->failed ? " class=\"failed\"" : "");
	xf_html_value(h, x->q_per_A, NAN);
	xf_html_put(h, "</td><td>");
	if (x->written) {
		xf_html_put(h, "<a href=\"");
		xf_html_text(h, x->folder);
		xf_html_put(h, "/report.html\">");
		xf_html_text(h, x->folder);
		xf_html_put(h, "</a>");
	} else {
		xf_html_put(h, "none (failed before its folder was written)");
	}
	xf_html_put(h, "</td><td class=\"");
	xf_html_text(h, x->failed ? "failed" : "");
	xf_html_put(h, "\">");
	xf_html_text(h, x->status);
	xf_html_put(h, x->failed ? " (failed)" : "");
	xf_html_put(h, "</td><td class=\"");
	xf_html_text(h, x->quality);
	xf_html_put(h, "\">");
	if (x->written)
		xf_html_text(h, x->quality);
	else
		xf_html_put(h, "&mdash;");
	xf_html_put(h, "</td>");
	if (chi2_col) { /* χ²ᵣ means σ = 1 when the data give no σ: the residual sd beside it */
		xf_html_put(h, "<td class=\"num\">");
		xf_html_value(h, x->written ? x->reduced_chi_squared : NAN, NAN);
		xf_html_put(h, "</td><td class=\"num\">");
		xf_html_value(h, x->written ? x->residual_sd : NAN, NAN);
		xf_html_put(h, "</td>");
	}
	for (int k = 0; k < head->n_phys; k++) {
		if (head->is_fixed[k])
			continue;
		xf_html_put(h, "<td class=\"num\">");
		xf_html_pm(h, x->written && k < x->n_phys ? x->values[k] : NAN,
			   x->written && k < x->n_phys ? x->uncertainties[k] : NAN);
		xf_html_put(h, "</td>");
	}
	xf_html_put(h, "</tr>\n");
}

/* the fixed parameters in one line (the same value in every ring: one config) */
static void put_fixed(xf_html *h, const xf_ring_record *head)
{
	int any = 0;
	for (int k = 0; k < head->n_phys; k++) {
		if (!head->is_fixed[k])
			continue;
		xf_html_put(h, any++ ? ", " : "<p>Fixed: ");
		xf_html_text(h, head->names[k]);
		xf_html_put(h, " = ");
		xf_html_value(h, head->values[k], NAN);
	}
	if (any)
		xf_html_put(h, ".</p>\n");
}

static void put_rings(xf_html *h, const xf_ring_record *r, int n, int posterior)
{
	const xf_ring_record *head = first_written(r, n);
	xf_html_putf(h,
		     "<h2>Rings</h2>\n<table class=\"rings\">\n<thead><tr><th>q (1/&Aring;)"
		     "</th><th>folder</th><th>status</th><th>quality</th>%s",
		     posterior ? "" : "<th>&chi;&sup2;<sub>r</sub></th><th>residual sd</th>");
	for (int k = 0; k < head->n_phys; k++) {
		if (head->is_fixed[k])
			continue;
		xf_html_put(h, "<th>");
		put_param_head(h, head->names[k]);
		xf_html_put(h, "</th>");
	}
	xf_html_put(h, "</tr></thead>\n");
	for (int i = 0; i < n; i++)
		put_ring_row(h, &r[i], head, !posterior);
	xf_html_putf(h,
		     "</table>\n<p>Each parameter: %s &plusmn; 1 sd, to the digits the sd "
		     "supports.</p>\n",
		     posterior ? "posterior mean" : "value");
	put_fixed(h, head);
}

static int put_plot(xf_html *h, const char *dir, int with_plot, xf_error *err)
{
	char path[PATH_MAX];
	struct stat st;
	xf_html_put(h, "<h2>Parameters against q</h2>\n");
	if (xf_path_join(path, sizeof path, dir, "params_vs_q.png", err) != 0)
		return err->code;
	if (!with_plot || stat(path, &st) != 0) {
		xf_html_put(h, with_plot ? "<p>params_vs_q.png was not drawn (see the warning of "
					   "the run).</p>\n"
					 : "<p>Not drawn (<code>--no-plots</code>).</p>\n");
		return 0;
	}
	return xf_report_html_embed_png(h, path,
					"params_vs_q.png: each ring ± 1 sd against q, the dashed "
					"line the weighted mean",
					err);
}

int xf_rings_write_report(const char *dir, xf_method method, const char *mode_name,
			  const xf_ring_record *r, int n, int with_plot, xf_error *err)
{
	char path[PATH_MAX], title[64];
	if (xf_path_join(path, sizeof path, dir, "report.html", err) != 0)
		return err->code;
	snprintf(title, sizeof title, "xpcsfit %s: parameters against q", xf_method_name(method));
	int posterior = method == XF_METHOD_CMC;
	xf_html h = { 0 };
	xf_report_html_begin(&h, title);
	put_intro(&h, method, mode_name, r, n);
	int rc = 0;
	if (first_written(r, n)) {
		put_constancy(&h, r, n, posterior ? "posterior mean" : "value");
		rc = put_plot(&h, dir, with_plot, err);
		put_rings(&h, r, n, posterior);
	} else {
		xf_html_put(&h, "<p class=\"failed\">No ring has a result.</p>\n");
		for (int i = 0; i < n; i++) {
			xf_html_put(&h, i ? ", " : "<p>");
			xf_html_value(&h, r[i].q_per_A, NAN);
			xf_html_put(&h, ": ");
			xf_html_text(&h, r[i].status);
		}
		xf_html_put(&h, "</p>\n");
	}
	return xf_report_html_end(&h, path, rc, err);
}

/* ring k's record from the joint fit's "rings" member: its own fit */
static void record_from_json(xf_ring_record *x, const cJSON *ring, const xf_estimate *est)
{
	const cJSON *own = cJSON_GetObjectItemCaseSensitive(ring, "own_fit");
	const cJSON *loo = cJSON_GetObjectItemCaseSensitive(ring, "leave_one_out");
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(own, "status");
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(ring, "q");
	x->q_per_A = cJSON_IsNumber(q) ? q->valuedouble : NAN;
	x->written = 1;
	xf_fit_status own_status = XF_STATUS_FAILED; /* a status that is none: failed */
	if (cJSON_IsString(status))
		xf_fit_status_parse(status->valuestring, &own_status);
	x->failed = xf_fit_status_failed(own_status);
	x->flagged = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(loo, "flagged"));
	x->n_phys = est->n_phys < XF_N_PHYS ? est->n_phys : XF_N_PHYS;
	for (int k = 0; k < x->n_phys; k++) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(own, est->names[k]);
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, "value");
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(p, "uncertainty");
		x->names[k] = est->names[k]; /* borrowed: not freed here */
		x->values[k] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
		x->uncertainties[k] = cJSON_IsNumber(u) ? u->valuedouble : NAN;
		x->is_fixed[k] = est->is_fixed[k];
	}
}

void xf_rings_plot_joint(const char *dir, const char *rings_json, const xf_estimate *est)
{
	xf_error err = { 0 };
	char path[PATH_MAX];
	cJSON *root = rings_json ? cJSON_Parse(rings_json) : NULL;
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "rings");
	int n = cJSON_GetArraySize(list);
	xf_ring_record *rec = n > 0 ? calloc((size_t)n, sizeof *rec) : NULL;
	if (!rec) {
		cJSON_Delete(root);
		if (n > 0 || rings_json)
			xf_warn("params_vs_q.png not drawn: out of memory");
		return;
	}
	int k = 0;
	const cJSON *ring;
	cJSON_ArrayForEach(ring, list)
	{
		record_from_json(&rec[k++], ring, est);
	}
	xf_ring_band band;
	for (int p = 0; p < XF_N_PHYS; p++)
		band.value[p] = band.sd[p] = NAN;
	for (int p = 0; p < rec[0].n_phys; p++) {
		band.value[p] = est->values[p];
		band.sd[p] = est->is_fixed[p] ? NAN : est->sd[p];
	}
	if (xf_path_join(path, sizeof path, dir, "params_vs_q.png", &err) ||
	    xf_plot_rings(path, rec, n, &band, &err))
		xf_warn("params_vs_q.png not drawn: %s", err.msg); /* never fatal */
	free(rec);
	cJSON_Delete(root);
}
