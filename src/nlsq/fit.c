/* fit.c — the NLSQ driver: hierarchical start, multi-start, covariance and the result
 * record (nlsq.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/covariance.h"
#include "nlsq/lm.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/rng.h"

#define XF_AT_BOUND_TOL	      1e-9  /* fraction of the bound width that counts as "at a bound" */
#define XF_LOG_SPACED_DECADES 100.0 /* multi-start: log spacing above this upper/lower */
/* The hierarchical stage only prepares a start: with the scaling held at its quantile
 * estimates it cannot reach the final χ², so polishing it to 1e-8 wastes passes. */
#define XF_HIERARCHICAL_FTOL 1e-4

static int eval_problem(void *ctx, const double *x, double *chi2, double *jtj, double *b)
{
	xf_lik_out out = { 0.0, jtj, b, 0.0 };
	int rc = xf_lik_eval(ctx, x, &out);
	*chi2 = out.chi2;
	return rc;
}

typedef struct fit_run {
	xf_problem *pr;
	xf_lik *lik;
	const xf_config *cfg;
	xf_nlsq_progress_fn progress;
	void *progress_ctx;
	double *jtj, *b;
	int iterations;
	const char *stop_reason;
	double chi2;
} fit_run;

static int lm_phase(fit_run *run, double *x, const int *free_mask, const char *phase, double ftol)
{
	const xf_problem *pr = run->pr;
	xf_lm_setup s = {
		.n = pr->n_full,
		.lower = pr->lower,
		.upper = pr->upper,
		.scale = pr->scale,
		.free_mask = free_mask,
		.max_iterations = run->cfg->nlsq.max_iterations,
		.xtol = run->cfg->nlsq.xtol,
		.gtol = run->cfg->nlsq.gtol,
		.ftol = ftol,
		.progress = run->progress,
		.progress_ctx = run->progress_ctx,
		.phase = phase,
	};
	xf_lm_outcome out;
	if (xf_lm_solve(&s, eval_problem, run->lik, x, run->jtj, run->b, &out))
		return -1;
	run->iterations += out.iterations;
	run->stop_reason = out.stop_reason;
	run->chi2 = out.chi2;
	xf_info("nlsq %s: chi2 %.10g after %d iterations (%s)", phase, out.chi2, out.iterations,
		out.stop_reason);
	return 0;
}

static int physical_at_bound(const xf_problem *pr, const double *x)
{
	for (int k = 0; k < pr->n_phys; k++) {
		double tol = XF_AT_BOUND_TOL * (pr->upper[k] - pr->lower[k]);
		if (!pr->fixed[k] && (x[k] <= pr->lower[k] + tol || x[k] >= pr->upper[k] - tol))
			return 1;
	}
	return 0;
}

/* Fit all free parameters directly from start; keep the result in run/x when its χ² is
 * lower than run's. */
static int direct_fallback(fit_run *run, double *x, const double *start, const int *free_mask,
			   const char *label)
{
	const xf_problem *pr = run->pr;
	size_t nf = (size_t)pr->n_full;
	double *xd = malloc(sizeof(double) * nf), *jtj = malloc(sizeof(double) * nf * nf);
	double *b = malloc(sizeof(double) * nf);
	int rc = -1;
	if (xd && jtj && b) {
		fit_run direct = *run;
		char phase[64];
		direct.jtj = jtj;
		direct.b = b;
		direct.iterations = 0;
		memcpy(xd, start, sizeof(double) * nf);
		snprintf(phase, sizeof phase, "%sdirect", label);
		rc = lm_phase(&direct, xd, free_mask, phase, run->cfg->nlsq.ftol);
		run->iterations += direct.iterations;
		if (rc == 0 && direct.chi2 < run->chi2) {
			xf_info("nlsq: the direct fit reached a lower chi2 (%.10g < %.10g): kept",
				direct.chi2, run->chi2);
			memcpy(x, xd, sizeof(double) * nf);
			memcpy(run->jtj, jtj, sizeof(double) * nf * nf);
			memcpy(run->b, b, sizeof(double) * nf);
			run->chi2 = direct.chi2;
			run->stop_reason = direct.stop_reason;
		}
		rc = 0;
	}
	free(xd);
	free(jtj);
	free(b);
	return rc;
}

