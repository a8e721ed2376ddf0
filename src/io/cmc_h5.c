/* cmc_h5.c — <dir>/results.h5 of a CMC run (spec/cli.md): /data as for NLSQ and /cmc —
 * the combined draws and their summaries, per-angle contrast and offset, the Gaussian
 * product, per-shard diagnostics and the combination's inputs (u-space means and
 * covariances), every shard's draws (shard by shard from the shard store, so memory
 * holds one shard at a time), and the self-check points with their log-weights. */
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "io/cmc_posterior_out.h"
#include "io/cmc_sensitivity_out.h"
#include "io/grid_h5.h"
#include "io/h5write.h"
#include "io/io_internal.h"
#include "io/nexus.h"
#include "xpcsfit/params.h"
#include "xpcsfit/results.h"

static void put_matrix(h5w *w, hid_t g, const char *name, size_t rows, size_t cols, const double *v,
		       const char *units, const char *desc)
{
	hsize_t dims[2] = { rows, cols };
	xf_h5_put(w, g, name, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, 2, dims, v, units, desc);
}

/* parameter_units beside parameter_names, as /nlsq has them */
static void put_units(h5w *w, hid_t g, const xf_estimate *est)
{
	xf_h5_put_strings(w, g, "parameter_units", est->n_params, est->units,
			  "unit of each parameter (1 = dimensionless)");
}

static void posterior(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app)
{
	size_t nf = (size_t)est->n_params, na = (size_t)est->n_phi;
	xf_h5_put_strings(w, g, "parameter_names", est->n_params, (const char *const *)est->names,
			  "every parameter in canonical order (fixed ones included)");
	xf_h5_scale(w, g, "parameter_names");
	put_units(w, g, est);
	signed char *fixed = malloc(nf);
	double *summary = malloc(sizeof(double) * nf * 5);
	if (!fixed || !summary) {
		free(fixed);
		free(summary);
		xf_h5_fail(w, "/cmc/summary");
		return;
	}
	/* no combined draws (every shard excluded): the summaries are not numbers */
	int none = est->n_draws <= 0;
	for (size_t k = 0; k < nf; k++) {
		fixed[k] = (signed char)est->is_fixed[k];
		const double row[5] = { est->values[k], est->sd_table[k], est->median[k],
					est->q05[k], est->q95[k] };
		for (int c = 0; c < 5; c++)
			summary[k * 5 + c] = none ? NAN : row[c];
	}
	double *cov = malloc(sizeof(double) * nf * nf), *angles = malloc(sizeof(double) * 4 * na);
	if (!cov || !angles) {
		free(fixed);
		free(summary);
		free(cov);
		free(angles);
		xf_h5_fail(w, "/cmc/summary");
		return;
	}
	for (size_t k = 0; k < nf * nf; k++)
		cov[k] = none ? NAN : est->covariance[k];
	for (size_t a = 0; a < na; a++) {
		angles[a] = none ? NAN : est->contrast[a];
		angles[na + a] = none ? NAN : est->contrast_sd[a];
		angles[2 * na + a] = none ? NAN : est->offset[a];
		angles[3 * na + a] = none ? NAN : est->offset_sd[a];
	}
	hsize_t d1[1] = { nf };
	xf_h5_put(w, g, "fixed", H5T_NATIVE_SCHAR, H5T_STD_I8LE, 1, d1, fixed, "1",
		  "1 where the parameter was held fixed (not sampled)");
	put_matrix(w, g, "draws", (size_t)est->n_draws, nf, est->draws, "see parameter_names",
		   "posterior draws of every parameter (rows: draws); see the attribute "
		   "'source'");
	hid_t dd = H5Dopen2(g, "draws", H5P_DEFAULT);
	if (dd >= 0) {
		xf_h5_attr_str(w, dd, "source",
			       app->check->corrected
				       ? "importance_resampled: a systematic resample of "
					 "consensus_check/u by its PSIS weights (the corrected "
					 "posterior); the consensus draws are /cmc/consensus/draws"
				       : "consensus: the combined draws (no correction applied)");
		H5Dclose(dd);
	}
	put_matrix(w, g, "summary", nf, 5, summary, "see parameter_names",
		   "per parameter: mean, sd, median, 5 % and 95 % quantiles (the reported "
		   "summaries: PSIS-weighted when consensus_check/published says so)");
	put_matrix(w, g, "covariance", nf, nf, cov, "product of units",
		   "covariance of the posterior (PSIS-weighted when corrected)");
	xf_h5_put_vec(w, g, "per_angle_contrast", na, angles, "1",
		      "posterior mean contrast of each angle");
	xf_h5_put_vec(w, g, "per_angle_contrast_sd", na, angles + na, "1", "its sd");
	xf_h5_put_vec(w, g, "per_angle_offset", na, angles + 2 * na, "1",
		      "posterior mean offset of each angle");
	xf_h5_put_vec(w, g, "per_angle_offset_sd", na, angles + 3 * na, "1", "its sd");
	free(fixed);
	free(summary);
	free(cov);
	free(angles);
}

