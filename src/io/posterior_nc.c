/* posterior_nc.c — <dir>/posterior.nc of a CMC run (adr/0061): the published posterior
 * as ArviZ InferenceData in netCDF-4, written with the netCDF library, so that
 * arviz.from_netcdf and xarray.open_dataset(path, group=...) read it as they read
 * PyMC's or Stan's:
 *   posterior      one variable per sampled parameter, dims (chain, draw), physical units
 *   sample_stats   the sampler's per-draw statistics where the draws are its chains
 *   observed_data  a reference to the data (file, angles), not the c2 matrices
 *   summary        per parameter: mean, sd, MCSE of both, bulk and tail ESS, R-hat
 * The draws' chain layout (xf_cmc_posterior_diagnostics) is in every group's "layout"
 * and "note" attributes. Written under a temporary name and renamed. */
#include <limits.h>
#include <math.h>
#include <netcdf.h>
#include <netcdf_mem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io_internal.h"
#include "io/utf8.h"
#include "util/files.h"
#include "xpcsfit/params.h"
#include "xpcsfit/results.h"

typedef struct ncw {
	int failed;
	const char *path;
	xf_error *err;
} ncw;

static int ok(ncw *w, int status, const char *what)
{
	if (status != NC_NOERR && !w->failed) {
		w->failed = 1;
		xf_fail(w->err, XF_ERR_IO, "cannot write %s (%s), %s", what, nc_strerror(status),
			w->path);
	}
	return w->failed ? -1 : 0;
}

static void text(ncw *w, int id, int var, const char *name, const char *value)
{
	if (w->failed)
		return;
	/* netCDF text is UTF-8: a path's byte 0xFF is written as U+FFFD (adr/0075) */
	char *clean = xf_utf8_clean(value);
	ok(w, clean ? nc_put_att_text(id, var, name, strlen(clean), clean) : NC_ENOMEM, name);
	free(clean);
}

static void number(ncw *w, int id, const char *name, double v)
{
	if (!w->failed)
		ok(w, nc_put_att_double(id, NC_GLOBAL, name, NC_DOUBLE, 1, &v), name);
}

static int group(ncw *w, int root, const char *name, const xf_cmc_posterior_diag *d)
{
	int id = -1;
	if (ok(w, nc_def_grp(root, name, &id), name))
		return -1;
	text(w, id, NC_GLOBAL, "layout", xf_chain_layout_name(d->layout));
	text(w, id, NC_GLOBAL, "note", d->note);
	return id;
}

/* a variable over dims (units, description), written at once */
static int var(ncw *w, int id, const char *name, nc_type type, int rank, const int *dims,
	       const void *v, const char *units, const char *desc)
{
	int vid;
	if (w->failed || ok(w, nc_def_var(id, name, type, rank, dims, &vid), name))
		return -1;
	if (units)
		text(w, id, vid, "units", units);
	text(w, id, vid, "description", desc);
	if (!w->failed)
		ok(w, nc_put_var(id, vid, v), name);
	return w->failed ? -1 : vid;
}

/* an index dimension with its coordinate variable 0..n-1 */
static int index_dim(ncw *w, int id, const char *name, size_t n, const char *desc)
{
	int dim;
	if (w->failed || ok(w, nc_def_dim(id, name, n, &dim), name))
		return -1;
	long long *v = malloc(sizeof *v * (n ? n : 1));
	if (!v) {
		ok(w, NC_ENOMEM, name);
		return -1;
	}
	for (size_t k = 0; k < n; k++)
		v[k] = (long long)k;
	var(w, id, name, NC_INT64, 1, &dim, v, NULL, desc);
	free(v);
	return dim;
}

static const char *units_of(const xf_estimate *est, int k)
{
	return k < est->n_phys ? est->units[k] : "1";
}

