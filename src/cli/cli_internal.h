/* cli_internal.h — what the fitting subcommands (nlsq, cmc, fit) share: options common to
 * all of them, loading the config and the data with their log lines, and the NLSQ step
 * (fit, write <out>/nlsq/, summary). */
#ifndef XPCSFIT_CLI_INTERNAL_H
#define XPCSFIT_CLI_INTERNAL_H

#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/results.h"

double xf_cli_now_s(void);

/* --threads N: 1..1024; returns 0, or the exit code after printing the error. */
int xf_cli_threads(const char *arg, int *threads);

/* Load the config (logged with its text) and the data (logged); threads 0 becomes the
 * config's virtual_devices or the online cores. Returns 0, or the exit code after
 * printing the error line. */
int xf_cli_load(const char *command, const char *config_path, const char *data_path, xf_config *cfg,
		xf_dataset *ds, int *threads);

/* NLSQ on ds, <out>/nlsq/ written, the summary printed. Returns the exit code (0, or 1
 * for a fit that did not converge, whose files are still written) and leaves the result
 * in res (the caller frees it), or an error code with nothing in res. */
int xf_cli_nlsq_step(const xf_config *cfg, const xf_dataset *ds, const char *out, int threads,
		     const xf_output_options *oopt, double t_start, double t_loaded,
		     xf_nlsq_result *res);

#endif
