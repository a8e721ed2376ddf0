/* io_internal.h — helpers of the result writers (src/io): JSON numbers. The file-system
 * helpers are in util/files.h. */
#ifndef XPCSFIT_IO_INTERNAL_H
#define XPCSFIT_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "xpcsfit/dataset.h"
#include "util/files.h"
#include "xpcsfit/error.h"
#include "xpcsfit/results.h"

/* Shortest decimal (15..17 significant digits, C locale) that reads back as exactly
 * x; "null" for NaN and infinities. buf needs 32 bytes. */
void xf_io_format_double(double x, char *buf, size_t size);

/* JSON items of numbers in that form (json.c). */
typedef struct cJSON cJSON;
cJSON *xf_json_num(double x);
cJSON *xf_json_int(long long v);
cJSON *xf_json_u64(uint64_t v);			/* a seed: 0 … 2^64 − 1 */
cJSON *xf_json_numbers(const double *v, int n); /* v NULL: n nulls */

/* "parameter_units" of a parameters.json: {name: unit} in the order of "parameters" then
 * "scaling_parameters": the n_phys physical names, the scalar "contrast" and "offset",
 * then the scaling coefficients, each once; units the estimate's (dimensionless "1" for
 * contrast and offset). */
cJSON *xf_json_parameter_units(const xf_estimate *est);

/* homodyne's scalar contrast/offset of parameters.json "parameters", also shown by
 * report.html (one home, the same numbers): NLSQ: mean over angles, uncertainty the RMS
 * of the per-angle uncertainties (v or unc NULL: NaN); CMC: the same from the posterior
 * means and sds, summed in the order cmc_json.c always has. */
void xf_io_angle_summary(const double *v, const double *unc, int n, double *mean, double *rms);
void xf_io_cmc_angle_mean(const double *v, const double *sd, int n, double *mean, double *sd_rms);

/* What every parameters.json ends with: "data" (file, layout, q, n_phi, n_frames, n_points,
 * dt_s, first_frame), "config" (the YAML path) and "xpcsfit_version". */
void xf_json_add_provenance(cJSON *root, const xf_output_info *info, const xf_dataset *ds);
/* --profile: "timings": {"phases": {name: {"wall_s", "peak_rss_mib"}, ...}, "total_s"}
 * (docs/outputs.md), the phases up to this file's writing; nothing without --profile. */
void xf_json_add_timings(cJSON *root);
/* The head of either method's parameters.json, written once for both: method,
 * analysis_mode, status and homodyne's convergence_status ("converged", "max_iter",
 * "failed"). NULL: out of memory. */
cJSON *xf_json_result_head(const xf_estimate *est);
/* quality's grade and reasons; a method adds its own checks to it */
cJSON *xf_json_quality(const xf_quality *q);
/* The run's overrides as [{option, key, value}, ...] ([] when none). */
cJSON *xf_json_overrides(const xf_output_info *info);
/* What became of a result's plots */
typedef enum xf_plots_outcome {
	XF_PLOTS_UNSAID = 0, /* no "outputs" object (a parameters.json written on its own) */
	XF_PLOTS_WRITTEN,
	XF_PLOTS_SKIPPED, /* --no-plots */
	XF_PLOTS_FAILED,  /* then status "partial" and the reason */
} xf_plots_outcome;
/* What the next parameters.json says under "outputs" (docs/outputs.md): plots "written",
 * "skipped" or "failed". */
void xf_json_set_outputs(xf_plots_outcome plots, const char *plots_error);
/* Print root (deleted here; NULL means out of memory) with a trailing newline and write it
 * atomically as dir/name. Returns 0 or an error code. */
int xf_json_write(const char *dir, const char *name, cJSON *root, xf_error *err);

#endif
