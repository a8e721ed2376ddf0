/* plot_rings.c — params_vs_q.png of a per-ring run (adr/0065): one panel per free
 * physical parameter, its value at each fitted ring against q with ±1 sd error bars;
 * failed rings are drawn as open marks (their values are not trusted), rings without a
 * result are left out. Uses the PLplot session of plsession.c. */
#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <string.h>

#include "plot/plot_rings.h"
#include "plot/plot_internal.h"

#define RINGS_PANEL_W	  640 /* nominal pixels per panel */
#define RINGS_PANEL_H	  420
#define RINGS_MAX_COLUMNS 3

typedef struct rings_plot {
	const xf_ring_record *r;
	int n;
	int params[XF_N_PHYS]; /* the panels: free physical parameters of the first ring */
	int n_panels;
	int columns, rows;
	const xf_ring_record *head;
} rings_plot;

static void value_range(const rings_plot *p, int k, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int i = 0; i < p->n; i++) {
		const xf_ring_record *x = &p->r[i];
		if (!x->written || !isfinite(x->values[k]))
			continue;
		double s = isfinite(x->uncertainties[k]) ? x->uncertainties[k] : 0.0;
		*lo = fmin(*lo, x->values[k] - s);
		*hi = fmax(*hi, x->values[k] + s);
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

static void panel(const rings_plot *p, int slot)
{
	int k = p->params[slot];
	int col = slot % p->columns, row = slot / p->columns;
	double w = 1.0 / p->columns, h = 1.0 / p->rows;
	plvpor(col * w + 0.12 * w, (col + 1) * w - 0.04 * w, 1.0 - (row + 1) * h + 0.14 * h,
	       1.0 - row * h - 0.12 * h);
	double qlo, qhi, lo, hi;
	q_range(p, &qlo, &qhi);
	value_range(p, k, &lo, &hi);
	plwind(qlo, qhi, lo, hi);
	plcol0(1);
	xf_plot_text(0.8);
	plbox("bcnst", 0.0, 0, "bcnstv", 0.0, 0);
	for (int i = 0; i < p->n; i++) {
		const xf_ring_record *x = &p->r[i];
		if (!x->written || !isfinite(x->values[k]))
			continue;
		double q = x->q_per_A, v = x->values[k];
		double s = isfinite(x->uncertainties[k]) ? x->uncertainties[k] : 0.0;
		double ylo = v - s, yhi = v + s;
		plcol0(x->failed ? 2 : 9);
		plwidth(2.0);
		plerry(1, &q, &ylo, &yhi);
		plwidth(1.0);
		/* a failed ring: an open mark, so it survives grey print */
		plstring(1, &q, &v, x->failed ? "○" : "●");
	}
	plcol0(1);
	xf_plot_text(0.9);
	plmtex("b", 3.0, 0.5, 0.5, "q (1/Å)");
	plmtex("t", 1.0, 0.5, 0.5, p->head->names[k]);
}

static void draw(void *ctx)
{
	const rings_plot *p = ctx;
	pladv(0);
	plscol0(1, 0, 0, 0); /* axes and text in black */
	plscol0(9, 31, 119, 180);
	plscol0(2, 214, 39, 40);
	for (int s = 0; s < p->n_panels; s++)
		panel(p, s);
}

int xf_plot_rings(const char *path, const xf_ring_record *r, int n, xf_error *err)
{
	rings_plot p = { r, n, { 0 }, 0, 1, 1, NULL };
	for (int i = 0; i < n && !p.head; i++)
		if (r[i].written)
			p.head = &r[i];
	if (!p.head || n < 1)
		return 0; /* no ring has values: nothing to draw */
	for (int k = 0; k < p.head->n_phys; k++)
		if (!p.head->is_fixed[k])
			p.params[p.n_panels++] = k;
	if (!p.n_panels)
		return 0;
	p.columns = p.n_panels < RINGS_MAX_COLUMNS ? p.n_panels : RINGS_MAX_COLUMNS;
	p.rows = (p.n_panels + p.columns - 1) / p.columns;
	return xf_pl_file(path, p.columns * RINGS_PANEL_W, p.rows * RINGS_PANEL_H, draw, &p, err);
}
