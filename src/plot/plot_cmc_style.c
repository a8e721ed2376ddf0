/* plot_cmc_style.c — what every CMC page shares: parameter labels with units (the names
 * homodyne uses, so a user finds them in their config), chain colours, grid shapes and
 * tick steps. */
#include "plot/plot_cmc.h"
#include "plot/plot_internal.h"

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

const char *xf_plot_param_symbol(const char *name)
{
	static const struct {
		const char *name, *label;
	} greek[] = {
		{ "D0", "D#d0#u" },
		{ "alpha", "α" },
		{ "D_offset", "D#doffset#u" },
		{ "gamma_dot_t0", "γ̇#d0#u" },
		{ "beta", "β" },
		{ "gamma_dot_t_offset", "γ̇#doffset#u" },
		{ "phi0", "φ#d0#u" },
	};
	for (size_t k = 0; k < sizeof greek / sizeof greek[0]; k++)
		if (!strcmp(name, greek[k].name))
			return greek[k].label;
	return name;
}

void xf_plot_cmc_symbol_label(char *buf, size_t size, const char *name)
{
	char named[128];
	xf_plot_cmc_label(named, sizeof named, name);
	/* the unit (if any) after the name, behind the symbol instead */
	size_t n = strlen(name);
	snprintf(buf, size, "%s%s", xf_plot_param_symbol(name),
		 !strncmp(named, name, n) ? named + n : "");
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

/* the ticks of step s over the window [lo, hi], as PLplot's plbox places them */
#define FOR_TICKS(t, lo, hi, s)                                                                    \
	for (double t = (s) * (1.0 + floor((lo) / (s))); (t) <= (hi); (t) += (s))

static void tick_text(double t, double step, char *buf, size_t size)
{
	if (fabs(t) < 1e-9 * step)
		t = 0.0; /* no "-0.000" */
	snprintf(buf, size, "%.*f", decimals(step), t);
}

static int count_ticks(double lo, double hi, double s)
{
	int n = 0;
	FOR_TICKS(t, lo, hi, s)
	{
		n++;
	}
	return n;
}

/* 1 when the labels of step s over [lo, hi] fit an axis px nominal pixels long at text
 * scale: side by side with a gap (x), or one above another (y) */
static int labels_fit(int is_x, double lo, double hi, double s, double px, double scale)
{
	double spacing = s / (hi - lo) * px, widest = 0.0;
	int n = 0;
	FOR_TICKS(t, lo, hi, s)
	{
		char label[64];
		tick_text(t, s, label, sizeof label);
		double w = xf_plot_text_width_px(label, scale);
		widest = w > widest ? w : widest;
		n++;
	}
	double line = xf_plot_text_height_px(scale);
	return n >= 2 && (is_x ? widest + 0.8 * line : 1.1 * line) <= spacing;
}

void xf_plot_cmc_axis(int is_x, const char *opt, double lo, double hi, double px)
{
	/* the most ticks whose labels fit side by side (x) or one above another (y) in px
	 * pixels: long labels (0.0125, −2000) get fewer ticks rather than run together
	 * ("0.01150.0120" was drawn); their widths are estimated, the drawn result is
	 * checked by tests/test_plot_text.py */
	double scale = xf_plot_text_current();
	/* where none fits: the fewest that still label two ticks */
	double step = xf_plot_nice_step(lo, hi, 1);
	for (int n = 1; n <= 8 && count_ticks(lo, hi, step) < 2; n++)
		step = xf_plot_nice_step(lo, hi, n);
	for (int n = 8; n >= 1; n--) {
		double s = xf_plot_nice_step(lo, hi, n);
		if (labels_fit(is_x, lo, hi, s, px, scale)) {
			step = s;
			break;
		}
	}
	/* the frame and ticks by PLplot, the labels here (PLplot's would not say where
	 * they are, and could not be left out at the ends) */
	char bare[16];
	size_t k = 0;
	for (const char *o = opt; *o && k + 1 < sizeof bare; o++)
		if (*o != 'n')
			bare[k++] = *o;
	bare[k] = '\0';
	if (is_x)
		plbox(bare, step, 2, "", 0.0, 0);
	else
		plbox("", 0.0, 0, bare, step, 2);
	xf_pl_text_frame();
	if (!strchr(opt, 'n'))
		return;
	PLFLT wx0, wx1, wy0, wy1;
	plgvpw(&wx0, &wx1, &wy0, &wy1);
	double w0 = is_x ? wx0 : wy0, w1 = is_x ? wx1 : wy1, line = xf_plot_text_height_px(scale);
	xf_pl_text_kind("tick");
	FOR_TICKS(t, w0, w1, step)
	{
		char label[64];
		tick_text(t, step, label, sizeof label);
		double pos = (t - w0) / (w1 - w0), at = pos * px;
		if (is_x) {
			/* a label past the panel's end by more than a few pixels would run into
			 * the next panel's */
			double half = 0.5 * xf_plot_text_width_px(label, scale);
			if (at - half < -12.0 || at + half > px + 12.0)
				continue;
			xf_pl_mtex("b", 1.5, pos, 0.5, label);
		} else {
			if (at < -0.1 * line || at > px + 0.1 * line)
				continue;
			if (strchr(opt, 'v'))
				xf_pl_mtex("lv", 0.5, pos, 1.0, label);
			else
				xf_pl_mtex("l", 1.5, pos, 0.5, label);
		}
	}
	xf_pl_text_kind(NULL);
}
