/* options.h — the typed options of the methods (NLSQ, the posterior), read from the
 * config's optimization section by src/config/ and handed to the methods, which never see
 * the raw config (architecture.md, adr/0043). Types, and the names of their enumerations
 * (model/options.c). */
#ifndef XPCSFIT_OPTIONS_H
#define XPCSFIT_OPTIONS_H

#include <stdint.h>
#include "xpcsfit/params.h"

#define XF_VIRTUAL_DEVICES_MAX 1024 /* parallel.virtual_devices and --threads */

typedef struct xf_nlsq_options {
	int max_iterations;		/* 1000 */
	double xtol, gtol, ftol;	/* 1e-8 each; ftol alias "tolerance" */
	int has_sigma;			/* 1 when optimization.nlsq.sigma is a number */
	double sigma;			/* constant σ of the data when has_sigma */
	xf_loss loss;			/* linear */
	double f_scale;			/* soft margin of the loss, in units of σ (1.0) */
	xf_scaling_mode per_angle_mode; /* auto */
	int constant_scaling_threshold; /* 3 */
	int fourier_order;		/* 2 */
	int hierarchical;		/* 1: hierarchical start for laminar_flow */
	int anti_degeneracy_enable;	/* static uses per_angle_mode only when set (0) */
	int multi_start;		/* 0 */
	int n_starts;			/* 10 */
	uint64_t multi_start_seed;	/* 42 */
	/* start_search (xpcsfit's own, docs/nlsq.md "Finding the optimum") */
	int start_search;   /* 1: screened starts, best refined on all the data */
	int search_spread;  /* decades spread around the estimate per scale parameter (2) */
	long screen_points; /* points of the screening subsample (131072) */
	int phi0_profile;   /* 1: a laminar end point is profiled along φ0 (adr/0053) */
	/* where the accumulation over all the data runs (docs/gpu.md): not YAML keys, set
	 * by --device and the XPCSFIT_DEVICE* environment */
	int device;		 /* 0 cpu (the default), 1 gpu, 2 auto (xf_device_choice) */
	double device_threshold; /* auto: the GPU at points × parameters ≥ this */
	int device_fp32;	 /* fp32 evaluation on the GPU (the measured option) */
} xf_nlsq_options;

/* How one shard's (K = 1) exact posterior is reached (optimization.cmc.route, adr/0045) */
typedef enum xf_cmc_route {
	XF_CMC_ROUTE_AUTO = 0, /* importance sampling from the NLSQ approximation, verified
				  against the exact posterior; exact NUTS when the check fails */
	XF_CMC_ROUTE_NUTS,     /* exact NUTS on every point, always */
} xf_cmc_route;

/* How the shards' posteriors are combined (optimization.cmc.combination.method; cmc.md) */
typedef enum xf_combination_rule {
	XF_COMBINE_ROBUST_CONSENSUS = 0, /* consensus Monte Carlo, outlying shards screened */
	XF_COMBINE_CONSENSUS,		 /* consensus Monte Carlo (Scott et al. 2016) */
	XF_COMBINE_GAUSSIAN_PRODUCT,	 /* draws from the product of the shards' Gaussians */
	XF_COMBINE_MARGINAL_PRODUCT,	 /* … of their marginal Gaussians (homodyne's) */
	XF_COMBINE_N
} xf_combination_rule;

/* The rule's name in configs and result files ("robust_consensus_mc", …; model/options.c) */
const char *xf_combination_rule_name(xf_combination_rule rule);
/* The rule named name into *rule: 0, or −1 when no rule has that name. */
int xf_combination_rule_parse(const char *name, xf_combination_rule *rule);

typedef struct xf_cmc_options {
	uint64_t seed;				 /* 42 */
	xf_cmc_route route;			 /* auto */
	xf_scaling_mode per_angle_mode;		 /* XF_SCALING_FOLLOW_NLSQ when null/absent */
	long num_shards;			 /* 0 = auto */
	long max_points_per_shard;		 /* 0 = auto */
	int num_warmup, num_samples, num_chains; /* 500, 1500, 4 */
	double target_accept_prob;		 /* 0.85 */
	int max_tree_depth;			 /* 10 */
	int dense_mass;				 /* 1 */
	double max_divergence_rate;		 /* 0.10 */
	double max_per_shard_rhat;		 /* 1.1 */
	int use_nlsq_informed_priors;		 /* 0 */
	double nlsq_prior_width_factor;		 /* 2.0 */
	xf_combination_rule combination;	 /* robust_consensus_mc */
	double min_success_rate;		 /* 0.90 */
	int check_draws; /* 4000: first M of the self-check, doubled until stable (0: none) */
} xf_cmc_options;

#endif
