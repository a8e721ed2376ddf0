/* draw_angle.c — the per-angle figure: data | fit | residual heatmaps over (t1, t2) in
 * seconds with colour bars, and a title with φ, q and the key fitted values. Data and
 * fit share one colour scale so they can be compared by eye; the residual scale is
 * diverging and symmetric about zero. Maps larger than XF_PLOT_MAX_PIXELS per side are
 * block-averaged (NaN-aware) before drawing. */
#include "io/surfaces.h"
#include "plot/plot_internal.h"
#include "util/select.h"
#include "xpcsfit/dataset.h"

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

/* quantiles of the finite values of up to two maps (abs_values: of |v|) */
static void quantiles(const map *a, const map *b, int abs_values, double qlo, double qhi,
		      double *lo, double *hi)
{
	size_t na = a ? (size_t)a->n * a->n : 0, nb = b ? (size_t)b->n * b->n : 0;
	double *buf = malloc((na + nb + 1) * sizeof *buf);
	size_t k = 0;
	*lo = NAN;
	*hi = NAN;
	if (!buf)
		return;
	for (size_t i = 0; i < na; i++)
		if (isfinite(a->v[i]))
			buf[k++] = abs_values ? fabs(a->v[i]) : a->v[i];
	for (size_t i = 0; i < nb; i++)
		if (isfinite(b->v[i]))
			buf[k++] = abs_values ? fabs(b->v[i]) : b->v[i];
	if (k > 0) {
		*lo = xf_select_kth(buf, k, (size_t)(qlo * (double)(k - 1)));
		*hi = xf_select_kth(buf, k, (size_t)(qhi * (double)(k - 1)));
	}
	free(buf);
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

/* one heatmap in the viewport region [x0, x1] × [y0, y1] of the page */
static void heatmap(const map *m, double t_max, double lo, double hi, int slot, const char *title,
		    const char *bar_label)
{
	double x0 = slot * XF_ANGLE_SLOT_PX + XF_ANGLE_LEFT_PX;
	plvpor(x0 / XF_PLOT_ANGLE_W, (x0 + XF_ANGLE_MAP_PX) / XF_PLOT_ANGLE_W,
	       (double)XF_ANGLE_BOTTOM_PX / XF_PLOT_ANGLE_H,
	       (double)(XF_ANGLE_BOTTOM_PX + XF_ANGLE_MAP_PX) / XF_PLOT_ANGLE_H);
	double half = 0.5 * t_max / (m->n > 1 ? m->n - 1 : 1);
	double w0 = -half, w1 = t_max + half;
	plwind(w0, w1, w0, w1);
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
	plcol0(1);
	plscol0(1, 0, 0, 0);
	plcol0(1);
	xf_plot_text(0.9);
	plbox("bcnst", 0.0, 0, "bcnstv", 0.0, 0);
	pllab("t#d1#u (s)", "t#d2#u (s)", "");
	xf_plot_text(1.1);
	plmtex("t", 1.2, 0.5, 0.5, title);
	/* colour bar right of the map */
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
	plcolorbar(&cw, &ch, PL_COLORBAR_IMAGE,
		   PL_POSITION_RIGHT | PL_POSITION_OUTSIDE | PL_POSITION_VIEWPORT, 0.03, 0.0, 0.045,
		   1.0, 0, 1, 1, 0.0, 0.0, 0, 0.0, 1, label_opts, labels, 1, axis_opts, ticks,
		   sub_ticks, n_values, values);
	xf_plot_text(1.0);
}

static const char *param_label(const char *name)
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

static void append_value(char *buf, size_t size, const char *label, double v, double u, int fixed)
{
	size_t len = strlen(buf);
	if (fixed || !isfinite(u))
		snprintf(buf + len, size - len, "%s%s = %.4g%s", len ? ",  " : "", label, v,
			 fixed ? " (fixed)" : "");
	else
		snprintf(buf + len, size - len, "%s%s = %.4g ± %.2g", len ? ",  " : "", label, v,
			 u);
}

void xf_plot_draw_angle(const xf_plot_src *src, int a, const double *data, const double *fit,
			double *work)
{
	int n = src->n_frames;
	size_t nn = (size_t)n * n;
	/* residual = data − fit, NaN where nothing was fitted */
	for (size_t k = 0; k < nn; k++)
		work[k] = data[k] - fit[k];
	xf_io_mask_unfitted(work, (size_t)n);
	/* the data's diagonal was corrected (data.md); the model's is the bare 1 + β
	 * spike: show the fit the same way so the two panels compare like with like */
	double *fit_shown = malloc(nn * sizeof *fit_shown);
	if (fit_shown) {
		memcpy(fit_shown, fit, nn * sizeof *fit_shown);
		xf_diagonal_correct(fit_shown, (size_t)n);
		fit = fit_shown;
	}
	int factor = (n + XF_PLOT_MAX_PIXELS - 1) / XF_PLOT_MAX_PIXELS;
	if (factor < 1)
		factor = 1;
	map md = block_average(data, n, factor);
	map mf = block_average(fit, n, factor);
	map mr = block_average(work, n, factor);
	double t_max = (double)(n - 1) * src->dt_s;

	pladv(0);
	/* title: angle, q, mode and status, then the key fitted values */
	char line1[512], line2[1024] = "", line3[512] = "", chi2[64] = "";
	/* σ not given: χ² is in the data's units squared, the residual sd says more */
	if (isfinite(src->residual_sd))
		snprintf(chi2, sizeof chi2, "   residual sd = %.4g", src->residual_sd);
	else if (isfinite(src->reduced_chi_squared))
		snprintf(chi2, sizeof chi2, "   reduced χ#u2#d = %.4g", src->reduced_chi_squared);
	snprintf(line1, sizeof line1, "φ = %.2f°   q = %.5g Å#u-1#d   %s %s, %s (%s)%s%s",
		 src->phi_deg[a], src->q, src->mode_name,
		 src->method ? "CMC posterior mean" : "fit", src->status, src->stop_reason, chi2,
		 factor > 1 ? "   [maps block-averaged for display]" : "");
	for (int k = 0; k < src->n_phys && src->values; k++)
		append_value(line2, sizeof line2, param_label(src->names[k]), src->values[k],
			     src->uncertainties ? src->uncertainties[k] : NAN,
			     src->is_fixed ? src->is_fixed[k] : 0);
	append_value(line3, sizeof line3, "contrast", src->contrast ? src->contrast[a] : NAN,
		     src->contrast_unc ? src->contrast_unc[a] : NAN, 0);
	append_value(line3, sizeof line3, "offset", src->offset ? src->offset[a] : NAN,
		     src->offset_unc ? src->offset_unc[a] : NAN, 0);
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, 1.0, 0.0, 1.0);
	plscol0(1, 0, 0, 0);
	plcol0(1);
	xf_plot_text(1.3);
	plptex(0.5, 0.945, 1.0, 0.0, 0.5, line1);
	xf_plot_text(1.1);
	plptex(0.5, 0.897, 1.0, 0.0, 0.5, line2);
	plptex(0.5, 0.852, 1.0, 0.0, 0.5, line3);

	if (md.v && mf.v && mr.v) {
		double lo, hi, rlo, rhi;
		/* shared data/fit scale from the fitted region of both maps */
		map md_fit = { md.n, malloc((size_t)md.n * md.n * sizeof(double)) };
		if (md_fit.v) {
			memcpy(md_fit.v, md.v, (size_t)md.n * md.n * sizeof(double));
			for (size_t k = 0; k < (size_t)md.n * md.n; k++)
				if (!isfinite(mr.v[k]))
					md_fit.v[k] = NAN;
		}
		quantiles(md_fit.v ? &md_fit : &md, &mf, 0, XF_PLOT_LOW_QUANTILE,
			  XF_PLOT_HIGH_QUANTILE, &lo, &hi);
		free(md_fit.v);
		widen_if_flat(&lo, &hi);
		quantiles(&mr, NULL, 1, 0.0, XF_PLOT_HIGH_QUANTILE, &rlo, &rhi);
		if (!isfinite(rhi) || rhi <= 0.0)
			rhi = 1e-6;
		rlo = -rhi;
		xf_plot_cmap_sequential();
		heatmap(&md, t_max, lo, hi, 0, "data", "c#d2#u");
		heatmap(&mf, t_max, lo, hi, 1,
			src->method
				? "model at the posterior mean (diagonal corrected like the data)"
				: "fit (diagonal corrected like the data)",
			"c#d2#u");
		xf_plot_cmap_diverging();
		heatmap(&mr, t_max, rlo, rhi, 2, "residual: data − fit (grey: not fitted)",
			"data − fit");
	}
	free(md.v);
	free(mf.v);
	free(mr.v);
	free(fit_shown);
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
		xf_io_mask_unfitted(shown.v, (size_t)md.n);
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
