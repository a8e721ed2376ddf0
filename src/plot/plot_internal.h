/* plot_internal.h — what the drawing code needs from a result, whichever way it came
 * (a fit in memory, or results.h5 read back by `xpcsfit plot`), and the PLplot session
 * wrapper that keeps PLplot from exit()ing the program. */
#ifndef XPCSFIT_PLOT_INTERNAL_H
#define XPCSFIT_PLOT_INTERNAL_H

#include <stddef.h>
#include <stdio.h>
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/appendix.h"

/* page sizes in pixels */
#define XF_PLOT_ANGLE_W	   2160
#define XF_PLOT_ANGLE_H	   780
#define XF_PLOT_OVERVIEW_W 1600
#define XF_PLOT_OVERVIEW_H 1150

/* Maps larger than this (per side) are block-averaged before drawing. */
#define XF_PLOT_MAX_PIXELS 500

typedef struct xf_plot_src {
	int n_phi;
	const double *phi_deg; /* [n_phi] */
	int n_frames;	       /* N */
	double dt_s;	       /* t_k = k·dt_s */
	double q;	       /* 1/Å */
	/* [n_phi] 1/Å: each angle slot's ring q when the angles come from several rings (a
	 * joint fit, adr/0068; one ring's slots are consecutive), else NULL (every angle at q) */
	const double *slot_q;
	const char *mode_name; /* "static" | "laminar_flow" */
	const char *status, *stop_reason;
	int quality_known; /* 0: no grade to show */
	xf_quality_level quality;
	const char *quality_reasons; /* one reason per line, or "" */
	double chi_squared, reduced_chi_squared;
	double residual_sd; /* σ not given: √(reduced χ²), shown instead of it; else NaN */
	long long n_points;
	int iterations;
	int n_params, n_phys;
	char *const *names;					     /* [n_params] */
	const char *const *units;				     /* [n_params] or NULL */
	const double *values, *uncertainties;			     /* [n_params]; may be NULL */
	const int *is_fixed;					     /* [n_params] or NULL */
	const double *contrast, *contrast_unc, *offset, *offset_unc; /* [n_phi] */
	/* data and fit of angle a as full N×N row-major maps; 0 or an error code */
	int (*surfaces)(void *ctx, int a, double *data, double *fit, xf_error *err);
	void *ctx;
	/* processes drawing the angle PNGs (≤ 1: this one). PLplot keeps global state, so
	 * parallel drawing needs processes; surfaces() must not use an HDF5 handle opened
	 * before the fork (plot_dir.c opens the file in each process). */
	int workers;
	/* NULL for an NLSQ fit. For CMC "CMC": the titles say so, the values are posterior
	 * means ± sd, and run_text replaces the status/iterations and χ² lines (no χ²
	 * minimum, no iterations) */
	const char *method;
	const char *run_text[2];
	/* 1: the data alone (`xpcsfit plot --config`): surfaces() fills data only, the
	 * pages are draw_data.c's and none of the fit fields above is read */
	int data_only;
	const char *data_title; /* data_only: the file, for the titles */
} xf_plot_src;

/* The surfaces of a fit in memory (xf_plot_src.surfaces): data from the packed
 * triangles, fit from the model at the estimate (its grid, values and per-angle
 * scaling), so both methods draw the model the same way (adr/0044). */
typedef struct xf_plot_model_ctx {
	const xf_dataset *ds;
	const xf_estimate *est;
} xf_plot_model_ctx;

int xf_plot_model_surfaces(void *ctx, int a, double *data, double *fit, xf_error *err);

/* The xf_plot_src of an NLSQ result with what it points to (not to be moved once set) */
typedef struct xf_plot_nlsq_src {
	xf_plot_src src;
	xf_plot_model_ctx ctx;
	const char *units[XF_N_PHYS + 64];
	char reasons[XF_QUALITY_MAX_REASONS * sizeof(((xf_quality *)0)->reasons[0])];
} xf_plot_nlsq_src;
void xf_plot_nlsq_src_init(xf_plot_nlsq_src *s, const xf_dataset *ds, const xf_estimate *est,
			   const xf_nlsq_appendix *app, int workers);

