/* draw_angle.c — the per-angle figure: data | fit | residual heatmaps over (t1, t2) in
 * seconds with colour bars, and a title with φ, q and the key fitted values. Data and
 * fit share one colour scale so they can be compared by eye; the residual scale is
 * diverging and symmetric about zero. The maps are painted on the page pixel for pixel
 * (xf_pl_file_painted) after reduction to display cells (the panel's pixels, at most
 * XF_ANGLE_MAX_CELLS per side), each the NaN-aware mean of the cells that fall in it; PLplot draws frames, text and colour bars
 * over them. The data-only page (draw_data.c) still hands PLplot its cells
 * (xf_plot_data_heatmap, at most XF_PLOT_MAX_PIXELS per side). */
#include "plot/plot_internal.h"
#include "surface/surfaces.h"
#include "util/select.h"
#include "xpcsfit/dataset.h"
#include "util/numfmt.h"

#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the colour range spans these quantiles of the shown values: a few hot pixels must
 * not wash the whole map out */
#define XF_PLOT_LOW_QUANTILE  0.005
#define XF_PLOT_HIGH_QUANTILE 0.995

/* per-angle page layout (pixels): three slots of [y label | square map | colour bar] */
#define XF_ANGLE_SLOT_PX   720
#define XF_ANGLE_LEFT_PX   100
#define XF_ANGLE_MAP_PX	   490
#define XF_ANGLE_BOTTOM_PX 85
/* cells per side of a painted map at most: a map of more frames is block-averaged to
 * this many cells, each painted over a block of the panel's pixels (2 × 2 at the nominal
 * 490 px). A 1000 × 1000 map needs no 1000 × 1000 pixels to be read by eye; repeated
 * pixels cost deflate little, so a page is about a third of its size with one pixel per
 * cell, and its quantiles and reduction a quarter (adr/0059) */
#define XF_ANGLE_MAX_CELLS 245
/* colour levels of a painted map: the two scales of a page (data/fit, residual) and the
 * page's greys fit one 256-colour palette, so the page is written with one byte a pixel
 * (png_palette.c, adr/0077); 100 steps are more than the eye separates on a map */
#define XF_ANGLE_LEVELS 100
/* the width a title line may take: the page less a margin each side */
#define XF_ANGLE_TEXT_PX (XF_PLOT_ANGLE_W - 80.0)

typedef struct map {
	int n;	   /* pixels per side after averaging */
	double *v; /* n×n */
} map;

/* block means of an N×N map, ignoring NaN (an all-NaN block stays NaN) */
static map block_average(const double *m, int n_in, int factor)
{
	map out = { (n_in + factor - 1) / factor, NULL };
	out.v = malloc((size_t)out.n * out.n * sizeof *out.v);
	if (!out.v)
		return out;
	for (int bi = 0; bi < out.n; bi++) {
		for (int bj = 0; bj < out.n; bj++) {
			double sum = 0.0;
			int count = 0;
			for (int i = bi * factor; i < (bi + 1) * factor && i < n_in; i++)
				for (int j = bj * factor; j < (bj + 1) * factor && j < n_in; j++) {
					double v = m[(size_t)i * n_in + j];
					if (isfinite(v)) {
						sum += v;
						count++;
					}
				}
			out.v[(size_t)bi * out.n + bj] = count ? sum / count : NAN;
		}
	}
	return out;
}

