/* report_rings.c — the "Rings" section of a joint fit's report.html (adr/0066), read from
 * the "rings" member that parameters.json holds (the same JSON text, so the page and
 * the file cannot differ): per ring its angles, its χ² at the joint estimate, its share
 * of the information on each free parameter, its own fit ± sd, the leave-one-out check
 * and the FLAGGED mark; params_vs_q.png (drawn by src/outputs/rings_summary.c before
 * the page) embedded when present. A joint posterior's member names the rings only (q,
 * first slot): its section lists them. Numbers for a person: util/numfmt.h. */
#include "io/html_text.h"
#include "io/report_html.h"
#include "util/files.h"
#include "util/numfmt.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* a number member, NaN when absent or null */
static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* the angles of slots [first, first + n) of the joined data */
static void put_angles(xf_html *h, const xf_dataset *ds, int first, int n)
{
	if (!ds || !ds->phi_deg || first < 0 || n <= 0 || first + n > ds->n_phi) {
		xf_html_putf(h, "%d", n > 0 ? n : 0);
		return;
	}
	xf_html_putf(h, "%d:", n);
	for (int a = first; a < first + n; a++)
		xf_html_putf(h, " %.2f&deg;", ds->phi_deg[a]);
}

/* the free parameters: those whose information share is a number in the first ring */
static int free_names(const cJSON *list, const char **names, int max)
{
	const cJSON *share =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 0), "information_share");
	int n = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, share)
	{
		if (n < max && cJSON_IsNumber(c) && c->string)
			names[n++] = c->string;
	}
	return n;
}

static void put_head(xf_html *h, const char **names, int np)
{
	xf_html_put(h, "<table class=\"rings\">\n<thead><tr><th rowspan=\"2\">q (1/&Aring;)</th>"
		       "<th rowspan=\"2\">angles</th><th rowspan=\"2\">&chi;&sup2; at the joint "
		       "estimate</th>");
	xf_html_putf(h, "<th colspan=\"%d\">information share</th>", np);
	xf_html_putf(h, "<th colspan=\"%d\">own fit (1 sd)</th>", np);
	xf_html_put(h, "<th rowspan=\"2\">sd from the others' joint fit</th>"
		       "<th rowspan=\"2\">check</th></tr>\n<tr>");
	for (int pass = 0; pass < 2; pass++)
		for (int p = 0; p < np; p++) {
			xf_html_put(h, "<th>");
			xf_html_text(h, names[p]);
			xf_html_put(h, "</th>");
		}
	xf_html_put(h, "</tr></thead>\n");
}

static void put_ring_row(xf_html *h, const cJSON *r, const char **names, int np,
			 const xf_dataset *ds, int first)
{
	const cJSON *share = cJSON_GetObjectItemCaseSensitive(r, "information_share");
	const cJSON *own = cJSON_GetObjectItemCaseSensitive(r, "own_fit");
	const cJSON *loo = cJSON_GetObjectItemCaseSensitive(r, "leave_one_out");
	int flagged = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(loo, "flagged"));
	int n_angles = (int)num(r, "n_angles");
	xf_html_putf(h, "<tr%s><td class=\"num\">", flagged ? " class=\"flagged\"" : "");
	xf_html_value(h, num(r, "q"), NAN);
	xf_html_put(h, "</td><td>");
	put_angles(h, ds, first, n_angles);
	xf_html_put(h, "</td><td class=\"num\">");
	xf_html_value(h, num(r, "chi_squared"), NAN);
	xf_html_put(h, "</td>");
	for (int p = 0; p < np; p++) {
		double s = num(share, names[p]);
		if (isfinite(s))
			xf_html_putf(h, "<td class=\"num\">%.2f</td>", s);
		else
			xf_html_put(h, "<td class=\"num\">&mdash;</td>");
	}
	for (int p = 0; p < np; p++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(own, names[p]);
		xf_html_put(h, "<td class=\"num\">");
		xf_html_pm(h, num(v, "value"), num(v, "uncertainty"));
		xf_html_put(h, "</td>");
	}
	double z = num(loo, "max_sd_from_others");
	const cJSON *param = cJSON_GetObjectItemCaseSensitive(loo, "parameter");
	xf_html_put(h, "<td class=\"num\">");
	if (isfinite(z)) {
		xf_html_putf(h, "%.1f", z);
		if (cJSON_IsString(param) && *param->valuestring) {
			xf_html_put(h, " (");
			xf_html_text(h, param->valuestring);
			xf_html_put(h, ")");
		}
	} else {
		xf_html_put(h, "&mdash;");
	}
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(own, "status");
	const cJSON *skip = cJSON_GetObjectItemCaseSensitive(loo, "not_compared");
	/* a ring whose own fit is no measurement is not compared (adr/0066 addendum) */
	if (cJSON_IsString(skip) && *skip->valuestring)
		xf_html_put(h, "</td><td>not compared");
	else
		xf_html_put(h, flagged ? "</td><td class=\"failed\"><strong>FLAGGED</strong>"
				       : "</td><td>agrees");
	xf_fit_status own_status;
	if (cJSON_IsString(status) && (xf_fit_status_parse(status->valuestring, &own_status) ||
				       own_status != XF_STATUS_CONVERGED)) {
		xf_html_put(h, "; own fit ");
		xf_html_text(h, status->valuestring);
	}
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(r, "informs_physical_parameters")))
		xf_html_put(h, "; <strong>informs no physical parameter</strong>");
	xf_html_put(h, "</td></tr>\n");
}

