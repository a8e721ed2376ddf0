/* plsession.c — one PNG file = one PLplot session (plinit … plend) on the pngcairo
 * device, written to a temporary name and renamed. PLplot's fatal errors call exit()
 * after the user exit handler returns, so the handler longjmp()s back here instead:
 * the library must never end the program. Non-fatal PLplot aborts become warnings. */
#include "util/files.h"
#include "plot/plot_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <plplot.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
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

int xf_pl_file(const char *path, int width_px, int height_px, void (*draw)(void *ctx), void *ctx,
	       xf_error *err)
{
	char tmp[PATH_MAX];
	if (xf_tmp_name(path, tmp, sizeof tmp) != 0)
		return xf_fail(err, XF_EXIT_DATA, "path too long, %s", path);
	/* PLplot answers a file it cannot open by prompting for another name on stdin:
	 * make sure the temporary file can be created before PLplot sees it */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return xf_fail(err, XF_EXIT_DATA, "cannot write plot: %s, %s", strerror(errno),
			       path);
	close(fd);
	jmp_buf here;
	volatile int initialised = 0;
	pl_message[0] = '\0';
	if (setjmp(here) != 0) {
		pl_jump = NULL;
		if (initialised)
			plend();
		unlink(tmp);
		return xf_fail(err, XF_EXIT_DATA, "plotting failed (PLplot: %s), %s", pl_message,
			       path);
	}
	pl_jump = &here;
	plsexit(pl_exit_handler);
	plsabort(pl_abort_handler);
	plsdev("pngcairo");
	plsfnam(tmp);
	plspage(0.0, 0.0, width_px, height_px, 0, 0);
	plscolbg(255, 255, 255);
	plinit();
	initialised = 1;
	draw(ctx);
	plend();
	initialised = 0;
	pl_jump = NULL;
	if (access(tmp, F_OK) != 0)
		return xf_fail(err, XF_EXIT_DATA,
			       "plotting produced no file (folder not "
			       "writable?), %s",
			       path);
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