/* quantiles of the finite values of a[0..na) and b[0..nb) (abs_values: of |v|) */
static void quantiles_n(const double *a, size_t na, const double *b, size_t nb, int abs_values,
			double qlo, double qhi, double *lo, double *hi)
{
	double *buf = malloc((na + nb + 1) * sizeof *buf);
	size_t k = 0;
	*lo = NAN;
	*hi = NAN;
	if (!buf)
		return;
	for (size_t i = 0; i < na; i++)
		if (isfinite(a[i]))
			buf[k++] = abs_values ? fabs(a[i]) : a[i];
	for (size_t i = 0; i < nb; i++)
		if (isfinite(b[i]))
			buf[k++] = abs_values ? fabs(b[i]) : b[i];
	if (k > 0) {
		size_t ilo = (size_t)(qlo * (double)(k - 1)), ihi = (size_t)(qhi * (double)(k - 1));
		*lo = xf_select_kth(buf, k, ilo);
		/* the selection partitioned buf: everything from ilo on is ≥ *lo, so the upper
		 * quantile is found among those (the same value, in a shorter search) */
		*hi = ihi >= ilo ? xf_select_kth(buf + ilo, k - ilo, ihi - ilo)
				 : xf_select_kth(buf, k, ihi);
	}
	free(buf);
}

/* quantiles of the finite values of up to two n × n maps */
static void quantiles(const map *a, const map *b, int abs_values, double qlo, double qhi,
		      double *lo, double *hi)
{
	quantiles_n(a ? a->v : NULL, a ? (size_t)a->n * a->n : 0, b ? b->v : NULL,
		    b ? (size_t)b->n * b->n : 0, abs_values, qlo, qhi, lo, hi);
}

static void widen_if_flat(double *lo, double *hi)
{
	if (!isfinite(*lo) || !isfinite(*hi)) {
		*lo = 0.0;
		*hi = 1.0;
	}
	if (*hi - *lo <= 1e-12 * (fabs(*hi) + 1e-300)) {
		double pad = fabs(*hi) > 0 ? 1e-3 * fabs(*hi) : 1e-6;
		*lo -= pad;
		*hi += pad;
	}
}

/* the panel of slot 0..2 in page fractions (plvpor order) */
static void slot_viewport(int slot, double *x0, double *x1, double *y0, double *y1)
{
	double left = slot * XF_ANGLE_SLOT_PX + XF_ANGLE_LEFT_PX;
	*x0 = left / XF_PLOT_ANGLE_W;
	*x1 = (left + XF_ANGLE_MAP_PX) / XF_PLOT_ANGLE_W;
	*y0 = (double)XF_ANGLE_BOTTOM_PX / XF_PLOT_ANGLE_H;
	*y1 = (double)(XF_ANGLE_BOTTOM_PX + XF_ANGLE_MAP_PX) / XF_PLOT_ANGLE_H;
}

/* What a reduced map is read from: the data (full N×N or its packed triangle), the
 * residual data − fit (NaN where not fitted), or the fit with its diagonal corrected
 * like the data's (diag: the corrected values) — computed as read, no N×N copy. */
typedef enum { CELL_DATA, CELL_RESID, CELL_FIT_SHOWN } cell_kind;
typedef struct cells {
	const double *data, *packed, *fit, *diag;
	size_t n;
} cells;

static inline double data_at(const cells *c, size_t i, size_t j)
{
	if (c->packed)
		return c->packed[i <= j ? xf_packed_index(c->n, i, j)
					: xf_packed_index(c->n, j, i)];
	return c->data[i * c->n + j];
}

static inline double cell_at(const cells *c, cell_kind kind, size_t i, size_t j)
{
	switch (kind) {
	case CELL_DATA: return data_at(c, i, j);
	case CELL_RESID:
		/* nothing is fitted on row/column 0 and the diagonal (xf_surface_mask_unfitted) */
		return i == 0 || j == 0 || i == j ? NAN : data_at(c, i, j) - c->fit[i * c->n + j];
	default: return i == j ? c->diag[i] : c->fit[i * c->n + j];
	}
}

/* An N×N map at w × h pixels into out ([w][h]): pixel (x, y) is the NaN-aware mean of
 * the cells i in [x·N/w, (x+1)·N/w) (at least one: the nearest when N < w) and likewise j
 * for y. x runs along t1 (rows of m), y along t2. Integer bounds: the same pixels from the
 * same map, whoever computes them. */
