/* posterior.h — the service behind `xpcsfit cmc` and `fit` (adr/0111): the posterior
 * run from the request, CMC's options, the dataset and the NLSQ fit's estimate, handed
 * back as what the result files read — the estimate and the appendix (adr/0109) — so
 * that the command line converts nothing and reads no config for it. */
#ifndef XPCSFIT_SERVICES_POSTERIOR_H
#define XPCSFIT_SERVICES_POSTERIOR_H

#include "xpcsfit/cmc.h"
#include "xpcsfit/cmc_appendix.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/request.h"

/* A run's result and, where the combined result is held (rank 0 of several; the one
 * process otherwise: published 1), its estimate on the request's grid (with the
 * request's slot_q) and its appendix. The appendix borrows from res: never copied. */
typedef struct xf_posterior {
	xf_cmc_result res;
	int published;
	xf_estimate est;
	xf_cmc_appendix app;
} xf_posterior;

/* xf_cmc_run's arguments; 0 or the error's code. xf_posterior_free either way. */
int xf_posterior_run(const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
		     const xf_estimate *warm, int n_threads, const char *shard_dir, int resume,
		     xf_cmc_progress_fn progress, void *progress_ctx, xf_posterior *post,
		     xf_error *err);
void xf_posterior_free(xf_posterior *post);

/* A run's result as the files read it: its estimate on grid (slot_q: a q per angle slot,
 * or NULL) and its appendix, which borrows from res. 0 or the error's code, nothing held
 * then. */
int xf_posterior_estimate(const xf_cmc_result *res, const xf_model_grid *grid, const double *slot_q,
			  xf_estimate *est, xf_cmc_appendix *app, xf_error *err);

#endif
