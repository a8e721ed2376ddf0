/* plot_cmc_forest.c — forest.png: every shard's posterior mean ± sd of each sampled
 * physical parameter and of its noise σ, one column per parameter sharing the shard
 * axis, so a shard that disagrees with the others shows in every column at once. Kept
 * shards in blue, excluded ones in red (listed with their reasons under the panels),
 * failed ones named in grey. The combined mean ± sd is the grey band: a shard's own
 * posterior is about √K wider than the combination (its prior is tempered by 1/K and it
 * holds 1/K of the data). */
#include "plot/plot_cmc.h"
#include "plot/plot_internal.h"

#include <math.h>
#include <plplot.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_PX    140
#define LEFT_PX	     130
#define RIGHT_PX     30
#define COL_GAP_PX   40
#define AXIS_PX	     90 /* under the panels: ticks and parameter names */
#define LINE_PX	     26 /* one line of the list of excluded shards */
#define MAX_LISTED   12 /* excluded shards listed by name; the rest counted */
#define MAX_SHARD_PX 60
#define MIN_SHARD_PX 6
#define PANELS_PX    900 /* shard axis length aimed at */

#define KEPT_COLOUR	XF_PLOT_CMC_COLOUR0
#define EXCLUDED_COLOUR (XF_PLOT_CMC_COLOUR0 + 3)
#define FAILED_COLOUR	(XF_PLOT_CMC_COLOUR0 + 7)

typedef struct forest {
	const xf_estimate *est;
	const xf_cmc_appendix *app;
	int n_cols;
	int theta_pos[XF_N_PHYS + 1]; /* position in app->theta of each column; −1: σ */
	int shard_px, panels_px, n_listed, width, height;
} forest;

static int n_excluded(const xf_cmc_appendix *app)
{
	int n = 0;
	for (long s = 0; s < app->n_shards; s++)
		n += !app->shards[s].kept;
	return n;
}

static void value_of(const forest *f, const xf_cmc_shard *sh, int col, double *m, double *s)
{
	int t = f->theta_pos[col];
	*m = t < 0 ? sh->sigma_mean : sh->mean ? sh->mean[t] : NAN;
	*s = t < 0 ? sh->sigma_sd : sh->sd ? sh->sd[t] : NAN;
}

/* y of shard s: shard 0 at the top */
static double shard_y(const forest *f, long s)
{
	return (double)(f->app->n_shards - 1 - s);
}

static void column(const forest *f, int col)
{
	const xf_estimate *est = f->est;
	const xf_cmc_appendix *app = f->app;
	long k = app->n_shards;
	double lo = INFINITY, hi = -INFINITY;
	for (long s = 0; s < k; s++) {
		double m, sd;
		value_of(f, &app->shards[s], col, &m, &sd);
		if (!isfinite(m))
			continue;
		sd = isfinite(sd) ? sd : 0.0;
		lo = m - sd < lo ? m - sd : lo;
		hi = m + sd > hi ? m + sd : hi;
	}
	int t = f->theta_pos[col], p = t >= 0 ? app->theta[t] : -1;
	if (p >= 0 && isfinite(est->values[p])) {
		lo = est->values[p] < lo ? est->values[p] : lo;
		hi = est->values[p] > hi ? est->values[p] : hi;
	}
	if (!(lo <= hi)) {
		lo = 0.0;
		hi = 1.0;
	}
	double pad = hi > lo ? 0.08 * (hi - lo) : (fabs(hi) > 0 ? 1e-3 * fabs(hi) : 1e-3);
	lo -= pad;
	hi += pad;
	double col_w = (double)(f->width - LEFT_PX - RIGHT_PX) / f->n_cols;
	double x0 = LEFT_PX + col * col_w;
	plvpor(x0 / f->width, (x0 + col_w - COL_GAP_PX) / f->width,
	       1.0 - (double)(HEADER_PX + f->panels_px) / f->height,
	       1.0 - (double)HEADER_PX / f->height);
	plwind(lo, hi, -0.7, k - 0.3);
	if (p >= 0 && isfinite(est->values[p])) {
		double m = est->values[p], s = isfinite(est->sd_table[p]) ? est->sd_table[p] : 0.0;
		double bx[4] = { m - s, m + s, m + s, m - s },
		       by[4] = { -0.7, -0.7, k - 0.3, k - 0.3 };
		plscol0(15, 205, 205, 205);
		plcol0(15);
		plfill(4, bx, by);
		plcol0(1);
		double lx[2] = { m, m }, ly[2] = { -0.7, k - 0.3 };
		plline(2, lx, ly);
	}
	xf_plot_text(k > 40 ? 0.5 : 0.8);
	for (long s = 0; s < k; s++) {
		const xf_cmc_shard *sh = &app->shards[s];
		double m, sd, y = shard_y(f, s);
		value_of(f, sh, col, &m, &sd);
		if (sh->failed || !isfinite(m)) {
			plcol0(FAILED_COLOUR);
			xf_pl_ptex(0.5 * (lo + hi), y, 1.0, 0.0, 0.5, "failed");
			continue;
		}
		plcol0(sh->kept ? KEPT_COLOUR : EXCLUDED_COLOUR);
		double xl = m - (isfinite(sd) ? sd : 0.0), xh = m + (isfinite(sd) ? sd : 0.0);
		plwidth(2.0);
		plerrx(1, &xl, &xh, &y);
		plwidth(1.0);
		/* kept: filled circle; excluded: a cross, so the mark survives grey print */
		plstring(1, &m, &y, sh->kept ? "●" : "✖");
	}
	plcol0(1);
	xf_plot_text(0.8);
	xf_plot_cmc_axis(1, "bcnst", lo, hi, col_w - COL_GAP_PX);
	plbox("", 0.0, 0, "bc", 0.0, 0);
	char label[128];
	xf_plot_cmc_label(label, sizeof label, t >= 0 ? est->names[p] : "σ (shard noise)");
	xf_plot_text(1.0);
	xf_pl_mtex("b", 3.2, 0.5, 0.5, label);
	/* shard names left of the first column, thinned so they never overlap */
	if (col == 0) {
		int every = (int)ceil(18.0 / f->shard_px);
		xf_plot_text(0.8);
		for (long s = 0; s < k; s += every) {
			char name[32];
			snprintf(name, sizeof name, "shard %ld", app->shards[s].id);
			plcol0(app->shards[s].kept ? 1 : EXCLUDED_COLOUR);
			xf_pl_mtex("lv", 0.8, (shard_y(f, s) + 0.7) / (double)k, 1.0, name);
		}
		plcol0(1);
	}
}

