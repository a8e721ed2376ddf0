/* device.c — where the NLSQ accumulation over all the data runs (docs/gpu.md): the policy
 * of the options applied once per fit (likelihood/device_route.c). */
#include "likelihood/device_route.h"
#include "nlsq/nlsq_internal.h"

int xf_nlsq_route_device(xf_lik *lik, const xf_problem *pr, const xf_nlsq_options *o, int n_threads,
			 char *decision, size_t decision_len, xf_error *err)
{
	xf_device_ask ask = { .device = o->device,
			      .threshold = o->device_threshold,
			      .fp32 = o->device_fp32,
			      .kind = XF_DEVICE_JOB_NLSQ,
			      .n_points = pr->n_points,
			      .n_params = pr->n_full,
			      .who = "nlsq",
			      .work = "the fit",
			      .passes = "the accumulation over all the data runs",
			      .said = decision,
			      .said_len = decision_len };
	return xf_lik_route_device(lik, &ask, n_threads, err);
}
