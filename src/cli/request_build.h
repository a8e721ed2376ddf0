/* request_build.h — the one place that turns the config into what the layers below read
 * (adr/0043): the problem request (request.h) and the data selection (selection.h); and
 * the config-level calls that tests, benchmarks and tools share (build, then call the
 * method). Nothing below src/cli/ takes an xf_config for a fit. */
#ifndef XPCSFIT_CLI_REQUEST_BUILD_H
#define XPCSFIT_CLI_REQUEST_BUILD_H

#include "xpcsfit/cmc.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/likelihood.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/request.h"
#include "xpcsfit/selection.h"

/* The problem request of cfg: mode, geometry, the per-angle rule's inputs (from
 * optimization.nlsq), σ policy, bounds with priors, fixed flags and starts (a start not
 * given is the middle of its bounds), per-angle starts. The per-angle start arrays are
 * borrowed from cfg, which must outlive the request. */
void xf_request_from_config(const xf_config *cfg, xf_request *req);
/* What to select from the data file: the q target, the φ ranges (borrowed from cfg),
 * the frame window, dt, the data path and the config's path for messages. */
void xf_selection_from_config(const xf_config *cfg, xf_selection *sel);

/* The same calls as their layers' functions, from a config: the request or selection
 * built here, then passed down. */
int xf_cli_problem_build(xf_problem *pr, const xf_config *cfg, const xf_dataset *ds, xf_error *err);
int xf_cli_dataset_load(const xf_config *cfg, const char *path, xf_dataset *ds, xf_error *err);
int xf_cli_simulate_write(const xf_config *cfg, const xf_sim_options *opt, xf_error *err);

#endif
