/* plot_rings.c — params_vs_q.png of a per-ring run (adr/0065) and of a joint fit
 * (adr/0066): one panel per free physical parameter, its value at each ring against q
 * with ±1 sd error bars, the y axis in the parameter's unit. Failed rings are open marks
 * (their values are not trusted), rings flagged by the joint fit's check red diamonds,
 * rings without a result left out. The reading aid: the joint fit as a band (value ±
 * sd), or for a per-ring run the weighted mean of the converged rings as a dashed line
 * (xf_rings_constancy, also on the rings' page). A key runs along the top. Uses the
 * PLplot session of plsession.c. */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <string.h>

#include "plot/plot_rings.h"
#include "plot/plot_internal.h"

#define RINGS_PANEL_W	  640 /* nominal pixels per panel */
#define RINGS_PANEL_H	  420
#define RINGS_KEY_H	  44 /* one line of the key along the top */
#define RINGS_MAX_COLUMNS 3

/* colours (cmap0 slots set in draw) */
#define COL_INK	    1  /* axes, text, failed rings */
#define COL_FLAG    2  /* flagged rings */
#define COL_RING    9  /* rings' own fits */
#define COL_BAND    10 /* the joint band's fill */
#define COL_CENTRAL 11 /* the joint value, the weighted mean */

typedef struct rings_plot {
	const xf_ring_record *r;
	int n;
	const xf_ring_band *band; /* NULL: per-ring run, the weighted mean drawn */
	int params[XF_N_PHYS];	  /* the panels: free physical parameters of the first ring */
	int n_panels;
	int columns, rows;
	double key_frac; /* the key's height, a fraction of the page */
	int any_failed, any_flagged;
	const xf_ring_record *head;
} rings_plot;

static int usable_sd(double s)
{
	return isfinite(s) && s > 0.0;
}

void xf_rings_constancy(const xf_ring_record *r, int n, int k, xf_ring_constancy *out)
{
	double sw = 0.0, swv = 0.0;
	*out = (xf_ring_constancy){ 0, NAN, NAN, NAN, NAN, NAN };
	for (int i = 0; i < n; i++) { /* ring order: fixed bits */
		const xf_ring_record *x = &r[i];
		if (!x->written || x->failed || x->flagged || k >= x->n_phys ||
		    !isfinite(x->values[k]) || !usable_sd(x->uncertainties[k]))
			continue;
		double w = 1.0 / (x->uncertainties[k] * x->uncertainties[k]);
		sw += w;
		swv += w * x->values[k];
		out->n++;
	}
	if (out->n == 0)
		return;
	out->mean = swv / sw;
	out->sd = 1.0 / sqrt(sw);
	if (out->n < 2)
		return;
	double chi2 = 0.0;
	for (int i = 0; i < n; i++) {
		const xf_ring_record *x = &r[i];
		if (!x->written || x->failed || x->flagged || k >= x->n_phys ||
		    !isfinite(x->values[k]) || !usable_sd(x->uncertainties[k]))
			continue;
		double z = (x->values[k] - out->mean) / x->uncertainties[k];
		chi2 += z * z;
	}
	out->chi2 = chi2;
	out->chi2_per_dof = chi2 / (out->n - 1);
	out->p = gsl_cdf_chisq_Q(chi2, (double)(out->n - 1));
}

/* the central line of panel k and its half-width: the joint band, or the weighted mean
 * (no width: a line); 0 when there is none */
static int central(const rings_plot *p, int k, double *v, double *s)
{
	if (p->band) {
		*v = p->band->value[k];
		*s = usable_sd(p->band->sd[k]) ? p->band->sd[k] : 0.0;
		return isfinite(*v);
	}
	xf_ring_constancy c;
	xf_rings_constancy(p->r, p->n, k, &c);
	*v = c.mean;
	*s = 0.0;
	return c.n >= 2 && isfinite(c.mean);
}

/* The y range of panel k: the rings with a result ± sd and the central line, padded. A
 * ring that did not converge widens it only when no ring converged: its value and sd
 * (D0 100 ± 1200 against rings at 3000 ± 90) would squash the rings that say something;
 * it is drawn at the panel's edge instead (draw_ring). */