/* A dimension scale of strings at grp/name (the sampled parameters' names, ...). */
static void string_scale(h5w *w, hid_t grp, const char *name, int n, const char *const *v,
			 const char *desc)
{
	xf_h5_put_strings(w, grp, name, n, v, desc);
	xf_h5_scale(w, grp, name);
}

/* The scales of /cmc's dimensions (adr/0060): what each axis of its datasets runs over.
 * Written before the datasets that use them; the per-angle ones use /phi_deg. */
static void cmc_scales(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app)
{
	int nt = app->n_theta;
	const char **names = malloc(sizeof(char *) * (size_t)(nt + 1));
	if (!names) {
		xf_h5_fail(w, "/cmc/coordinate");
		return;
	}
	for (int m = 0; m < nt; m++)
		names[m] = est->names[app->theta[m]];
	names[nt] = "log_sigma";
	string_scale(w, g, "sampled_parameter", nt, names,
		     "the sampled parameters (axes of the sampler's-space arrays)");
	string_scale(w, g, "coordinate", nt + 1, names,
		     "a shard's sampled coordinates: the sampled parameters, then log sigma");
	free(names);
	static const char *const stats[] = { "mean", "sd", "median", "q05", "q95" };
	string_scale(w, g, "statistic", 5, stats, "columns of the summary tables");
	xf_h5_index_scale(w, g, "draw", (size_t)est->n_draws, "index of a combined draw");
	xf_h5_index_scale(w, g, "shard", (size_t)app->n_shards, "index of a shard");
	xf_h5_index_scale(w, g, "chain", (size_t)app->n_chains, "index of a chain of a shard");
	xf_h5_index_scale(w, g, "sample", (size_t)app->n_samples,
			  "index of a draw within a shard's chain");
}

/* Attach every /cmc dataset's axes to its scales (netCDF/xarray name them). */
static void cmc_dims(h5w *w, hid_t g, const xf_cmc_appendix *app)
{
	static const char *const by_param[] = { "fixed", "parameter_units" };
	static const char *const by_angle[] = { "per_angle_contrast", "per_angle_contrast_sd",
						"per_angle_offset", "per_angle_offset_sd" };
	for (size_t k = 0; k < sizeof by_param / sizeof by_param[0]; k++)
		xf_h5_dims(w, g, by_param[k], "parameter_names", NULL);
	xf_h5_dims(w, g, "draws", "draw", "parameter_names", NULL);
	xf_h5_dims(w, g, "summary", "parameter_names", "statistic", NULL);
	xf_h5_dims(w, g, "covariance", "parameter_names", "parameter_names", NULL);
	for (size_t k = 0; k < sizeof by_angle / sizeof by_angle[0]; k++)
		xf_h5_dims(w, g, by_angle[k], "/phi_deg", NULL);
	if (app->gp_mean) {
		xf_h5_dims(w, g, "gaussian_product_mean", "sampled_parameter", NULL);
		xf_h5_dims(w, g, "gaussian_product_cov", "sampled_parameter", "sampled_parameter",
			   NULL);
	}
	xf_h5_dims(w, g, "shard_draws", "shard", "chain", "sample", "coordinate", NULL);
	xf_h5_dims(w, g, "shard_draws_physical", "shard", "chain", "sample", "coordinate", NULL);
}