/* Per-angle lag cuts kept for the overview: mean of c2(t, t + lag) over t > 0. */
typedef struct xf_plot_cuts {
	int n_lags;	    /* N - 2 (lags 1..N-2 frames) */
	double *data, *fit; /* [n_phi][n_lags] */
} xf_plot_cuts;

/* mean of m[i][i+k] over i >= 1 (row 0 is never fitted), lags k = 1..N-2, into out; m
 * N×N row-major, or packed its packed triangle (m NULL) */
void xf_plot_lag_cut(const double *m, const double *packed, int n, double *out);

/* overview.png into plots_dir from the lag cuts of every angle */
int xf_plot_overview_file(const char *plots_dir, const xf_plot_src *src, const xf_plot_cuts *cuts,
			  xf_error *err);

/* The angles of the overview's lag panel: all when at most XF_PLOT_MAX_CURVES (10), else
 * that many evenly spread, first and last included; their indices into idx (room for
 * XF_PLOT_MAX_CURVES), their count returned. More curves are unreadable, and more angle
 * pages by default cost more than the fit (adr/0059). */
#define XF_PLOT_MAX_CURVES 10
int xf_plot_chosen_angles(int n_phi, int *idx);
/* The ring of angle slot a (src->slot_q; one ring: 0): its index, its first slot and its
 * slot count */
int xf_plot_slot_ring(const xf_plot_src *src, int a, int *first, int *count);
/* 1 when slot a gets its page: every slot after xf_plot_set_angle_pages(1), else its
 * ring's lag-panel angles (xf_plot_chosen_angles over the ring: at most
 * XF_PLOT_MAX_CURVES per ring; adr/0059, adr/0068) */
int xf_plot_angle_shown(const xf_plot_src *src, int a);
/* The overview's lag-panel slots: one ring's xf_plot_chosen_angles; several rings' an
 * even spread of at most XF_PLOT_MAX_CURVES over the slots that get a page by default
 * (so their lag cuts are computed). Indices into idx, count returned. */
int xf_plot_lag_angles(const xf_plot_src *src, int *idx);
/* The PNG name of slot a: xf_plot_angle_name for one ring; with several rings
 * c2_ring<r>_q<q>_phi_<index in ring>_<phi>deg.png, sorting by ring then angle */
void xf_plot_slot_name(char *buf, size_t size, const xf_plot_src *src, int a);

/* Draw the per-angle PNGs (xf_plot_angle_shown; the data-only pages: every angle) and
 * overview.png into plots_dir (created if missing). */
int xf_plot_draw_all(const char *plots_dir, const xf_plot_src *src, xf_error *err);

/* XF_KEY_DPI: pages are drawn at dpi / XF_PLOT_DPI_REFERENCE times their nominal pixel
 * size (0: nominal). xpcsfit's page sizes are those of a 100 dpi figure. */
#define XF_PLOT_DPI_REFERENCE 100.0
void xf_pl_set_dpi(int dpi);

/* Draw one PNG: a white page in memory, draw(ctx) in a PLplot session on it (memcairo),
 * encoded to a temporary file, renamed to path. A PLplot fatal error comes back as an
 * error code, never exit(). */
int xf_pl_file(const char *path, int width_px, int height_px, void (*draw)(void *ctx), void *ctx,
	       xf_error *err);

/* The page before PLplot draws on it: RGB rows from the top, at the page's final pixel
 * size (XF_KEY_DPI applied). */
typedef struct xf_pl_canvas {
	unsigned char *rgb; /* [height][width][3] */
	int width, height;
} xf_pl_canvas;
/* pixels [x0, x1) × [y0, y1) (rows from the top) */
typedef struct xf_pl_rect {
	int x0, x1, y0, y1;
} xf_pl_rect;
/* The pixels of a viewport given as PLplot's page fractions (plvpor, y up). */
void xf_pl_canvas_rect(const xf_pl_canvas *c, double x0, double x1, double y0, double y1,
		       xf_pl_rect *r);
