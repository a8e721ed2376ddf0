/* fit_request.c — a fit's request without a config (fit_request.h) */
#include "fit_request.h"

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
}

int xf_test_fit_run(const xf_test_fit *f, const xf_dataset *ds, int n_threads, xf_nlsq_result *res,
		    xf_error *err)
{
	xf_request req = f->req;
	req.per_angle_mode = f->opt.per_angle_mode;
	req.anti_degeneracy = f->opt.anti_degeneracy_enable;
	req.constant_scaling_threshold = f->opt.constant_scaling_threshold;
	req.fourier_order = f->opt.fourier_order;
	req.has_sigma = f->opt.has_sigma;
	req.sigma = f->opt.sigma;
	return xf_nlsq_fit(&req, &f->opt, ds, n_threads, NULL, NULL, res, err);
}