/* Per-shard diagnostics as columns, and the combination's inputs. */
static void shard_tables(h5w *w, hid_t g, const xf_cmc_appendix *app)
{
	long k = app->n_shards;
	size_t nt = (size_t)app->n_theta;
	double *col = malloc(sizeof(double) * (size_t)k * (nt * nt + nt + 1));
	if (!col) {
		xf_h5_fail(w, "/cmc/shards");
		return;
	}
	struct {
		const char *name, *desc;
		size_t off;
	} cols[] = {
		{ "kept", "1: the shard entered the combination", offsetof(xf_cmc_shard, kept) },
		{ "rhat_max", "largest rank-normalised split R-hat",
		  offsetof(xf_cmc_shard, rhat_max) },
		{ "ess_bulk_min", "smallest bulk ESS", offsetof(xf_cmc_shard, ess_bulk_min) },
		{ "ess_tail_min", "smallest tail ESS", offsetof(xf_cmc_shard, ess_tail_min) },
		{ "divergence_rate", "divergent transitions / transitions",
		  offsetof(xf_cmc_shard, divergence_rate) },
		{ "max_depth_fraction", "transitions at max tree depth",
		  offsetof(xf_cmc_shard, depth_saturation) },
		{ "ebfmi_min", "smallest E-BFMI of its chains", offsetof(xf_cmc_shard, ebfmi_min) },
		{ "step_size", "mean adapted step size", offsetof(xf_cmc_shard, step_size_mean) },
		{ "sigma_mean", "posterior mean of the shard's noise sigma",
		  offsetof(xf_cmc_shard, sigma_mean) },
		{ "sigma_prior_scale", "scale of sigma's half-normal prior",
		  offsetof(xf_cmc_shard, sigma_scale) },
	};
	for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
		for (long s = 0; s < k; s++) {
			const char *base = (const char *)&app->shards[s];
			col[s] = !strcmp(cols[c].name, "kept")
					 ? (double)app->shards[s].kept
					 : *(const double *)(base + cols[c].off);
		}
		xf_h5_put_vec(w, g, cols[c].name, (size_t)k, col, "1", cols[c].desc);
	}
	for (long s = 0; s < k; s++)
		for (size_t m = 0; m < nt; m++)
			col[(size_t)s * nt + m] =
				app->shards[s].u_mean ? app->shards[s].u_mean[m] : NAN;
	put_matrix(w, g, "u_mean", (size_t)k, nt, col, "1",
		   "each shard's mean of the sampled parameters in the sampler's space");
	hsize_t d3[3] = { (hsize_t)k, nt, nt };
	for (long s = 0; s < k; s++)
		for (size_t m = 0; m < nt * nt; m++)
			col[(size_t)s * nt * nt + m] =
				app->shards[s].u_cov ? app->shards[s].u_cov[m] : NAN;
	xf_h5_put(w, g, "u_cov", H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, 3, d3, col, "1",
		  "each shard's covariance in the sampler's space (the combination's W_s^-1)");
	free(col);
	for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
		xf_h5_dims(w, g, cols[c].name, "/cmc/shard", NULL);
	xf_h5_dims(w, g, "u_mean", "/cmc/shard", "/cmc/sampled_parameter", NULL);
	xf_h5_dims(w, g, "u_cov", "/cmc/shard", "/cmc/sampled_parameter", "/cmc/sampled_parameter",
		   NULL);
}

/* Every shard's draws into one (K, chains, draws, dim) dataset, shard by shard: in the
 * sampler's space, and (physical) mapped to the parameters' units with sigma last. */
