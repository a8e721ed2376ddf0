/* plsession.c — one PNG file = one PLplot session (plinit … plend) on the pngcairo
 * device, written to a temporary name (through a FILE* PLplot is handed, never the path),
 * checked to be a whole PNG, then renamed. PLplot's fatal errors call exit()
 * after the user exit handler returns, so the handler longjmp()s back here instead:
 * the library must never end the program. Non-fatal PLplot aborts become warnings. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "util/files.h"
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
 * warnings (in run.log too), so no raw library line reaches the terminal. */
typedef struct stderr_capture {
	int saved; /* the real stderr; -1 when not capturing */
	int mem;   /* the memfd standing in for it */
} stderr_capture;

static void capture_begin(stderr_capture *c)
{
	c->saved = c->mem = -1;
	fflush(stderr);
	int mem = memfd_create("xpcsfit-plplot", MFD_CLOEXEC);
	int saved = mem >= 0 ? dup(2) : -1;
	if (saved < 0 || dup2(mem, 2) < 0) {
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

/* plotting.dpi over XF_PLOT_DPI_REFERENCE: every page's pixel size and its device DPI
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

/* One plinit ... plend session into the open file fd (PLplot gets a FILE* of its own
 * on a copy of fd and closes it at plend: it never sees the path, whose '%' it would
 * take for a family-file format). Returns 0, or 1 with pl_message set. */
static int pl_session(int fd, int width_px, int height_px, void (*draw)(void *ctx), void *ctx)
{
	int copy = dup(fd);
	FILE *f = copy >= 0 ? fdopen(copy, "wb") : NULL;
	if (!f) {
		if (copy >= 0)
			close(copy);
		snprintf(pl_message, sizeof pl_message, "cannot open a stream: %s",
			 strerror(errno));
		return 1;
	}
	jmp_buf here;
	volatile int initialised = 0;
	pl_message[0] = '\0';
	if (setjmp(here) != 0) {
		pl_jump = NULL;
		if (initialised)
			plend(); /* closes f */
		else
			fclose(f);
		return 1;
	}
	pl_jump = &here;
	plsexit(pl_exit_handler);
	plsabort(pl_abort_handler);
	plsdev("pngcairo");
	plsfile(f);
	plspage(XF_PL_CAIRO_DPI * pl_scale, XF_PL_CAIRO_DPI * pl_scale,
		(PLINT)(width_px * pl_scale + 0.5), (PLINT)(height_px * pl_scale + 0.5), 0, 0);
	plscolbg(255, 255, 255);
	plinit();
	initialised = 1;
	draw(ctx);
	plend(); /* writes the PNG and closes f */
	pl_jump = NULL;
	return 0;
}

int xf_pl_file(const char *path, int width_px, int height_px, void (*draw)(void *ctx), void *ctx,
	       xf_error *err)
{
	char tmp[PATH_MAX];
	if (xf_tmp_name(path, tmp, sizeof tmp) != 0)
		return xf_fail(err, XF_ERR_DATA, "path too long, %s", path);
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return xf_fail(err, XF_ERR_DATA, "cannot write plot: %s, %s", strerror(errno),
			       path);
	stderr_capture cap;
	capture_begin(&cap);
	int failed = pl_session(fd, width_px, height_px, draw, ctx);
	capture_end(&cap);
	int whole = !failed && png_whole(fd);
	close(fd);
	if (failed) {
		unlink(tmp);
		return xf_fail(err, XF_ERR_DATA, "plotting failed (PLplot: %s), %s", pl_message,
			       path);
	}
	if (!whole) {
		unlink(tmp);
		return xf_fail(err, XF_ERR_DATA,
			       "the plot file was not written whole (disk full?), %s", path);
	}
	return xf_commit_tmp(tmp, path, err);
}

/* PLplot's default character height on the pngcairo device is about 30 px: too big
 * for dense scientific figures of these sizes */
#define XF_PLOT_TEXT_FACTOR 0.55

double xf_plot_text_scale(double scale)
{
	return scale * XF_PLOT_TEXT_FACTOR;
}

void xf_plot_text(double scale)
{
	plschr(0.0, xf_plot_text_scale(scale));
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
	plmtex("b", 3.2, 0.5, 0.5, "φ (deg)");
	/* no y label: the title names the quantity, and long tick labels would run into it */
	xf_plot_text(1.1);
	plmtex("t", 1.0, 0.5, 0.5, title);
}

static void cmap(const double *pos, const double *r, const double *g, const double *b, int n)
{
	plscmap1n(256);
	plscmap1l(1, n, pos, r, g, b, NULL);
}

void xf_plot_cmap_sequential(void)
{
	/* viridis at five stops: perceptually ordered, readable in grey and for the
	 * colour blind */
	static const double pos[] = { 0.0, 0.25, 0.5, 0.75, 1.0 };
	static const double r[] = { 0.267, 0.229, 0.128, 0.369, 0.993 };
	static const double g[] = { 0.005, 0.322, 0.567, 0.789, 0.906 };
	static const double b[] = { 0.329, 0.546, 0.551, 0.383, 0.144 };
	cmap(pos, r, g, b, 5);
}

void xf_plot_cmap_diverging(void)
{
	/* blue - white - red, white at the middle: zero residual is white */
	static const double pos[] = { 0.0, 0.25, 0.5, 0.75, 1.0 };
	static const double r[] = { 0.230, 0.552, 1.000, 0.902, 0.706 };
	static const double g[] = { 0.299, 0.690, 1.000, 0.529, 0.016 };
	static const double b[] = { 0.754, 0.996, 1.000, 0.420, 0.150 };
	cmap(pos, r, g, b, 5);
}
