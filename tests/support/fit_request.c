/* fit_request.c — a fit's request without a config (fit_request.h) */
#include "fit_request.h"
#include "services/nlsq.h"

void xf_test_request(xf_request *req, xf_mode mode, const double *start)
{
	xf_request_defaults(req, mode);
	for (int k = 0; start && k < XF_N_PHYS; k++) {
		req->start[k] = start[k];
		req->value_given[k] = 1;
	}
}

void xf_test_fit_init(xf_test_fit *f, xf_mode mode, const double *start)
{
	xf_test_request(&f->req, mode, start);
	xf_nlsq_options_defaults(&f->opt);
	xf_cmc_options_defaults(&f->cmc);
}

void xf_test_fit_bound(xf_test_fit *f, int k, xf_bound b)
{
	f->req.bounds[k] = b;
	if (k < XF_N_PHYS && !f->req.value_given[k])
		f->req.start[k] = 0.5 * (b.lower + b.upper);
}

xf_request xf_test_fit_request(const xf_test_fit *f)
{
	xf_request req = f->req;
	req.per_angle_mode = f->opt.per_angle_mode;
	req.anti_degeneracy = f->opt.anti_degeneracy_enable;
	req.constant_scaling_threshold = f->opt.constant_scaling_threshold;
	req.fourier_order = f->opt.fourier_order;
	req.has_sigma = f->opt.has_sigma;
	req.sigma = f->opt.sigma;
	return req;
}

int xf_test_fit_run(const xf_test_fit *f, const xf_dataset *ds, int n_threads, xf_nlsq_result *res,
		    xf_error *err)
{
	xf_request req = xf_test_fit_request(f);
	return xf_nlsq_fit(&req, &f->opt, ds, n_threads, NULL, NULL, res, err);
}

int xf_test_posterior_run(const xf_test_fit *f, const xf_dataset *ds, const xf_nlsq_result *nlsq,
			  int n_threads, const char *shard_dir, xf_cmc_result *res, xf_error *err)
{
	xf_request req = xf_test_fit_request(f);
	xf_estimate warm;
	if (xf_nlsq_estimate(nlsq, &req, ds, NULL, &warm, err))
		return err->code;
	int rc =
		xf_cmc_run(&req, &f->cmc, ds, &warm, n_threads, shard_dir, 0, NULL, NULL, res, err);
	xf_estimate_free(&warm);
	return rc;
}