static void reduce_to_pixels(const cells *m, cell_kind kind, int w, int h, double *out)
{
	long n = (long)m->n;
	for (int x = 0; x < w; x++) {
		long i0 = (long)x * n / w, i1 = (long)(x + 1) * n / w;
		if (i1 <= i0)
			i1 = i0 + 1;
		for (int y = 0; y < h; y++) {
			long j0 = (long)y * n / h, j1 = (long)(y + 1) * n / h;
			if (j1 <= j0)
				j1 = j0 + 1;
			double sum = 0.0;
			int count = 0;
			for (long i = i0; i < i1; i++)
				for (long j = j0; j < j1; j++) {
					double v = cell_at(m, kind, (size_t)i, (size_t)j);
					if (isfinite(v)) {
						sum += v;
						count++;
					}
				}
			out[(size_t)x * h + y] = count ? sum / count : NAN;
		}
	}
}

/* The three maps of reduce_to_pixels in one pass over the rows, when every display cell
 * holds at least one map cell each way (N ≥ w, h): each map cell is read once, and each
 * display cell's sum gathers its cells in the same order (i, then j) as
 * reduce_to_pixels, so the values are the same bits. Returns −1 when out of memory. */
static int reduce_three(const cells *m, int w, int h, double *data, double *fit, double *resid)
{
	long n = (long)m->n;
	int *ybin = malloc((size_t)n * sizeof *ybin);
	double *acc = calloc((size_t)h * 6, sizeof *acc); /* sums and counts of the three */
	if (!ybin || !acc) {
		free(ybin);
		free(acc);
		return -1;
	}
	for (int y = 0; y < h; y++)
		for (long j = (long)y * n / h; j < (long)(y + 1) * n / h; j++)
			ybin[j] = y;
	double *out[3] = { data, fit, resid };
	for (int x = 0; x < w; x++) {
		memset(acc, 0, (size_t)h * 6 * sizeof *acc);
		for (long i = (long)x * n / w; i < (long)(x + 1) * n / w; i++) {
			const double *frow = m->fit + (size_t)i * m->n;
			for (long j = 0; j < n; j++) {
				double d = data_at(m, (size_t)i, (size_t)j);
				double f = i == j ? m->diag[i] : frow[j];
				double r = i == 0 || j == 0 || i == j ? NAN : d - frow[j];
				double *a = acc + (size_t)ybin[j] * 6;
				if (isfinite(d)) {
					a[0] += d;
					a[1] += 1.0;
				}
				if (isfinite(f)) {
					a[2] += f;
					a[3] += 1.0;
				}
				if (isfinite(r)) {
					a[4] += r;
					a[5] += 1.0;
				}
			}
		}
		for (int y = 0; y < h; y++)
			for (int k = 0; k < 3; k++) {
				const double *a = acc + (size_t)y * 6 + 2 * k;
				out[k][(size_t)x * h + y] = a[1] > 0 ? a[0] / a[1] : NAN;
			}
	}
	free(ybin);
	free(acc);
	return 0;
}

/* the table colour of value v: (v − lo)/(hi − lo) in the table, grey where NaN (never
 * fitted) */
static const unsigned char *cell_colour(double v, double lo, double hi,
					const unsigned char (*table)[3])
{
	static const unsigned char grey[3] = { 200, 200, 200 };
	if (!isfinite(v))
		return grey;
	double f = (v - lo) / (hi - lo);
	int k = f <= 0.0 ? 0 : f >= 1.0 ? XF_ANGLE_LEVELS - 1 : (int)(f * XF_ANGLE_LEVELS);
	k = k < XF_ANGLE_LEVELS ? k : XF_ANGLE_LEVELS - 1;
	/* level k of XF_ANGLE_LEVELS: the table's entry at the same place */
	return table[(k * (XF_PLOT_CMAP_N - 1) + (XF_ANGLE_LEVELS - 1) / 2) /
		     (XF_ANGLE_LEVELS - 1)];
}