/* One start: for laminar_flow with the hierarchical option, first the physical
 * parameters with the scaling held at its start, then everything. The held scaling can
 * be poor (a short window that never decays to the baseline gives quantile estimates far
 * from the truth) and pull the physics onto a bound; when the hierarchical path ends
 * with a physical parameter on a bound, a direct fit from the same start is also run and
 * the lower χ² kept. */
static int fit_from(fit_run *run, double *x, const char *label)
{
	const xf_problem *pr = run->pr;
	int free_mask[pr->n_full];
	double start[pr->n_full];
	char phase[64];
	for (int k = 0; k < pr->n_full; k++)
		free_mask[k] = !pr->fixed[k];
	memcpy(start, x, sizeof start);
	int hierarchical =
		run->cfg->mode == XF_MODE_LAMINAR && run->cfg->nlsq.hierarchical && pr->n_basis > 0;
	if (hierarchical) {
		int phys_only[pr->n_full];
		for (int k = 0; k < pr->n_full; k++)
			phys_only[k] = k < pr->n_phys && free_mask[k];
		snprintf(phase, sizeof phase, "%shierarchical", label);
		if (lm_phase(run, x, phys_only, phase,
			     fmax(run->cfg->nlsq.ftol, XF_HIERARCHICAL_FTOL)))
			return -1;
	}
	snprintf(phase, sizeof phase, "%sfull", label);
	if (lm_phase(run, x, free_mask, phase, run->cfg->nlsq.ftol))
		return -1;
	if (hierarchical && physical_at_bound(pr, x)) {
		xf_info("nlsq: a physical parameter ended on a bound after the hierarchical start; "
			"also fitting directly from the start");
		return direct_fallback(run, x, start, free_mask, label);
	}
	return 0;
}

/* Latin-hypercube start s (1..m) of parameter k: stratum from a seeded permutation. */
static double lhs_value(const xf_problem *pr, uint64_t seed, int m, int s, int k)
{
	int perm[m];
	for (int q = 0; q < m; q++)
		perm[q] = q;
	for (int q = m - 1; q > 0; q--) { /* Fisher-Yates keyed by (parameter, position) */
		int r = (int)(xf_rng_uniform(seed, XF_RNG_MULTI_START, (uint64_t)k, (uint64_t)q,
					     0) *
			      (q + 1));
		int t = perm[q];
		perm[q] = perm[r];
		perm[r] = t;
	}
	double u = (perm[s - 1] +
		    xf_rng_uniform(seed, XF_RNG_MULTI_START, (uint64_t)k, (uint64_t)s, 1)) /
		   m;
	double lo = pr->lower[k], hi = pr->upper[k];
	if (lo > 0.0 && hi / lo > XF_LOG_SPACED_DECADES)
		return exp(log(lo) + u * (log(hi) - log(lo)));
	return lo + u * (hi - lo);
}

static const char *status_of(const char *stop_reason)
{
	if (!strcmp(stop_reason, "xtol") || !strcmp(stop_reason, "gtol") ||
	    !strcmp(stop_reason, "ftol"))
		return "converged";
	if (!strcmp(stop_reason, "max_iterations"))
		return "max_iterations";
	return "failed";
}

