/* outputs.h — a method's whole result directory (spec/cli.md "Result directory"):
 * results.h5, plots/, report.html, parameters.json, run.log last. This layer sits above
 * io/ (the files) and plot/ (the PNGs) and decides what is written in which order
 * (adr/0044). It reads no config: the CLI hands it the method's result, its estimate
 * (estimate.h) and what the files record about the run (results.h's xf_output_info,
 * never NULL).
 * Every file is written atomically. */
#ifndef XPCSFIT_OUTPUTS_H
#define XPCSFIT_OUTPUTS_H

#include "xpcsfit/cmc_appendix.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/appendix.h"
#include "xpcsfit/results.h"

typedef struct xf_output_options {
	int write_surfaces;	/* 0 with --no-surfaces */
	int write_plots;	/* 0 with --no-plots */
	int threads;		/* virtual devices preparing the surfaces (0 counts as 1) */
	const char *rings_json; /* a joint fit's "rings" member of parameters.json (JSON
				 * text, adr/0066); NULL: none */
	const double *slot_q;	/* a joint fit's q per angle slot ([ds->n_phi] Å⁻¹): the
				 * model grid of every ring (adr/0068); NULL: one ring */
} xf_output_options;

/* results.h5 (the surfaces the model at est), parameters.json, report.html, plots/
 * (unless disabled), run.log last. */
int xf_outputs_write_nlsq(const char *dir, const xf_output_info *info, const xf_dataset *ds,
			  const xf_estimate *est, const xf_nlsq_appendix *app,
			  const xf_output_options *opt, xf_error *err);
/* The whole CMC result directory: results.h5, parameters.json, report.html, plots/
 * (unless disabled; the angle pages the model at est), run.log last. */
int xf_outputs_write_cmc(const char *dir, const xf_output_info *info, const xf_dataset *ds,
			 const xf_estimate *est, const xf_cmc_appendix *app,
			 const xf_output_options *opt, xf_error *err);

#endif
