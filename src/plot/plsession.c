/* plsession.c — one PNG file = one PLplot session (plinit … plend) on the memcairo
 * device: PLplot draws with cairo into an RGB page in memory, on top of what a paint
 * callback put there first (the heatmaps, one pixel per pixel: handing PLplot a polygon
 * per map cell cost seconds a page, adr/0036); png_write.c encodes the page to a
 * temporary name, which is checked to be a whole PNG, then renamed. PLplot's fatal errors call exit()
 * after the user exit handler returns, so the handler longjmp()s back here instead:
 * the library must never end the program. Non-fatal PLplot aborts become warnings. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "util/files.h"
#include "util/interrupt.h"
#include "plot/plot_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <plplot.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static jmp_buf *pl_jump;     /* where a fatal PLplot error returns to */
static char pl_message[512]; /* its message */

static int pl_exit_handler(PLCHAR_VECTOR msg)
{
	snprintf(pl_message, sizeof pl_message, "%s", msg ? msg : "");
	if (pl_jump)
		longjmp(*pl_jump, 1);
	return 1;
}

static void pl_abort_handler(PLCHAR_VECTOR msg)
{
	xf_warn("PLplot: %s", msg ? msg : "(no message)");
}

/* PLplot prints some warnings straight to stderr. While a session runs, fd 2 goes to an
 * in-memory file; afterwards our own lines are passed through and PLplot's become
 * warnings (in run.log too), so no raw library line reaches the terminal. A signal that
 * ends the process meanwhile prints its line to the real stderr (xf_interrupt_stderr):
 * written to fd 2 it would be lost with the in-memory file. */
typedef struct stderr_capture {
	int saved; /* the real stderr; -1 when not capturing */
	int mem;   /* the memfd standing in for it */
} stderr_capture;

static void capture_begin(stderr_capture *c)
{
	c->saved = c->mem = -1;
	fflush(stderr);
	int mem = memfd_create("xpcsfit-plplot", MFD_CLOEXEC);
	int saved = mem >= 0 ? fcntl(2, F_DUPFD_CLOEXEC, 3) : -1;
	if (saved >= 0)
		xf_interrupt_stderr(saved); /* before fd 2 changes */
	if (saved < 0 || dup2(mem, 2) < 0) {
		xf_interrupt_stderr(-1);
		if (mem >= 0)
			close(mem);
		if (saved >= 0)
			close(saved);
		return;
	}
	c->saved = saved;
	c->mem = mem;
}

static void capture_end(stderr_capture *c)
{
	if (c->saved < 0)
		return;
	fflush(stderr);
	dup2(c->saved, 2);
	xf_interrupt_stderr(-1); /* after fd 2 is the real one again */
	close(c->saved);
	off_t size = lseek(c->mem, 0, SEEK_END);
	if (size > 0) {
		size_t n = size > 65536 ? 65536 : (size_t)size;
		char *text = malloc(n + 1);
		if (text && pread(c->mem, text, n, 0) == (ssize_t)n) {
			text[n] = '\0';
			for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
				if (!strncmp(line, "xpcsfit:", 8))
					fprintf(stderr, "%s\n", line); /* ours, already logged */
				else if (line[strspn(line, " *\t")])
					xf_warn("PLplot: %s", line + strspn(line, " \t"));
			}
		}
		free(text);
	}
	close(c->mem);
}

/* A whole PNG: the signature first, the IEND chunk last. A disk that filled up during the
 * write leaves a short file, which must never be renamed to a final name. */
static int png_whole(int fd)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	static const unsigned char iend[12] = { 0,   0,	  0,	0,    'I',  'E',
						'N', 'D', 0xae, 0x42, 0x60, 0x82 };
	unsigned char head[8], tail[12];
	off_t size = lseek(fd, 0, SEEK_END);
	return size >= 20 && pread(fd, head, 8, 0) == 8 && !memcmp(head, sig, 8) &&
	       pread(fd, tail, 12, size - 12) == 12 && !memcmp(tail, iend, 12);
}

/* The test hook XPCSFIT_TEST_PAUSE=plot:<file name>:<s> (util/interrupt.h): a pause in
 * that page's PLplot session, while stderr is held in memory (tests/test_plot_signals.py) */
static void session_test_pause(const char *path)
{
	char name[80];
	const char *slash = strrchr(path, '/');
	snprintf(name, sizeof name, "plot:%s", slash ? slash + 1 : path);
	xf_test_pause(name);
}

/* XF_KEY_DPI over XF_PLOT_DPI_REFERENCE: every page's pixel size and its device DPI
 * are multiplied by it; lengths in mm (characters, ticks, symbols) follow the DPI, so a
 * page keeps its look at any size (line widths stay in pixels). Set once before drawing (xf_pl_set_dpi); the plot
 * workers are forked processes and inherit it. */
static double pl_scale = 1.0;

/* pngcairo's own device resolution (PLplot's cairo driver, DPI) */
#define XF_PL_CAIRO_DPI 72.0

void xf_pl_set_dpi(int dpi)
{
	pl_scale = dpi > 0 ? (double)dpi / XF_PLOT_DPI_REFERENCE : 1.0;
}

