/* plot_cmc_corner.c — corner.png: the combined posterior of the free physical parameters.
 * Diagonal: histogram of each parameter's draws with the reported mean ± sd. Below it:
 * every pair as a scatter of the draws, the draws' 1σ and 2σ covariance ellipses and
 * their correlation ρ (D0–alpha and gamma_dot_t0–beta are often strongly correlated,
 * which is what a reader looks for here). */
#include "plot/plot_cmc.h"
#include "plot/plot_internal.h"
#include "util/numfmt.h"

#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_PX 215
#define LEFT_PX	  200
#define RIGHT_PX  50
#define BOTTOM_PX 140
#define GAP_PX	  34
/* scatter points per panel: more only darken the cloud and slow the drawing */
#define MAX_POINTS 2000
#define MAX_BINS   40

typedef struct corner {
	const xf_estimate *est;
	const xf_cmc_appendix *app;
	int n;		    /* panels per side */
	int idx[XF_N_PHYS]; /* parameter index of each */
	double lo[XF_N_PHYS], hi[XF_N_PHYS];
	double mean[XF_N_PHYS], cov[XF_N_PHYS][XF_N_PHYS]; /* of the consensus draws */
	int cell, width, height;
} corner;

static double draw_of(const corner *c, int g, int p)
{
	return c->est->draws[(size_t)g * c->est->n_params + c->idx[p]];
}

/* the plain consensus draws: the red ellipses (the published draws are the corrected
 * posterior's resample when the self-check passed) */
static double plain_of(const corner *c, int g, int p)
{
	const double *d = c->app->check->corrected ? c->app->check->draws : c->est->draws;
	return d[(size_t)g * c->est->n_params + c->idx[p]];
}

static void viewport(const corner *c, int row, int col)
{
	double x0 = LEFT_PX + col * c->cell, y0 = HEADER_PX + row * c->cell;
	plvpor(x0 / c->width, (x0 + c->cell - GAP_PX) / c->width,
	       1.0 - (y0 + c->cell - GAP_PX) / c->height, 1.0 - y0 / c->height);
}

/* as many ticks as fit the cell: narrow posteriors around large values still get
 * distinct labels (decimals from the step) */
static void axis(const corner *c, int p, int is_x, int labelled)
{
	xf_plot_cmc_axis(is_x,
			 is_x ? (labelled ? "bcnst" : "bcst") : (labelled ? "bcnstv" : "bcst"),
			 c->lo[p], c->hi[p], c->cell - GAP_PX);
}

/* a solid line at the mean and dashed ones at ± sd, over the panel's height */
static void mean_sd_lines(double m, double s, int colour, double height)
{
	double ly[2] = { 0.0, height }, lx[2] = { m, m };
	plcol0(colour);
	plwidth(2.0);
	plline(2, lx, ly);
	plwidth(1.0);
	pllsty(2);
	for (int k = -1; k <= 1; k += 2) {
		double sx[2] = { m + k * s, m + k * s };
		plline(2, sx, ly);
	}
	pllsty(1);
}

