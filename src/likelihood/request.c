/* request.c — the one rule that derives the posterior's problem request from NLSQ's
 * (xf_request_for_posterior, likelihood.h): which per-angle mode CMC samples and its σ
 * policy. */
#include "xpcsfit/likelihood.h"

void xf_request_for_posterior(const xf_request *nlsq_req, xf_scaling_mode cmc_mode,
			      xf_scaling_mode nlsq_used, xf_request *out)
{
	xf_scaling_mode mode = cmc_mode;
	if (mode == XF_SCALING_FOLLOW_NLSQ)
		mode = nlsq_used == XF_SCALING_FOURIER ? XF_SCALING_INDIVIDUAL : nlsq_used;
	*out = *nlsq_req;
	out->per_angle_mode = mode;
	out->anti_degeneracy = 1;	     /* the mode chosen above applies to static too */
	out->constant_scaling_threshold = 1; /* and to any number of angles */
	out->has_sigma = 0;		     /* σ is sampled */
	out->sigma = 1.0;
}