static void draw_forest(void *ctx)
{
	forest *f = ctx;
	const xf_estimate *est = f->est;
	const xf_cmc_appendix *app = f->app;
	xf_plot_cmc_colours();
	pladv(0);
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, f->width, 0.0, f->height);
	plcol0(1);
	char line[512];
	snprintf(line, sizeof line, "CMC shards, %s: posterior mean ± sd of each shard",
		 est->words.mode);
	xf_plot_text(1.4);
	xf_pl_ptex(f->width / 2.0, f->height - 40, 1.0, 0.0, 0.5, line);
	/* the self-check's verdict belongs next to the shards it judges */
	char check[160] = "";
	if (app->check->done)
		snprintf(check, sizeof check, "  Self-check k̂ = %.2f: %s.", app->check->khat,
			 app->check->corrected ? "band corrected to the full-data posterior"
					       : "NOT the full-data posterior (self-check failed)");
	snprintf(line, sizeof line,
		 "%ld of %ld shards kept (%s).  Grey band: the combined posterior mean ± sd; "
		 "a shard alone is about √K = %.1f times wider.%s",
		 app->n_kept, app->n_shards, xf_combination_rule_name(app->combination),
		 sqrt((double)app->n_shards), check);
	xf_plot_text(0.95);
	xf_pl_ptex(f->width / 2.0, f->height - 78, 1.0, 0.0, 0.5, line);
	/* key */
	double x = f->width / 2.0 - 260.0, y = f->height - 112;
	plcol0(KEPT_COLOUR);
	xf_pl_ptex(x, y, 1.0, 0.0, 0.5, "● kept");
	plcol0(EXCLUDED_COLOUR);
	xf_pl_ptex(x + 260.0, y, 1.0, 0.0, 0.5, "✖ excluded");
	plcol0(FAILED_COLOUR);
	xf_pl_ptex(x + 520.0, y, 1.0, 0.0, 0.5, "failed: not sampled");
	plcol0(1);
	for (int col = 0; col < f->n_cols; col++)
		column(f, col);
	/* the excluded shards and why, under the panels */
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, f->width, 0.0, f->height);
	xf_plot_text(0.9);
	double ly = f->height - HEADER_PX - f->panels_px - AXIS_PX - 10;
	int shown = 0, n_ex = n_excluded(app);
	if (n_ex > 0) {
		plcol0(1);
		xf_pl_ptex(LEFT_PX, ly, 1.0, 0.0, 0.0, "Excluded from the combination:");
		ly -= LINE_PX;
	}
	for (long s = 0; s < app->n_shards && shown < f->n_listed; s++) {
		const xf_cmc_shard *sh = &app->shards[s];
		if (sh->kept)
			continue;
		snprintf(line, sizeof line, "shard %ld%s: %s", sh->id,
			 sh->failed ? " (failed)" : "",
			 *sh->reason ? sh->reason : "(no reason recorded)");
		plcol0(sh->failed ? FAILED_COLOUR : EXCLUDED_COLOUR);
		xf_pl_ptex(LEFT_PX + 30, ly, 1.0, 0.0, 0.0, line);
		ly -= LINE_PX;
		shown++;
	}
	if (n_ex > shown) {
		snprintf(line, sizeof line, "… and %d more (parameters.json \"shards\")",
			 n_ex - shown);
		plcol0(1);
		xf_pl_ptex(LEFT_PX + 30, ly, 1.0, 0.0, 0.0, line);
	}
}

int xf_plot_cmc_forest(const char *path, const xf_estimate *est, const xf_cmc_appendix *app,
		       xf_error *err)
{
	forest f = { .est = est, .app = app };
	if (app->n_shards < 1 || !app->shards)
		return 0;
	for (int t = 0; t < app->n_theta && f.n_cols < XF_N_PHYS; t++)
		if (app->theta[t] < est->n_phys)
			f.theta_pos[f.n_cols++] = t;
	f.theta_pos[f.n_cols++] = -1; /* σ: not combined, but its spread flags odd shards */
	long k = app->n_shards;
	f.shard_px = (int)(PANELS_PX / k);
	f.shard_px = f.shard_px > MAX_SHARD_PX	 ? MAX_SHARD_PX
		     : f.shard_px < MIN_SHARD_PX ? MIN_SHARD_PX
						 : f.shard_px;
	f.panels_px = (int)(f.shard_px * k) + 20;
	int n_ex = n_excluded(app);
	f.n_listed = n_ex < MAX_LISTED ? n_ex : MAX_LISTED;
	int list_lines = n_ex ? 1 + f.n_listed + (n_ex > f.n_listed) : 0;
	f.width = XF_PLOT_CMC_W;
	f.height = HEADER_PX + f.panels_px + AXIS_PX + list_lines * LINE_PX + 20;
	return xf_pl_file(path, f.width, f.height, draw_forest, &f, err);
}
