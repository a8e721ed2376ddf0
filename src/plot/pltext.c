/* pltext.c — every string a page draws goes through xf_pl_mtex / xf_pl_ptex (and the
 * tick labels of xf_plot_cmc_axis), so that a test can see where text lands. With
 * XF_PLOT_TEXT_LOG=path in the environment each string appends one line to path:
 *   <page file> TAB <kind> TAB x0 TAB x1 TAB y0 TAB y1 TAB <text>
 * x0..x1, y0..y1: the pixels its ink covers on the page (y from the top), measured by
 * drawing the string alone, with the same height and justification, on a scratch page of
 * a second PLplot stream (PLplot 5.15 exports no string length); kind: "text", or "tick"
 * for a tick label. Each page first writes "<page file> TAB page TAB 0 TAB w TAB 0 TAB h".
 * Without the variable nothing is measured and the drawing is the same (adr/0077). */
#include "plot/plot_internal.h"

#include <fcntl.h>
#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int log_fd = -2;	    /* -2: not looked up yet; -1: no log */
static char page_name[256]; /* the file being drawn */
static int page_w, page_h;  /* its pixels */
static double page_dpi;	    /* its device resolution (pixels per inch) */
static const char *kind = "text";

static int log_open(void)
{
	if (log_fd == -2) {
		const char *path = getenv("XF_PLOT_TEXT_LOG");
		log_fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)
				       : -1;
	}
	return log_fd;
}

/* the current character height in page pixels (PLplot's, in mm, scales with the page) */
static double char_px(void)
{
	PLFLT def_mm, ht_mm, sx0, sx1, sy0, sy1;
	plgchr(&def_mm, &ht_mm);
	plgspa(&sx0, &sx1, &sy0, &sy1);
	return sx1 > sx0 && page_w > 0 ? ht_mm * page_w / (sx1 - sx0) : 0.0;
}

/* one line in one write(): the plot workers are processes appending to the same file */
static void log_line(const char *what, double x0, double x1, double y0, double y1, const char *text)
{
	char line[1024];
	int n = snprintf(line, sizeof line, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t", page_name,
			 what, x0, x1, y0, y1, char_px());
	for (const char *t = text; n < (int)sizeof line - 2 && *t; t++)
		line[n++] = *t == '\n' || *t == '\t' ? ' ' : *t;
	line[n++] = '\n';
	if (write(log_fd, line, (size_t)n) < 0) {
		/* a test's log: nothing to do about a failed write but stop logging */
		log_fd = -1;
	}
}

void xf_pl_text_page(const char *path, int width, int height, double dpi)
{
	const char *slash = strrchr(path, '/');
	snprintf(page_name, sizeof page_name, "%s", slash ? slash + 1 : path);
	page_w = width;
	page_h = height;
	page_dpi = dpi;
	if (log_fd >= 0) /* looked up again for every page: a test sets it between pages */
		close(log_fd);
	log_fd = -2;
	if (log_open() >= 0)
		log_line("page", 0, width, 0, height, "");
}

void xf_pl_text_kind(const char *k)
{
	kind = k ? k : "text";
}

/* The ink of text drawn horizontally at the current character height with justification
 * just, relative to its reference point: along [*a0, *a1] pixels (rightwards), across
 * [*p0, *p1] (downwards). 0, or −1 when nothing could be drawn (no ink: a blank string). */
static int measure(const char *text, double just, double *a0, double *a1, double *p0, double *p1)
{
	enum { W = 4000, H = 400 };
	PLFLT def_mm, ht_mm;
	plgchr(&def_mm, &ht_mm);
	unsigned char *px = malloc((size_t)W * H * 3);
	if (!px)
		return -1;
	memset(px, 255, (size_t)W * H * 3);
	PLINT main_stream, scratch;
	plgstrm(&main_stream);
	plmkstrm(&scratch);
	plsdev("memcairo");
	plspage(page_dpi, page_dpi, W, H, 0, 0);
	plsmem(W, H, px);
	plscolbg(255, 255, 255);
	plinit();
	pladv(0);
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, W, 0.0, H);
	plschr(ht_mm, 1.0);
	plcol0(1);
	plptex(W / 2.0, H / 2.0, 1.0, 0.0, just, text);
	plend1();
	plsstrm(main_stream);
	int x0 = W, x1 = -1, y0 = H, y1 = -1;
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			const unsigned char *p = px + ((size_t)y * W + x) * 3;
			if (p[0] < 250 || p[1] < 250 || p[2] < 250) {
				x0 = x < x0 ? x : x0;
				x1 = x > x1 ? x : x1;
				y0 = y < y0 ? y : y0;
				y1 = y > y1 ? y : y1;
			}
		}
	free(px);
	if (x1 < 0)
		return -1;
	*a0 = x0 - W / 2.0;
	*a1 = x1 + 1 - W / 2.0;
	*p0 = y0 - H / 2.0;
	*p1 = y1 + 1 - H / 2.0;
	return 0;
}

