/* config_optim.c — the optimization section: optimization.nlsq (tolerances, σ, loss,
 * anti_degeneracy, multi_start) and optimization.cmc (sharding, per-shard NUTS,
 * validation, combination), with homodyne's keys we do not use accepted silently. */
#include "config/config_internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

static const char *const nlsq_modes[] = { "auto", "individual", "constant", "fourier", NULL };
static const xf_scaling_mode nlsq_mode_values[] = {
	XF_SCALING_AUTO,
	XF_SCALING_INDIVIDUAL,
	XF_SCALING_CONSTANT,
	XF_SCALING_FOURIER,
};

/* Read an int-valued key into an int field (xf_cfg_int works on long). */
static int read_int(const xf_cfg_reader *r, const xf_ynode *map, const char *parent,
		    const char *key, long lo, long hi, int *out)
{
	long v = *out;
	int rc = xf_cfg_int(r, map, parent, key, lo, hi, &v, NULL);
	if (!rc)
		*out = (int)v;
	return rc;
}

static int read_anti_degeneracy(const xf_cfg_reader *r, const xf_ynode *nlsq, xf_nlsq_options *o)
{
	static const char *const known[] = {
		"enable",	 "per_angle_mode", "constant_scaling_threshold",
		"fourier_order", "hierarchical",   NULL,
	};
	static const char *const ignored[] = {
		"regularization",
		"gradient_monitoring",
		"shear_weighting",
		/* not on the spec list (docs/config.md): homodyne's switch-over angle count
		 * for its legacy Fourier mode; ours is chosen by per_angle_mode only */
		"fourier_auto_threshold",
		NULL,
	};
	static const char *const hier_known[] = { "enable", NULL };
	/* not on the spec list: homodyne's alternation limits (docs/config.md) */
	static const char *const hier_ignored[] = {
		"max_outer_iterations",
		"outer_tolerance",
		"physical_max_iterations",
		"per_angle_max_iterations",
		NULL,
	};
	const char *sect = "optimization.nlsq.anti_degeneracy";
	const xf_ynode *map = NULL, *hier = NULL;
	int mode = 0, given = 0;
	int rc = xf_cfg_section(r, nlsq, "optimization.nlsq", "anti_degeneracy", &map);
	if (rc || !map)
		return rc;
	xf_cfg_check_keys(r, map, sect, known, ignored);
	if ((rc = xf_cfg_bool(r, map, sect, "enable", &o->anti_degeneracy_enable)) ||
	    (rc = xf_cfg_choice(r, map, sect, "per_angle_mode", nlsq_modes, &mode, &given)) ||
	    (rc = read_int(r, map, sect, "constant_scaling_threshold", 1, INT_MAX,
			   &o->constant_scaling_threshold)) ||
	    (rc = read_int(r, map, sect, "fourier_order", 1, XF_FOURIER_ORDER_MAX,
			   &o->fourier_order)) ||
	    (rc = xf_cfg_section(r, map, sect, "hierarchical", &hier)))
		return rc;
	if (given)
		o->per_angle_mode = nlsq_mode_values[mode];
	if (hier) {
		const char *hsect = "optimization.nlsq.anti_degeneracy.hierarchical";
		xf_cfg_check_keys(r, hier, hsect, hier_known, hier_ignored);
		rc = xf_cfg_bool(r, hier, hsect, "enable", &o->hierarchical);
	}
	return rc;
}