static void posterior_group(ncw *w, int root, const xf_estimate *est,
			    const xf_cmc_posterior_diag *d)
{
	int g = group(w, root, "posterior", d);
	int dims[2] = { index_dim(w, g, "chain", (size_t)d->n_chains, "chain index"),
			index_dim(w, g, "draw", (size_t)d->n_draws, "draw index within a chain") };
	size_t n = (size_t)est->n_draws, nf = (size_t)est->n_params;
	double *x = malloc(sizeof(double) * (n ? n : 1));
	char fixed[1024] = "";
	if (!x) {
		ok(w, NC_ENOMEM, "posterior");
		return;
	}
	for (size_t k = 0; k < nf && !w->failed; k++) {
		if (est->is_fixed[k]) {
			size_t len = strlen(fixed);
			snprintf(fixed + len, sizeof fixed - len, "%s%s = %.17g", len ? ", " : "",
				 est->names[k], n ? est->draws[k] : NAN);
			continue;
		}
		for (size_t i = 0; i < n; i++) /* rows chain-major: (chain, draw) as stored */
			x[i] = est->draws[i * nf + k];
		var(w, g, est->names[k], NC_DOUBLE, 2, dims, x, units_of(est, (int)k),
		    "posterior draws in physical units (see the group's layout and note)");
	}
	free(x);
	text(w, g, NC_GLOBAL, "fixed_parameters", fixed);
}

/* the exact NUTS chains: shard 0's statistics, in ArviZ's names */
static void nuts_stats(ncw *w, int g, const int *dims, const xf_estimate *est,
		       const xf_cmc_appendix *app)
{
	xf_cmc_shard_stats st;
	xf_error e = { 0 };
	if (app->shard_stats(app->store, 0, &st, &e) != 0) {
		text(w, g, NC_GLOBAL, "missing", e.msg);
		return;
	}
	size_t n = (size_t)st.n_chains * (size_t)st.n_draws;
	double *step = malloc(sizeof(double) * (n ? n : 1));
	long long *depth = malloc(sizeof *depth * (n ? n : 1)),
		  *steps = malloc(sizeof *steps * (n ? n : 1));
	signed char *div = malloc(n ? n : 1);
	if (!step || !depth || !steps || !div || st.n_chains * st.n_draws != est->n_draws) {
		ok(w, NC_ENOMEM, "sample_stats");
	} else {
		for (size_t i = 0; i < n; i++) {
			step[i] = st.step_size[i / (size_t)st.n_draws];
			depth[i] = st.tree_depth[i];
			steps[i] = st.n_leapfrog[i];
			div[i] = (signed char)(st.diverging[i] != 0);
		}
		var(w, g, "lp", NC_DOUBLE, 2, dims, st.lp, "1",
		    "log posterior density in the sampler's space (logits of the parameters "
		    "within their bounds, log sigma), Jacobian included, up to a constant");
		var(w, g, "energy", NC_DOUBLE, 2, dims, st.energy, "1", "the Hamiltonian");
		var(w, g, "acceptance_rate", NC_DOUBLE, 2, dims, st.accept_stat, "1",
		    "the transition's mean Metropolis acceptance statistic");
		var(w, g, "step_size", NC_DOUBLE, 2, dims, step, "1",
		    "the chain's adapted step size");
		var(w, g, "tree_depth", NC_INT64, 2, dims, depth, "1", "NUTS tree depth");
		var(w, g, "n_steps", NC_INT64, 2, dims, steps, "1", "leapfrog steps");
		int vid = var(w, g, "diverging", NC_BYTE, 2, dims, div, "1",
			      "1 where the transition diverged");
		if (vid >= 0)
			text(w, g, vid, "dtype", "bool"); /* xarray decodes it as bool */
	}
	free(step);
	free(depth);
	free(steps);
	free(div);
	xf_cmc_shard_stats_free(&st);
}