static void diagonal(const corner *c, int p)
{
	const xf_estimate *est = c->est;
	const xf_cmc_appendix *app = c->app;
	int nd = est->n_draws, bins = nd / 30;
	bins = bins < 8 ? 8 : bins > MAX_BINS ? MAX_BINS : bins;
	int count[MAX_BINS] = { 0 }, top = 1;
	double w = (c->hi[p] - c->lo[p]) / bins;
	for (int g = 0; g < nd; g++) {
		int b = (int)((draw_of(c, g, p) - c->lo[p]) / w);
		if (b >= 0 && b < bins && ++count[b] > top)
			top = count[b];
	}
	viewport(c, p, p);
	plwind(c->lo[p], c->hi[p], 0.0, 1.15 * top);
	plscol0(15, 160, 190, 225);
	for (int b = 0; b < bins; b++) {
		double x0 = c->lo[p] + b * w, x1 = x0 + w;
		double fx[4] = { x0, x1, x1, x0 }, fy[4] = { 0, 0, count[b], count[b] };
		plcol0(15);
		plfill(4, fx, fy);
		plcol0(XF_PLOT_CMC_COLOUR0);
		plline(4, fx, fy);
	}
	/* the reported mean and ± sd; when the self-check corrected them, the corrected
	 * ones in green over the plain consensus ones in red, so the difference shows */
	double m = est->values[c->idx[p]], s = est->sd_table[c->idx[p]];
	if (app->check->corrected) {
		mean_sd_lines(app->check->mean[c->idx[p]], app->check->sd[c->idx[p]],
			      XF_PLOT_CMC_COLOUR0 + 3, 1.15 * top);
		mean_sd_lines(m, s, XF_PLOT_CMC_COLOUR0 + 2, 1.15 * top);
	} else {
		mean_sd_lines(m, s, XF_PLOT_CMC_COLOUR0 + 3, 1.15 * top);
	}
	plcol0(1);
	xf_plot_text(0.8);
	axis(c, p, 1, p == c->n - 1);
	plbox("", 0.0, 0, "bc", 0.0, 0);
	/* name and value on two lines over the panel, in the empty cell above it */
	char value[2 * XF_NUM_TEXT]; /* to the precision s supports (adr/0062) */
	xf_num_pm(m, s, " ± ", value, sizeof value);
	xf_plot_text(0.9);
	xf_pl_mtex("t", 2.1, 0.5, 0.5, est->names[c->idx[p]]);
	xf_pl_mtex("t", 0.6, 0.5, 0.5, value);
}

/* the ellipse {x: (x − μ)ᵀ Σ⁻¹ (x − μ) = k²} of a 2×2 covariance */
static void ellipse(double mx, double my, double sxx, double syy, double sxy, double k)
{
	enum { N = 97 };
	double x[N], y[N];
	/* Σ = L Lᵀ (Cholesky): the ellipse is μ + k·L·(cos t, sin t) */
	double l11 = sqrt(sxx), l21 = l11 > 0 ? sxy / l11 : 0.0;
	double r = syy - l21 * l21, l22 = r > 0 ? sqrt(r) : 0.0;
	for (int i = 0; i < N; i++) {
		double t = 2.0 * M_PI * i / (N - 1), ct = cos(t), st = sin(t);
		x[i] = mx + k * l11 * ct;
		y[i] = my + k * (l21 * ct + l22 * st);
	}
	plline(N, x, y);
}

static void pair(const corner *c, int row, int col)
{
	int nd = c->est->n_draws, stride = nd > MAX_POINTS ? (nd + MAX_POINTS - 1) / MAX_POINTS : 1;
	int np = (nd + stride - 1) / stride;
	double *x = malloc(sizeof(double) * (size_t)(np ? np : 1));
	double *y = malloc(sizeof(double) * (size_t)(np ? np : 1));
	viewport(c, row, col);
	plwind(c->lo[col], c->hi[col], c->lo[row], c->hi[row]);
	if (x && y) {
		int k = 0;
		for (int g = 0; g < nd; g += stride, k++) {
			x[k] = draw_of(c, g, col);
			y[k] = draw_of(c, g, row);
		}
		/* translucent points: the density shows where they pile up */
		plscol0a(15, 31, 119, 180, 0.3);
		plcol0(15);
		xf_plot_text(0.3);
		plstring(k, x, y, "●");
	}
	free(x);
	free(y);
	double sxx = c->cov[col][col], syy = c->cov[row][row], sxy = c->cov[row][col];
	plcol0(XF_PLOT_CMC_COLOUR0 + 3);
	plwidth(1.5);
	ellipse(c->mean[col], c->mean[row], sxx, syy, sxy, 1.0);
	ellipse(c->mean[col], c->mean[row], sxx, syy, sxy, 2.0);
	if (c->app->check->corrected) { /* the corrected (exact-posterior) covariance */
		const double *cov = c->est->covariance, *mean = c->est->values;
		int n = c->est->n_params, i = c->idx[col], j = c->idx[row];
		plcol0(XF_PLOT_CMC_COLOUR0 + 2);
		ellipse(mean[i], mean[j], cov[i * n + i], cov[j * n + j], cov[j * n + i], 1.0);
		ellipse(mean[i], mean[j], cov[i * n + i], cov[j * n + j], cov[j * n + i], 2.0);
	}
	plwidth(1.0);
	plcol0(1);
	xf_plot_text(0.8);
	axis(c, col, 1, row == c->n - 1);
	axis(c, row, 0, col == 0);
	if (sxx > 0 && syy > 0) {
		char rho[32];
		snprintf(rho, sizeof rho, "ρ = %+.2f", sxy / sqrt(sxx * syy));
		/* above the frame, in the gap to the panel above (which has no tick labels):
		 * inside, it sat on the frame and the cloud */
		xf_plot_text(0.85);
		xf_pl_mtex("t", 0.9, 1.0, 1.0, rho);
	}
}

