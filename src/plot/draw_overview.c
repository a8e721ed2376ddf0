/* draw_overview.c — overview.png: the fit at a glance. The status and the quality grade
 * with its reasons, per-angle contrast and offset against φ with error bars, the c2 cut
 * against lag (data points, fit lines) for each angle, and the fitted parameters with
 * uncertainties and the fit quality as text. */
#include "plot/plot_internal.h"
#include "util/numfmt.h"

#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* at most XF_PLOT_MAX_CURVES angles (plot_internal.h) get their own colour in the lag
 * panel (a subset, evenly spread over φ, is drawn beyond that: more curves are
 * unreadable); the angle pages are theirs by default (adr/0059) */
/* data markers per curve, log-spaced in lag */
#define XF_PLOT_MARKERS	       40
#define XF_PLOT_FIRST_COLOUR   16
#define XF_PLOT_QUALITY_COLOUR 15  /* cmap0 slot of the quality banner */
#define XF_PLOT_QUALITY_CHARS  110 /* per banner line; beyond two lines cut with "…" */

static const unsigned char palette[XF_PLOT_MAX_CURVES][3] = {
	{ 31, 119, 180 }, { 255, 127, 14 },  { 44, 160, 44 },	{ 214, 39, 40 },  { 148, 103, 189 },
	{ 140, 86, 75 },  { 227, 119, 194 }, { 127, 127, 127 }, { 188, 189, 34 }, { 23, 190, 207 },
};

static void black(void)
{
	plcol0(1);
}

static void range_of(const double *v, const double *u, int n, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int k = 0; k < n; k++) {
		double e = u && isfinite(u[k]) ? u[k] : 0.0;
		if (!isfinite(v[k]))
			continue;
		if (v[k] - e < *lo)
			*lo = v[k] - e;
		if (v[k] + e > *hi)
			*hi = v[k] + e;
	}
	if (!isfinite(*lo) || !isfinite(*hi)) {
		*lo = 0.0;
		*hi = 1.0;
	}
	double pad = 0.15 * (*hi - *lo);
	if (pad <= 1e-9 * fabs(*hi) || pad == 0.0)
		pad = fabs(*hi) > 0 ? 0.02 * fabs(*hi) : 0.05;
	*lo -= pad;
	*hi += pad;
}

/* the φ extent of the slots (one ring: ascending, its first and last) */
static void phi_extent(const xf_plot_src *src, double *lo, double *hi)
{
	int n = src->n_phi;
	*lo = src->phi_deg[0];
	*hi = src->phi_deg[n - 1];
	for (int k = 0; src->slot_q && k < n; k++) {
		*lo = fmin(*lo, src->phi_deg[k]);
		*hi = fmax(*hi, src->phi_deg[k]);
	}
}

/* error bars and markers of slots [first, first + n) in the current colour */
static void per_angle_points(const xf_plot_src *src, const double *v, const double *u, int first,
			     int n, double *x, double *ylo, double *yhi)
{
	for (int k = 0; k < n; k++) {
		double e = u && isfinite(u[first + k]) ? u[first + k] : 0.0;
		x[k] = src->phi_deg[first + k];
		ylo[k] = v[first + k] - e;
		yhi[k] = v[first + k] + e;
	}
	plwidth(2.0);
	plerry(n, x, ylo, yhi);
	plssym(0.0, xf_plot_text_scale(1.6));
	plpoin(n, x, v + first, 17);
	plwidth(1.0);
}

/* values against φ; several rings (a joint fit) each in its colour, the lag panel's
 * palette in ring order */