/* the consensus of the shards' chains: a draw diverged when any kept shard's did */
static void consensus_stats(ncw *w, int g, const int *dims, const xf_estimate *est,
			    const xf_cmc_appendix *app)
{
	size_t n = (size_t)est->n_draws;
	signed char *div = calloc(n ? n : 1, 1);
	if (!div) {
		ok(w, NC_ENOMEM, "sample_stats");
		return;
	}
	for (long s = 0; s < app->n_shards && !w->failed; s++) {
		xf_cmc_shard_stats st;
		xf_error e = { 0 };
		if (!app->shards[s].kept)
			continue;
		if (app->shard_stats(app->store, s, &st, &e) != 0) {
			text(w, g, NC_GLOBAL, "missing", e.msg);
			free(div);
			return;
		}
		for (size_t i = 0; i < n && i < (size_t)st.n_chains * st.n_draws; i++)
			div[i] |= (signed char)(st.diverging[i] != 0);
		xf_cmc_shard_stats_free(&st);
	}
	int vid = var(w, g, "diverging", NC_BYTE, 2, dims, div, "1",
		      "1 where the transition of any kept shard behind this draw diverged");
	if (vid >= 0)
		text(w, g, vid, "dtype", "bool");
	text(w, g, NC_GLOBAL, "per_shard",
	     "each shard's own statistics: results.h5 /cmc/shards (R-hat, ESS, divergences, "
	     "E-BFMI, step size)");
	free(div);
}

static void sample_stats_group(ncw *w, int root, const xf_estimate *est, const xf_cmc_appendix *app,
			       const xf_cmc_posterior_diag *d)
{
	int g = group(w, root, "sample_stats", d);
	int dims[2] = { index_dim(w, g, "chain", (size_t)d->n_chains, "chain index"),
			index_dim(w, g, "draw", (size_t)d->n_draws, "draw index within a chain") };
	if (w->failed)
		return;
	if (d->layout == XF_CHAINS_NUTS) {
		nuts_stats(w, g, dims, est, app);
		return;
	}
	if (d->layout == XF_CHAINS_CONSENSUS) {
		consensus_stats(w, g, dims, est, app);
		return;
	}
	const xf_cmc_check *c = est->words.route->from_importance_points ? app->approx : app->check;
	if (d->layout == XF_CHAINS_RESAMPLED && c->done) {
		text(w, g, NC_GLOBAL, "resampling",
		     "systematic resampling of the importance points by their Pareto-smoothed "
		     "weights: the draws carry equal weight; the points and log-weights are in "
		     "results.h5 (consensus_check or importance_check)");
		number(w, g, "pareto_khat", c->khat);
		number(w, g, "importance_ess", c->ess);
		number(w, g, "importance_points", c->m);
	}
}

static void observed_group(ncw *w, int root, const xf_dataset *ds, const xf_cmc_posterior_diag *d)
{
	int g = group(w, root, "observed_data", d);
	int dim;
	if (w->failed || ok(w, nc_def_dim(g, "phi_deg", (size_t)ds->n_phi, &dim), "phi_deg"))
		return;
	var(w, g, "phi_deg", NC_DOUBLE, 1, &dim, ds->phi_deg, "deg",
	    "the angles whose c2(t1, t2) the posterior conditions on");
	text(w, g, NC_GLOBAL, "reference",
	     "the data are not copied: c2(t1, t2) of each angle in source_file (its layout), "
	     "frames first_frame .. first_frame + n_frames - 1; results.h5 /data holds the "
	     "times and, with surfaces, /data/c2");
	text(w, g, NC_GLOBAL, "source_file", ds->path ? ds->path : "");
	text(w, g, NC_GLOBAL, "source_layout", xf_layout_name(ds->layout));
	number(w, g, "q_per_angstrom", ds->q);
	number(w, g, "dt_s", ds->dt_s);
	number(w, g, "n_frames", ds->n_frames);
	number(w, g, "first_frame", (double)ds->first_frame);
	text(w, g, NC_GLOBAL, "results_file", "results.h5");
}