static int fill_result(const xf_problem *pr, const xf_config *cfg, const double *x,
		       const fit_run *best, const double *jtj, xf_nlsq_result *res)
{
	int nf = pr->n_full;
	memset(res, 0, sizeof *res);
	res->mode = cfg->mode;
	res->scaling_mode = pr->scaling->mode;
	res->n_params = nf;
	res->n_phys = pr->n_phys;
	res->n_phi = pr->n_phi;
	res->names = calloc((size_t)nf, sizeof(char *));
	res->values = malloc(sizeof(double) * nf);
	res->uncertainties = malloc(sizeof(double) * nf);
	res->is_fixed = malloc(sizeof(int) * nf);
	res->covariance = malloc(sizeof(double) * (size_t)nf * nf);
	res->at_bounds = calloc((size_t)nf, sizeof(char *));
	size_t na = (size_t)pr->n_phi;
	res->phi_deg = malloc(sizeof(double) * na);
	res->contrast = malloc(sizeof(double) * na);
	res->contrast_unc = malloc(sizeof(double) * na);
	res->offset = malloc(sizeof(double) * na);
	res->offset_unc = malloc(sizeof(double) * na);
	if (!res->names || !res->values || !res->uncertainties || !res->is_fixed ||
	    !res->covariance || !res->at_bounds || !res->phi_deg || !res->contrast ||
	    !res->contrast_unc || !res->offset || !res->offset_unc)
		return -1;
	int n_free = 0;
	int free_mask[nf];
	for (int k = 0; k < nf; k++) {
		res->names[k] = strdup(pr->names[k]);
		if (!res->names[k])
			return -1;
		res->values[k] = x[k];
		res->is_fixed[k] = pr->fixed[k];
		free_mask[k] = !pr->fixed[k];
		n_free += free_mask[k];
	}
	res->n_points = pr->ds->n_points;
	res->n_free = n_free;
	res->chi_squared = best->chi2;
	double dof = (double)res->n_points - n_free;
	res->reduced_chi_squared = dof > 0 ? best->chi2 / dof : NAN;
	res->sigma = pr->sigma;
	res->sigma_rule = pr->has_sigma ? "given" : "residual_variance";
	res->residual_sd = pr->has_sigma ? NAN : sqrt(res->reduced_chi_squared);
	res->iterations = best->iterations;
	res->stop_reason = best->stop_reason;
	res->status = status_of(best->stop_reason);
	/* σ unknown: scale (JᵀJ)⁻¹ by the residual variance s² = χ²/(n − p) */
	double factor = pr->has_sigma ? 1.0 : res->reduced_chi_squared;
	if (xf_covariance(jtj, nf, free_mask, factor, res->covariance, &res->cov_rank))
		return -1;
	if (res->cov_rank < n_free)
		xf_warn("JᵀJ is rank deficient at the solution (rank %d of %d free parameters): "
			"covariance is a pseudo-inverse",
			res->cov_rank, n_free);
	for (int k = 0; k < nf; k++) {
		double v = res->covariance[k * nf + k];
		res->uncertainties[k] = free_mask[k] && v >= 0.0 ? sqrt(v) : NAN;
		double tol = XF_AT_BOUND_TOL * (pr->upper[k] - pr->lower[k]);
		if (free_mask[k] && (x[k] <= pr->lower[k] + tol || x[k] >= pr->upper[k] - tol)) {
			res->at_bounds[res->n_at_bounds] = strdup(pr->names[k]);
			if (!res->at_bounds[res->n_at_bounds++])
				return -1;
		}
	}
	/* per-angle values and their uncertainties through the basis */
	xf_problem_scaling(pr, x, res->contrast, res->offset);
	int nb = pr->n_basis, c0 = pr->n_phys, o0 = pr->n_phys + nb;
	for (int p = 0; p < pr->n_phi; p++) {
		const double *row = pr->basis + (size_t)p * nb;
		double vc = 0.0, vo = 0.0;
		for (int k = 0; k < nb; k++)
			for (int l = 0; l < nb; l++) {
				vc += row[k] * row[l] * res->covariance[(c0 + k) * nf + c0 + l];
				vo += row[k] * row[l] * res->covariance[(o0 + k) * nf + o0 + l];
			}
		res->phi_deg[p] = pr->ds->phi_deg[p];
		res->contrast_unc[p] = nb > 0 && vc >= 0.0 ? sqrt(vc) : NAN;
		res->offset_unc[p] = nb > 0 && vo >= 0.0 ? sqrt(vo) : NAN;
		if (pr->scaling->mode == XF_SCALING_FOURIER) {
			const xf_bound *cb = &cfg->bounds[XF_P_CONTRAST],
				       *ob = &cfg->bounds[XF_P_OFFSET];
			if (res->contrast[p] < cb->lower || res->contrast[p] > cb->upper ||
			    res->offset[p] < ob->lower || res->offset[p] > ob->upper)
				xf_warn("fourier scaling at phi %.2f deg lies outside the bounds: "
					"contrast %.4g, offset %.4g",
					res->phi_deg[p], res->contrast[p], res->offset[p]);
		}
	}
	return 0;
}

