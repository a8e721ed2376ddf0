/* draw_data.c — the pages of `xpcsfit plot --config`: the selected data without a fit.
 * Per angle: the c2 map over (t1, t2), c2 along the diagonal against t (drift, beam
 * damage, a dropped frame show here), and c2(t1, t1 + lag) against lag for a few t1
 * (ageing shows as curves that differ). The overview: each angle's mean c2 against lag,
 * and per angle the short-lag excess over the long-lag level (≈ the contrast) and that
 * level (≈ the offset), so a bad angle stands out before any fit. Legends sit outside
 * the panels: they never cover data. */
#include "plot/plot_internal.h"

#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XF_DATA_T1_CURVES   4  /* c2 against lag: this many t1 */
#define XF_DATA_MAX_CURVES  10 /* overview lag panel: at most this many angles */
#define XF_DATA_FIRST_COLOR 16
#define XF_DATA_TAIL	    0.1 /* the long-lag level: the mean over the last 10% of lags */
/* The map is block-averaged to at most this many cells per side: each cell is one
 * polygon for the pngcairo device, and this page is meant to be drawn before every fit
 * (adr/0028: 23 angles x 1000 frames in seconds). */
#define XF_DATA_MAX_PIXELS 250

static const unsigned char palette[XF_DATA_MAX_CURVES][3] = {
	{ 31, 119, 180 }, { 255, 127, 14 },  { 44, 160, 44 },	{ 214, 39, 40 },  { 148, 103, 189 },
	{ 140, 86, 75 },  { 227, 119, 194 }, { 127, 127, 127 }, { 188, 189, 34 }, { 23, 190, 207 },
};

static void colours(void)
{
	plscmap0n(XF_DATA_FIRST_COLOR + XF_DATA_MAX_CURVES);
	plscol0(0, 255, 255, 255);
	plscol0(1, 0, 0, 0);
	for (int c = 0; c < XF_DATA_MAX_CURVES; c++)
		plscol0(XF_DATA_FIRST_COLOR + c, palette[c][0], palette[c][1], palette[c][2]);
}

/* finite range of v[0..n) widened by a margin; [0, 1] when nothing is finite */
static void range_of(const double *v, int n, double *lo, double *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int k = 0; k < n; k++)
		if (isfinite(v[k])) {
			*lo = fmin(*lo, v[k]);
			*hi = fmax(*hi, v[k]);
		}
	if (!isfinite(*lo)) {
		*lo = 0.0;
		*hi = 1.0;
	}
	double pad = *hi > *lo ? 0.06 * (*hi - *lo) : fabs(*hi) > 0 ? 0.01 * fabs(*hi) : 0.01;
	*lo -= pad;
	*hi += pad;
}

/* a panel frame in slot 1 or 2 of the angle page (pixel layout of draw_angle.c) */
static void slot_viewport(int slot)
{
	double x0 = slot * 720.0 + 110.0, x1 = slot * 720.0 + 690.0;
	plvpor(x0 / XF_PLOT_ANGLE_W, x1 / XF_PLOT_ANGLE_W, 85.0 / XF_PLOT_ANGLE_H,
	       575.0 / XF_PLOT_ANGLE_H);
}

/* a polyline of the finite points only */
static void line_finite(const double *x, const double *y, int n, double *bx, double *by)
{
	int m = 0;
	for (int k = 0; k < n; k++)
		if (isfinite(x[k]) && isfinite(y[k])) {
			bx[m] = x[k];
			by[m++] = y[k];
		}
	if (m > 1)
		plline(m, bx, by);
}

static void diagonal_panel(const xf_plot_src *src, const double *data, double *buf)
{
	int n = src->n_frames;
	double *t = buf, *y = buf + n, *bx = buf + 2 * n, *by = buf + 3 * n;
	for (int k = 0; k < n; k++) {
		t[k] = k * src->dt_s;
		y[k] = data[(size_t)k * n + k];
	}
	double lo, hi;
	range_of(y, n, &lo, &hi);
	slot_viewport(1);
	plwind(0.0, (n - 1) * src->dt_s, lo, hi);
	plcol0(1);
	xf_plot_text(0.9);
	plbox("bcnstg", 0.0, 0, "bcnstvg", 0.0, 0);
	xf_pl_lab("t (s)", "c#d2#u(t, t)");
	xf_plot_text(1.1);
	xf_pl_mtex("t", 1.2, 0.5, 0.5, "c#d2#u along the diagonal (corrected as fitted)");
	plcol0(XF_DATA_FIRST_COLOR);
	plwidth(2.0);
	line_finite(t, y, n, bx, by);
	plwidth(1.0);
	plcol0(1);
}

/* the t1 rows drawn against lag: 1, then spread up to N/2 (later rows have few lags) */
static int pick_t1(int n, int *t1)
{
	int m = 0;
	for (int c = 0; c < XF_DATA_T1_CURVES; c++) {
		int r = c == 0 ? 1 : (int)lround((double)(n / 2) * c / (XF_DATA_T1_CURVES - 1));
		if (r >= 1 && r < n - 1 && (m == 0 || r > t1[m - 1]))
			t1[m++] = r;
	}
	return m;
}