/* xf_pl_file with paint(ctx, canvas) first: images painted pixel by pixel under what
 * draw(ctx) then draws (frames, text, colour bars). */
int xf_pl_file_painted(const char *path, int width_px, int height_px,
		       void (*paint)(void *ctx, const xf_pl_canvas *canvas),
		       void (*draw)(void *ctx), void *ctx, xf_error *err);
/* the pixel size of a page of width_px × height_px nominal pixels at the current
 * XF_KEY_DPI */
void xf_pl_page_px(int width_px, int height_px, int *width, int *height);
/* png_write.c: width × height RGB pixels as a PNG into fd; 0, or -1 with errno set (the
 * failed write's, ENOMEM) and nothing printed */
int xf_png_write_rgb(int fd, const unsigned char *rgb, int width, int height);
/* png_palette.c. A page of at most XF_PNG_PALETTE_N colours is written as a palette PNG
 * (lossless, a third of the bytes to deflate). xf_png_palette: the page's colours into
 * plte (3 bytes each, in colour order) and each pixel's entry into index ([width ×
 * height]); returns their count, or −1 (more than XF_PNG_PALETTE_N, out of memory).
 * xf_png_quantise: a page of more colours brought down to its XF_PNG_PALETTE_N most
 * frequent ones in place, every other pixel to its nearest kept colour (the antialiasing
 * blends of edges); 1 when changed, 0 when it had no more, −1 when left alone (too many
 * distinct colours to count, out of memory). Deterministic: the same pixels, the same
 * result. */
#define XF_PNG_PALETTE_N 256
int xf_png_palette(const unsigned char *rgb, int width, int height, unsigned char *plte,
		   unsigned char *index);
int xf_png_quantise(unsigned char *rgb, int width, int height, const unsigned char (*keep)[3],
		    int n_keep);
/* keep[0..n_keep) (the levels of the painted maps) are kept first, whatever their count.
 * xf_pl_keep_colours: a paint step's colours for the page being drawn (plsession.c). */
void xf_pl_keep_colours(const unsigned char (*rgb)[3], int n);

/* The three maps of an angle page reduced to the panels' display cells (at most
 * XF_ANGLE_MAX_CELLS per side, draw_angle.c): data, fit (diagonal corrected like the
 * data) and residual (NaN where not fitted), each [w][h], cell (x, y) the NaN-aware mean
 * of the map's cells under it. */
typedef struct xf_plot_angle_maps {
	int w, h;		    /* display cells (xf_plot_angle_panel_px) */
	int averaged;		    /* N > w or N > h: several map cells per display cell */
	double *data, *fit, *resid; /* [w][h] each, the caller's */
} xf_plot_angle_maps;
/* the display cells of an angle page's panels at the current XF_KEY_DPI (xf_pl_set_dpi):
 * the panel's pixels, at most XF_ANGLE_MAX_CELLS per side */
void xf_plot_angle_panel_px(int *w, int *h);
/* data (N×N row-major, or NULL and data_packed its packed triangle) and fit (N×N) reduced
 * into m (w, h and the three arrays set by the caller), no N×N copy made; 0, or −1 when
 * out of memory. n ≥ 2. */
int xf_plot_angle_reduce(const double *data, const double *data_packed, const double *fit, int n,
			 xf_plot_angle_maps *m);

/* The angle page in two steps for xf_pl_file_painted: paint the three maps at the
 * panels' pixel size (and keep their colour ranges), then draw titles, frames and colour
 * bars over them. */
typedef struct xf_plot_angle_page {
	const xf_plot_src *src;
	int a;
	const xf_plot_angle_maps *maps; /* reduced already, or NULL: from data and fit */
	const double *data, *fit;	/* N×N (maps NULL) */
	/* set by the paint step */
	int painted, averaged, cells; /* cells: display cells per panel side */
	double lo, hi, rlo, rhi;      /* data/fit and residual colour ranges */
} xf_plot_angle_page;
void xf_plot_angle_paint(void *page, const xf_pl_canvas *canvas);
void xf_plot_angle_draw(void *page);
void xf_plot_draw_overview(const xf_plot_src *src, const xf_plot_cuts *cuts);
/* Where the last xf_plot_draw_overview in this process put its panels, in page
 * coordinates (0..1, y up): the lag panel's axes and legend, the panels beside them. Kept
 * so a test can check that the legend covers no panel and stays on the page. */