/* paint a reduced map ([w][h] cells, t2 upwards) over rect r, each cell over the block
 * of pixels that falls in it (integer bounds: the same pixels from the same cells). The
 * colours are looked up once per cell and a pixel row that shows the same cells as the
 * one above is a copy of it. */
static void paint_map(const xf_pl_canvas *c, const xf_pl_rect *r, const double *m, int w, int h,
		      double lo, double hi, int diverging)
{
	unsigned char table[XF_PLOT_CMAP_N][3], levels[XF_ANGLE_LEVELS][3];
	xf_plot_cmap_table(diverging, table);
	for (int k = 0; k < XF_ANGLE_LEVELS; k++)
		memcpy(levels[k],
		       cell_colour(lo + (k + 0.5) * (hi - lo) / XF_ANGLE_LEVELS, lo, hi, table), 3);
	xf_pl_keep_colours((const unsigned char(*)[3])levels, XF_ANGLE_LEVELS);
	long pw = r->x1 - r->x0, ph = r->y1 - r->y0;
	int *xcell = malloc((size_t)(pw > 0 ? pw : 1) * sizeof *xcell);
	const unsigned char **col = malloc((size_t)w * sizeof *col);
	if (!xcell || !col) {
		free(xcell);
		free(col);
		return;
	}
	for (long x = 0; x < pw; x++)
		xcell[x] = (int)(x * w / pw);
	long prev_jy = -1;
	for (int y = r->y0; y < r->y1; y++) {
		long jy = (long)(r->y1 - 1 - y) * h / ph; /* t2 grows upwards */
		unsigned char *row = c->rgb + ((size_t)y * (size_t)c->width + (size_t)r->x0) * 3;
		if (jy == prev_jy) {
			memcpy(row, row - (size_t)c->width * 3, (size_t)pw * 3);
			continue;
		}
		prev_jy = jy;
		for (int x = 0; x < w; x++)
			col[x] = cell_colour(m[(size_t)x * h + (size_t)jy], lo, hi, table);
		for (long x = 0; x < pw; x++)
			memcpy(row + (size_t)x * 3, col[xcell[x]], 3);
	}
	free(xcell);
	free(col);
}

/* frame, labels and colour bar of a painted map in slot 0..2 */
static void map_frame(double t_max, int cells, double lo, double hi, int slot, const char *title,
		      const char *bar_label);

/* the viewport of slot 0..2 and a window in seconds where cells pixels span it, each
 * cell centred on its t; returns the window's edges */
static void map_window(double t_max, int cells, int slot, double *w0, double *w1)
{
	double x0, x1, y0, y1;
	slot_viewport(slot, &x0, &x1, &y0, &y1);
	plvpor(x0, x1, y0, y1);
	double half = 0.5 * t_max / (cells > 1 ? cells - 1 : 1);
	*w0 = -half;
	*w1 = t_max + half;
	plwind(*w0, *w1, *w0, *w1);
}

/* PLplot's own tick step over a span (pldtik of plbox.c, not exported): the same ticks
 * as before, now with decimals chosen here */
static double auto_tick(double span)
{
	double t1 = log10(fabs(span)), np = floor(t1), t2;
	t1 -= np;
	if (t1 > 0.7781512503) {
		t2 = 2.0;
	} else if (t1 > 0.4771212549) {
		t2 = 1.0;
	} else if (t1 > 0.1760912591) {
		t2 = 5.0;
		np -= 1.0;
	} else {
		t2 = 2.0;
		np -= 1.0;
	}
	return t2 * pow(10.0, np);
}