static void value_range(const rings_plot *p, int k, double *lo, double *hi)
{
	int any_good = 0;
	for (int i = 0; i < p->n; i++)
		any_good |= p->r[i].written && !p->r[i].failed && isfinite(p->r[i].values[k]);
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int i = 0; i < p->n; i++) {
		const xf_ring_record *x = &p->r[i];
		if (!x->written || !isfinite(x->values[k]) || (any_good && x->failed))
			continue;
		double s = isfinite(x->uncertainties[k]) ? x->uncertainties[k] : 0.0;
		*lo = fmin(*lo, x->values[k] - s);
		*hi = fmax(*hi, x->values[k] + s);
	}
	double v, s;
	if (central(p, k, &v, &s)) {
		*lo = fmin(*lo, v - s);
		*hi = fmax(*hi, v + s);
	}
	if (!(*lo <= *hi)) {
		*lo = 0.0;
		*hi = 1.0;
	}
	double pad = *hi > *lo ? 0.1 * (*hi - *lo) : (*hi != 0.0 ? 0.05 * fabs(*hi) : 1.0);
	*lo -= pad;
	*hi += pad;
}

static void q_range(const rings_plot *p, double *lo, double *hi)
{
	*lo = p->r[0].q_per_A;
	*hi = p->r[p->n - 1].q_per_A;
	double pad = *hi > *lo ? 0.1 * (*hi - *lo) : 0.05 * fabs(*lo);
	*lo -= pad;
	*hi += pad;
}

/* the joint band (filled, its value a line) or the dashed weighted mean */
static void draw_central(const rings_plot *p, int k, double qlo, double qhi)
{
	double v, s;
	if (!central(p, k, &v, &s))
		return;
	if (s > 0.0) {
		double fx[4] = { qlo, qhi, qhi, qlo }, fy[4] = { v - s, v - s, v + s, v + s };
		plcol0(COL_BAND);
		plfill(4, fx, fy);
	}
	double lx[2] = { qlo, qhi }, ly[2] = { v, v };
	plcol0(COL_CENTRAL);
	plwidth(2.0);
	pllsty(p->band ? 1 : 2);
	plline(2, lx, ly);
	pllsty(1);
	plwidth(1.0);
}

/* ring x in panel k, whose y window is [lo, hi]: a value outside it (only a ring that
 * did not converge can be, value_range) is an open triangle at the edge it lies beyond */
static void draw_ring(const xf_ring_record *x, int k, double lo, double hi)
{
	double q = x->q_per_A, v = x->values[k];
	double s = isfinite(x->uncertainties[k]) ? x->uncertainties[k] : 0.0;
	double ylo = fmax(v - s, lo), yhi = fmin(v + s, hi);
	int col = x->flagged ? COL_FLAG : x->failed ? COL_INK : COL_RING;
	plcol0(col);
	const char *mark = x->flagged ? "◆" : x->failed ? "○" : "●";
	double margin = 0.03 * (hi - lo);
	if (v > hi || v < lo) {
		mark = v > hi ? "△" : "▽";
		v = v > hi ? hi - margin : lo + margin;
	}
	plwidth(2.0);
	if (ylo < yhi)
		plerry(1, &q, &ylo, &yhi);
	plwidth(1.0);
	xf_plot_text(x->flagged ? 1.5 : 1.1);
	/* distinct shapes, not colours alone, so the marks survive grey print */
	plstring(1, &q, &v, mark);
}

/* "D0 (Å²/s^(1+α))", or the name alone for a dimensionless parameter */
static void axis_label(const char *name, char *buf, size_t size)
{
	const char *unit = xf_param_unit_text(name);
	if (*unit)
		snprintf(buf, size, "%s (%s)", name, unit);
	else
		snprintf(buf, size, "%s (no unit)", name);
}