static void summary_group(ncw *w, int root, const xf_estimate *est, const xf_cmc_posterior_diag *d)
{
	int g = group(w, root, "summary", d);
	int nf = est->n_params, n = 0, dim;
	for (int k = 0; k < nf; k++)
		n += !est->is_fixed[k];
	if (w->failed || ok(w, nc_def_dim(g, "parameter", (size_t)n, &dim), "parameter"))
		return;
	const char **names = malloc(sizeof(char *) * (size_t)(n ? n : 1) * 2);
	double *col = malloc(sizeof(double) * (size_t)(n ? n : 1) * 7);
	if (!names || !col) {
		free(names);
		free(col);
		ok(w, NC_ENOMEM, "summary");
		return;
	}
	const double *src[7] = { est->values, d->mcse_mean, est->sd, d->mcse_sd,
				 d->ess_bulk, d->ess_tail,  d->rhat };
	static const char *const col_names[7] = { "mean",     "mcse_mean", "sd",   "mcse_sd",
						  "ess_bulk", "ess_tail",  "r_hat" };
	static const char *const col_desc[7] = {
		"posterior mean (the reported summary: PSIS-weighted when the importance-"
		"weighted posterior is published)",
		"Monte Carlo standard error of the mean, from the written draws",
		"posterior sd (the reported summary)",
		"Monte Carlo standard error of the sd (delta method), from the written draws",
		"bulk effective sample size (rank-normalised split chains)",
		"tail effective sample size (5 % and 95 % quantile indicators)",
		"rank-normalised split R-hat (Vehtari et al. 2021)"
	};
	for (int k = 0, j = 0; k < nf; k++) {
		if (est->is_fixed[k])
			continue;
		names[j] = est->names[k];
		names[n + j] = units_of(est, k);
		for (int c = 0; c < 7; c++)
			col[c * n + j] = est->n_draws > 0 ? src[c][k] : NAN;
		j++;
	}
	var(w, g, "parameter", NC_STRING, 1, &dim, names, NULL, "the sampled parameters");
	var(w, g, "units", NC_STRING, 1, &dim, names + n, NULL, "each parameter's units");
	for (int c = 0; c < 7; c++)
		var(w, g, col_names[c], NC_DOUBLE, 1, &dim, col + (size_t)c * n,
		    c < 4 ? "see units" : "1", col_desc[c]);
	free(names);
	free(col);
}

int xf_io_write_posterior_nc(const char *dir, const xf_dataset *ds, const xf_estimate *est,
			     const xf_cmc_appendix *app, xf_error *err)
{
	char path[PATH_MAX];
	if (xf_path_join(path, sizeof path, dir, "posterior.nc", err) != 0)
		return err->code;
	const xf_cmc_posterior_diag *d = &app->diag;
	ncw w = { 0, path, err };
	int root;
	/* built in memory, then written by our own atomic writer: libnetcdf would open the
	 * file through HDF5 with HDF5's file lock, which fails on a filesystem without locks
	 * and cannot be turned off once HDF5 has started (adr/0056) */
	int st = nc_create_mem("posterior.nc", NC_NETCDF4, 1 << 16, &root);
	if (st != NC_NOERR) {
		return xf_fail(err, XF_ERR_NOMEM, "cannot build the file in memory (%s), %s",
			       nc_strerror(st), path);
	}
	text(&w, root, NC_GLOBAL, "creator", "xpcsfit " XPCSFIT_VERSION);
	text(&w, root, NC_GLOBAL, "inference_library", "xpcsfit");
	text(&w, root, NC_GLOBAL, "inference_library_version", XPCSFIT_VERSION);
	text(&w, root, NC_GLOBAL, "method", "cmc");
	text(&w, root, NC_GLOBAL, "analysis_mode", est->words.mode);
	text(&w, root, NC_GLOBAL, "route", est->words.route->name);
	text(&w, root, NC_GLOBAL, "combination_method", xf_combination_rule_name(app->combination));
	text(&w, root, NC_GLOBAL, "layout", xf_chain_layout_name(d->layout));
	text(&w, root, NC_GLOBAL, "note", d->note);
	posterior_group(&w, root, est, d);
	sample_stats_group(&w, root, est, app, d);
	observed_group(&w, root, ds, d);
	summary_group(&w, root, est, d);
	NC_memio mem = { 0 };
	st = nc_close_memio(root, &mem);
	if (!w.failed)
		ok(&w, st, "file (close)");
	if (w.failed) {
		free(mem.memory);
		return err->code ? err->code : XF_ERR_IO;
	}
	int rc = xf_write_file_atomic(path, mem.memory, mem.size, err);
	free(mem.memory);
	return rc;
}