/* axes, labels, title and colour bar over the map in the current window */
static void map_decor(double lo, double hi, const char *title, const char *bar_label)
{
	plscol0(1, 0, 0, 0);
	plcol0(1);
	xf_plot_text(0.9);
	/* plain decimals, never PLplot's "(x10^-2)" beside the axes: under 0.1 s of frames
	 * it was drawn over the top-left corner, into the panel's title */
	PLFLT wx0, wx1, wy0, wy1;
	plgvpw(&wx0, &wx1, &wy0, &wy1);
	double tick = wx1 > wx0 ? auto_tick(wx1 - wx0) : 0.0;
	int prec = tick > 0 ? (int)ceil(-log10(tick) - 1e-9) : 0;
	plprec(1, prec < 0 ? 0 : prec > 8 ? 8 : prec);
	plsxax(12, 0);
	plsyax(12, 0);
	plbox("bcnst", tick, 0, "bcnstv", tick, 0);
	plprec(0, 0);
	plsxax(0, 0);
	plsyax(0, 0);
	xf_pl_text_frame();
	xf_pl_lab("t#d1#u (s)", "t#d2#u (s)");
	xf_plot_text(1.1);
	/* 1.5 heights up: a subscript (c#d2#u) clears the frame */
	xf_pl_mtex("t", 1.5, 0.5, 0.5, title);
	/* colour bar right of the map, a gradient: PL_COLORBAR_IMAGE rendered an image
	 * through plimagefr for each bar, 6 % of a default run (adr/0059) */
	PLFLT cw, ch;
	PLINT label_opts[1] = { PL_COLORBAR_LABEL_RIGHT };
	const char *labels[1] = { bar_label };
	const char *axis_opts[1] = { "bcvtm" };
	PLFLT ticks[1] = { 0.0 };
	PLINT sub_ticks[1] = { 0 };
	PLINT n_values[1] = { 2 };
	PLFLT range[2] = { lo, hi };
	const PLFLT *values[1] = { range };
	xf_plot_text(0.8);
	plcolorbar(&cw, &ch, PL_COLORBAR_GRADIENT,
		   PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT, 0.03, 0.0, 0.045,
		   1.0, 0, 1, 1, 0.0, 0.0, 0, 0.0, 1, label_opts, labels, 1, axis_opts, ticks,
		   sub_ticks, n_values, values);
	xf_plot_text(1.0);
}

static void map_frame(double t_max, int cells, double lo, double hi, int slot, const char *title,
		      const char *bar_label)
{
	double w0, w1;
	map_window(t_max, cells, slot, &w0, &w1);
	map_decor(lo, hi, title, bar_label);
}

/* one heatmap of cells handed to PLplot (the data-only page) in slot 0..2 */
static void heatmap(const map *m, double t_max, double lo, double hi, int slot, const char *title,
		    const char *bar_label)
{
	double w0, w1;
	map_window(t_max, m->n, slot, &w0, &w1);
	/* grey under the map: points never fitted (NaN) show as grey, not as a value */
	plscol0(15, 200, 200, 200);
	plcol0(15);
	double fx[4] = { w0, w1, w1, w0 }, fy[4] = { w0, w0, w1, w1 };
	plfill(4, fx, fy);
	/* PLplot indexes idata[x][y]: x = t1 = row i, y = t2 = column j */
	double **rows = malloc((size_t)m->n * sizeof *rows);
	double *clipped = malloc((size_t)m->n * m->n * sizeof *clipped);
	if (rows && clipped) {
		double below = lo - (hi - lo); /* outside [zmin, zmax]: not drawn */
		for (size_t k = 0; k < (size_t)m->n * m->n; k++) {
			double v = m->v[k];
			clipped[k] = !isfinite(v) ? below : v < lo ? lo : v > hi ? hi : v;
		}
		for (int i = 0; i < m->n; i++)
			rows[i] = clipped + (size_t)i * m->n;
		plimagefr((const PLFLT *const *)rows, m->n, m->n, w0, w1, w0, w1, lo, hi, lo, hi,
			  NULL, NULL);
	}
	free(rows);
	free(clipped);
	map_decor(lo, hi, title, bar_label);
}

