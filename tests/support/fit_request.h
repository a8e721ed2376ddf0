/* fit_request.h — the request of a fit a test builds without a config (issue 35: tests
 * call the methods and services with requests from a small builder, not forged configs):
 * xf_request_defaults (what a config setting only the mode gives) with start values, and
 * a fit's request with NLSQ's options. */
#ifndef XF_TEST_FIT_REQUEST_H
#define XF_TEST_FIT_REQUEST_H

#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/options.h"
#include "xpcsfit/request.h"

/* The default request of mode, started at start[0..6] (NULL: the middles of the bounds,
 * as a config without initial values): each value given, as a config listing them. */
void xf_test_request(xf_request *req, xf_mode mode, const double *start);

/* A fit: its request and NLSQ's options (their defaults). The options' per-angle rule
 * and σ (per_angle_mode, anti_degeneracy_enable, constant_scaling_threshold,
 * fourier_order, has_sigma, sigma) are the request's at xf_test_fit_run, as the config
 * reader makes them one setting. */
typedef struct xf_test_fit {
	xf_request req;
	xf_nlsq_options opt;
} xf_test_fit;

void xf_test_fit_init(xf_test_fit *f, xf_mode mode, const double *start);
/* xf_nlsq_fit of f on ds with n_threads: its return code */
int xf_test_fit_run(const xf_test_fit *f, const xf_dataset *ds, int n_threads, xf_nlsq_result *res,
		    xf_error *err);

#endif