typedef struct xf_plot_box {
	double x0, x1, y0, y1;
} xf_plot_box;
typedef struct xf_plot_overview_boxes {
	xf_plot_box lag_axes, legend, contrast, offset, text;
} xf_plot_overview_boxes;
xf_plot_overview_boxes xf_plot_overview_layout(void);
/* The data-only pages (draw_data.c): per angle the c2 map, c2 along the diagonal and c2
 * against lag for a few t1; the overview of every angle's lag cut and level. */
void xf_plot_draw_data_angle(const xf_plot_src *src, int a, const double *data);
void xf_plot_draw_data_overview(const xf_plot_src *src, const xf_plot_cuts *cuts);
/* The data heatmap of draw_angle.c in page slot 0..2 of an angle page (block-averaged
 * above max_px per side, colour scale from the off-diagonal quantiles). */
void xf_plot_data_heatmap(const double *data, int n, int max_px, double t_max, int slot,
			  const char *title);

/* Every string of a page through these (pltext.c): plmtex / plptex, and with
 * XF_PLOT_TEXT_LOG=path set, one line per string appended to path with the pixels its
 * ink covers, for the layout test (tests/test_plot_text.py). xf_pl_text_page: the page
 * being drawn (plsession.c); xf_pl_text_kind: what the next strings are ("tick" for
 * tick labels; NULL: "text"). */
void xf_pl_text_page(const char *path, int width, int height, double dpi);
void xf_pl_text_kind(const char *kind);
/* the current viewport's frame into the log (kind "frame"): text must not sit on it */
void xf_pl_text_frame(void);
void xf_pl_mtex(const char *side, double disp, double pos, double just, const char *text);
void xf_pl_ptex(double x, double y, double dx, double dy, double just, const char *text);
/* pllab(x_label, y_label, "") */
void xf_pl_lab(const char *x_label, const char *y_label);

/* Character height: scale × the default, times one factor that suits the pngcairo
 * pages drawn here (PLplot's default is sized for small pages). */
void xf_plot_text(double scale);
/* the same factor for APIs that take a scale of the default height (pllegend) */
double xf_plot_text_scale(double scale);
/* An upper estimate of the width of text at xf_plot_text(scale), in nominal page pixels
 * (before XF_KEY_DPI): PLplot 5.15 exports no string length, so the layout decides on
 * this and tests/test_plot_text.py checks the drawn result with measured ink. */
double xf_plot_text_width_px(const char *text, double scale);
/* the height of a line of text at scale, nominal pixels; the scale of the last
 * xf_plot_text */
double xf_plot_text_height_px(double scale);
double xf_plot_text_current(void);

/* The frame of a panel of values against φ (degrees) in the current colour: viewport,
 * window padded 8 % in φ, ticks with enough decimals, the φ label and the title. */
void xf_plot_phi_frame(double x0, double x1, double y0, double y1, double phi_lo, double phi_hi,
		       double lo, double hi, const char *title);

/* the symbol of a physical parameter in PLplot text ("γ̇#d0#u" for gamma_dot_t0), else
 * the name itself (plot_cmc_style.c) */
const char *xf_plot_param_symbol(const char *name);

/* colour maps (cmap1) */
void xf_plot_cmap_sequential(void);
void xf_plot_cmap_diverging(void);
/* their colours, for images painted on the canvas: value fraction f in [0, 1] takes
 * entry min((int)(f · N), N − 1), as PLplot's plcol1 does */
#define XF_PLOT_CMAP_N 256
void xf_plot_cmap_table(int diverging, unsigned char rgb[XF_PLOT_CMAP_N][3]);

/* The quality reasons as one string, one per line (the overview's text block). */
static inline void xf_plot_join_reasons(const xf_quality *q, char *buf, size_t size)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int k = 0; k < q->n_reasons && used < size; k++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", k ? "\n" : "",
					 q->reasons[k]);
}

#endif