/* The rings that inform no physical parameter, named with what to do (adr/0066
 * addendum). */
static void put_uninformed(xf_html *h, const cJSON *root)
{
	const cJSON *rings = cJSON_GetObjectItemCaseSensitive(root, "rings"), *r;
	int k = 0;
	cJSON_ArrayForEach(r, rings)
	{
		if (!cJSON_IsFalse(
			    cJSON_GetObjectItemCaseSensitive(r, "informs_physical_parameters")))
			continue;
		xf_html_put(h, k++ ? ", " : "<strong>Informing no physical parameter</strong>: q ");
		xf_html_value(h, num(r, "q"), NAN);
	}
	if (k)
		xf_html_put(h, " 1/&Aring; (largest information share below 1 %): the others carry "
			       "the shared parameters; its own fit is no measurement and is not "
			       "compared. It can be left out (a <code>wavevector_q</code> list). ");
}

/* the check's verdict in one sentence */
static void put_verdict(xf_html *h, const cJSON *root, int n)
{
	const cJSON *flagged = cJSON_GetObjectItemCaseSensitive(root, "flagged_q");
	double limit = num(root, "flag_threshold_sd");
	int n_flagged = cJSON_GetArraySize(flagged);
	xf_html_putf(h,
		     "<p>%d rings fitted jointly: the physical parameters shared, contrast "
		     "and offset per ring. ",
		     n);
	put_uninformed(h, root);
	double pair = num(root, "pair_sd_apart");
	if (n == 2 || isfinite(pair)) {
		double z = pair;
		xf_html_putf(h,
			     "The two %s stand %.1f sd apart%s (two rings cannot say which "
			     "is off).</p>\n",
			     n == 2 ? "rings" : "rings with a usable own fit", z,
			     z > limit ? ", <strong class=\"failed\">they disagree</strong>"
				       : ", within the limit");
		return;
	}
	/* the verdict is the χ² increase of sharing (adr/0074) */
	double rate = num(root, "flag_false_alarm_rate");
	if (n_flagged == 0) {
		xf_html_putf(h,
			     "Every ring agrees with the others: no ring's &chi;&sup2; rises "
			     "beyond chance when it shares their parameters (false-alarm rate "
			     "%g).</p>\n",
			     rate);
		return;
	}
	xf_html_put(h, "<strong class=\"failed\">Flagged</strong> (its &chi;&sup2; rises "
		       "beyond chance when it shares the others' parameters): q");
	const cJSON *q;
	int k = 0;
	cJSON_ArrayForEach(q, flagged)
	{
		xf_html_put(h, k++ ? ", " : " ");
		xf_html_value(h, cJSON_IsNumber(q) ? q->valuedouble : NAN, NAN);
	}
	xf_html_put(h, " 1/&Aring;. The joint result above still holds every ring; refit "
		       "without a flagged ring (a <code>wavevector_q</code> list) once you know "
		       "why it differs.</p>\n");
}