/* PLplot's default character height is xf_plot_text(1 / XF_PLOT_TEXT_FACTOR) */
#define XF_PLOT_TEXT_FACTOR 0.55

/* the scale of the last xf_plot_text in this page, for the width estimates: a page
 * starts at PLplot's default (never the last page's: the estimates, and so the layout,
 * must not depend on what was drawn before) */
static double text_now = 1.0 / XF_PLOT_TEXT_FACTOR;

static void text_reset(void)
{
	text_now = 1.0 / XF_PLOT_TEXT_FACTOR;
}

/* One plinit ... plend session on page (width × height pixels, RGB, painted already) for
 * the file path. Returns 0, or 1 with pl_message set. */
static int pl_session(const char *path, unsigned char *page, int width, int height,
		      void (*draw)(void *ctx), void *ctx)
{
	jmp_buf here;
	volatile int initialised = 0;
	pl_message[0] = '\0';
	if (setjmp(here) != 0) {
		pl_jump = NULL;
		if (initialised)
			plend();
		return 1;
	}
	pl_jump = &here;
	plsexit(pl_exit_handler);
	plsabort(pl_abort_handler);
	plsdev("memcairo");
	plspage(XF_PL_CAIRO_DPI * pl_scale, XF_PL_CAIRO_DPI * pl_scale, width, height, 0, 0);
	plsmem(width, height, page);
	plscolbg(255, 255, 255);
	plinit();
	initialised = 1;
	xf_pl_text_page(path, width, height, XF_PL_CAIRO_DPI * pl_scale);
	text_reset();
	session_test_pause(path);
	draw(ctx);
	plend(); /* copies the drawing back into page */
	pl_jump = NULL;
	return 0;
}

void xf_pl_page_px(int width_px, int height_px, int *width, int *height)
{
	*width = (int)(width_px * pl_scale + 0.5);
	*height = (int)(height_px * pl_scale + 0.5);
}

void xf_pl_canvas_rect(const xf_pl_canvas *c, double x0, double x1, double y0, double y1,
		       xf_pl_rect *r)
{
	r->x0 = (int)lround(x0 * c->width);
	r->x1 = (int)lround(x1 * c->width);
	r->y0 = (int)lround((1.0 - y1) * c->height); /* rows from the top */
	r->y1 = (int)lround((1.0 - y0) * c->height);
	r->x0 = r->x0 < 0 ? 0 : r->x0;
	r->y0 = r->y0 < 0 ? 0 : r->y0;
	r->x1 = r->x1 > c->width ? c->width : r->x1;
	r->y1 = r->y1 > c->height ? c->height : r->y1;
}

/* the painted maps' colours of the page being drawn: kept exact by the quantiser */
static unsigned char keep_rgb[XF_PNG_PALETTE_N][3];
static int n_keep;

void xf_pl_keep_colours(const unsigned char (*rgb)[3], int n)
{
	for (int k = 0; k < n && n_keep < XF_PNG_PALETTE_N - 16; k++) { /* room for greys */
		int seen = 0;
		for (int j = 0; j < n_keep && !seen; j++)
			seen = !memcmp(keep_rgb[j], rgb[k], 3);
		if (!seen)
			memcpy(keep_rgb[n_keep++], rgb[k], 3);
	}
}

int xf_pl_file_painted(const char *path, int width_px, int height_px,
		       void (*paint)(void *ctx, const xf_pl_canvas *canvas),
		       void (*draw)(void *ctx), void *ctx, xf_error *err)
{
	char tmp[PATH_MAX];
	if (xf_tmp_name(path, tmp, sizeof tmp) != 0)
		return xf_fail(err, XF_ERR_DATA, "path too long, %s", path);
	xf_pl_canvas canvas = { NULL, 0, 0 };
	xf_pl_page_px(width_px, height_px, &canvas.width, &canvas.height);
	canvas.rgb = malloc((size_t)canvas.width * (size_t)canvas.height * 3);
	if (!canvas.rgb)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory for a %d x %d plot, %s",
			       canvas.width, canvas.height, path);
	memset(canvas.rgb, 255, (size_t)canvas.width * (size_t)canvas.height * 3); /* white */
	n_keep = 0;
	if (paint)
		paint(ctx, &canvas);
	stderr_capture cap;
	capture_begin(&cap);
	int failed = pl_session(path, canvas.rgb, canvas.width, canvas.height, draw, ctx);
	capture_end(&cap);
	if (failed) {
		free(canvas.rgb);
		return xf_fail(err, XF_ERR_DATA, "plotting failed (PLplot: %s), %s", pl_message,
			       path);
	}
	/* this process's own name: whatever sits there (a link, a FIFO) is removed and the
	 * file made anew, never opened through a link (adr/0071) */
	(void)unlink(tmp);
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0) {
		free(canvas.rgb);
		return xf_fail(err, XF_ERR_DATA, "cannot write plot: %s, %s", strerror(errno),
			       path);
	}
	int why = 0; /* errno of a failed write or close */
	/* at most 256 colours: a palette PNG, about half the bytes of the RGB page and
	 * quicker to deflate (adr/0077) */
	xf_png_quantise(canvas.rgb, canvas.width, canvas.height,
			(const unsigned char(*)[3])keep_rgb, n_keep);
	if (xf_png_write_rgb(fd, canvas.rgb, canvas.width, canvas.height) != 0)
		why = errno;
	int whole = !why && png_whole(fd);
	free(canvas.rgb);
	if (close(fd) != 0 && !why)
		why = errno;
	if (!whole || why) {
		unlink(tmp);
		if (why)
			return xf_fail(err, XF_ERR_DATA, "cannot write plot: %s, %s", strerror(why),
				       path);
		return xf_fail(err, XF_ERR_DATA,
			       "the plot file was not written whole (disk full?), %s", path);
	}
	return xf_commit_tmp(tmp, path, err);
}

