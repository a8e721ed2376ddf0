/* results_config.h — result files and plots from a loaded config: the CLI's adapters
 * (src/cli/results_config.c, floor cli, adr/0044). They turn the config into what the
 * layers below take — the request (xf_request_from_config), from which the services make
 * each method's estimate on its grid (services/nlsq.h, services/posterior.h), and the
 * run's xf_output_info — and call outputs/, io/ and plot/, which never read the config. */
#ifndef XPCSFIT_RESULTS_CONFIG_H
#define XPCSFIT_RESULTS_CONFIG_H

#include "xpcsfit/cmc.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/outputs.h"
#include "xpcsfit/results.h"

/* What the result files of `method` record about a run with cfg. The
 * overrides point into cfg (info->overrides is allocated: free it with
 * xf_output_info_free). Returns 0 or XF_ERR_NOMEM. */
int xf_output_info_from_config(const xf_config *cfg, xf_method method, xf_output_info *info,
			       xf_error *err);
void xf_output_info_free(xf_output_info *info);

/* The whole result directory of an NLSQ fit from its estimate and appendix (the service's,
 * services/nlsq.h) / of a CMC run (outputs.h); cfg gives only what the files record of the
 * run (xf_output_info). A joint fit over q rings (ds: the rings joined, adr/0066) has its
 * estimate's slots at their rings' q (adr/0068) and gives opt->rings_json. */
int xf_results_write_nlsq(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			  const xf_estimate *est, const xf_nlsq_appendix *app,
			  const xf_output_options *opt, xf_error *err);
int xf_results_write_cmc(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			 const xf_estimate *est, const xf_cmc_appendix *app,
			 const xf_output_options *opt, xf_error *err);
/* <dir>/results.h5 and <dir>/parameters.json of an NLSQ fit alone (results.h) */
int xf_results_write_nlsq_h5(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			     const xf_nlsq_result *res, int surface_threads, xf_error *err);
int xf_results_write_nlsq_json(const char *dir, const xf_config *cfg, const xf_dataset *ds,
			       const xf_nlsq_result *res, xf_error *err);
/* xf_io_check_nlsq against cfg's analysis mode */
int xf_results_check_nlsq(const char *dir, const xf_estimate *res, const xf_nlsq_origin *o,
			  const xf_config *cfg, const xf_dataset *ds, xf_error *err);
/* An NLSQ result's plots alone (plot.h), drawn in this process */
int xf_plot_nlsq(const char *plots_dir, const xf_config *cfg, const xf_dataset *ds,
		 const xf_nlsq_result *res, xf_error *err);

#endif
