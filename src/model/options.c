/* options.c — the names of the options' enumerations (options.h), as configs and result
 * files spell them. */
#include <string.h>

#include "xpcsfit/options.h"

static const char *const combination_names[XF_COMBINE_N] = {
	[XF_COMBINE_ROBUST_CONSENSUS] = "robust_consensus_mc",
	[XF_COMBINE_CONSENSUS] = "consensus_mc",
	[XF_COMBINE_GAUSSIAN_PRODUCT] = "gaussian_product",
	[XF_COMBINE_MARGINAL_PRODUCT] = "homodyne_marginal",
};

const char *xf_combination_rule_name(xf_combination_rule rule)
{
	return rule >= 0 && rule < XF_COMBINE_N ? combination_names[rule] : "";
}

int xf_combination_rule_parse(const char *name, xf_combination_rule *rule)
{
	for (int i = 0; i < XF_COMBINE_N; i++)
		if (!strcmp(name, combination_names[i])) {
			*rule = (xf_combination_rule)i;
			return 0;
		}
	return -1;
}
