/* plot_cmc_draws.c — one shard's chains: trace plots (each chain's draws against the
 * iteration) and rank plots (Vehtari, Gelman, Simpson, Carpenter, Bürkner 2021: the
 * histogram of the ranks of each chain's draws among the pooled draws of all chains;
 * uniform when the chains sample the same distribution). One page per shard and kind,
 * one panel per sampled coordinate, σ included. */
#include "plot/plot_cmc.h"
#include "plot/plot_internal.h"

#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* page layout (pixels) */
#define HEADER_PX 150
#define FOOTER_PX 20
#define LEFT_PX	  120
#define RIGHT_PX  30
#define TOP_PX	  40
#define BOTTOM_PX 60
/* rank histogram bins: at most this many, and at least this many draws per bin and
 * chain on average (fewer make every histogram look ragged) */
#define RANK_MAX_BINS	 20
#define RANK_MIN_PER_BIN 10
/* a chain's histogram fills this fraction of its band at the expected count */
#define RANK_BAR_EXPECTED 0.5

static int page_height(int n_panels)
{
	int cols = xf_plot_cmc_cols(n_panels), rows = (n_panels + cols - 1) / cols;
	return HEADER_PX + rows * XF_PLOT_CMC_TRACE_ROW + FOOTER_PX;
}

#define PANEL_H_PX (XF_PLOT_CMC_TRACE_ROW - TOP_PX - BOTTOM_PX)

static double panel_w(const xf_plot_chains *c)
{
	return (double)XF_PLOT_CMC_W / xf_plot_cmc_cols(c->n_panels) - LEFT_PX - RIGHT_PX;
}

/* viewport of panel p in page fractions */
static void panel_viewport(const xf_plot_chains *c, int p)
{
	int cols = xf_plot_cmc_cols(c->n_panels);
	double w = XF_PLOT_CMC_W, h = page_height(c->n_panels);
	double cell_w = w / cols, x0 = (p % cols) * cell_w;
	double y_top = HEADER_PX + (double)(p / cols) * XF_PLOT_CMC_TRACE_ROW;
	plvpor((x0 + LEFT_PX) / w, (x0 + cell_w - RIGHT_PX) / w,
	       1.0 - (y_top + XF_PLOT_CMC_TRACE_ROW - BOTTOM_PX) / h, 1.0 - (y_top + TOP_PX) / h);
}

/* shard status line, in red when it was left out of the combination */
static void header(const xf_plot_chains *c, const char *what, const char *guide)
{
	double h = page_height(c->n_panels);
	char line[512];
	pladv(0);
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, XF_PLOT_CMC_W, 0.0, h);
	plcol0(1);
	xf_plot_text(1.4);
	snprintf(line, sizeof line, "CMC shard %ld: %s, %d chains × %d draws after warmup",
		 c->shard, what, c->n_chains, c->n_draws);
	xf_pl_ptex(XF_PLOT_CMC_W / 2.0, h - 40, 1.0, 0.0, 0.5, line);
	xf_plot_text(1.05);
	if (c->kept) {
		snprintf(line, sizeof line,
			 "kept in the combination:  max R̂ = %.4g,  divergent transitions %.2g %%",
			 c->rhat_max, 100.0 * c->divergence_rate);
	} else {
		plscol0(15, 200, 30, 30);
		plcol0(15);
		snprintf(line, sizeof line, "EXCLUDED from the combination: %s",
			 c->reason && *c->reason ? c->reason : "(no reason recorded)");
	}
	xf_pl_ptex(XF_PLOT_CMC_W / 2.0, h - 75, 1.0, 0.0, 0.5, line);
	plcol0(1);
	xf_plot_text(0.95);
	xf_pl_ptex(XF_PLOT_CMC_W / 2.0, h - 105, 1.0, 0.0, 0.5, guide);
	/* chain legend: each name in its colour */
	int n_legend = c->n_chains < XF_PLOT_CMC_N_COLOURS ? c->n_chains : XF_PLOT_CMC_N_COLOURS;
	double x = XF_PLOT_CMC_W / 2.0 - 0.5 * 110.0 * (n_legend - 1);
	for (int k = 0; k < n_legend; k++, x += 110.0) {
		snprintf(line, sizeof line, "chain %d", k + 1);
		plcol0(XF_PLOT_CMC_COLOUR0 + k);
		xf_pl_ptex(x, h - 135, 1.0, 0.0, 0.5, line);
	}
	plcol0(1);
	if (c->n_cut > 0 || !c->physical) {
		char note[256] = "";
		if (!c->physical)
			snprintf(
				note, sizeof note, "%s",
				"values in the sampler's space (logit within the bounds, log σ)  ");
		if (c->n_cut > 0)
			snprintf(note + strlen(note), sizeof note - strlen(note),
				 "%d more sampled coordinates not shown (results.h5 "
				 "/cmc/shard_draws)",
				 c->n_cut);
		xf_plot_text(0.8);
		xf_pl_ptex(XF_PLOT_CMC_W - 20.0, h - 135, 1.0, 0.0, 1.0, note);
	}
}