static void draw_corner(void *ctx)
{
	corner *c = ctx;
	const xf_estimate *est = c->est;
	const xf_cmc_appendix *app = c->app;
	xf_plot_cmc_colours();
	pladv(0);
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, c->width, 0.0, c->height);
	plcol0(1);
	char line[512];
	int exact = app->n_shards <= 1; /* NUTS on every point, or the importance route */
	snprintf(line, sizeof line, "%s posterior, %s: pairs of the physical parameters",
		 exact ? "Exact" : "CMC", est->words.mode);
	xf_plot_text(1.4);
	xf_pl_ptex(c->width / 2.0, c->height - 40, 1.0, 0.0, 0.5, line);
	char legend[256];
	if (app->n_shards == 0) /* the importance route (adr/0045) */
		snprintf(line, sizeof line,
			 "%d draws of the full-data posterior: importance-resampled from %d "
			 "points, checked (k̂ = %.2f, IS-ESS %.0f)",
			 est->n_draws, app->approx->m, app->approx->khat, app->approx->ess);
	else if (app->n_shards == 1) /* K = 1: nothing was combined */
		snprintf(line, sizeof line,
			 "%d draws of the full-data posterior: NUTS on every point, %d chains",
			 est->n_draws, app->n_chains);
	else
		snprintf(line, sizeof line, "%d %s draws from %ld of %ld shards (%s)", est->n_draws,
			 app->check->corrected ? "corrected (importance-resampled)" : "combined",
			 app->n_kept, app->n_shards, xf_combination_rule_name(app->combination));
	if (app->check->corrected)
		snprintf(legend, sizeof legend,
			 "red: the consensus draws' mean ± sd, 1σ and 2σ ellipses;  green: "
			 "corrected to the full-data posterior (self-check k̂ = %.2f), reported",
			 app->check->khat);
	else
		snprintf(legend, sizeof legend,
			 "red: mean ± sd, 1σ and 2σ ellipses of the draws' covariance%s",
			 app->check->done ? ";  self-check failed: NOT the full-data posterior"
					  : "");
	xf_plot_text(0.95);
	xf_pl_ptex(c->width / 2.0, c->height - 110, 1.0, 0.0, 0.5, legend);
	xf_pl_ptex(c->width / 2.0, c->height - 78, 1.0, 0.0, 0.5, line);
	char fixed[256] = "";
	for (int k = 0; k < est->n_phys; k++)
		if (est->is_fixed[k])
			snprintf(fixed + strlen(fixed), sizeof fixed - strlen(fixed), "%s%s = %.4g",
				 *fixed ? ", " : "fixed, not sampled: ", est->names[k],
				 est->values[k]);
	if (*fixed)
		xf_pl_ptex(c->width / 2.0, c->height - 140, 1.0, 0.0, 0.5, fixed);
	for (int row = 0; row < c->n; row++) {
		diagonal(c, row);
		for (int col = 0; col < row; col++)
			pair(c, row, col);
	}
	/* axis names once per column (bottom) and per row (left); staggered on narrow
	 * cells, where neighbouring names would run into each other */
	int stagger = c->cell < 400;
	/* symbols and units (the names are over the histograms), all at one size: smaller
	 * where one is longer than a panel (a row's name ran into the row above) */
	double scale = 1.0, room = 0.95 * (c->cell - GAP_PX);
	for (int p = 0; p < c->n; p++) {
		char label[128];
		xf_plot_cmc_symbol_label(label, sizeof label, est->names[c->idx[p]]);
		double w = xf_plot_text_width_px(label, 1.0);
		scale = w > room && room / w < scale ? room / w : scale;
	}
	for (int p = 0; p < c->n; p++) {
		char label[128];
		xf_plot_cmc_symbol_label(label, sizeof label, est->names[c->idx[p]]);
		xf_plot_text(scale);
		viewport(c, c->n - 1, p);
		xf_pl_mtex("b", (stagger && p % 2 ? 4.9 : 3.2) * 0.95 / scale, 0.5, 0.5, label);
		if (p > 0) {
			viewport(c, p, 0);
			/* rows need no stagger: their names stand one above another */
			xf_pl_mtex("l", 5.9 * 0.95 / scale, 0.5, 0.5, label);
		}
	}
}