static void lag_rows_panel(const xf_plot_src *src, const double *data, double *buf)
{
	int n = src->n_frames, t1[XF_DATA_T1_CURVES];
	int m = pick_t1(n, t1);
	double *x = buf, *y = buf + n, *bx = buf + 2 * n, *by = buf + 3 * n;
	double lo = INFINITY, hi = -INFINITY;
	for (int c = 0; c < m; c++)
		for (int j = t1[c] + 1; j < n; j++) {
			double v = data[(size_t)t1[c] * n + j];
			if (isfinite(v)) {
				lo = fmin(lo, v);
				hi = fmax(hi, v);
			}
		}
	double ends[2] = { lo, hi };
	range_of(ends, 2, &lo, &hi);
	double xlo = log10(src->dt_s), xhi = log10(src->dt_s * (n - 2));
	if (!(xhi > xlo))
		xhi = xlo + 1.0;
	slot_viewport(2);
	plwind(xlo, xhi, lo, hi);
	plcol0(1);
	xf_plot_text(0.9);
	plbox("bcnstlg", 0.0, 0, "bcnstvg", 0.0, 0);
	xf_pl_lab("lag t#d2#u − t#d1#u (s)", "c#d2#u(t#d1#u, t#d1#u + lag)");
	xf_plot_text(1.1);
	xf_pl_mtex("t", 2.6, 0.5, 0.5, "c#d2#u against lag for a few t#d1#u");
	xf_plot_text(0.85);
	for (int c = 0; c < m; c++) {
		int len = 0;
		for (int j = t1[c] + 1; j < n; j++, len++) {
			x[len] = log10((j - t1[c]) * src->dt_s);
			y[len] = data[(size_t)t1[c] * n + j];
		}
		plcol0(XF_DATA_FIRST_COLOR + c);
		plwidth(2.0);
		line_finite(x, y, len, bx, by);
		plwidth(1.0);
		/* the key above the frame, one entry per colour: no legend box on the data */
		char key[64];
		snprintf(key, sizeof key, "t#d1#u = %.4g s", t1[c] * src->dt_s);
		xf_pl_mtex("t", 0.8, (c + 0.5) / m, 0.5, key);
	}
	plcol0(1);
}

void xf_plot_draw_data_angle(const xf_plot_src *src, int a, const double *data)
{
	int n = src->n_frames;
	colours();
	pladv(0);
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, 1.0, 0.0, 1.0);
	plcol0(1);
	char line1[512], line2[512];
	snprintf(line1, sizeof line1, "φ = %.2f°   q = %.5g Å#u-1#d   data only (no fit)",
		 src->phi_deg[a], src->q);
	snprintf(line2, sizeof line2, "%s   angle %d of %d,  %d frames,  dt = %.4g s",
		 src->data_title ? src->data_title : "", a + 1, src->n_phi, n, src->dt_s);
	xf_plot_text(1.3);
	xf_pl_ptex(0.5, 0.945, 1.0, 0.0, 0.5, line1);
	xf_plot_text(1.0);
	xf_pl_ptex(0.5, 0.897, 1.0, 0.0, 0.5, line2);
	xf_plot_data_heatmap(data, n, XF_DATA_MAX_PIXELS, (n - 1) * src->dt_s, 0,
			     "c#d2#u (diagonal corrected)");
	double *buf = malloc(4 * (size_t)n * sizeof *buf);
	if (!buf)
		return; /* the map alone; the page is still whole */
	colours();	/* the heatmap set its own colour maps */
	diagonal_panel(src, data, buf);
	lag_rows_panel(src, data, buf);
	free(buf);
}

/* per angle: y against φ as points joined by a thin line */
static void phi_panel(const xf_plot_src *src, const double *y, double x0, double x1, double y0,
		      double y1, const char *title)
{
	int n = src->n_phi;
	double lo, hi;
	range_of(y, n, &lo, &hi);
	plcol0(1);
	xf_plot_phi_frame(x0, x1, y0, y1, src->phi_deg[0], src->phi_deg[n - 1], lo, hi, title);
	plcol0(XF_DATA_FIRST_COLOR);
	plssym(0.0, xf_plot_text_scale(1.6));
	for (int k = 0; k < n; k++)
		if (isfinite(y[k]))
			plpoin(1, &src->phi_deg[k], &y[k], 17);
	plcol0(1);
}

