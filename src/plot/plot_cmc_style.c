/* plot_cmc_style.c — what every CMC page shares: parameter labels with units (the names
 * homodyne uses, so a user finds them in their config), chain colours, grid shapes and
 * tick steps. */
#include "plot/plot_cmc.h"

#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <string.h>

/* Tableau 10: distinct for the common colour-vision deficiencies, and the palette
 * overview.png uses for angles */
static const unsigned char palette[XF_PLOT_CMC_N_COLOURS][3] = {
	{ 31, 119, 180 }, { 255, 127, 14 },  { 44, 160, 44 },	{ 214, 39, 40 },  { 148, 103, 189 },
	{ 140, 86, 75 },  { 227, 119, 194 }, { 127, 127, 127 }, { 188, 189, 34 }, { 23, 190, 207 },
};

void xf_plot_cmc_colours(void)
{
	plscmap0n(XF_PLOT_CMC_COLOUR0 + XF_PLOT_CMC_N_COLOURS);
	plscol0(0, 255, 255, 255);
	plscol0(1, 0, 0, 0);
	for (int c = 0; c < XF_PLOT_CMC_N_COLOURS; c++)
		plscol0(XF_PLOT_CMC_COLOUR0 + c, palette[c][0], palette[c][1], palette[c][2]);
}

void xf_plot_cmc_label(char *buf, size_t size, const char *name)
{
	/* units of model.md in PLplot's text escapes (#u…#d: superscript) */
	static const struct {
		const char *name, *unit;
	} units[] = {
		{ "D0", "Å#u2#d/s#u1+α#d" },
		{ "D_offset", "Å#u2#d/s" },
		{ "gamma_dot_t0", "s#u-(1+β)#d" },
		{ "gamma_dot_t_offset", "s#u-1#d" },
		{ "phi0", "deg" },
	};
	for (size_t k = 0; k < sizeof units / sizeof units[0]; k++)
		if (!strcmp(name, units[k].name)) {
			snprintf(buf, size, "%s (%s)", name, units[k].unit);
			return;
		}
	/* alpha, beta, contrast, offset and σ (in units of c2) carry no unit */
	snprintf(buf, size, "%s", name);
}

int xf_plot_cmc_cols(int n)
{
	return n <= 3 ? (n < 1 ? 1 : n) : n <= 12 ? 3 : 4;
}

double xf_plot_nice_step(double lo, double hi, int n_ticks)
{
	double span = hi - lo;
	if (!(span > 0.0) || !isfinite(span))
		return 1.0;
	double raw = span / (n_ticks > 1 ? n_ticks : 2);
	double p = pow(10.0, floor(log10(raw)));
	double f = raw / p;
	return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * p;
}

/* decimals that tell ticks step apart */
static int decimals(double step)
{
	int prec = (int)ceil(-log10(step) - 1e-9);
	return prec < 0 ? 0 : prec > 8 ? 8 : prec;
}

void xf_plot_cmc_axis(int is_x, const char *opt, double lo, double hi, double px)
{
	/* the most ticks whose labels fit side by side (x) or one above another (y) in px
	 * pixels: long labels (0.0125, −2000) get fewer ticks rather than run together */
	double step = xf_plot_nice_step(lo, hi, 2);
	for (int n = 8; n >= 2; n--) {
		double s = xf_plot_nice_step(lo, hi, n);
		char a[64], b[64];
		snprintf(a, sizeof a, "%.*f", decimals(s), lo);
		snprintf(b, sizeof b, "%.*f", decimals(s), hi);
		size_t chars = strlen(a) > strlen(b) ? strlen(a) : strlen(b);
		double labels = floor((hi - lo) / s) + 1.0;
		double need = is_x ? labels * (chars * 9.0 + 24.0) : labels * 40.0;
		if (need <= px) {
			step = s;
			break;
		}
	}
	/* fixed decimals from the step, and never PLplot's "(x10^k)" beside the axis: it
	 * lands on the panel titles, and plain numbers read faster */
	plprec(1, decimals(step));
	if (is_x) {
		plsxax(12, 0);
		plbox(opt, step, 2, "", 0.0, 0);
	} else {
		plsyax(12, 0);
		plbox("", 0.0, 0, opt, step, 2);
	}
	plprec(0, 0);
}
