/* results.h — the result directory of a method (spec/cli.md): results.h5,
 * parameters.json, run.log (io/). The whole directory, plots included, is outputs.h's.
 * Every file is written atomically. */
#ifndef XPCSFIT_RESULTS_H
#define XPCSFIT_RESULTS_H

#include "xpcsfit/cmc.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/nlsq.h"

/* <dir>/results.h5 (written as a temporary file, then renamed). surface_threads: 0 skips
 * the (n_phi, N, N) surfaces, N ≥ 1 prepares their chunks on N threads (same bytes). */
int xf_results_write_nlsq_h5(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			     const xf_nlsq_result *res, int surface_threads, xf_error *err);
/* <dir>/parameters.json */
int xf_results_write_nlsq_json(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			       const xf_nlsq_result *res, xf_error *err);
/* <dir>/run.log from the in-memory log (error.h) */
int xf_results_write_log(const char *dir, xf_error *err);

/* <dir>/parameters.json of a CMC run (cli.md's cmc schema). */
int xf_results_write_cmc_json(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			      const xf_cmc_result *res, xf_error *err);
/* <dir>/results.h5 of a CMC run: /cmc with the combined draws, summaries, every shard's
 * draws and diagnostics, the combination's inputs, the self-check points. */
int xf_results_write_cmc_h5(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			    const xf_cmc_result *res, xf_error *err);

/* Where an NLSQ result came from (its parameters.json "data" and "status"). */
typedef struct xf_nlsq_origin {
	char file[4096];
	double q;
	long n_frames, first_frame;
	char status[32];
} xf_nlsq_origin;

/* An NLSQ result folder read back from its parameters.json (the warm start of CMC):
 * mode, per-angle mode, every parameter with its uncertainty, the covariance, per-angle
 * contrast and offset. Exit code 2 (with the reason) when it is not one. */
int xf_results_read_nlsq(const char *dir, xf_nlsq_result *res, xf_nlsq_origin *origin,
			 xf_error *err);
/* 0 when that result was fitted to this data and config (file, mode, q, frame window,
 * angles), else XF_ERR_CONFIG with one line naming the difference. */
int xf_results_check_nlsq(const char *dir, const xf_nlsq_result *res, const xf_nlsq_origin *o,
			  const xf_config *cfg, const xf_dataset *ds, xf_error *err);

#endif