static int put_figure(xf_html *h, const char *dir, xf_error *err)
{
	char path[PATH_MAX];
	struct stat st;
	if (xf_path_join(path, sizeof path, dir, "params_vs_q.png", err) != 0)
		return err->code;
	if (stat(path, &st) != 0) /* not drawn: --no-plots, or its warning in run.log */
		return 0;
	return xf_report_html_embed_png(h, path,
					"params_vs_q.png: each ring's own fit ± 1 sd against q, "
					"the joint fit as a band",
					err);
}

/* a joint NLSQ: the table of rings */
static int put_nlsq_rings(xf_html *h, const char *dir, const cJSON *root, const xf_dataset *ds,
			  xf_error *err)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "rings");
	int n = cJSON_GetArraySize(list);
	const char *names[XF_N_PHYS];
	int np = free_names(list, names, XF_N_PHYS);
	put_verdict(h, root, n);
	put_head(h, names, np);
	int first = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, list)
	{
		put_ring_row(h, r, names, np, ds, first);
		first += (int)num(r, "n_angles");
	}
	xf_html_put(h, "</table>\n<p>&chi;&sup2; at the joint estimate: each ring's part of "
		       "the joint &chi;&sup2;. Information share: the ring's part of the diagonal "
		       "of J<sup>T</sup>J on that parameter (which ring informs what). Own fit: "
		       "the ring fitted alone. Check: the largest |&Delta;| / "
		       "sqrt(sd<sub>ring</sub>&sup2; + sd<sub>others</sub>&sup2;) over the "
		       "parameters between the ring's own fit and the joint fit of the other "
		       "rings (where it differs most). The verdict: the rise of &chi;&sup2; when "
		       "the ring must share the others' parameters, against chance (a "
		       "chi-square); the least likely beyond the false-alarm rate is flagged and "
		       "set aside, and the rest are judged again (docs/user-guide.md, "
		       "adr/0074).</p>\n");
	return put_figure(h, dir, err);
}

/* a joint posterior: q, angles and first slot of each ring */
static void put_cmc_rings(xf_html *h, const cJSON *root, const xf_dataset *ds)
{
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "q");
	const cJSON *first = cJSON_GetObjectItemCaseSensitive(root, "first_slot");
	int n = cJSON_GetArraySize(q);
	xf_html_putf(h,
		     "<p>The posterior of %d rings fitted jointly: the physical parameters "
		     "shared, contrast and offset per ring (the per-ring &chi;&sup2;, shares "
		     "and consistency check are in the joint NLSQ's report, "
		     "<code>nlsq_joint/report.html</code>).</p>\n<table class=\"rings\">\n"
		     "<thead><tr><th>q (1/&Aring;)</th><th>angles</th><th>first slot</th>"
		     "</tr></thead>\n",
		     n);
	for (int k = 0; k < n; k++) {
		const cJSON *s = cJSON_GetArrayItem(first, k),
			    *next = cJSON_GetArrayItem(first, k + 1);
		int f = cJSON_IsNumber(s) ? s->valueint : -1;
		int end = cJSON_IsNumber(next) ? next->valueint : ds ? ds->n_phi : f;
		xf_html_put(h, "<tr><td class=\"num\">");
		const cJSON *qk = cJSON_GetArrayItem(q, k);
		xf_html_value(h, cJSON_IsNumber(qk) ? qk->valuedouble : NAN, NAN);
		xf_html_put(h, "</td><td>");
		put_angles(h, ds, f, end - f);
		xf_html_putf(h, "</td><td class=\"num\">%d</td></tr>\n", f);
	}
	xf_html_put(h, "</table>\n");
}

int xf_report_rings_section(xf_html *h, const char *dir, const char *rings_json,
			    const xf_dataset *ds, xf_error *err)
{
	cJSON *root = cJSON_Parse(rings_json);
	if (!root) /* ours, written just before: a parse failure is memory */
		return xf_fail(err, XF_ERR_NOMEM, "out of memory reading the rings' record");
	xf_html_put(h, "<h2>Rings</h2>\n");
	int rc = 0;
	if (cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(root, "rings")))
		rc = put_nlsq_rings(h, dir, root, ds, err);
	else
		put_cmc_rings(h, root, ds);
	cJSON_Delete(root);
	return rc;
}