static void shard_draws(h5w *w, hid_t g, const xf_cmc_appendix *app, int physical)
{
	const char *name = physical ? "shard_draws_physical" : "shard_draws";
	int dim = app->n_theta + 1;
	hsize_t dims[4] = { (hsize_t)app->n_shards, (hsize_t)app->n_chains, (hsize_t)app->n_samples,
			    (hsize_t)dim };
	hid_t space = H5Screate_simple(4, dims, NULL);
	hid_t dcpl = H5Pcopy(w->dcpl);
	hsize_t chunk[4] = { 1, dims[1], dims[2], dims[3] };
	H5Pset_chunk(dcpl, 4, chunk);
	/* the physical copy is derived (the u-space draws are the record): float32, half the
	 * bytes, 7 digits (D0 8000 to 0.001) */
	hid_t d = H5Dcreate2(g, name, physical ? H5T_IEEE_F32LE : H5T_IEEE_F64LE, space,
			     H5P_DEFAULT, dcpl, H5P_DEFAULT);
	H5Pclose(dcpl);
	if (d < 0) {
		H5Sclose(space);
		xf_h5_fail(w, name);
		return;
	}
	if (physical)
		xf_h5_describe(
			w, d, "see /cmc/coordinate",
			"every shard's draws in physical units (float32): each sampled parameter "
			"(units of parameter_units), then sigma (shards, chains, draws, "
			"coordinates; coordinate log_sigma holds sigma itself); NaN for a "
			"shard that could not be sampled");
	else
		xf_h5_describe(w, d, "1",
			       "every shard's draws in the sampler's space: logit of each sampled "
			       "parameter within its bounds, then log sigma (shards, chains, "
			       "draws, coordinates); NaN for a shard that could not be sampled");
	for (long s = 0; s < app->n_shards && !w->failed; s++) {
		double *draws = NULL;
		int nc, nd, dd;
		xf_error e = { 0 };
		size_t n = (size_t)dims[1] * dims[2] * (size_t)dim;
		int have =
			!app->shards[s].failed &&
			app->shard_draws(app->store, s, physical, &draws, &nc, &nd, &dd, &e) == 0 &&
			nc == (int)dims[1] && nd == (int)dims[2] && dd == dim;
		if (!have) {
			free(draws);
			draws = malloc(sizeof(double) * n);
			for (size_t q = 0; draws && q < n; q++)
				draws[q] = NAN;
		}
		hsize_t start[4] = { (hsize_t)s, 0, 0, 0 };
		hid_t mem = H5Screate_simple(4, chunk, NULL);
		H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, chunk, NULL);
		if (!draws || H5Dwrite(d, H5T_NATIVE_DOUBLE, mem, space, H5P_DEFAULT, draws) < 0)
			xf_h5_fail(w, name);
		H5Sclose(mem);
		free(draws);
	}
	H5Dclose(d);
	H5Sclose(space);
}

/* The self-check: its numbers, its points and weights (so anyone can recompute), and the
 * plain consensus posterior when the corrected one was published (adr/0039). */