static int read_multi_start(const xf_cfg_reader *r, const xf_ynode *nlsq, xf_nlsq_options *o)
{
	static const char *const known[] = { "enable", "n_starts", "seed", NULL };
	/* not on the spec list: homodyne's sampling, screening and refinement knobs
	 * (docs/config.md); our starts are fixed by n_starts and seed (nlsq.md) */
	static const char *const ignored[] = {
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
	const char *sect = "optimization.nlsq.multi_start";
	const xf_ynode *map = NULL;
	int rc = xf_cfg_section(r, nlsq, "optimization.nlsq", "multi_start", &map);
	if (rc || !map)
		return rc;
	xf_cfg_check_keys(r, map, sect, known, ignored);
	if ((rc = xf_cfg_bool(r, map, sect, "enable", &o->multi_start)) ||
	    (rc = read_int(r, map, sect, "n_starts", 1, XF_N_STARTS_MAX, &o->n_starts)) ||
	    (rc = xf_cfg_u64(r, map, sect, "seed", &o->multi_start_seed)))
		return rc;
	return 0;
}

/* xpcsfit's own search for the optimum (docs/nlsq.md "Finding the optimum") */
static int read_start_search(const xf_cfg_reader *r, const xf_ynode *nlsq, xf_nlsq_options *o)
{
	static const char *const known[] = { "enable", "spread_decades", "subsample_points",
					     "phi0_profile", NULL };
	const char *sect = "optimization.nlsq.start_search";
	const xf_ynode *map = NULL;
	long points = o->screen_points;
	int rc = xf_cfg_section(r, nlsq, "optimization.nlsq", "start_search", &map);
	if (rc || !map)
		return rc;
	xf_cfg_check_keys(r, map, sect, known, NULL);
	if ((rc = xf_cfg_bool(r, map, sect, "enable", &o->start_search)) ||
	    (rc = read_int(r, map, sect, "spread_decades", 0, 6, &o->search_spread)) ||
	    (rc = xf_cfg_int(r, map, sect, "subsample_points", 1000, LONG_MAX, &points, NULL)) ||
	    (rc = xf_cfg_bool(r, map, sect, "phi0_profile", &o->phi0_profile)))
		return rc;
	o->screen_points = points;
	return 0;
}

static int read_nlsq(const xf_cfg_reader *r, const xf_ynode *opt, xf_nlsq_options *o)
{
	static const char *const known[] = {
		"max_iterations",  "xtol",	  "gtol",	  "ftol",
		"tolerance",	   "sigma",	  "loss",	  "f_scale",
		"anti_degeneracy", "multi_start", "start_search", NULL,
	};
	static const char *const ignored[] = {
		"workflow",	      "goal",	     "memory_fraction",	 "memory_threshold_gb",
		"trust_region_scale", "verbose",     "x_scale",		 "x_scale_map",
		"progress",	      "diagnostics", "hybrid_streaming", "cmaes",
		"quality_validation", NULL,
	};
	const char *sect = "optimization.nlsq";
	const xf_ynode *map = NULL;
	/* in enum xf_loss order */
	static const char *const losses[] = {
		"linear", "soft_l1", "huber", "cauchy", "arctan", NULL,
	};
	int loss = 0, has_loss = 0;
	int has_ftol = 0, has_tolerance = 0;
	double tolerance = 0;
	int rc = xf_cfg_section(r, opt, "optimization", "nlsq", &map);
	if (rc || !map)
		return rc;
	xf_cfg_check_keys(r, map, sect, known, ignored);
	if ((rc = read_int(r, map, sect, "max_iterations", 1, INT_MAX, &o->max_iterations)) ||
	    (rc = xf_cfg_number(r, map, sect, "xtol", XF_CHECK_POSITIVE, &o->xtol, NULL)) ||
	    (rc = xf_cfg_number(r, map, sect, "gtol", XF_CHECK_POSITIVE, &o->gtol, NULL)) ||
	    (rc = xf_cfg_number(r, map, sect, "ftol", XF_CHECK_POSITIVE, &o->ftol, &has_ftol)) ||
	    (rc = xf_cfg_number(r, map, sect, "tolerance", XF_CHECK_POSITIVE, &tolerance,
				&has_tolerance)) ||
	    (rc = xf_cfg_number(r, map, sect, "sigma", XF_CHECK_POSITIVE, &o->sigma,
				&o->has_sigma)) ||
	    (rc = xf_cfg_choice(r, map, sect, "loss", losses, &loss, &has_loss)) ||
	    (rc = xf_cfg_number(r, map, sect, "f_scale", XF_CHECK_POSITIVE, &o->f_scale, NULL)))
		return rc;
	if (has_loss)
		o->loss = (xf_loss)loss;
	/* tolerance is homodyne's name for ftol; an explicit ftol wins */
	if (has_tolerance && !has_ftol)
		o->ftol = tolerance;
	else if (has_tolerance && tolerance != o->ftol)
		xf_warn("optimization.nlsq.tolerance (%g) and ftol (%g) both given; using ftol, "
			"in %s:%d",
			tolerance, o->ftol, r->file, xf_ynode_key_line(map, "tolerance"));
	if ((rc = read_anti_degeneracy(r, map, o)) || (rc = read_multi_start(r, map, o)) ||
	    (rc = read_start_search(r, map, o)))
		return rc;
	return 0;
}

static int read_cmc_mode(const xf_cfg_reader *r, const xf_ynode *cmc, xf_cmc_options *o)
{
	/* fourier is NLSQ-only: CMC turns it into individual when following NLSQ (cmc.md) */
	static const char *const names[] = { "auto", "individual", "constant", NULL };
	static const xf_scaling_mode values[] = {
		XF_SCALING_AUTO,
		XF_SCALING_INDIVIDUAL,
		XF_SCALING_CONSTANT,
	};
	int index = 0, given = 0;
	int rc = xf_cfg_choice(r, cmc, "optimization.cmc", "per_angle_mode", names, &index, &given);
	if (rc)
		return rc;
	/* absent or null: the mode NLSQ used */
	o->per_angle_mode = given ? values[index] : XF_SCALING_FOLLOW_NLSQ;
	return 0;
}

/* optimization.cmc.route (xpcsfit's own, adr/0045): how one shard's exact posterior is
 * reached */
static int read_cmc_route(const xf_cfg_reader *r, const xf_ynode *cmc, xf_cmc_options *o)
{
	static const char *const names[] = { "auto", "nuts", NULL };
	int index = 0, given = 0;
	int rc = xf_cfg_choice(r, cmc, "optimization.cmc", "route", names, &index, &given);
	if (rc)
		return rc;
	o->route = given && index == 1 ? XF_CMC_ROUTE_NUTS : XF_CMC_ROUTE_AUTO;
	return 0;
}

/* A part of optimization.cmc, its keys and values in the key table (config_table.c,
 * adr/0119): *map the part's mapping (NULL when absent), its keys checked against the
 * table's and ignored[] (homodyne's, accepted without use). */
static int cmc_part(const xf_cfg_reader *r, const xf_ynode *cmc, const char *part,
		    const char *const *ignored, const xf_ynode **map, char *sect, size_t size)
{
	const char *known[32];
	snprintf(sect, size, "optimization.cmc.%s", part);
	*map = NULL;
	int rc = xf_cfg_section(r, cmc, "optimization.cmc", part, map);
	if (rc || !*map)
		return rc;
	xf_cfg_known_keys(sect, known, sizeof known / sizeof known[0]);
	xf_cfg_check_keys(r, *map, sect, known, ignored);
	return 0;
}

/* A part whose every key is a row of the table */
static int read_cmc_part(const xf_cfg_reader *r, const xf_ynode *cmc, const char *part,
			 const char *const *ignored, xf_config *cfg)
{
	char sect[XF_CFG_PATH_MAX];
	const xf_ynode *map;
	int rc = cmc_part(r, cmc, part, ignored, &map, sect, sizeof sect);
	return rc || !map ? rc : xf_cfg_read_keys(r, map, sect, cfg);
}

static int read_combination(const xf_cfg_reader *r, const xf_ynode *cmc, xf_config *cfg)
{
	/* not on the spec list: homodyne's result check switch and warning level */
	static const char *const ignored[] = { "validate_results", "min_success_rate_warning",
					       NULL };
	/* the last three are homodyne's deprecated names (cmc.md) */
	static const char *const methods[] = {
		"robust_consensus_mc",
		"consensus_mc",
		"gaussian_product",
		"homodyne_marginal",
		"weighted_gaussian",
		"simple_average",
		"auto",
		NULL,
	};
	enum { N_OWN_METHODS = 4 };
	char sect[XF_CFG_PATH_MAX];
	const xf_ynode *map;
	int index = 0, given = 0;
	int rc = cmc_part(r, cmc, "combination", ignored, &map, sect, sizeof sect);
	if (rc || !map)
		return rc;
	if ((rc = xf_cfg_choice(r, map, sect, "method", methods, &index, &given)) ||
	    (rc = xf_cfg_read_keys(r, map, sect, cfg)))
		return rc;
	if (!given)
		return 0;
	if (index >= N_OWN_METHODS) {
		xf_warn("optimization.cmc.combination.method: '%s' is a deprecated homodyne "
			"name; using robust_consensus_mc, in %s:%d",
			methods[index], r->file, xf_ynode_get(map, "method")->line);
		index = 0;
	}
	return xf_combination_rule_parse(methods[index], &cfg->cmc.combination) ? XF_ERR_CONFIG : 0;
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
	const char *sect = "optimization.cmc", *known[32];
	const xf_ynode *map = NULL;
	int rc = xf_cfg_section(r, opt, "optimization", "cmc", &map);
	if (rc || !map)
		return rc;
	xf_cfg_known_keys(sect, known, sizeof known / sizeof known[0]);
	xf_cfg_check_keys(r, map, sect, known, ignored);
	xf_cmc_options *o = &cfg->cmc;
	if ((rc = xf_cfg_read_keys(r, map, sect, cfg)) || (rc = read_cmc_mode(r, map, o)) ||
	    (rc = read_cmc_route(r, map, o)) ||
	    (rc = read_cmc_part(r, map, "sharding", sharding_ignored, cfg)) ||
	    (rc = read_cmc_part(r, map, "per_shard_mcmc", mcmc_ignored, cfg)) ||
	    (rc = read_cmc_part(r, map, "validation", validation_ignored, cfg)) ||
	    (rc = read_combination(r, map, cfg)))
		return rc;
	return 0;
}

int xf_cfg_read_optimization(const xf_cfg_reader *r, const xf_ynode *root, xf_config *cfg)
{
	static const char *const known[] = { "nlsq", "cmc", "rings", NULL };
	/* several selected q rings: each fitted alone, or one joint fit (adr/0066) */
	static const char *const ring_modes[] = { "per_ring", "joint", NULL };
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
	const xf_ynode *map = NULL;
	int rc = xf_cfg_section(r, root, "", "optimization", &map);
	if (rc || !map)
		return rc;
	xf_cfg_check_keys(r, map, "optimization", known, ignored);
	int ring_mode = 0, has_ring_mode = 0;
	if ((rc = xf_cfg_choice(r, map, "optimization", "rings", ring_modes, &ring_mode,
				&has_ring_mode)))
		return rc;
	cfg->rings_joint = ring_mode == 1;
	if ((rc = read_nlsq(r, map, &cfg->nlsq)) || (rc = read_cmc(r, map, cfg)))
		return rc;
	return 0;
}
