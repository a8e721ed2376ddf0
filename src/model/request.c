/* request.c — the problem request of a config that sets nothing but the mode
 * (request.h): the one statement of the request's defaults, for callers without a config
 * (xpcsfit-gpu's workload, tests) and checked against the config reader's (test_config). */
#include <string.h>

#include "xpcsfit/options.h"
#include "xpcsfit/request.h"

void xf_request_defaults(xf_request *req, xf_mode mode)
{
	xf_nlsq_options o;
	xf_nlsq_options_defaults(&o);
	memset(req, 0, sizeof *req);
	req->mode = mode;
	req->shear_model = XF_SHEAR_HOMODYNE;
	req->gap_A = XF_DEFAULT_GAP_A;
	req->per_angle_mode = o.per_angle_mode;
	req->anti_degeneracy = o.anti_degeneracy_enable;
	req->constant_scaling_threshold = o.constant_scaling_threshold;
	req->fourier_order = o.fourier_order;
	req->has_sigma = o.has_sigma;
	xf_model_bounds_default(xf_model_record_of(mode), req->bounds);
	for (int k = 0; k < XF_N_PHYS; k++)
		req->start[k] = 0.5 * (req->bounds[k].lower + req->bounds[k].upper);
}

xf_model_grid xf_request_grid(const xf_request *req, int n_frames, double dt_s, double q)
{
	return (xf_model_grid){
		.mode = req->mode,
		.shear_model = req->shear_model,
		.n_frames = n_frames,
		.dt_s = dt_s,
		.q = q,
		.gap_A = req->gap_A,
	};
}