static void panel(const rings_plot *p, int slot)
{
	int k = p->params[slot];
	int col = slot % p->columns, row = slot / p->columns;
	double w = 1.0 / p->columns, h = (1.0 - p->key_frac) / p->rows;
	double top = 1.0 - p->key_frac - row * h;
	plvpor(col * w + 0.16 * w, (col + 1) * w - 0.04 * w, top - h + 0.16 * h, top - 0.10 * h);
	double qlo, qhi, lo, hi;
	q_range(p, &qlo, &qhi);
	value_range(p, k, &lo, &hi);
	plwind(qlo, qhi, lo, hi);
	plsxax(6, 0); /* q as 0.004, not 4 with a ×10⁻³ aside */
	draw_central(p, k, qlo, qhi);
	plcol0(COL_INK);
	xf_plot_text(0.8);
	plbox("bcnst", 0.0, 0, "bcnstv", 0.0, 0);
	for (int i = 0; i < p->n; i++)
		if (p->r[i].written && isfinite(p->r[i].values[k]))
			draw_ring(&p->r[i], k, lo, hi);
	char label[96];
	axis_label(p->head->names[k], label, sizeof label);
	plcol0(COL_INK);
	xf_plot_text(0.9);
	xf_pl_mtex("b", 3.0, 0.5, 0.5, "q (1/Å)");
	xf_pl_mtex("l", 5.2, 0.5, 0.5, label);
	xf_plot_text(1.0);
	xf_pl_mtex("t", 1.0, 0.5, 0.5, p->head->names[k]);
}

/* the key: what each mark means, only the marks drawn; *cols their colours */
static int key_items(const rings_plot *p, const char **items, int *cols)
{
	int n = 0;
	items[n] = p->band ? "● each ring's own fit ± 1 sd" : "● each ring ± 1 sd";
	cols[n++] = COL_RING;
	items[n] = p->band ? "━ joint fit of all rings, band ± 1 sd"
			   : "- - weighted mean of the converged rings";
	cols[n++] = COL_CENTRAL;
	if (p->any_flagged) {
		items[n] = "◆ ring flagged by the consistency check";
		cols[n++] = COL_FLAG;
	}
	if (p->any_failed) {
		items[n] = "○ ring that did not converge (△ ▽: off the scale)";
		cols[n++] = COL_INK;
	}
	return n;
}

/* key items on one line of the key strip: about two per panel column */
static int key_per_line(const rings_plot *p)
{
	return p->columns >= 2 ? 2 * p->columns : 1;
}

static void key(const rings_plot *p)
{
	const char *items[4];
	int cols[4], n = key_items(p, items, cols), per = key_per_line(p);
	int lines = (n + per - 1) / per;
	if (per > n)
		per = n;
	plvpor(0.02, 0.98, 1.0 - p->key_frac, 1.0);
	plwind(0.0, 1.0, 0.0, 1.0);
	xf_plot_text(0.9);
	for (int i = 0; i < n; i++) {
		int line = i / per, at = i % per;
		plcol0(cols[i]);
		xf_pl_ptex((at + 0.5) / per, 1.0 - (line + 0.6) / lines, 1.0, 0.0, 0.5, items[i]);
	}
}

static void draw(void *ctx)
{
	const rings_plot *p = ctx;
	pladv(0);
	plscol0(COL_INK, 0, 0, 0);
	plscol0(COL_RING, 31, 119, 180);
	plscol0(COL_FLAG, 214, 39, 40);
	plscol0(COL_BAND, 255, 221, 170);
	plscol0(COL_CENTRAL, 230, 120, 0);
	for (int s = 0; s < p->n_panels; s++)
		panel(p, s);
	key(p);
}

int xf_plot_rings(const char *path, const xf_ring_record *r, int n, const xf_ring_band *band,
		  xf_error *err)
{
	rings_plot p = { r, n, band, { 0 }, 0, 1, 1, 0.0, 0, 0, NULL };
	for (int i = 0; i < n; i++) {
		if (r[i].written && !p.head)
			p.head = &r[i];
		p.any_failed |= r[i].written && r[i].failed;
		p.any_flagged |= r[i].written && r[i].flagged;
	}
	if (!p.head || n < 1)
		return 0; /* no ring has values: nothing to draw */
	for (int k = 0; k < p.head->n_phys; k++)
		if (!p.head->is_fixed[k])
			p.params[p.n_panels++] = k;
	if (!p.n_panels)
		return 0;
	p.columns = p.n_panels < RINGS_MAX_COLUMNS ? p.n_panels : RINGS_MAX_COLUMNS;
	p.rows = (p.n_panels + p.columns - 1) / p.columns;
	const char *items[4];
	int cols[4], n_items = key_items(&p, items, cols), per = key_per_line(&p);
	int key_h = RINGS_KEY_H * ((n_items + per - 1) / per);
	int height = p.rows * RINGS_PANEL_H + key_h;
	p.key_frac = (double)key_h / height;
	return xf_pl_file(path, p.columns * RINGS_PANEL_W, height, draw, &p, err);
}
