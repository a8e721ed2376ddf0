/* plot_cmc.c — the plots of a CMC result (plot.h): per angle data | model at the
 * posterior mean | residual and overview.png (the NLSQ pages, fed the posterior mean),
 * corner.png, forest.png, and trace and rank pages for a few shards read back from the
 * shard store. A page that cannot be drawn does not stop the others; the first error is
 * returned. */
#include "plot/plot_cmc.h"
#include "plot/plot_internal.h"
#include "util/files.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/params.h"
#include "xpcsfit/plot.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Trace and rank pages are drawn for at most this many shards. K can be in the hundreds
 * and a page per shard would be slow to draw and never read: shard 0 stands for the
 * kept ones (shards are random splits of the same data and behave alike), then the
 * shards left out of the combination, worst R̂ first, are the ones a reader must
 * inspect. When all were kept, the kept shard with the largest R̂ is the worst case. */
#define XF_PLOT_CMC_MAX_SHARDS 5

static int keep_first(int rc, int next)
{
	return rc ? rc : next;
}

/* The angle pages and overview.png through the fit pages' drawing code, the model at
 * the estimate (the posterior mean, its sd; NaN for fixed parameters). */
static int draw_angles(const char *plots_dir, const xf_dataset *ds, const xf_estimate *est,
		       const xf_cmc_appendix *app, xf_error *err)
{
	if (est->n_phi != ds->n_phi || est->n_phi != ds->n_phi)
		return xf_fail(err, XF_ERR_DATA, "result has %d angles but the data %d, %s",
			       est->n_phi, ds->n_phi, plots_dir);
	xf_plot_model_ctx ctx = { ds, est };
	const char *units[XF_N_BOUND_SLOTS];
	for (int k = 0; k < XF_N_BOUND_SLOTS; k++)
		units[k] = k < est->n_phys ? est->units[k] : "";
	char reasons[XF_QUALITY_MAX_REASONS * sizeof est->quality.reasons[0]];
	xf_plot_join_reasons(&est->quality, reasons, sizeof reasons);
	char kept[96], run0[256], run1[256];
	/* the title's parenthesis: a run of one shard or the importance route has no shards
	 * to speak of (issue 34) */
	if (app->n_shards > 1)
		snprintf(kept, sizeof kept, "%ld of %ld shards kept", app->n_kept, app->n_shards);
	else
		snprintf(kept, sizeof kept, "%s",
			 app->n_shards == 0 ? "importance sampling" : "exact NUTS");
	if (app->n_shards == 0) { /* the importance route (adr/0045) */
		snprintf(run0, sizeof run0, "status: %s,  exact posterior by importance sampling",
			 est->words.status);
		snprintf(run1, sizeof run1,
			 "%d draws resampled from %d points;  k̂ %.2f, IS-ESS %.0f", est->n_draws,
			 app->approx->m, app->approx->khat, app->approx->ess);
	} else if (app->n_shards == 1) {
		snprintf(run0, sizeof run0, "status: %s,  exact posterior by NUTS",
			 est->words.status);
		snprintf(run1, sizeof run1, "%d draws;  %d chains × %d (+%d warmup)", est->n_draws,
			 app->n_chains, app->n_samples, app->n_warmup);
	} else {
		snprintf(run0, sizeof run0, "status: %s,  %s (%s)", est->words.status, kept,
			 xf_combination_rule_name(app->combination));
		snprintf(run1, sizeof run1,
			 "%d draws combined;  per shard %d chains × %d (+%d warmup)", est->n_draws,
			 app->n_chains, app->n_samples, app->n_warmup);
	}
	xf_plot_src src = {
		.n_phi = ds->n_phi,
		.phi_deg = ds->phi_deg,
		.n_frames = ds->n_frames,
		.dt_s = ds->dt_s,
		.q = ds->q,
		.slot_q = est->slot_q,
		.mode_name = est->words.mode,
		.status = est->words.status,
		.stop_reason = kept,
		.quality_known = 1,
		.quality = est->quality.overall,
		.quality_reasons = reasons,
		.chi_squared = NAN,
		.reduced_chi_squared = NAN,
		.residual_sd = NAN,
		.n_points = (long long)ds->n_points,
		.n_params = est->n_params,
		.n_phys = est->n_phys,
		.names = est->names,
		.units = units, /* read for the n_phys physical parameters only */
		.values = est->values,
		.uncertainties = est->sd,
		.is_fixed = est->is_fixed,
		.contrast = est->contrast,
		.contrast_unc = est->contrast_sd,
		.offset = est->offset,
		.offset_unc = est->offset_sd,
		.surfaces = xf_plot_model_surfaces,
		.ctx = &ctx,
		.workers = 1,
		.method = "CMC",
		.run_text = { run0, run1 },
	};
	return xf_plot_draw_all(plots_dir, &src, err);
}