static void append_value(char *buf, size_t size, const char *label, double v, double u, int fixed)
{
	size_t len = strlen(buf);
	if (fixed || !isfinite(u))
		snprintf(buf + len, size - len, "%s%s = %.4g%s", len ? ",  " : "", label, v,
			 fixed ? " (fixed)" : "");
	else {
		char pm[2 * XF_NUM_TEXT]; /* to the precision u supports (adr/0062) */
		xf_num_pm(v, u, " ± ", pm, sizeof pm);
		snprintf(buf + len, size - len, "%s%s = %s", len ? ",  " : "", label, pm);
	}
}

/* the three panels' rectangles on canvas c, all of one size (rounding could differ by
 * a pixel: the smallest) */
static void panel_rects(const xf_pl_canvas *c, xf_pl_rect r[3])
{
	for (int slot = 0; slot < 3; slot++) {
		double x0, x1, y0, y1;
		slot_viewport(slot, &x0, &x1, &y0, &y1);
		xf_pl_canvas_rect(c, x0, x1, y0, y1, &r[slot]);
	}
	int w = r[0].x1 - r[0].x0, h = r[0].y1 - r[0].y0;
	for (int slot = 1; slot < 3; slot++) {
		w = r[slot].x1 - r[slot].x0 < w ? r[slot].x1 - r[slot].x0 : w;
		h = r[slot].y1 - r[slot].y0 < h ? r[slot].y1 - r[slot].y0 : h;
	}
	for (int slot = 0; slot < 3; slot++) {
		r[slot].x1 = r[slot].x0 + w;
		r[slot].y1 = r[slot].y0 + h;
	}
}

/* the cells per side of a painted map on panels of w × h pixels */
static void panel_cells(int w, int h, int *cw, int *ch)
{
	*cw = w < XF_ANGLE_MAX_CELLS ? w : XF_ANGLE_MAX_CELLS;
	*ch = h < XF_ANGLE_MAX_CELLS ? h : XF_ANGLE_MAX_CELLS;
}

void xf_plot_angle_panel_px(int *w, int *h)
{
	xf_pl_canvas c = { NULL, 0, 0 };
	xf_pl_page_px(XF_PLOT_ANGLE_W, XF_PLOT_ANGLE_H, &c.width, &c.height);
	xf_pl_rect r[3];
	panel_rects(&c, r);
	panel_cells(r[0].x1 - r[0].x0, r[0].y1 - r[0].y0, w, h);
}

int xf_plot_angle_reduce(const double *data, const double *data_packed, const double *fit, int n,
			 xf_plot_angle_maps *m)
{
	/* the data's diagonal was corrected (data.md); the model's is the bare 1 + β
	 * spike: show the fit the same way so the two panels compare like with like
	 * (xf_diagonal_correct's values, computed from the fit's neighbours of the diagonal) */
	double *diag = malloc((size_t)n * sizeof *diag);
	if (!diag)
		return -1;
	size_t un = (size_t)n;
	double b_prev = 0.5 * (fit[1] + fit[un]);
	diag[0] = b_prev;
	for (size_t k = 1; k + 1 < un; k++) {
		double b = 0.5 * (fit[k * un + k + 1] + fit[(k + 1) * un + k]);
		diag[k] = 0.5 * (b_prev + b);
		b_prev = b;
	}
	diag[un - 1] = b_prev;
	cells c = { data, data_packed, fit, diag, un };
	int rc = 0;
	if (n >= m->w && n >= m->h) {
		rc = reduce_three(&c, m->w, m->h, m->data, m->fit, m->resid);
	} else {
		reduce_to_pixels(&c, CELL_DATA, m->w, m->h, m->data);
		reduce_to_pixels(&c, CELL_RESID, m->w, m->h, m->resid);
		reduce_to_pixels(&c, CELL_FIT_SHOWN, m->w, m->h, m->fit);
	}
	free(diag);
	if (rc)
		return -1;
	m->averaged = n > m->w || n > m->h;
	return 0;
}