static void per_angle_panel(const xf_plot_src *src, const double *v, const double *u, double x0,
			    double x1, double y0, double y1, const char *title)
{
	int n = src->n_phi;
	double lo, hi, phi_lo, phi_hi;
	if (!v)
		return;
	range_of(v, u, n, &lo, &hi);
	phi_extent(src, &phi_lo, &phi_hi);
	black();
	xf_plot_phi_frame(x0, x1, y0, y1, phi_lo, phi_hi, lo, hi, title);
	plcol0(XF_PLOT_FIRST_COLOUR);
	/* x, y − u, y + u per angle; without memory the panel keeps its frame only */
	double *x = malloc(3 * (size_t)(n > 0 ? n : 1) * sizeof *x);
	if (!x)
		return;
	double *ylo = x + (n > 0 ? n : 1), *yhi = ylo + (n > 0 ? n : 1);
	for (int first = 0, count = n; first < n; first += count) {
		int ring = xf_plot_slot_ring(src, first, &first, &count);
		plcol0(XF_PLOT_FIRST_COLOUR + ring % XF_PLOT_MAX_CURVES);
		per_angle_points(src, v, u, first, count, x, ylo, yhi);
	}
	black();
	free(x);
}

/* angles drawn in the lag panel: all, or an even spread of XF_PLOT_MAX_CURVES */
int xf_plot_chosen_angles(int n_phi, int *idx)
{
	if (n_phi <= XF_PLOT_MAX_CURVES) {
		for (int k = 0; k < n_phi; k++)
			idx[k] = k;
		return n_phi;
	}
	for (int k = 0; k < XF_PLOT_MAX_CURVES; k++)
		idx[k] = (int)lround((double)k * (n_phi - 1) / (XF_PLOT_MAX_CURVES - 1));
	return XF_PLOT_MAX_CURVES;
}

/* gap between the lag axes and their legend, in the axes' normalized width */
#define LEGEND_X_OFFSET 0.02

static xf_plot_overview_boxes last_boxes;

/* The legend sits right of the axes (PL_POSITION_RIGHT | OUTSIDE), centred in height;
 * pllegend gives its size in the axes' normalized units. */
static void record_layout(double x0, double x1, double y0, double y1, double lw, double lh)
{
	last_boxes.lag_axes = (xf_plot_box){ x0, x1, y0, y1 };
	double left = x0 + (1.0 + LEGEND_X_OFFSET) * (x1 - x0);
	double mid = 0.5 * (y0 + y1), half = 0.5 * lh * (y1 - y0);
	last_boxes.legend = (xf_plot_box){ left, left + lw * (x1 - x0), mid - half, mid + half };
}

xf_plot_overview_boxes xf_plot_overview_layout(void)
{
	return last_boxes;
}