static void check_group_of(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app,
			   const xf_cmc_check *c, const char *name)
{
	if (!c->done)
		return;
	int consensus = c == app->check;
	hid_t cg = H5Gcreate2(g, name, H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
	if (cg < 0) {
		xf_h5_fail(w, name);
		return;
	}
	xf_h5_nx_class(w, cg, "NXcollection");
	xf_h5_attr_str(w, cg, "published", c->corrected ? "importance_weighted" : "consensus");
	xf_h5_attr_str(w, cg, "verdict", c->corrected ? "passed" : c->verdict);
	xf_h5_attr_str(w, cg, "proposal",
		       consensus ? "multivariate t in the sampler's space, nu and scale below, on "
				   "the combined draws' mean and covariance"
				 : "mixture: with probability gaussian_weight the NLSQ Gaussian "
				   "approximation in the sampler's space, else the multivariate t "
				   "(nu, scale below) on it");
	if (!consensus) {
		xf_h5_put_f64(w, cg, "gaussian_weight", c->core, "1",
			      "weight of the Gaussian in the proposal");
		xf_h5_put_i64(w, cg, "rounds", c->rounds,
			      "1: the proposal on NLSQ's approximation; k > 1: the transport map "
			      "fitted to the earlier rounds' weighted points");
		xf_h5_put_i64(w, cg, "scaling_conditional", c->scaling_conditional,
			      "per-angle scaling coefficients drawn from their exact conditional "
			      "given the physical parameters and sigma (0: none)");
		xf_h5_put_i64(w, cg, "prior_start_round", c->prior_start,
			      "the round started from the Laplace approximation with the priors "
			      "in, after a round left too little to fit (0: none)");
		xf_h5_put_i64(w, cg, "power_law_coords", c->power_law_coords,
			      "power laws whose coordinates the map straightened on a ridge "
			      "(adr/0082; 0: none)");
		xf_h5_put_i64(w, cg, "map_dim", c->map_dim,
			      "coordinates the proposal's map covers (the others: the "
			      "conditional)");
	}
	xf_h5_put_f64(w, cg, "khat", c->khat, "1", "Pareto k-hat of the importance ratios");
	xf_h5_put_i64(w, cg, "M", c->m, "points drawn (grown from M_first until stable)");
	xf_h5_put_i64(w, cg, "M_first", c->m_first, "combination.check_draws");
	xf_h5_put_u64(w, cg, "seed", c->seed, "seed of the points' stream");
	xf_h5_put_i64(w, cg, "nu", c->nu, "degrees of freedom of the t proposal");
	xf_h5_put_f64(w, cg, "scale", c->scale, "1",
		      "the proposal's scale matrix is scale^2 x the combined covariance");
	xf_h5_put_f64(w, cg, "is_ess", c->ess, "1",
		      "importance-sampling ESS, 1 / sum of the squared smoothed weights");
	xf_h5_put_f64(w, cg, "is_ess_per_M_gaussian", c->ess_ref, "1",
		      "IS-ESS/M a Gaussian target gives for this proposal (the check needs half)");
	xf_h5_put_f64(w, cg, "axis_max_deviation", c->axis_dev, "1",
		      "largest |drop - 0.5| of the full-data log posterior at +-1 corrected sd "
		      "from the corrected mean along the combined covariance's principal axes");
	xf_h5_put_f64(w, cg, "axis_drop", c->axis_drop, "1",
		      "the drop there: the mean of the two sides' (0.5 for a Gaussian)");
	const double sides[2] = { c->axis_drop_plus, c->axis_drop_minus };
	xf_h5_put_vec(w, cg, "axis_drops", 2, sides, "1", "the drops at +1 sd and -1 sd");
	xf_h5_put_i64(w, cg, "axis_index", c->axis,
		      "that axis (0: the combined covariance's largest variance)");
	signed char passed[3] = { (signed char)c->pass_khat, (signed char)c->pass_ess,
				  (signed char)c->pass_axis };
	hsize_t d3[1] = { 3 };
	xf_h5_put(w, cg, "passed", H5T_NATIVE_SCHAR, H5T_STD_I8LE, 1, d3, passed, "1",
		  "1 where the check passed: k-hat, IS-ESS, axis");
	if (consensus)
		xf_h5_put_f64(w, cg, "sigma", c->sigma, "1",
			      "noise sigma of the full-data posterior (median of the kept "
			      "shards')");
	else
		xf_h5_put_f64(w, cg, "coordinate_ess_min", c->ess_coord_min, "1",
			      "the smallest ESS of one coordinate's weighted mean");
	put_matrix(w, cg, "u", (size_t)c->m, (size_t)c->dim, c->u, "1",
		   consensus ? "the points drawn from the proposal (sampler's space)"
			     : "the points drawn from the proposal (sampler's space; log sigma "
			       "last)");
	xf_h5_put_vec(w, cg, "log_weights", (size_t)c->m, c->log_w, "1",
		      "their Pareto-smoothed, normalised log importance weights");
	static const char *const sides_names[] = { "plus", "minus" };
	static const char *const checks[] = { "khat", "is_ess", "axis" };
	string_scale(w, cg, "side", 2, sides_names, "+1 sd and -1 sd along the axis");
	string_scale(w, cg, "check", 3, checks, "the three checks");
	xf_h5_index_scale(w, cg, "point", (size_t)c->m, "index of a proposal point");
	xf_h5_dims(w, cg, "axis_drops", "side", NULL);
	xf_h5_dims(w, cg, "passed", "check", NULL);
	xf_h5_dims(w, cg, "u", "point",
		   c->dim == app->n_theta ? "/cmc/sampled_parameter" : "/cmc/coordinate", NULL);
	xf_h5_dims(w, cg, "log_weights", "point", NULL);
	H5Gclose(cg);
	if (!c->corrected || !consensus)
		return;
	size_t nf = (size_t)est->n_params;
	double *summary = malloc(sizeof(double) * nf * 5);
	hid_t pg = H5Gcreate2(g, "consensus", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
	if (!summary || pg < 0) {
		free(summary);
		if (pg >= 0)
			H5Gclose(pg);
		xf_h5_fail(w, "/cmc/consensus");
		return;
	}
	for (size_t k = 0; k < nf; k++) {
		const double row[5] = { c->mean[k], c->sd[k], c->median[k], c->q05[k], c->q95[k] };
		memcpy(summary + k * 5, row, sizeof row);
	}
	put_matrix(w, pg, "draws", (size_t)est->n_draws, nf, c->draws, "see parameter_names",
		   "the plain consensus draws (what /cmc/draws would be without the "
		   "correction)");
	put_matrix(w, pg, "summary", nf, 5, summary, "see parameter_names",
		   "their mean, sd, median, 5 % and 95 % quantiles");
	xf_h5_dims(w, pg, "draws", "/cmc/draw", "/cmc/parameter_names", NULL);
	xf_h5_dims(w, pg, "summary", "/cmc/parameter_names", "/cmc/statistic", NULL);
	xf_h5_nx_class(w, pg, "NXcollection");
	H5Gclose(pg);
	free(summary);
}

static void check_group(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app)
{
	check_group_of(w, g, est, app, app->check, "consensus_check");
	if (app->approx->done)
		check_group_of(w, g, est, app, app->approx, "importance_check");
}

int xf_io_write_cmc_h5(const char *dir, const xf_dataset *ds, const xf_estimate *est,
		       const xf_cmc_appendix *app, xf_error *err)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	h5w w;
	int rc = xf_h5_open(&w, dir, "results.h5", path, tmp, sizeof path, err);
	if (rc)
		return rc;
	xf_h5_result_head(&w, ds, est);
	hid_t g = xf_h5_group(&w, "/cmc");
	if (g >= 0) {
		xf_h5_attr_str(&w, g, "status", est->words.status);
		xf_h5_attr_str(&w, g, "quality", est->words.quality);
		xf_h5_attr_str(&w, g, "combination_method",
			       xf_combination_rule_name(app->combination));
		xf_h5_attr_str(&w, g, "per_angle_mode", est->words.scaling);
		const xf_route_record *route = est->words.route;
		xf_h5_attr_str(&w, g, "posterior",
			       app->check->corrected && route->posterior_corrected
				       ? route->posterior_corrected
				       : route->posterior);
		xf_h5_attr_str(&w, g, "route", est->words.route->name);
		xf_h5_attr_str(&w, g, "route_description", app->route_text);
		if (est) /* for `xpcsfit plot DIR` (adr/0059) */
			xf_h5_model_grid(&w, g, est, ds);
		cmc_scales(&w, g, est, app);
		posterior(&w, g, est, app);
		xf_h5_nexus(&w, ds, est, g);
		if (app->gp_mean) {
			xf_h5_put_vec(
				&w, g, "gaussian_product_mean", (size_t)app->n_theta, app->gp_mean,
				"1",
				"mean of the product of the kept shards' Gaussians (sampler's "
				"space)");
			put_matrix(&w, g, "gaussian_product_cov", (size_t)app->n_theta,
				   (size_t)app->n_theta, app->gp_cov, "1", "its covariance");
		}
		hid_t sg = H5Gcreate2(g, "shards", H5P_DEFAULT, w.gcpl, H5P_DEFAULT);
		if (sg >= 0) {
			xf_h5_nx_class(&w, sg, "NXcollection");
			shard_tables(&w, sg, app);
			H5Gclose(sg);
		} else {
			xf_h5_fail(&w, "/cmc/shards");
		}
		shard_draws(&w, g, app, 0);
		shard_draws(&w, g, app, 1);
		check_group(&w, g, est, app);
		xf_cmc_sensitivity_h5(&w, g, est, app);
		xf_cmc_prior_vs_nlsq_h5(&w, g, est, app);
		xf_cmc_beyond_h5(&w, g, est, app);
		xf_cmc_posterior_diag_h5(&w, g, est, app);
		cmc_dims(&w, g, app);
		H5Gclose(g);
	}
	return xf_h5_close(&w, tmp, path);
}