/* reference point (page pixels, y down) and ink of text, horizontal or read upwards */
static void log_text(double rx, double ry, int vertical, double just, const char *text)
{
	double a0, a1, p0, p1;
	if (measure(text, just, &a0, &a1, &p0, &p1) != 0)
		return;
	if (vertical) /* turned a quarter left: along goes up, across goes right */
		log_line(kind, rx + p0, rx + p1, ry - a1, ry - a0, text);
	else
		log_line(kind, rx + a0, rx + a1, ry + p0, ry + p1, text);
}

void xf_pl_mtex(const char *side, double disp, double pos, double just, const char *text)
{
	plmtex(side, disp, pos, just, text);
	if (log_open() < 0 || !text || !*text)
		return;
	PLFLT vx0, vx1, vy0, vy1, def_mm, ht_mm, sx0, sx1, sy0, sy1;
	plgvpd(&vx0, &vx1, &vy0, &vy1);
	plgchr(&def_mm, &ht_mm);
	plgspa(&sx0, &sx1, &sy0, &sy1);
	double px_mm = page_w / (sx1 - sx0), ht = ht_mm * px_mm; /* character height, px */
	double left = vx0 * page_w, right = vx1 * page_w;
	double top = (1.0 - vy1) * page_h, bottom = (1.0 - vy0) * page_h;
	int v = strchr(side, 'v') != NULL;
	switch (side[0]) {
	case 't':
	case 'T': log_text(left + pos * (right - left), top - disp * ht, 0, just, text); break;
	case 'b':
	case 'B': log_text(left + pos * (right - left), bottom + disp * ht, 0, just, text); break;
	case 'l':
	case 'L': log_text(left - disp * ht, bottom - pos * (bottom - top), !v, just, text); break;
	default: log_text(right + disp * ht, bottom - pos * (bottom - top), !v, just, text); break;
	}
}

void xf_pl_ptex(double x, double y, double dx, double dy, double just, const char *text)
{
	plptex(x, y, dx, dy, just, text);
	if (log_open() < 0 || !text || !*text)
		return;
	PLFLT vx0, vx1, vy0, vy1, wx0, wx1, wy0, wy1;
	plgvpd(&vx0, &vx1, &vy0, &vy1);
	plgvpw(&wx0, &wx1, &wy0, &wy1);
	double fx = vx0 + (vx1 - vx0) * (x - wx0) / (wx1 - wx0);
	double fy = vy0 + (vy1 - vy0) * (y - wy0) / (wy1 - wy0);
	/* every caller writes horizontally (dx > 0, dy = 0) */
	log_text(fx * page_w, (1.0 - fy) * page_h, dx == 0.0 && dy != 0.0, just, text);
}

void xf_pl_lab(const char *x_label, const char *y_label)
{
	/* where pllab puts them */
	xf_pl_mtex("b", 3.2, 0.5, 0.5, x_label);
	xf_pl_mtex("l", 5.0, 0.5, 0.5, y_label);
}

/* The widest characters of the pages (digits, "±", "=", most letters) are 0.8 character
 * heights wide in cairo's sans (measured with XF_PLOT_TEXT_LOG); sub- and superscripts
 * (#d…#u) count 0.7 of that. PLplot's character height scales with the page, so the estimates read it from the session: they are called while drawing. */
#define XF_TEXT_CHAR_WIDTH 0.82
#define XF_TEXT_LINE	   1.5 /* a line's ink, sub- and superscripts included */

/* the character height at xf_plot_text(scale) in nominal page pixels */
static double char_nominal_px(double scale)
{
	double now = xf_plot_text_current();
	return char_px() * (now > 0 ? scale / now : 1.0) / (page_dpi > 0 ? page_dpi / 72.0 : 1.0);
}

double xf_plot_text_width_px(const char *text, double scale)
{
	double chars = 0.0;
	int level = 0; /* above (> 0) or below (< 0) the line */
	for (const unsigned char *t = (const unsigned char *)text; *t; t++) {
		if (*t == '#' && t[1] && strchr("ud", t[1])) {
			level += *++t == 'u' ? 1 : -1; /* PLplot's escape: no character */
			continue;
		}
		if ((*t & 0xC0) != 0x80) /* one per UTF-8 character, smaller off the line */
			chars += level ? 0.7 : 1.0;
	}
	return chars * XF_TEXT_CHAR_WIDTH * char_nominal_px(scale);
}

double xf_plot_text_height_px(double scale)
{
	return XF_TEXT_LINE * char_nominal_px(scale);
}

void xf_pl_text_frame(void)
{
	if (log_open() < 0)
		return;
	PLFLT vx0, vx1, vy0, vy1;
	plgvpd(&vx0, &vx1, &vy0, &vy1);
	log_line("frame", vx0 * page_w, vx1 * page_w, (1.0 - vy1) * page_h, (1.0 - vy0) * page_h,
		 "");
}