static void lag_panel(const xf_plot_src *src, const xf_plot_cuts *cuts, double x0, double x1,
		      double y0, double y1)
{
	int nl = cuts->n_lags;
	if (nl < 1)
		return;
	int idx[XF_PLOT_MAX_CURVES];
	int n_curves = xf_plot_lag_angles(src, idx);
	double lo = INFINITY, hi = -INFINITY;
	for (int c = 0; c < n_curves; c++)
		for (int k = 0; k < nl; k++) {
			double d = cuts->data[(size_t)idx[c] * nl + k];
			double f = cuts->fit[(size_t)idx[c] * nl + k];
			if (isfinite(d)) {
				lo = fmin(lo, d);
				hi = fmax(hi, d);
			}
			if (isfinite(f)) {
				lo = fmin(lo, f);
				hi = fmax(hi, f);
			}
		}
	if (!isfinite(lo)) {
		lo = 0.0;
		hi = 1.0;
	}
	double pad = hi > lo ? 0.06 * (hi - lo) : 0.01;
	double xlo = log10(src->dt_s), xhi = log10(src->dt_s * nl);
	if (xhi <= xlo)
		xhi = xlo + 1.0;
	plvpor(x0, x1, y0, y1);
	plwind(xlo, xhi, lo - pad, hi + pad);
	black();
	xf_plot_text(0.9);
	plbox("bcnstlg", 0.0, 0, "bcnstvg", 0.0, 0);
	xf_pl_lab("lag t#d2#u − t#d1#u (s)", "mean c#d2#u(t, t + lag)");
	xf_plot_text(1.1);
	xf_pl_mtex("t", 1.0, 0.5, 0.5, "c#d2#u against lag: data (points), fit (lines)");
	double *lx = malloc(2 * (size_t)nl * sizeof *lx);
	if (!lx)
		return;
	double *ly = lx + nl;
	for (int k = 0; k < nl; k++)
		lx[k] = log10(src->dt_s * (k + 1));
	PLINT opt[XF_PLOT_MAX_CURVES], colours[XF_PLOT_MAX_CURVES], styles[XF_PLOT_MAX_CURVES];
	PLINT sym_numbers[XF_PLOT_MAX_CURVES];
	PLFLT widths[XF_PLOT_MAX_CURVES], sym_scales[XF_PLOT_MAX_CURVES];
	char text_buf[XF_PLOT_MAX_CURVES][48];
	const char *texts[XF_PLOT_MAX_CURVES], *symbols[XF_PLOT_MAX_CURVES];
	for (int c = 0; c < n_curves; c++) {
		int a = idx[c];
		plcol0(XF_PLOT_FIRST_COLOUR + c);
		/* data: log-spaced markers so short lags are not drowned by long ones */
		double mx[XF_PLOT_MARKERS], my[XF_PLOT_MARKERS];
		int nm = 0, last = -1;
		for (int m = 0; m < XF_PLOT_MARKERS; m++) {
			int k = (int)floor(pow((double)nl, (double)m / (XF_PLOT_MARKERS - 1))) - 1;
			if (k <= last || k >= nl)
				continue;
			last = k;
			double d = cuts->data[(size_t)a * nl + k];
			if (!isfinite(d))
				continue;
			mx[nm] = lx[k];
			my[nm] = d;
			nm++;
		}
		plssym(0.0, xf_plot_text_scale(1.1));
		plpoin(nm, mx, my, 4);
		int nf = 0;
		for (int k = 0; k < nl; k++) {
			double f = cuts->fit[(size_t)a * nl + k];
			if (isfinite(f)) {
				lx[nf] = log10(src->dt_s * (k + 1));
				ly[nf++] = f;
			}
		}
		plwidth(2.0);
		plline(nf, lx, ly);
		plwidth(1.0);
		for (int k = 0; k < nl; k++)
			lx[k] = log10(src->dt_s * (k + 1));
		opt[c] = PL_LEGEND_LINE | PL_LEGEND_SYMBOL;
		colours[c] = XF_PLOT_FIRST_COLOUR + c;
		styles[c] = 1;
		widths[c] = 2.0;
		sym_numbers[c] = 2;
		sym_scales[c] = xf_plot_text_scale(1.1);
		symbols[c] = "○";
		if (src->slot_q) /* several rings: the curve's ring too */
			snprintf(text_buf[c], sizeof text_buf[c], "q %.4g, φ %.1f°", src->slot_q[a],
				 src->phi_deg[a]);
		else
			snprintf(text_buf[c], sizeof text_buf[c], "φ = %.1f°", src->phi_deg[a]);
		texts[c] = text_buf[c];
	}
	black();
	PLFLT lw, lh;
	xf_plot_text(0.8);
	/* outside the axes, right of them: a legend never covers a curve */
	pllegend(&lw, &lh, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
		 PL_POSITION_RIGHT | PL_POSITION_OUTSIDE, LEGEND_X_OFFSET, 0.0, 0.08, 0, 1, 1, 0, 0,
		 n_curves, opt, 0.8, xf_plot_text_scale(0.85), 1.8, 0.0, colours, texts, NULL, NULL,
		 NULL, NULL, colours, styles, widths, colours, sym_scales, sym_numbers, symbols);
	xf_plot_text(1.0);
	record_layout(x0, x1, y0, y1, lw, lh);
	free(lx);
}