static void draw_empty(void *ctx)
{
	const corner *c = ctx;
	const xf_estimate *est = c->est;
	const xf_cmc_appendix *app = c->app;
	char line[256];
	if (est->n_draws < 2 && app->n_shards <= 1) /* one shard: none to speak of */
		snprintf(line, sizeof line, "no posterior: %s (see run.log)", est->words.status);
	else if (est->n_draws < 2)
		snprintf(line, sizeof line,
			 "no combined posterior: %ld of %ld shards kept (see forest.png and "
			 "parameters.json \"shards\")",
			 app->n_kept, app->n_shards);
	else
		snprintf(line, sizeof line, "%s", "every physical parameter is fixed: no pairs");
	xf_plot_cmc_colours();
	pladv(0);
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, 1.0, 0.0, 1.0);
	plcol0(1);
	xf_plot_text(1.4);
	xf_pl_ptex(0.5, 0.7, 1.0, 0.0, 0.5, "CMC posterior: pairs of the physical parameters");
	xf_plot_text(1.1);
	xf_pl_ptex(0.5, 0.4, 1.0, 0.0, 0.5, line);
}

int xf_plot_cmc_corner(const char *path, const xf_estimate *est, const xf_cmc_appendix *app,
		       xf_error *err)
{
	corner c = { .est = est, .app = app };
	for (int k = 0; k < est->n_phys && k < XF_N_PHYS; k++)
		if (!est->is_fixed[k])
			c.idx[c.n++] = k;
	if (c.n == 0 || est->n_draws < 2)
		/* a page that says why, rather than a missing file that looks like a bug */
		return xf_pl_file(path, XF_PLOT_CMC_W, 400, draw_empty, &c, err);
	int nd = est->n_draws;
	for (int p = 0; p < c.n; p++) {
		double lo = INFINITY, hi = -INFINITY, sum = 0.0;
		for (int g = 0; g < nd; g++) {
			double v = draw_of(&c, g, p);
			lo = v < lo ? v : lo;
			hi = v > hi ? v : hi;
			sum += plain_of(&c, g, p);
		}
		double pad = hi > lo ? 0.05 * (hi - lo) : (fabs(hi) > 0 ? 1e-3 * fabs(hi) : 1e-3);
		c.lo[p] = lo - pad;
		c.hi[p] = hi + pad;
		c.mean[p] = sum / nd;
	}
	for (int p = 0; p < c.n; p++)
		for (int q = 0; q <= p; q++) {
			double s = 0.0;
			for (int g = 0; g < nd; g++)
				s += (plain_of(&c, g, p) - c.mean[p]) *
				     (plain_of(&c, g, q) - c.mean[q]);
			c.cov[p][q] = c.cov[q][p] = s / (nd - 1);
		}
	c.cell = c.n <= 3 ? 420 : c.n <= 5 ? 330 : 270;
	c.width = LEFT_PX + c.n * c.cell + RIGHT_PX;
	c.height = HEADER_PX + c.n * c.cell + BOTTOM_PX;
	return xf_pl_file(path, c.width, c.height, draw_corner, &c, err);
}
