/* plot_cmc.h — the pages of a CMC result (docs: plots of cmc), drawn from plain arrays so
 * that they do not depend on where the draws came from (a run in memory or a shard
 * store), and the labelling they share. Internal to plot/. */
#ifndef XPCSFIT_PLOT_CMC_H
#define XPCSFIT_PLOT_CMC_H

#include <stddef.h>
#include "xpcsfit/cmc_appendix.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/error.h"

/* page widths in pixels (heights follow the number of panels) */
#define XF_PLOT_CMC_W	      1800
#define XF_PLOT_CMC_TRACE_ROW 250 /* px per row of trace / rank panels */
/* panels of one trace or rank page: beyond this the page is unreadable, and what is cut
 * (per-angle coefficients) is in results.h5 /cmc/shard_draws */
#define XF_PLOT_CMC_MAX_PANELS 32
/* chains with a colour of their own (more chains reuse them) */
#define XF_PLOT_CMC_N_COLOURS 10
/* first cmap0 slot of the chain colours */
#define XF_PLOT_CMC_COLOUR0 16

/* One shard's chains, physical values (σ included), ready to draw. */
typedef struct xf_plot_chains {
	long shard;
	int kept, failed;
	const char *reason; /* why excluded, "" when kept */
	int n_chains, n_draws;
	int n_panels;		  /* coordinates drawn (≤ XF_PLOT_CMC_MAX_PANELS) */
	int n_cut;		  /* sampled coordinates left out (per-angle ones) */
	const double *values;	  /* [n_panels][n_chains][n_draws] physical (trace) */
	const double *ranked;	  /* [n_panels][n_chains][n_draws] any monotone map (rank) */
	const char *const *names; /* [n_panels] homodyne names, "sigma" for σ */
	const double *rhat, *ess; /* [n_panels] bulk ESS; NaN when unknown */
	int physical;		  /* 0: values are in the sampler's space (no bounds) */
	double rhat_max, divergence_rate;
} xf_plot_chains;

/* trace_shard{id:03d}.png and rank_shard{id:03d}.png */
int xf_plot_cmc_trace(const char *path, const xf_plot_chains *c, xf_error *err);
int xf_plot_cmc_rank(const char *path, const xf_plot_chains *c, xf_error *err);

/* corner.png: pairs of the free physical parameters from the combined draws. */
int xf_plot_cmc_corner(const char *path, const xf_estimate *est, const xf_cmc_appendix *app,
		       xf_error *err);

/* forest.png: each shard's mean ± sd per sampled physical parameter and σ, excluded and
 * failed shards marked and listed, the combined mean ± sd as a band. */
int xf_plot_cmc_forest(const char *path, const xf_estimate *est, const xf_cmc_appendix *app,
		       xf_error *err);

/* "D0 (Å²/s#u1+α#d)": the homodyne name with its unit in PLplot text, for axis labels */
void xf_plot_cmc_label(char *buf, size_t size, const char *name);
/* the same with the symbol for the name ("γ̇#d0#u (s#u-(1+β)#d)"): the corner's axes,
 * whose columns are named above their histograms */
void xf_plot_cmc_symbol_label(char *buf, size_t size, const char *name);
/* chain colours into cmap0 XF_PLOT_CMC_COLOUR0…, black in 1, white background */
void xf_plot_cmc_colours(void);
/* rows of a page of n panels in cols columns */
int xf_plot_cmc_cols(int n);
/* tick step giving about n_ticks labelled ticks over [lo, hi] (1, 2, 5 × 10^k) */
double xf_plot_nice_step(double lo, double hi, int n_ticks);

/* one axis of the current window, px pixels long: as many labelled ticks as fit,
 * decimals from the step, no "(x10^k)" */
void xf_plot_cmc_axis(int is_x, const char *opt, double lo, double hi, double px);

#endif
