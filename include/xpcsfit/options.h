/* options.h — the typed options of the methods (NLSQ, the posterior), read from the
 * config's optimization section by src/config/ and handed to the methods, which never see
 * the raw config (architecture.md, adr/0043). Types, their defaults and the names of their
 * enumerations (model/options.c). */
#ifndef XPCSFIT_OPTIONS_H
#define XPCSFIT_OPTIONS_H

#include <stdint.h>
#include "xpcsfit/params.h"

#define XF_VIRTUAL_DEVICES_MAX 1024 /* XF_KEY_VIRTUAL_DEVICES and --threads */

typedef struct xf_nlsq_options {
	int max_iterations;
	double xtol, gtol, ftol; /* ftol alias "tolerance" */
	int has_sigma;		 /* 1 when XF_KEY_NLSQ_SIGMA is a number */
	double sigma;		 /* constant σ of the data when has_sigma */
	xf_loss loss;
	double f_scale; /* soft margin of the loss, in units of σ */
	xf_scaling_mode per_angle_mode;
	int constant_scaling_threshold; /* auto shares one contrast/offset from this many angles */
	int fourier_order;
	int hierarchical;	    /* 1: hierarchical start for laminar_flow */
	int anti_degeneracy_enable; /* static uses per_angle_mode only when set */
	int multi_start;
	int n_starts;
	uint64_t multi_start_seed;
	/* start_search (xpcsfit's own, docs/nlsq.md "Finding the optimum") */
	int start_search;   /* 1: screened starts, best refined on all the data */
	int search_spread;  /* decades spread around the estimate per scale parameter */
	long screen_points; /* points of the screening subsample */
	int phi0_profile;   /* 1: a laminar end point is profiled along φ0 (adr/0053) */
	/* where the accumulation over all the data runs (docs/gpu.md): not YAML keys, set
	 * by --device and the XPCSFIT_DEVICE* environment (defaults: the device policy's) */
	int device;		 /* 0 cpu, 1 gpu, 2 auto (xf_device_choice) */
	double device_threshold; /* auto: the GPU at points × parameters ≥ this */
	int device_fp32;	 /* fp32 evaluation on the GPU (the measured option) */
} xf_nlsq_options;

/* How one shard's (K = 1) exact posterior is reached (XF_KEY_CMC_ROUTE, adr/0045) */
typedef enum xf_cmc_route {
	XF_CMC_ROUTE_AUTO = 0, /* importance sampling from the NLSQ approximation, verified
				  against the exact posterior; exact NUTS when the check fails */
	XF_CMC_ROUTE_NUTS,     /* exact NUTS on every point, always */
	XF_CMC_ROUTE_N
} xf_cmc_route;

/* The routes' names in configs, in enum order, NULL-terminated ("auto", "nuts";
 * model/options.c): the reader's choices */
extern const char *const xf_cmc_route_names[XF_CMC_ROUTE_N + 1];

/* How the shards' posteriors are combined (XF_KEY_CMC_COMBINATION; cmc.md) */
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
	uint64_t seed;
	xf_cmc_route route;
	xf_scaling_mode per_angle_mode; /* XF_SCALING_FOLLOW_NLSQ when null/absent */
	long num_shards;		/* 0 = auto */
	long max_points_per_shard;	/* 0 = auto */
	int num_warmup, num_samples, num_chains;
	double target_accept_prob; /* 0: per mode (adr/0041) */
	int max_tree_depth;
	int dense_mass;
	double max_divergence_rate;
	double max_per_shard_rhat;
	int use_nlsq_informed_priors;
	double nlsq_prior_width_factor;
	xf_combination_rule combination;
	double min_success_rate;
	int check_draws; /* the self-check's first M, doubled until stable (0: none) */
	/* where the passes over all the data run (docs/gpu.md, adr/0130): as NLSQ's, not
	 * YAML keys, set by --device and the XPCSFIT_DEVICE* environment */
	int device;		 /* 0 cpu, 1 gpu, 2 auto (xf_device_choice) */
	double device_threshold; /* auto: a device looked for at points × parameters ≥ this */
	int device_fp32;	 /* fp32 evaluation on the GPU (the measured option) */
} xf_cmc_options;

/* Every option at its documented default (docs/config.md): the config reader starts from
 * these, and so does a caller without a config (xpcsfit-gpu, the tests). */
void xf_nlsq_options_defaults(xf_nlsq_options *o);
void xf_cmc_options_defaults(xf_cmc_options *o);

#endif