/* the parameter on the left, the shard's R̂ and bulk ESS of it on the right */
static void panel_title(const xf_plot_chains *c, int p)
{
	char label[128], stats[96] = "";
	xf_plot_cmc_label(label, sizeof label, c->names[p]);
	if (isfinite(c->rhat[p]) && isfinite(c->ess[p]))
		snprintf(stats, sizeof stats, "R̂ %.3f   ESS %.0f", c->rhat[p], c->ess[p]);
	/* both smaller where they would meet (a long name with its unit ran into "R̂") */
	double need = xf_plot_text_width_px(label, 1.0) + xf_plot_text_width_px(stats, 0.85) +
		      xf_plot_text_height_px(1.0);
	double shrink = need > panel_w(c) ? panel_w(c) / need : 1.0;
	xf_plot_text(shrink);
	/* 1.1 heights up: descenders and underscores clear the frame */
	xf_pl_mtex("t", 1.1 / shrink, 0.0, 0.0, label);
	if (*stats) {
		xf_plot_text(0.85 * shrink);
		xf_pl_mtex("t", 1.1 / shrink, 1.0, 1.0, stats);
	}
}

static void draw_trace(void *ctx)
{
	const xf_plot_chains *c = ctx;
	int nc = c->n_chains, nd = c->n_draws;
	xf_plot_cmc_colours();
	header(c, "trace plots",
	       "Converged chains overlap as one stationary band; a drift, or a chain "
	       "apart from the others, means the shard is not converged.");
	double *x = malloc(sizeof(double) * (size_t)(nd > 0 ? nd : 1));
	if (!x)
		return;
	for (int i = 0; i < nd; i++)
		x[i] = i + 1;
	for (int p = 0; p < c->n_panels; p++) {
		const double *v = c->values + (size_t)p * nc * nd;
		double lo = INFINITY, hi = -INFINITY;
		for (size_t k = 0; k < (size_t)nc * nd; k++)
			if (isfinite(v[k])) {
				lo = v[k] < lo ? v[k] : lo;
				hi = v[k] > hi ? v[k] : hi;
			}
		if (!(lo <= hi)) {
			lo = 0.0;
			hi = 1.0;
		}
		double pad = hi > lo ? 0.06 * (hi - lo) : (fabs(hi) > 0 ? 1e-3 * fabs(hi) : 1e-3);
		panel_viewport(c, p);
		plwind(0.5, nd + 0.5, lo - pad, hi + pad);
		plcol0(1);
		xf_plot_text(0.85);
		xf_plot_cmc_axis(1, "bcnst", 0.0, nd, panel_w(c));
		xf_plot_cmc_axis(0, "bcnstv", lo - pad, hi + pad, PANEL_H_PX);
		xf_pl_mtex("b", 3.0, 0.5, 0.5, "draw (after warmup)");
		for (int ch = 0; ch < nc; ch++) {
			plcol0(XF_PLOT_CMC_COLOUR0 + ch % XF_PLOT_CMC_N_COLOURS);
			plwidth(0.8);
			plline(nd, x, v + (size_t)ch * nd);
		}
		plwidth(1.0);
		plcol0(1);
		panel_title(c, p);
	}
	free(x);
}

typedef struct ranked_value {
	double v;
	size_t i;
} ranked_value;

