/* config_optim.c — the optimization section's shape: optimization.nlsq (anti_degeneracy
 * with hierarchical, multi_start, start_search), optimization.cmc (sharding,
 * per_shard_mcmc, validation, combination) and XF_KEY_RINGS, with homodyne's keys
 * we do not use accepted silently. The keys' types, ranges and readers are rows of the
 * key table (config_table.c, adr/0119). */
#include "config/config_internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static int read_anti_degeneracy(const xf_cfg_reader *r, const xf_ynode *nlsq, xf_config *cfg)
{
	static const char *const ignored[] = {
		"regularization",
		"gradient_monitoring",
		"shear_weighting",
		/* not on the spec list (docs/config.md): homodyne's switch-over angle count
		 * for its legacy Fourier mode; ours is chosen by per_angle_mode only */
		"fourier_auto_threshold",
		NULL,
	};
	/* not on the spec list: homodyne's alternation limits (docs/config.md) */
	static const char *const hier_ignored[] = {
		"max_outer_iterations",
		"outer_tolerance",
		"physical_max_iterations",
		"per_angle_max_iterations",
		NULL,
	};
	const char *sect = "optimization.nlsq.anti_degeneracy";
	const xf_ynode *map = NULL;
	int rc = xf_cfg_read_part(r, nlsq, "optimization.nlsq", "anti_degeneracy", ignored, &map,
				  cfg);
	if (rc || !map)
		return rc;
	return xf_cfg_read_part(r, map, sect, "hierarchical", hier_ignored, NULL, cfg);
}

static int read_nlsq(const xf_cfg_reader *r, const xf_ynode *opt, xf_config *cfg)
{
	static const char *const ignored[] = {
		"workflow",	      "goal",	     "memory_fraction",	 "memory_threshold_gb",
		"trust_region_scale", "verbose",     "x_scale",		 "x_scale_map",
		"progress",	      "diagnostics", "hybrid_streaming", "cmaes",
		"quality_validation", NULL,
	};
	/* not on the spec list: homodyne's sampling, screening and refinement knobs
	 * (docs/config.md); our starts are fixed by n_starts and seed (nlsq.md) */
	static const char *const multi_start_ignored[] = {
		"sampling_strategy",
		"n_workers",
		"use_screening",
		"screen_keep_fraction",
		"subsample_size",
		"warmup_only_threshold",
		"refine_top_k",
		"refinement_ftol",
		"degeneracy_threshold",
		"custom_starts",
		NULL,
	};
	const char *sect = "optimization.nlsq";
	const xf_ynode *map = NULL;
	int rc = xf_cfg_read_part(r, opt, "optimization", "nlsq", ignored, &map, cfg);
	if (rc || !map || (rc = read_anti_degeneracy(r, map, cfg)) ||
	    (rc = xf_cfg_read_part(r, map, sect, "multi_start", multi_start_ignored, NULL, cfg)))
		return rc;
	return xf_cfg_read_part(r, map, sect, "start_search", NULL, NULL, cfg);
}

static int read_cmc(const xf_cfg_reader *r, const xf_ynode *opt, xf_config *cfg)
{
	static const char *const ignored[] = {
		"enable",
		"min_points_for_cmc",
		"backend",
		"backend_config",
		"run_id",
		"per_shard_timeout",
		"heartbeat_timeout",
		"prior_tempering",
		"reparameterization",
		/* not on the spec list (docs/config.md): homodyne's auto-mode angle count
		 * (our CMC auto always shares one contrast/offset, cmc.md) and an old switch */
		"constant_scaling_threshold",
		"diagonal_correction",
		NULL,
	};
	/* not on the spec list: homodyne's shard layout knobs (docs/config.md) */
	static const char *const sharding_ignored[] = {
		"strategy", "min_points_per_shard", "min_points_per_param", "seed_base", NULL,
	};
	/* not on the spec list: homodyne's chain scheduling, small-shard sample scaling
	 * and JAX profiling (docs/config.md) */
	static const char *const mcmc_ignored[] = {
		"chain_method",		"adaptive_sampling", "min_warmup", "min_samples",
		"enable_jax_profiling", "jax_profile_dir",   NULL,
	};
	/* not on the spec list: homodyne's extra shard checks (docs/config.md); ours are
	 * the divergence rate and R-hat, and combination.min_success_rate */
	static const char *const validation_ignored[] = {
		"strict_mode",
		"min_per_shard_ess",
		"max_between_shard_kl",
		"min_success_rate",
		"require_nlsq_warmstart",
		"max_parameter_cv",
		"heterogeneity_abort",
		NULL,
	};
	/* not on the spec list: homodyne's result check switch and warning level */
	static const char *const combination_ignored[] = { "validate_results",
							   "min_success_rate_warning", NULL };
	const char *sect = "optimization.cmc";
	const xf_ynode *map = NULL;
	int rc = xf_cfg_read_part(r, opt, "optimization", "cmc", ignored, &map, cfg);
	if (rc || !map ||
	    (rc = xf_cfg_read_part(r, map, sect, "sharding", sharding_ignored, NULL, cfg)) ||
	    (rc = xf_cfg_read_part(r, map, sect, "per_shard_mcmc", mcmc_ignored, NULL, cfg)) ||
	    (rc = xf_cfg_read_part(r, map, sect, "validation", validation_ignored, NULL, cfg)))
		return rc;
	return xf_cfg_read_part(r, map, sect, "combination", combination_ignored, NULL, cfg);
}

int xf_cfg_read_optimization(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	static const char *const ignored[] = {
		"method",
		"lsq",
		"mcmc",
		"streaming",
		"stratification",
		"sequential",
		"recovery",
		/* not on the spec list: homodyne v2.1's VI and VI→MCMC pipeline blocks */
		"vi",
		"hybrid",
		NULL,
	};
	const xf_ynode *map = NULL; /* its rows (rings), then its parts */
	int rc = xf_cfg_read_part(r, root, "", "optimization", ignored, &map, cfg);
	if (rc || !map || (rc = read_nlsq(r, map, cfg)))
		return rc;
	return read_cmc(r, map, cfg);
}