void xf_plot_angle_paint(void *p, const xf_pl_canvas *c)
{
	xf_plot_angle_page *pg = p;
	pg->painted = 0;
	xf_pl_rect r[3];
	panel_rects(c, r);
	int w, h;
	panel_cells(r[0].x1 - r[0].x0, r[0].y1 - r[0].y0, &w, &h);
	size_t np = (size_t)w * h;
	xf_plot_angle_maps own = { w, h, 0, NULL, NULL, NULL };
	const xf_plot_angle_maps *m = pg->maps;
	if (!m) { /* reduced here from the full maps */
		own.data = malloc(3 * np * sizeof(double));
		if (own.data) {
			own.fit = own.data + np;
			own.resid = own.fit + np;
		}
		if (!own.data ||
		    xf_plot_angle_reduce(pg->data, NULL, pg->fit, pg->src->n_frames, &own)) {
			free(own.data);
			return;
		}
		m = &own;
	}
	pg->averaged = m->averaged;
	pg->cells = w;
	if (m->w == w && m->h == h && w > 0 && h > 0) {
		/* shared data/fit scale from the fitted region of both maps */
		double *md_fit = malloc(np * sizeof(double));
		if (md_fit) {
			memcpy(md_fit, m->data, np * sizeof(double));
			for (size_t k = 0; k < np; k++)
				if (!isfinite(m->resid[k]))
					md_fit[k] = NAN;
		}
		quantiles_n(md_fit ? md_fit : m->data, np, m->fit, np, 0, XF_PLOT_LOW_QUANTILE,
			    XF_PLOT_HIGH_QUANTILE, &pg->lo, &pg->hi);
		free(md_fit);
		widen_if_flat(&pg->lo, &pg->hi);
		quantiles_n(m->resid, np, NULL, 0, 1, 0.0, XF_PLOT_HIGH_QUANTILE, &pg->rlo,
			    &pg->rhi);
		if (!isfinite(pg->rhi) || pg->rhi <= 0.0)
			pg->rhi = 1e-6;
		pg->rlo = -pg->rhi;
		paint_map(c, &r[0], m->data, w, h, pg->lo, pg->hi, 0);
		paint_map(c, &r[1], m->fit, w, h, pg->lo, pg->hi, 0);
		paint_map(c, &r[2], m->resid, w, h, pg->rlo, pg->rhi, 1);
		pg->painted = 1;
	}
	free(own.data);
}