static double sigmoid(double u)
{
	return u >= 0.0 ? 1.0 / (1.0 + exp(-u)) : exp(u) / (1.0 + exp(u));
}

/* a R̂ worse than b; NaN (not computable) counts as the worst */
static int worse(double a, double b)
{
	return (isnan(a) && !isnan(b)) || a > b;
}

/* The shards to draw, in drawing order (see XF_PLOT_CMC_MAX_SHARDS). */
static int pick_shards(const xf_cmc_appendix *app, long *pick)
{
	int n = 0;
	if (app->n_shards > 0 && !app->shards[0].failed)
		pick[n++] = 0;
	int any_excluded = 0;
	while (n < XF_PLOT_CMC_MAX_SHARDS) {
		long best = -1;
		for (long s = 1; s < app->n_shards; s++) {
			const xf_cmc_shard *sh = &app->shards[s];
			int taken = 0;
			for (int k = 0; k < n; k++)
				taken |= pick[k] == s;
			if (taken || sh->kept || sh->failed)
				continue;
			if (best < 0 || worse(sh->rhat_max, app->shards[best].rhat_max))
				best = s;
		}
		if (best < 0)
			break;
		pick[n++] = best;
		any_excluded = 1;
	}
	if (!any_excluded && n < XF_PLOT_CMC_MAX_SHARDS) {
		long worst = -1;
		for (long s = 1; s < app->n_shards; s++)
			if (!app->shards[s].failed &&
			    (worst < 0 ||
			     worse(app->shards[s].rhat_max, app->shards[worst].rhat_max)))
				worst = s;
		if (worst > 0 &&
		    (n == 0 || worse(app->shards[worst].rhat_max, app->shards[0].rhat_max)))
			pick[n++] = worst;
	}
	return n;
}

