/* results.h — the files of a method's result directory (spec/cli.md): results.h5,
 * parameters.json, run.log (io/). The whole directory, plots included, is outputs.h's.
 * Every file is written atomically. Nothing here reads the config: what the files record
 * about the run is an xf_output_info, built by the CLI (adr/0044). */
#ifndef XPCSFIT_RESULTS_H
#define XPCSFIT_RESULTS_H

#include <stddef.h>
#include "xpcsfit/cmc_appendix.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/appendix.h"

/* An override as it was applied (parameters.json "overrides", run.log) */
typedef struct xf_output_override {
	const char *option; /* "--initial", or the origin of a batch --overrides cell */
	const char *key;    /* the dotted key it set */
	const char *value;
} xf_output_override;

/* What the result files say about the run besides the result: its provenance and the
 * settings parameters.json and report.html record. */
typedef struct xf_output_info {
	const char *config_path; /* the YAML file ("" or NULL: none) */
	size_t n_overrides;
	const xf_output_override *overrides;
	int plot_dpi;		    /* XF_KEY_DPI (0: nominal 100 dpi pages) */
	int plot_all_angles;	    /* XF_KEY_ANGLE_PAGES: all (1) or auto (0, adr/0059) */
	const char *loss;	    /* the NLSQ loss's name ("linear", "soft_l1", ...) */
	int loss_linear;	    /* 1: linear (no f_scale recorded) */
	double f_scale;		    /* the robust loss's scale */
	const char *per_angle_mode; /* the per-angle mode the config asked this method for */
	/* the CMC sampler's settings that parameters.json records */
	int max_tree_depth, dense_mass, nlsq_informed_priors;
	const char *rings_json; /* a joint fit's "rings" member (adr/0066), JSON; NULL: none */
} xf_output_info;

/* <dir>/results.h5 (written as a temporary file, then renamed): xf_io_write_nlsq_h5
 * (io/results_h5.h) without a surface sink. surface_threads: 0 skips the (n_phi, N, N)
 * surfaces, N ≥ 1 prepares their chunks on N threads (same bytes); the fitted surfaces
 * are the model at est. */
int xf_io_write_nlsq_results_h5(const char *dir, const xf_output_info *info, const xf_dataset *ds,
				const xf_estimate *est, const xf_nlsq_appendix *app,
				int surface_threads, xf_error *err);
/* <dir>/parameters.json of an NLSQ fit */
int xf_io_write_nlsq_json(const char *dir, const xf_output_info *info, const xf_dataset *ds,
			  const xf_estimate *est, const xf_nlsq_appendix *app, xf_error *err);
/* <dir>/run.log from the in-memory log (error.h) */
int xf_results_write_log(const char *dir, xf_error *err);

/* <dir>/parameters.json of a CMC run (cli.md's cmc schema). */
int xf_io_write_cmc_json(const char *dir, const xf_output_info *info, const xf_dataset *ds,
			 const xf_estimate *est, const xf_cmc_appendix *app, xf_error *err);
/* <dir>/results.h5 of a CMC run: /cmc with the combined draws, summaries, every shard's
 * draws and diagnostics, the combination's inputs, the self-check points; est (the
 * posterior's estimate, may be NULL) draws the default NeXus plot's fit, and its grid is
 * recorded for `xpcsfit plot DIR` (adr/0059). */
int xf_io_write_cmc_h5(const char *dir, const xf_dataset *ds, const xf_estimate *est,
		       const xf_cmc_appendix *app, xf_error *err);

/* <dir>/posterior.nc of a CMC run: the published posterior as ArviZ InferenceData in
 * netCDF-4 (groups posterior, sample_stats, observed_data, summary; adr/0061). */
int xf_io_write_posterior_nc(const char *dir, const xf_dataset *ds, const xf_estimate *est,
			     const xf_cmc_appendix *app, xf_error *err);

/* Where an NLSQ result came from (its parameters.json "data" and "status"). */
typedef struct xf_nlsq_origin {
	char file[4096];
	double q;
	long n_frames, first_frame;
	int has_status;	      /* 0: the file names no status (or none known) */
	xf_fit_status status; /* what its "status" names */
} xf_nlsq_origin;

/* An NLSQ result folder read back from its parameters.json as the fit's estimate (the warm
 * start of CMC): mode (e->grid.mode; the rest of the grid is not read), per-angle mode,
 * status, every parameter with its uncertainty, the covariance, per-angle contrast and
 * offset. Exit code 2 (with the reason) when it is not one; free e with
 * xf_estimate_free. */
int xf_results_read_nlsq(const char *dir, xf_estimate *e, xf_nlsq_origin *origin, xf_error *err);
/* 0 when that result was fitted to this data and this run's analysis mode (file, mode, q,
 * frame window, angles) and its free physical values lie within bounds (this config's,
 * indexed as xf_param_index; NULL: not checked), else XF_ERR_CONFIG with one line naming
 * the difference or the parameter. */
int xf_io_check_nlsq(const char *dir, const xf_estimate *res, const xf_nlsq_origin *o, xf_mode mode,
		     const xf_bound *bounds, const xf_dataset *ds, xf_error *err);

#endif
