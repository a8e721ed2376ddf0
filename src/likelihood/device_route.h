/* device_route.h — where an evaluator's passes run for one job (device_route.c,
 * docs/gpu.md): the options' --device choice against the job's whole work. */
#ifndef XPCSFIT_LIKELIHOOD_DEVICE_ROUTE_H
#define XPCSFIT_LIKELIHOOD_DEVICE_ROUTE_H

#include <stddef.h>
#include "device/policy.h"
#include "xpcsfit/error.h"
#include "xpcsfit/likelihood.h"

/* What a job asks of the device policy */
typedef struct xf_device_ask {
	int device;		 /* xf_device_choice: the options' --device */
	double threshold;	 /* auto: the work score at which a device is looked for */
	int fp32;		 /* fp32 evaluation asked */
	xf_device_job_kind kind; /* what the job's passes are (their count, adr/0129) */
	size_t n_points;	 /* the points of one pass */
	int n_params;		 /* the parameters of the work score */
	const char *who;	 /* run.log's prefix: "nlsq", "cmc" */
	const char *work;	 /* "the fit", "the posterior": what runs on the CPU */
	const char *passes;	 /* "… run(s)" on the GPU, for run.log */
	int quiet;		 /* 1: the same decision again (another chain): warnings only */
	char *said;		 /* when not NULL: the decision's line (without who), said_len */
	size_t said_len;
} xf_device_ask;

/* Route lik's following passes to the GPU when ask's choice and the job's expected times
 * say so (docs/gpu.md), saying why in run.log. 0 (the CPU included), or the error code:
 * --device gpu where no device or a refusal of xf_lik_use_gpu. */
int xf_lik_route_device(xf_lik *lik, const xf_device_ask *ask, int n_threads, xf_error *err);

#endif
