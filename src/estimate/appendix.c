/* appendix.c — the names NLSQ's appendix (appendix.h) has in the result files */
#include "xpcsfit/appendix.h"

const char *xf_sigma_rule_name(xf_sigma_rule r)
{
	switch (r) {
	case XF_SIGMA_GIVEN: return "given";
	case XF_SIGMA_RESIDUAL_VARIANCE: return "residual_variance";
	case XF_SIGMA_UNSET: break;
	}
	return "";
}