/* One shard's trace and rank pages from its stored draws. */
static int draw_shard(const char *plots_dir, const xf_estimate *est, const xf_cmc_appendix *app,
		      long s, const double *lower, const double *upper, xf_error *err)
{
	const xf_cmc_shard *sh = &app->shards[s];
	double *draws = NULL;
	int nc = 0, nd = 0, dim = 0;
	if (app->shard_draws(app->store, sh->id, 0, &draws, &nc, &nd, &dim, err) != 0)
		return err->code;
	int nt = app->n_theta;
	if (dim != nt + 1 || nc < 1 || nd < 1) {
		free(draws);
		return xf_fail(err, XF_ERR_DATA, "shard %ld: draws of %d coordinates for %d, %s",
			       sh->id, dim, nt + 1, app->shard_dir);
	}
	/* panels: physical parameters, σ, then the per-angle ones up to the cap */
	int order[XF_PLOT_CMC_MAX_PANELS], n_panels = 0;
	for (int m = 0; m < nt && n_panels < XF_PLOT_CMC_MAX_PANELS; m++)
		if (app->theta[m] < est->n_phys)
			order[n_panels++] = m;
	if (n_panels < XF_PLOT_CMC_MAX_PANELS)
		order[n_panels++] = nt;
	for (int m = 0; m < nt && n_panels < XF_PLOT_CMC_MAX_PANELS; m++)
		if (app->theta[m] >= est->n_phys)
			order[n_panels++] = m;
	size_t per = (size_t)nc * nd;
	double *values = malloc(sizeof(double) * per * n_panels);
	double *ranked = malloc(sizeof(double) * per * n_panels);
	const char *names[XF_PLOT_CMC_MAX_PANELS];
	double rhat[XF_PLOT_CMC_MAX_PANELS], ess[XF_PLOT_CMC_MAX_PANELS];
	int rc = 0;
	if (!values || !ranked) {
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory for the shard %ld plots, %s", sh->id,
			     plots_dir);
		goto out;
	}
	for (int p = 0; p < n_panels; p++) {
		int m = order[p], k = m < nt ? app->theta[m] : -1;
		names[p] = k >= 0 ? est->names[k] : "σ (noise of c2)";
		rhat[p] = sh->rhat ? sh->rhat[m] : NAN;
		ess[p] = sh->ess_bulk ? sh->ess_bulk[m] : NAN;
		for (size_t g = 0; g < per; g++) {
			double u = draws[g * (size_t)dim + m];
			ranked[p * per + g] = u;
			values[p * per + g] =
				k < 0	? exp(u)
				: lower ? lower[k] + (upper[k] - lower[k]) * sigmoid(u)
					: u;
		}
	}
	xf_plot_chains c = {
		.shard = sh->id,
		.kept = sh->kept,
		.failed = sh->failed,
		.reason = sh->reason,
		.n_chains = nc,
		.n_draws = nd,
		.n_panels = n_panels,
		.n_cut = nt + 1 - n_panels,
		.values = values,
		.ranked = ranked,
		.names = names,
		.rhat = rhat,
		.ess = ess,
		.physical = lower != NULL,
		.rhat_max = sh->rhat_max,
		.divergence_rate = sh->divergence_rate,
	};
	char name[64], path[PATH_MAX];
	snprintf(name, sizeof name, "trace_shard%03ld.png", sh->id);
	rc = xf_path_join(path, sizeof path, plots_dir, name, err);
	if (rc == 0)
		rc = xf_plot_cmc_trace(path, &c, err);
	snprintf(name, sizeof name, "rank_shard%03ld.png", sh->id);
	if (rc == 0)
		rc = xf_path_join(path, sizeof path, plots_dir, name, err);
	if (rc == 0)
		rc = xf_plot_cmc_rank(path, &c, err);
out:
	free(values);
	free(ranked);
	free(draws);
	return rc;
}

int xf_plot_cmc_estimate(const char *plots_dir, const xf_dataset *ds, const xf_estimate *est,
			 const xf_cmc_appendix *app, int dpi, xf_error *err)
{
	if (xf_mkdir_here(plots_dir, err) != 0)
		return err->code;
	xf_pl_set_dpi(dpi);
	xf_error e = { 0 };
	int rc = 0;
	char path[PATH_MAX];
	if (ds && est && est->n_draws > 0) /* no posterior mean: no model over the data */
		rc = keep_first(rc, draw_angles(plots_dir, ds, est, app, rc ? &e : err));
	if (xf_path_join(path, sizeof path, plots_dir, "corner.png", err) != 0)
		return err->code;
	rc = keep_first(rc, xf_plot_cmc_corner(path, est, app, rc ? &e : err));
	if (xf_path_join(path, sizeof path, plots_dir, "forest.png", err) != 0)
		return err->code;
	rc = keep_first(rc, xf_plot_cmc_forest(path, est, app, rc ? &e : err));
	long pick[XF_PLOT_CMC_MAX_SHARDS];
	int n_pick = pick_shards(app, pick);
	for (int k = 0; k < n_pick; k++)
		rc = keep_first(rc, draw_shard(plots_dir, est, app, pick[k], app->lower, app->upper,
					       rc ? &e : err));
	return rc;
}