static void text_panel(const xf_plot_src *src, double x0, double x1, double y0, double y1)
{
	char line[512];
	double y = 0.97;
	const double step = 0.068;
	plvpor(x0, x1, y0, y1);
	plwind(0.0, 1.0, 0.0, 1.0);
	black();
	xf_plot_text(1.15);
	xf_pl_ptex(0.0, y, 1.0, 0.0, 0.0,
		   src->method ? "Posterior means (± 1 sd)" : "Fitted parameters (± 1σ)");
	y -= 1.3 * step;
	xf_plot_text(1.0);
	for (int k = 0; k < src->n_phys && src->values; k++, y -= step) {
		int fixed = src->is_fixed ? src->is_fixed[k] : 0;
		double u = src->uncertainties ? src->uncertainties[k] : NAN;
		const char *unit = src->units && src->units[k] ? src->units[k] : "";
		/* alpha, beta: no unit rather than the SI "1" a reader takes for a value */
		if (!strcmp(unit, "1"))
			unit = "";
		if (fixed)
			snprintf(line, sizeof line, "%s = %.6g  (fixed)   %s", src->names[k],
				 src->values[k], unit);
		else if (!isfinite(u))
			snprintf(line, sizeof line, "%s = %.6g  (undetermined)   %s", src->names[k],
				 src->values[k], unit);
		else {
			char pm[2 * XF_NUM_TEXT]; /* to the precision u supports (adr/0062) */
			xf_num_pm(src->values[k], u, " ± ", pm, sizeof pm);
			snprintf(line, sizeof line, "%s = %s   %s", src->names[k], pm, unit);
		}
		xf_pl_ptex(0.02, y, 1.0, 0.0, 0.0, line);
	}
	y -= 0.4 * step;
	if (src->method) {
		/* a posterior has no χ² minimum or iteration count: the caller says what
		 * matters instead (shards, draws) */
		for (int k = 0; k < 2; k++, y -= step)
			xf_pl_ptex(0.0, y, 1.0, 0.0, 0.0, src->run_text[k] ? src->run_text[k] : "");
	} else {
		snprintf(line, sizeof line, "status: %s (stop: %s), %d iterations", src->status,
			 src->stop_reason, src->iterations);
		xf_pl_ptex(0.0, y, 1.0, 0.0, 0.0, line);
		y -= step;
		if (isfinite(src->residual_sd))
			snprintf(line, sizeof line,
				 "residual sd = %.4g,  χ#u2#d (σ = 1) = %.6g (σ not given)",
				 src->residual_sd, src->chi_squared);
		else
			snprintf(line, sizeof line, "χ#u2#d = %.6g,  reduced χ#u2#d = %.6g",
				 src->chi_squared, src->reduced_chi_squared);
		xf_pl_ptex(0.0, y, 1.0, 0.0, 0.0, line);
		y -= step;
	}
	int first, count, n_rings = 1;
	for (int a = 0; src->slot_q && a < src->n_phi; a += count)
		n_rings = xf_plot_slot_ring(src, a, &first, &count) + 1;
	if (n_rings > 1) /* a joint fit: rings in ascending slot order */
		snprintf(line, sizeof line,
			 "mode %s,  %d rings q = %.5g … %.5g Å#u-1#d,  dt = %.4g s", src->mode_name,
			 n_rings, src->slot_q[0], src->slot_q[src->n_phi - 1], src->dt_s);
	else
		snprintf(line, sizeof line, "mode %s,  q = %.5g Å#u-1#d,  dt = %.4g s",
			 src->mode_name, src->q, src->dt_s);
	xf_pl_ptex(0.0, y, 1.0, 0.0, 0.0, line);
	y -= step;
	snprintf(line, sizeof line, "N = %d frames,  %d angle%s,  %lld fitted points",
		 src->n_frames, src->n_phi, src->n_phi == 1 ? "" : "s", src->n_points);
	xf_pl_ptex(0.0, y, 1.0, 0.0, 0.0, line);
}

/* The quality grade under the title, coloured (green good, orange marginal, red poor),
 * with its reasons after it, wrapped over at most two lines. */
