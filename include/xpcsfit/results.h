/* results.h — the result directory of a method (spec/cli.md): results.h5,
 * parameters.json, run.log, plots/. Every file is written atomically. */
#ifndef XPCSFIT_RESULTS_H
#define XPCSFIT_RESULTS_H

#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/nlsq.h"

typedef struct xf_output_options {
	int write_surfaces; /* 0 with --no-surfaces */
	int write_plots;    /* 0 with --no-plots */
	int threads;	    /* virtual devices preparing the surfaces (0 counts as 1) */
} xf_output_options;

/* Create dir (and parents) if missing. */
int xf_mkdir_p(const char *dir, xf_error *err);

/* Write bytes to path atomically: path.tmp.<pid>, fsync, rename. */
int xf_write_file_atomic(const char *path, const void *data, size_t size, xf_error *err);

/* <dir>/results.h5 (written as a temporary file, then renamed). surface_threads: 0 skips
 * the (n_phi, N, N) surfaces, N ≥ 1 prepares their chunks on N threads (same bytes). */
int xf_results_write_nlsq_h5(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			     const xf_nlsq_result *res, int surface_threads, xf_error *err);
/* <dir>/parameters.json */
int xf_results_write_nlsq_json(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			       const xf_nlsq_result *res, xf_error *err);
/* <dir>/run.log from the in-memory log (error.h) */
int xf_results_write_log(const char *dir, xf_error *err);
/* All of the above plus plots/ (unless disabled). */
int xf_results_write_nlsq(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			  const xf_nlsq_result *res, const xf_output_options *opt, xf_error *err);

#endif
