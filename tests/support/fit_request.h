/* fit_request.h — the request of a fit a test builds without a config (issue 35: tests
 * call the methods and services with requests from a small builder, not forged configs):
 * xf_request_defaults (what a config setting only the mode gives) with start values, and
 * a fit's request with NLSQ's options. */
#ifndef XF_TEST_FIT_REQUEST_H
#define XF_TEST_FIT_REQUEST_H

#include "xpcsfit/cmc.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/options.h"
#include "xpcsfit/request.h"

/* The default request of mode, started at start[0..6] (NULL: the middles of the bounds,
 * as a config without initial values): each value given, as a config listing them. */
void xf_test_request(xf_request *req, xf_mode mode, const double *start);

/* A fit: its request and the methods' options (their defaults). NLSQ's per-angle rule
 * and σ (per_angle_mode, anti_degeneracy_enable, constant_scaling_threshold,
 * fourier_order, has_sigma, sigma) are the request's when it runs, as the config reader
 * makes them one setting. */
typedef struct xf_test_fit {
	xf_request req;
	xf_nlsq_options opt;
	xf_cmc_options cmc;
} xf_test_fit;

void xf_test_fit_init(xf_test_fit *f, xf_mode mode, const double *start);
/* Bounds and prior of slot k; a physical parameter whose start is not given starts in the
 * middle of its new bounds, as a config's would */
void xf_test_fit_bound(xf_test_fit *f, int k, xf_bound b);
/* The request f's fits run on: f->req with NLSQ's per-angle rule and σ */
xf_request xf_test_fit_request(const xf_test_fit *f);
/* xf_nlsq_fit of f on ds with n_threads: its return code */
int xf_test_fit_run(const xf_test_fit *f, const xf_dataset *ds, int n_threads, xf_nlsq_result *res,
		    xf_error *err);
/* xf_cmc_run of f on ds, warm-started from the NLSQ fit nlsq (its estimate on the
 * request's grid, as the command line makes it), shards stored in shard_dir: its return
 * code */
int xf_test_posterior_run(const xf_test_fit *f, const xf_dataset *ds, const xf_nlsq_result *nlsq,
			  int n_threads, const char *shard_dir, xf_cmc_result *res, xf_error *err);

#endif