void xf_plot_angle_draw(void *p)
{
	const xf_plot_angle_page *pg = p;
	const xf_plot_src *src = pg->src;
	int a = pg->a, n = src->n_frames;
	double t_max = (double)(n - 1) * src->dt_s;

	pladv(0);
	/* title: angle, q (the slot's ring q in a joint fit), mode and status, then the key
	 * fitted values */
	char line1[512], line2[1024] = "", line3[512] = "", chi2[64] = "";
	/* σ not given: χ² is in the data's units squared, the residual sd says more */
	if (isfinite(src->residual_sd))
		snprintf(chi2, sizeof chi2, "   residual sd = %.4g", src->residual_sd);
	else if (isfinite(src->reduced_chi_squared))
		snprintf(chi2, sizeof chi2, "   reduced χ#u2#d = %.4g", src->reduced_chi_squared);
	snprintf(line1, sizeof line1, "φ = %.2f°   q = %.5g Å#u-1#d   %s %s, %s (%s)%s%s",
		 src->phi_deg[a], src->slot_q ? src->slot_q[a] : src->q, src->mode_name,
		 src->method ? "CMC posterior mean" : "fit", src->status, src->stop_reason, chi2,
		 pg->averaged ? "   [maps block-averaged for display]" : "");
	/* the values on one line, or on two where one would run off the page (7 laminar
	 * values with wide uncertainties: "D0 =" was cut off at the left edge) */
	char line2b[1024] = "";
	int split = 0;
	for (int pass = 0; pass < 2; pass++) {
		line2[0] = line2b[0] = '\0';
		for (int k = 0; k < src->n_phys && src->values; k++)
			append_value(split && k >= (src->n_phys + 1) / 2 ? line2b : line2,
				     split ? sizeof line2b : sizeof line2,
				     xf_plot_param_symbol(src->names[k]), src->values[k],
				     src->uncertainties ? src->uncertainties[k] : NAN,
				     src->is_fixed ? src->is_fixed[k] : 0);
		if (split || xf_plot_text_width_px(line2, 1.1) <= XF_ANGLE_TEXT_PX)
			break;
		split = 1;
	}
	append_value(line3, sizeof line3, "contrast", src->contrast ? src->contrast[a] : NAN,
		     src->contrast_unc ? src->contrast_unc[a] : NAN, 0);
	append_value(line3, sizeof line3, "offset", src->offset ? src->offset[a] : NAN,
		     src->offset_unc ? src->offset_unc[a] : NAN, 0);
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, 1.0, 0.0, 1.0);
	plscol0(1, 0, 0, 0);
	plcol0(1);
	/* the status line smaller where it would not fit (a joint fit's CMC page with
	 * block-averaged maps) */
	double s1 = 1.3, w1 = xf_plot_text_width_px(line1, s1);
	xf_plot_text(w1 > XF_ANGLE_TEXT_PX ? s1 * XF_ANGLE_TEXT_PX / w1 : s1);
	xf_pl_ptex(0.5, 0.945, 1.0, 0.0, 0.5, line1);
	xf_plot_text(1.1);
	if (split) {
		xf_pl_ptex(0.5, 0.900, 1.0, 0.0, 0.5, line2);
		xf_pl_ptex(0.5, 0.858, 1.0, 0.0, 0.5, line2b);
		xf_pl_ptex(0.5, 0.816, 1.0, 0.0, 0.5, line3);
	} else {
		xf_pl_ptex(0.5, 0.897, 1.0, 0.0, 0.5, line2);
		xf_pl_ptex(0.5, 0.852, 1.0, 0.0, 0.5, line3);
	}

	if (pg->painted) {
		xf_plot_cmap_sequential();
		map_frame(t_max, pg->cells, pg->lo, pg->hi, 0, "data", "c#d2#u");
		map_frame(t_max, pg->cells, pg->lo, pg->hi, 1,
			  src->method
				  ? "model at the posterior mean (diagonal corrected like the data)"
				  : "fit (diagonal corrected like the data)",
			  "c#d2#u");
		xf_plot_cmap_diverging();
		map_frame(t_max, pg->cells, pg->rlo, pg->rhi, 2,
			  "residual: data − fit (grey: not fitted)", "data − fit");
	}
}

void xf_plot_data_heatmap(const double *data, int n, int max_px, double t_max, int slot,
			  const char *title)
{
	int factor = (n + max_px - 1) / max_px;
	map md = block_average(data, n, factor < 1 ? 1 : factor);
	if (!md.v)
		return;
	/* the colour scale from the off-diagonal values: the corrected diagonal and row 0
	 * are never fitted, and the diagonal would set the top of the scale */
	map shown = { md.n, malloc((size_t)md.n * md.n * sizeof(double)) };
	if (shown.v) {
		memcpy(shown.v, md.v, (size_t)md.n * md.n * sizeof(double));
		xf_surface_mask_unfitted(shown.v, (size_t)md.n);
	}
	double lo, hi;
	quantiles(shown.v ? &shown : &md, NULL, 0, XF_PLOT_LOW_QUANTILE, XF_PLOT_HIGH_QUANTILE, &lo,
		  &hi);
	widen_if_flat(&lo, &hi);
	xf_plot_cmap_sequential();
	heatmap(&md, t_max, lo, hi, slot, title, "c#d2#u");
	free(shown.v);
	free(md.v);
}
