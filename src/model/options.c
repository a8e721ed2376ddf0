/* options.c — the methods' options at their defaults (docs/config.md) and the names of
 * their enumerations (options.h), as configs and result files spell them. */
#include <string.h>

#include "xpcsfit/options.h"

const char *const xf_cmc_route_names[XF_CMC_ROUTE_N + 1] = {
	[XF_CMC_ROUTE_AUTO] = "auto",
	[XF_CMC_ROUTE_NUTS] = "nuts",
	[XF_CMC_ROUTE_N] = NULL,
};

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

void xf_nlsq_options_defaults(xf_nlsq_options *o)
{
	memset(o, 0, sizeof *o);
	o->max_iterations = 1000;
	o->xtol = 1e-8;
	o->gtol = 1e-8;
	o->ftol = 1e-8;
	o->loss = XF_LOSS_LINEAR;
	o->f_scale = 1.0;
	o->per_angle_mode = XF_SCALING_AUTO;
	o->constant_scaling_threshold = 3;
	o->fourier_order = 2;
	o->hierarchical = 1;
	o->n_starts = 10;
	o->multi_start_seed = 42;
	o->start_search = 1;
	o->search_spread = 2;
	o->screen_points = 131072;
	o->phi0_profile = 1;
}

void xf_cmc_options_defaults(xf_cmc_options *o)
{
	memset(o, 0, sizeof *o);
	o->seed = 42;
	o->route = XF_CMC_ROUTE_AUTO;
	o->per_angle_mode = XF_SCALING_FOLLOW_NLSQ;
	o->num_warmup = 500; /* a cap: a settled metric ends the warmup at 200 (adr/0079) */
	o->num_samples = 1500;
	o->num_chains = 4;
	o->target_accept_prob = 0.0; /* per mode: 0.99 static, 0.98 laminar (adr/0041) */
	o->max_tree_depth = 10;
	o->dense_mass = 1;
	o->max_divergence_rate = 0.10;
	o->max_per_shard_rhat = 1.1;
	o->nlsq_prior_width_factor = 2.0;
	o->combination = XF_COMBINE_ROBUST_CONSENSUS;
	o->min_success_rate = 0.90;
	o->check_draws = 4000; /* doubled up to 32 000 until stable (adr/0039) */
}
