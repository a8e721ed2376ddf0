/* test_template_priors.c — the priors `xpcsfit config` writes (params.c) do not decide
 * typical data (adr/0040): for every physical parameter the truncated normal on the
 * default bounds is nearly flat — its density nowhere on the bounds below 0.8 of its
 * largest value there — and its mean lies inside the bounds. (homodyne's 1e3/1e3 on D0
 * gave 0.8 only within 1e3 ± 670 of a 1e2…1e5 range.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "xpcsfit/params.h"

static void test_template_priors_nearly_flat(void **state)
{
	(void)state;
	for (int k = 0; k < XF_N_PHYS; k++) {
		double lo = xf_param_default_lower[k], hi = xf_param_default_upper[k];
		double mu = xf_param_template_prior_mu[k], s = xf_param_template_prior_sigma[k];
		double z = fmax(fabs(lo - mu), fabs(hi - mu)) / s;
		if (!(mu >= lo && mu <= hi && exp(-0.5 * z * z) >= 0.8))
			fail_msg("%s: prior (%g, %g) on [%g, %g]: density at the far bound %.3f of "
				 "the peak",
				 xf_param_names[k], mu, s, lo, hi, exp(-0.5 * z * z));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_template_priors_nearly_flat),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
