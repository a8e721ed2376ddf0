/* nlsq.h — the service behind `xpcsfit nlsq` and the first step of `fit` and `cmc`
 * (adr/0117): one fit from the request, NLSQ's options and the dataset, handed back as
 * what the result files read — the estimate on the request's grid and the appendix
 * (adr/0107) — so that the command line converts nothing and reads no config for it, as
 * for the posterior (services/posterior.h). */
#ifndef XPCSFIT_SERVICES_NLSQ_H
#define XPCSFIT_SERVICES_NLSQ_H

#include "xpcsfit/appendix.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/request.h"

/* A fit's result and, once it is made (published 1), its estimate on the request's grid
 * and its appendix, which borrows from res. */
typedef struct xf_nlsq_fitted {
	xf_nlsq_result res;
	int published;
	xf_estimate est;
	xf_nlsq_appendix app;
} xf_nlsq_fitted;

/* xf_nlsq_fit's arguments, and when the run started and its data were loaded (monotonic
 * seconds, util/clock.h): the result's load, fit and total times are stamped from them
 * and the fit's end. 0 with fit published (its status may still be failed: the caller
 * writes it and says so), or the error's code. xf_nlsq_fitted_free either way. */
int xf_nlsq_run(const xf_request *req, const xf_nlsq_options *o, const xf_dataset *ds,
		int n_threads, xf_nlsq_progress_fn progress, void *progress_ctx, double t_start_s,
		double t_loaded_s, xf_nlsq_fitted *fit, xf_error *err);
void xf_nlsq_fitted_free(xf_nlsq_fitted *fit);
/* Move a published fit's estimate into *est (the caller frees it with xf_estimate_free);
 * fit keeps its result and appendix, and is still freed with xf_nlsq_fitted_free. */
void xf_nlsq_fitted_take_estimate(xf_nlsq_fitted *fit, xf_estimate *est);

/* A fit's estimate on the grid of req on ds (its slots at slot_q: a q per angle slot of a
 * joint fit, or NULL for ds->q). 0, or the error's code with nothing held. */
int xf_nlsq_estimate(const xf_nlsq_result *res, const xf_request *req, const xf_dataset *ds,
		     const double *slot_q, xf_estimate *est, xf_error *err);

#endif