/* by value; ties by position, so the order never depends on qsort's choices */
static int by_value(const void *a, const void *b)
{
	const ranked_value *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* counts[chain][bin] of the pooled ranks (ties share their average rank, as in the
 * paper: a stuck chain must not look spread out) */
static int rank_counts(const double *v, int nc, int nd, int bins, int *counts)
{
	size_t m = (size_t)nc * nd;
	ranked_value *r = malloc(sizeof *r * (m ? m : 1));
	if (!r)
		return -1;
	for (size_t k = 0; k < m; k++) {
		r[k].v = isfinite(v[k]) ? v[k] : INFINITY;
		r[k].i = k;
	}
	qsort(r, m, sizeof *r, by_value);
	memset(counts, 0, sizeof(int) * (size_t)nc * bins);
	for (size_t a = 0; a < m;) {
		size_t b = a;
		while (b + 1 < m && r[b + 1].v == r[a].v)
			b++;
		double rank = 0.5 * (double)(a + b); /* 0 … m − 1 */
		int bin = (int)(rank * bins / (double)m);
		bin = bin < 0 ? 0 : bin >= bins ? bins - 1 : bin;
		for (size_t k = a; k <= b; k++)
			counts[(r[k].i / (size_t)nd) * bins + bin]++;
		a = b + 1;
	}
	free(r);
	return 0;
}

static void draw_rank(void *ctx)
{
	const xf_plot_chains *c = ctx;
	int nc = c->n_chains, nd = c->n_draws;
	int bins = nd / RANK_MIN_PER_BIN;
	bins = bins > RANK_MAX_BINS ? RANK_MAX_BINS : bins < 2 ? 2 : bins;
	xf_plot_cmc_colours();
	char guide[256];
	snprintf(guide, sizeof guide,
		 "Histogram per chain of its draws' ranks among all chains' draws (%d bins): "
		 "flat, inside the grey 99 %% band, when the chains agree; a slope or hump: a "
		 "chain apart.",
		 bins);
	header(c, "rank plots (Vehtari et al. 2021)", guide);
	int *counts = malloc(sizeof(int) * (size_t)nc * bins);
	if (!counts)
		return;
	double expected = (double)nd / bins, p1 = 1.0 / bins;
	/* 99 % interval of a bin count under uniform ranks (normal approximation) */
	double half = 2.576 * sqrt(nd * p1 * (1.0 - p1));
	double scale = RANK_BAR_EXPECTED / expected;
	double m = (double)nc * nd;
	for (int p = 0; p < c->n_panels; p++) {
		panel_viewport(c, p);
		plwind(0.0, m, 0.0, nc);
		if (rank_counts(c->ranked + (size_t)p * nc * nd, nc, nd, bins, counts) != 0)
			break;
		for (int ch = 0; ch < nc; ch++) {
			double base = nc - 1 - ch; /* chain 1 on top */
			double band_lo = base + (expected - half) * scale;
			double band_hi = base + (expected + half) * scale;
			band_lo = band_lo < base ? base : band_lo;
			band_hi = band_hi > base + 0.98 ? base + 0.98 : band_hi;
			double bx[4] = { 0.0, m, m, 0.0 },
			       by[4] = { band_lo, band_lo, band_hi, band_hi };
			plscol0(15, 215, 215, 215);
			plcol0(15);
			plfill(4, bx, by);
			plcol0(XF_PLOT_CMC_COLOUR0 + ch % XF_PLOT_CMC_N_COLOURS);
			for (int b = 0; b < bins; b++) {
				double top = base + counts[ch * bins + b] * scale;
				top = top > base + 0.98 ? base + 0.98 : top;
				double x0 = m * b / bins, x1 = m * (b + 1) / bins;
				double fx[4] = { x0, x1, x1, x0 }, fy[4] = { base, base, top, top };
				plfill(4, fx, fy);
			}
			/* the expected count: what every bar should reach */
			plcol0(1);
			pllsty(2);
			double lx[2] = { 0.0, m },
			       ly[2] = { base + expected * scale, base + expected * scale };
			plline(2, lx, ly);
			pllsty(1);
			char name[32];
			snprintf(name, sizeof name, "chain %d", ch + 1);
			xf_plot_text(0.8);
			xf_pl_mtex("lv", 0.8, (base + 0.4) / nc, 1.0, name);
		}
		plcol0(1);
		xf_plot_text(0.85);
		xf_plot_cmc_axis(1, "bcnst", 0.0, m, panel_w(c));
		plbox("", 0.0, 0, "bc", 0.0, 0);
		xf_pl_mtex("b", 3.0, 0.5, 0.5, "rank among all chains' draws");
		panel_title(c, p);
	}
	free(counts);
}

int xf_plot_cmc_trace(const char *path, const xf_plot_chains *c, xf_error *err)
{
	return xf_pl_file(path, XF_PLOT_CMC_W, page_height(c->n_panels), draw_trace, (void *)c,
			  err);
}

int xf_plot_cmc_rank(const char *path, const xf_plot_chains *c, xf_error *err)
{
	return xf_pl_file(path, XF_PLOT_CMC_W, page_height(c->n_panels), draw_rank, (void *)c, err);
}