int xf_nlsq_fit(const xf_config *cfg, const xf_dataset *ds, int n_threads,
		xf_nlsq_progress_fn progress, void *progress_ctx, xf_nlsq_result *res,
		xf_error *err)
{
	xf_problem pr;
	xf_pairset all;
	int rc = xf_problem_build(&pr, cfg, ds, err);
	if (rc)
		return rc;
	xf_blas_single_thread();
	xf_pool *pool = xf_pool_create(n_threads);
	xf_pairset_all(&all, ds->n_frames);
	xf_lik *lik = pool ? xf_lik_create(&pr, &all, pool, err) : NULL;
	if (!lik) {
		rc = pool ? err->code
			  : xf_fail(err, XF_EXIT_DATA, "cannot start %d worker threads", n_threads);
		xf_pool_destroy(pool);
		xf_problem_free(&pr);
		return rc;
	}
	int nf = pr.n_full;
	size_t nn = (size_t)nf * nf;
	double *x = malloc(sizeof(double) * nf), *best_x = malloc(sizeof(double) * nf);
	double *jtj = malloc(sizeof(double) * nn), *b = malloc(sizeof(double) * nf);
	double *best_jtj = malloc(sizeof(double) * nn);
	if (!x || !best_x || !jtj || !b || !best_jtj) {
		rc = xf_fail(err, XF_EXIT_DATA, "out of memory for %d parameters", nf);
		goto done;
	}
	int n_fixed = 0;
	for (int k = 0; k < nf; k++)
		n_fixed += pr.fixed[k];
	xf_info("nlsq: %s, %d angles, %d frames, %zu points, per-angle scaling %s, %d free "
		"of %d parameters",
		xf_mode_name(cfg->mode), ds->n_phi, ds->n_frames, ds->n_points, pr.scaling->name,
		nf - n_fixed, nf);
	int n_starts =
		cfg->nlsq.multi_start ? (cfg->nlsq.n_starts > 1 ? cfg->nlsq.n_starts : 1) : 1;
	fit_run best = { 0 };
	int have_best = 0;
	for (int s = 0; s < n_starts && !xf_interrupted(); s++) {
		fit_run run = {
			&pr, lik, cfg, progress, progress_ctx, jtj, b, 0, "non_finite", NAN
		};
		char label[32] = "";
		memcpy(x, pr.start, sizeof(double) * nf);
		if (s > 0)
			for (int k = 0; k < pr.n_phys; k++)
				if (!pr.fixed[k])
					x[k] = lhs_value(&pr, cfg->nlsq.multi_start_seed,
							 n_starts - 1, s, k);
		if (n_starts > 1)
			snprintf(label, sizeof label, "start %d/%d ", s + 1, n_starts);
		if (fit_from(&run, x, label)) {
			if (s == 0 && n_starts == 1) {
				rc = xf_fail(
					err, XF_EXIT_DATA,
					"the model is not finite at the start values (check bounds "
					"and initial_parameters), in %s",
					ds->path ? ds->path : "data");
				goto done;
			}
			xf_warn("start %d: model not finite, skipped", s + 1);
			continue;
		}
		xf_info("nlsq %s: chi2 %.10g after %d iterations (%s)", label[0] ? label : "fit",
			run.chi2, run.iterations, run.stop_reason);
		if (!have_best || run.chi2 < best.chi2) {
			best = run;
			have_best = 1;
			memcpy(best_x, x, sizeof(double) * nf);
			memcpy(best_jtj, jtj, sizeof(double) * nn);
		}
	}
	if (xf_interrupted()) {
		rc = xf_fail(err, XF_EXIT_INTERRUPT, "interrupted: no result written");
		goto done;
	}
	if (!have_best) {
		rc = xf_fail(err, XF_EXIT_DATA, "no start gave a finite model, in %s",
			     ds->path ? ds->path : "data");
		goto done;
	}
	if (fill_result(&pr, cfg, best_x, &best, best_jtj, res)) {
		xf_nlsq_result_free(res);
		rc = xf_fail(err, XF_EXIT_DATA, "out of memory writing the result");
		goto done;
	}
	res->n_starts_run = n_starts;
	rc = 0;
done:
	free(x);
	free(best_x);
	free(jtj);
	free(b);
	free(best_jtj);
	xf_lik_destroy(lik);
	xf_pool_destroy(pool);
	xf_problem_free(&pr);
	return rc;
}

void xf_nlsq_result_free(xf_nlsq_result *res)
{
	if (res->names)
		for (int k = 0; k < res->n_params; k++)
			free(res->names[k]);
	if (res->at_bounds)
		for (int k = 0; k < res->n_at_bounds; k++)
			free(res->at_bounds[k]);
	free(res->names);
	free(res->values);
	free(res->uncertainties);
	free(res->is_fixed);
	free(res->covariance);
	free(res->at_bounds);
	free(res->phi_deg);
	free(res->contrast);
	free(res->contrast_unc);
	free(res->offset);
	free(res->offset_unc);
	memset(res, 0, sizeof *res);
}