static void quality_banner(const xf_plot_src *src)
{
	if (!src->quality_known)
		return;
	int good = src->quality == XF_QUALITY_GOOD, poor = src->quality == XF_QUALITY_POOR;
	unsigned char r = good	 ? 30
			  : poor ? 200
				 : 220,
		      g = good	 ? 140
			  : poor ? 30
				 : 120,
		      b = good	 ? 50
			  : poor ? 30
				 : 0;
	char text[2 * XF_PLOT_QUALITY_CHARS + 64];
	int len = snprintf(text, sizeof text, "quality: %s", xf_quality_level_name(src->quality));
	const char *reasons = src->quality_reasons ? src->quality_reasons : "";
	if (*reasons)
		len += snprintf(text + len, sizeof text - (size_t)len, " — ");
	for (const char *p = reasons; *p && len < (int)sizeof text - 8; p++) {
		if (*p == '\n') {
			text[len++] = ';';
			text[len++] = ' ';
		} else {
			text[len++] = *p;
		}
	}
	text[len] = '\0';
	if (len > 2 * XF_PLOT_QUALITY_CHARS)
		strcpy(text + 2 * XF_PLOT_QUALITY_CHARS - 3, "…");
	/* break the first line at the last space that fits */
	char line1[XF_PLOT_QUALITY_CHARS + 8];
	const char *rest = "";
	if ((int)strlen(text) > XF_PLOT_QUALITY_CHARS) {
		int cut = XF_PLOT_QUALITY_CHARS;
		while (cut > 0 && text[cut] != ' ')
			cut--;
		if (cut == 0)
			cut = XF_PLOT_QUALITY_CHARS;
		snprintf(line1, sizeof line1, "%.*s", cut, text);
		rest = text + cut + (text[cut] == ' ');
	} else {
		snprintf(line1, sizeof line1, "%s", text);
	}
	plscol0(XF_PLOT_QUALITY_COLOUR, r, g, b);
	plcol0(XF_PLOT_QUALITY_COLOUR);
	xf_plot_text(0.95);
	xf_pl_ptex(0.5, 0.93, 1.0, 0.0, 0.5, line1);
	if (*rest)
		xf_pl_ptex(0.5, 0.905, 1.0, 0.0, 0.5, rest);
	black();
}

void xf_plot_draw_overview(const xf_plot_src *src, const xf_plot_cuts *cuts)
{
	plscmap0n(XF_PLOT_FIRST_COLOUR + XF_PLOT_MAX_CURVES);
	plscol0(0, 255, 255, 255);
	plscol0(1, 0, 0, 0);
	for (int c = 0; c < XF_PLOT_MAX_CURVES; c++)
		plscol0(XF_PLOT_FIRST_COLOUR + c, palette[c][0], palette[c][1], palette[c][2]);
	pladv(0);
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, 1.0, 0.0, 1.0);
	black();
	char title[256];
	snprintf(title, sizeof title, "xpcsfit %s, %s: %s (%s)", src->method ? src->method : "NLSQ",
		 src->mode_name, src->status, src->stop_reason);
	xf_plot_text(1.5);
	xf_pl_ptex(0.5, 0.965, 1.0, 0.0, 0.5, title);
	quality_banner(src);
	xf_plot_text(1.0);
	last_boxes = (xf_plot_overview_boxes){ .contrast = { 0.08, 0.46, 0.56, 0.86 },
					       .offset = { 0.58, 0.96, 0.56, 0.86 },
					       .text = { 0.58, 0.98, 0.05, 0.46 } };
	const xf_plot_box *b = &last_boxes.contrast;
	/* several rings: a colour per ring, said in the titles */
	const char *by_ring = src->slot_q ? ", a colour per ring (ascending q)" : "";
	snprintf(title, sizeof title, "per-angle contrast (± 1σ)%s", by_ring);
	per_angle_panel(src, src->contrast, src->contrast_unc, b->x0, b->x1, b->y0, b->y1, title);
	b = &last_boxes.offset;
	snprintf(title, sizeof title, "per-angle offset (± 1σ)%s", by_ring);
	per_angle_panel(src, src->offset, src->offset_unc, b->x0, b->x1, b->y0, b->y1, title);
	/* the lag panel leaves room on its right for its legend (outside the axes) */
	lag_panel(src, cuts, 0.07, 0.41, 0.07, 0.45);
	b = &last_boxes.text;
	text_panel(src, b->x0, b->x1, b->y0, b->y1);
}