static void lag_panel(const xf_plot_src *src, const xf_plot_cuts *cuts, double *buf)
{
	int nl = cuts->n_lags, idx[XF_DATA_MAX_CURVES], m = 0;
	if (src->n_phi <= XF_DATA_MAX_CURVES)
		for (; m < src->n_phi; m++)
			idx[m] = m;
	else
		for (; m < XF_DATA_MAX_CURVES; m++)
			idx[m] = (int)lround((double)m * (src->n_phi - 1) /
					     (XF_DATA_MAX_CURVES - 1));
	double lo = INFINITY, hi = -INFINITY;
	for (int c = 0; c < m; c++)
		for (int k = 0; k < nl; k++) {
			double v = cuts->data[(size_t)idx[c] * nl + k];
			if (isfinite(v)) {
				lo = fmin(lo, v);
				hi = fmax(hi, v);
			}
		}
	double ends[2] = { lo, hi };
	range_of(ends, 2, &lo, &hi);
	double xlo = log10(src->dt_s), xhi = log10(src->dt_s * nl);
	if (!(xhi > xlo))
		xhi = xlo + 1.0;
	plvpor(0.07, 0.62, 0.07, 0.45);
	plwind(xlo, xhi, lo, hi);
	plcol0(1);
	xf_plot_text(0.9);
	plbox("bcnstlg", 0.0, 0, "bcnstvg", 0.0, 0);
	xf_pl_lab("lag t#d2#u − t#d1#u (s)", "mean c#d2#u(t, t + lag)");
	xf_plot_text(1.1);
	xf_pl_mtex("t", 1.0, 0.5, 0.5, "c#d2#u against lag, per angle (mean over t)");
	double *x = buf, *bx = buf + nl, *by = buf + 2 * nl;
	for (int k = 0; k < nl; k++)
		x[k] = log10(src->dt_s * (k + 1));
	/* the key: right of the frame, one coloured line per angle */
	xf_plot_text(0.9);
	for (int c = 0; c < m; c++) {
		plcol0(XF_DATA_FIRST_COLOR + c);
		plwidth(2.0);
		line_finite(x, cuts->data + (size_t)idx[c] * nl, nl, bx, by);
		plwidth(1.0);
		char key[48];
		snprintf(key, sizeof key, "φ = %.1f°", src->phi_deg[idx[c]]);
		xf_pl_mtex("rv", 1.5, 1.0 - (c + 0.5) / XF_DATA_MAX_CURVES, 0.0, key);
	}
	plcol0(1);
}

static void text_panel(const xf_plot_src *src, int n_tail)
{
	char line[512];
	plvpor(0.76, 0.98, 0.07, 0.45);
	plwind(0.0, 1.0, 0.0, 1.0);
	plcol0(1);
	xf_plot_text(1.1);
	xf_pl_ptex(0.0, 0.95, 1.0, 0.0, 0.0, "The data (no fit)");
	xf_plot_text(0.9);
	snprintf(line, sizeof line, "q = %.5g Å#u-1#d,  dt = %.4g s", src->q, src->dt_s);
	double y = 0.82;
	xf_pl_ptex(0.0, y, 1.0, 0.0, 0.0, line);
	snprintf(line, sizeof line, "%d frames,  %d angle%s", src->n_frames, src->n_phi,
		 src->n_phi == 1 ? "" : "s");
	xf_pl_ptex(0.0, y -= 0.1, 1.0, 0.0, 0.0, line);
	snprintf(line, sizeof line, "%lld points a fit would use", src->n_points);
	xf_pl_ptex(0.0, y -= 0.1, 1.0, 0.0, 0.0, line);
	snprintf(line, sizeof line, "level: mean c#d2#u over the last %d lags", n_tail);
	xf_pl_ptex(0.0, y -= 0.14, 1.0, 0.0, 0.0, line);
	xf_pl_ptex(0.0, y -= 0.1, 1.0, 0.0, 0.0, "excess: c#d2#u at lag dt − level");
	xf_pl_ptex(0.0, y -= 0.1, 1.0, 0.0, 0.0, "(≈ contrast and offset of a fit)");
}

void xf_plot_draw_data_overview(const xf_plot_src *src, const xf_plot_cuts *cuts)
{
	int nl = cuts->n_lags, n = src->n_phi;
	int n_tail = (int)ceil(XF_DATA_TAIL * nl);
	n_tail = n_tail < 1 ? 1 : n_tail;
	colours();
	pladv(0);
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, 1.0, 0.0, 1.0);
	plcol0(1);
	char title[512];
	snprintf(title, sizeof title, "xpcsfit: the data without a fit   %s",
		 src->data_title ? src->data_title : "");
	xf_plot_text(1.4);
	xf_pl_ptex(0.5, 0.965, 1.0, 0.0, 0.5, title);
	size_t len = (size_t)(n > nl ? n : nl);
	double *buf = malloc((3 * len + 2 * (size_t)n) * sizeof *buf);
	if (!buf)
		return;
	double *excess = buf + 3 * len, *level = excess + n;
	for (int a = 0; a < n; a++) {
		const double *cut = cuts->data + (size_t)a * nl;
		double sum = 0.0;
		int count = 0;
		for (int k = nl - n_tail; k < nl; k++)
			if (k >= 0 && isfinite(cut[k])) {
				sum += cut[k];
				count++;
			}
		level[a] = count ? sum / count : NAN;
		excess[a] = nl > 0 ? cut[0] - level[a] : NAN;
	}
	phi_panel(src, excess, 0.08, 0.46, 0.56, 0.88, "c#d2#u at lag dt − long-lag level");
	phi_panel(src, level, 0.58, 0.96, 0.56, 0.88, "long-lag level of c#d2#u");
	lag_panel(src, cuts, buf);
	text_panel(src, n_tail);
	free(buf);
}
