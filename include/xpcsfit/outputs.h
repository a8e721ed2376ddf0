/* outputs.h — a method's whole result directory (spec/cli.md "Result directory"):
 * results.h5, plots/, report.html, parameters.json, run.log last. This layer sits above
 * io/ (the files) and plot/ (the PNGs) and decides what is written in which order
 * (adr/0044); the CLI calls it. Every file is written atomically. */
#ifndef XPCSFIT_OUTPUTS_H
#define XPCSFIT_OUTPUTS_H

#include "xpcsfit/cmc.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/nlsq.h"

typedef struct xf_output_options {
	int write_surfaces; /* 0 with --no-surfaces */
	int write_plots;    /* 0 with --no-plots */
	int threads;	    /* virtual devices preparing the surfaces (0 counts as 1) */
} xf_output_options;

/* results.h5, parameters.json, report.html, plots/ (unless disabled), run.log last. */
int xf_outputs_write_nlsq(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			  const xf_nlsq_result *res, const xf_output_options *opt, xf_error *err);
/* The whole CMC result directory: results.h5, parameters.json, report.html, plots/
 * (unless disabled), run.log last. */
int xf_outputs_write_cmc(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			 const xf_cmc_result *res, const xf_output_options *opt, xf_error *err);

#endif