int xf_pl_file(const char *path, int width_px, int height_px, void (*draw)(void *ctx), void *ctx,
	       xf_error *err)
{
	return xf_pl_file_painted(path, width_px, height_px, NULL, draw, ctx, err);
}

/* PLplot's default character height on the pngcairo device is about 30 px: too big
 * for dense scientific figures of these sizes (XF_PLOT_TEXT_FACTOR above) */

double xf_plot_text_scale(double scale)
{
	return scale * XF_PLOT_TEXT_FACTOR;
}

void xf_plot_text(double scale)
{
	text_now = scale;
	plschr(0.0, xf_plot_text_scale(scale));
}

double xf_plot_text_current(void)
{
	return text_now;
}

void xf_plot_phi_frame(double x0, double x1, double y0, double y1, double phi_lo, double phi_hi,
		       double lo, double hi, const char *title)
{
	double pad = phi_hi > phi_lo ? 0.08 * (phi_hi - phi_lo) : 10.0;
	plvpor(x0, x1, y0, y1);
	plwind(phi_lo - pad, phi_hi + pad, lo, hi);
	xf_plot_text(0.9);
	/* enough decimals that neighbouring tick labels differ, and no "×10^k" on values
	 * near 1 (PLplot's automatic choice fails on narrow ranges) */
	double step = (hi - lo) / 5.0;
	int prec = step > 0 ? (int)ceil(-log10(step)) : 3;
	plbox("bcnstg", 0.0, 0, "", 0.0, 0);
	plprec(1, prec < 0 ? 0 : prec > 8 ? 8 : prec);
	plsyax(12, 0);
	plbox("", 0.0, 0, "bcnstvg", 0.0, 0);
	plprec(0, 0);
	plsyax(0, 0);
	xf_pl_mtex("b", 3.2, 0.5, 0.5, "φ (deg)");
	/* no y label: the title names the quantity, and long tick labels would run into it */
	xf_plot_text(1.1);
	xf_pl_mtex("t", 1.0, 0.5, 0.5, title);
}

/* five stops each, evenly spaced: viridis (perceptually ordered, readable in grey and for
 * the colour blind) and blue - white - red (white at the middle: zero residual is white) */
static const double cmap_stops[2][3][5] = {
	{ { 0.267, 0.229, 0.128, 0.369, 0.993 },
	  { 0.005, 0.322, 0.567, 0.789, 0.906 },
	  { 0.329, 0.546, 0.551, 0.383, 0.144 } },
	{ { 0.230, 0.552, 1.000, 0.902, 0.706 },
	  { 0.299, 0.690, 1.000, 0.529, 0.016 },
	  { 0.754, 0.996, 1.000, 0.420, 0.150 } },
};

void xf_plot_cmap_table(int diverging, unsigned char rgb[XF_PLOT_CMAP_N][3])
{
	const double(*stops)[5] = cmap_stops[diverging != 0];
	for (int i = 0; i < XF_PLOT_CMAP_N; i++) {
		double p = 4.0 * i / (XF_PLOT_CMAP_N - 1.0);
		int s = p >= 4.0 ? 3 : (int)p;
		double f = p - s;
		for (int c = 0; c < 3; c++) {
			double v = stops[c][s] + f * (stops[c][s + 1] - stops[c][s]);
			rgb[i][c] = (unsigned char)lround(255.0 * v);
		}
	}
}

/* the same table for PLplot (colour bars): cmap1 = exactly the painted colours */
static void cmap(int diverging)
{
	unsigned char rgb[XF_PLOT_CMAP_N][3];
	PLINT r[XF_PLOT_CMAP_N], g[XF_PLOT_CMAP_N], b[XF_PLOT_CMAP_N];
	xf_plot_cmap_table(diverging, rgb);
	for (int i = 0; i < XF_PLOT_CMAP_N; i++) {
		r[i] = rgb[i][0];
		g[i] = rgb[i][1];
		b[i] = rgb[i][2];
	}
	plscmap1(r, g, b, XF_PLOT_CMAP_N);
}

void xf_plot_cmap_sequential(void)
{
	cmap(0);
}

void xf_plot_cmap_diverging(void)
{
	cmap(1);
}
