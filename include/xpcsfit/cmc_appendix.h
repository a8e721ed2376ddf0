/* cmc_appendix.h — what the posterior run says of itself beyond its estimate (estimate.h;
 * adr/0109): the shards and their diagnostics, the self-check and the importance route's
 * check, prior sensitivity, the prior against NLSQ, the mass beyond the draws, the
 * published chains' diagnostics, the route's sentence, and loaders of each shard's stored
 * draws and sampler statistics. CMC's result files, plots and summaries read it beside the
 * estimate (io/, plot/, outputs/ never include cmc.h); cmc/ fills it at the end of a run
 * (xf_cmc_appendix_of), so the files compute nothing of the method's own. */
#ifndef XPCSFIT_CMC_APPENDIX_H
#define XPCSFIT_CMC_APPENDIX_H

#include <stddef.h>
#include <stdint.h>
#include "xpcsfit/error.h"
#include "xpcsfit/options.h"

/* One shard: what its chains say and whether it entered the combination. */
typedef struct xf_cmc_shard {
	long id;
	size_t n_points;
	int kept;	  /* 1: in the combination */
	int failed;	  /* 1: could not be sampled (a non-finite start after retries) */
	char reason[160]; /* why excluded or failed, "" otherwise */
	/* diagnostics over every sampled coordinate (σ included) */
	double rhat_max, ess_bulk_min, ess_tail_min;
	long divergences;	 /* divergent transitions after warmup, every chain */
	double divergence_rate;	 /* divergent transitions / sampling transitions */
	double depth_saturation; /* fraction of transitions at max tree depth */
	double mean_depth;	 /* mean tree depth of the sampling transitions */
	double ebfmi_min;
	double step_size_mean;
	long grad_evals;
	/* σ of the shard (never combined) and the scale of its prior */
	double sigma_mean, sigma_sd, sigma_scale, noise;
	/* per sampled parameter (n_theta; then σ for rhat/ess) */
	double *rhat, *ess_bulk, *ess_tail; /* [n_theta + 1] */
	double *mean, *sd;		    /* [n_theta] physical */
	double *skew, *kurtosis;	    /* [n_theta] of the u-space draws (excess kurtosis) */
	double *u_mean, *u_cov;		    /* [n_theta], [n_theta²]: the combination's inputs */
} xf_cmc_shard;

/* The consensus self-check against the full-data posterior (cmc.md, issue #16, #22;
 * adr/0039): importance sampling from a multivariate t built on the combined Gaussian,
 * gated on k̂, the IS-ESS and the axis check. */
typedef struct xf_cmc_check {
	int done;    /* 0: not run (one shard, or check_draws 0) */
	int m;	     /* points drawn from the proposal (grown from check_draws until stable) */
	int m_first; /* the first M tried (combination.check_draws) */
	int stable;  /* 1: k̂ and IS-ESS/M agreed between M/2 and M */
	uint64_t seed;
	int nu;	      /* the proposal: multivariate t, ν degrees of freedom, */
	double scale; /* scale matrix scale² × the combined covariance */
	double core;  /* weight of the Gaussian itself in a defensive mixture with the t
			   (the route's, adr/0045); 0: the t alone (the consensus check) */
	int dim;      /* coordinates of each point: θ (the self-check), θ and log σ (route) */
	int rounds;   /* the route: 1 (Laplace), k > 1: the map fitted to earlier rounds */
	/* the route's per-angle scaling coefficients drawn from their exact conditional
	 * (adr/0081; 0: none, every coordinate from the map) and the map's coordinates */
	int scaling_conditional, map_dim;
	/* power laws (D(t), γ̇(t)) whose coordinates the map straightened on a ridge
	 * (adr/0082; 0: none) */
	int power_law_coords;
	/* the round that started again from the Laplace approximation with the priors in,
	 * after a round left too little to fit (adr/0081); 0: none */
	int prior_start;
	/* the rounds after the fitted ones failed: from a proposal along this coordinate's
	 * ridge (index into theta; adr/0099); −1: none */
	int ridge_param;
	double khat;	/* Pareto k̂ of the importance ratios at M */
	double ess;	/* importance-sampling ESS, 1/Σ w² of the smoothed weights */
	double min_ess; /* the IS-ESS and every coordinate's ESS must reach it (0: no floor) */
	/* the route on a file above XF_ROUTE_SMALL_POINTS, where each point is a pass over
	 * millions: M grown to what the floor needs, and a near-uniform passing round not
	 * refined (adr/0092); on smaller files M doubles, and the points feed the next fit */
	int sized_m;
	double ess_coord_min; /* the smallest ESS of a coordinate's weighted mean */
	int ess_coord;	      /* which coordinate (index into theta; n_theta: log σ) */
	double ess_ref;	      /* IS-ESS/M a Gaussian target gives for this proposal */
	/* the axis check: along the combined covariance's principal axes (0: the largest
	 * variance), from the corrected mean at ± the corrected sd, the exact log
	 * posterior's drops d₊, d₋; axis_drop = (d₊ + d₋)/2, the worst |axis_drop − 0.5| */
	double axis_dev, axis_drop, axis_drop_plus, axis_drop_minus;
	int axis, axis_param; /* axis_param: its largest loading (index into theta) */
	/* the route's tail probe (adr/0085), part of the axis check: along each axis of the
	 * proposal's base at ±4, ±6, ±8, the largest log importance ratio less the largest
	 * of the points' (tail_excess > 0: a point there would outweigh every point drawn);
	 * tail_axis and tail_z where (tail_axis −1: not probed) */
	double tail_excess, tail_z;
	int tail_axis;
	int pass_khat, pass_ess, pass_axis;
	int corrected;	   /* 1: all three passed; the published posterior is the weighted one */
	char verdict[192]; /* why not, when not corrected ("" otherwise) */
	double sigma;	   /* σ at which the full posterior was evaluated */
	double *u;	   /* [m][dim] points (u-space) */
	double *log_w;	   /* [m] smoothed log-weights (normalised) */
	double *log_p;	   /* [m] the target's log density at each point (route only) */
	/* the plain consensus, kept beside the corrected posterior */
	double *mean, *sd, *median, *q05, *q95; /* [n_params] */
	double *draws;				/* [n_draws][n_params] its draws */
} xf_cmc_check;

/* A parameter's verdict from prior sensitivity (priorsense's diagnosis, adr/0040, 0095): what
 * the files print is xf_prior_diagnosis_name's text. */
typedef enum xf_prior_diagnosis {
	XF_PRIOR_DIAG_NONE = 0,	  /* "-": the prior does not decide it */
	XF_PRIOR_DIAG_UNMEASURED, /* prior sensitive, the likelihood's side not measured */
	XF_PRIOR_DIAG_CONFLICT,	  /* prior-data conflict: sensitive to both */
	XF_PRIOR_DIAG_STRONG,	  /* strong prior / weak likelihood */
	XF_PRIOR_DIAG_AGREEING,	  /* informative prior, agreeing with the data */
	XF_PRIOR_DIAG_PULLS,	  /* the prior pulls the posterior away from NLSQ */
} xf_prior_diagnosis;

const char *xf_prior_diagnosis_name(xf_prior_diagnosis d);

/* Prior sensitivity of the result (cmc.md "Prior sensitivity on every result",
 * adr/0040): power-scaling of the prior and the likelihood on the draws, and the
 * posterior against NLSQ. Arrays [n_params]; NaN where not measured (a fixed
 * parameter; the likelihood when K > 1; NLSQ values it does not have). */
typedef struct xf_cmc_sensitivity {
	int done;		 /* 0: no combined posterior */
	int likelihood_measured; /* 0: K > 1, the combined draws carry no likelihood */
	int n_draws;		 /* draws it was computed on */
	/* 1: on the draws of a NUTS run that did not converge (K = 1, no posterior): what
	 * the sampler produced, to name a prior that caused the failure */
	int failed_run;
	double *mean, *sd;		/* of the draws judged (the posterior's, or those) */
	double threshold, eps;		/* 0.05; α = 1 ± eps */
	double khat_prior, khat_lik;	/* largest Pareto k̂ of the power-scaling weights */
	double *prior, *lik;		/* power-scaling sensitivities */
	double *prior_mu, *prior_sigma; /* the prior (untempered) the posterior used */
	double *nlsq, *nlsq_sd;		/* NLSQ's value and uncertainty */
	/* where NLSQ's value stands: 0 inside its bounds, −1 / +1 stopped at the lower / upper
	 * bound (its sd there is the curvature of a clipped fit), 2 an sd wider than a
	 * quarter of the bounds (the data do not confine it) */
	int *nlsq_edge;
	double *gap;		       /* (mean − NLSQ) / max(sd, NLSQ sd) */
	double *pull;		       /* prior log density gained from NLSQ to the mean */
	xf_prior_diagnosis *diagnosis; /* [n_params] */
	int *flagged;		       /* 1: a quality reason names this parameter */
} xf_cmc_sensitivity;

/* Each prior against the NLSQ result, before any sampling (cmc.md "A prior far from the
 * data", adr/0080). Arrays [n_params], NaN where not computed (a fixed parameter, no
 * NLSQ uncertainty). */
typedef struct xf_cmc_prior_vs_nlsq {
	int done;
	int n_conflicts;		/* parameters flagged below */
	double *prior_mu, *prior_sigma; /* the prior (untempered) */
	double *nlsq, *nlsq_sd;		/* NLSQ's value and uncertainty */
	double *nlsq_sd_away;		/* |NLSQ − prior mu| / NLSQ sd */
	double *prior_sd_away;		/* |NLSQ − prior mu| / prior sigma */
	double *log_density; /* log prior at NLSQ − at its peak: −½·prior_sd_away² */
	double *width_ratio; /* prior sigma / NLSQ sd (< 1: narrower than the data) */
	double *shift_sd;    /* the Gaussian product's pull on the posterior, NLSQ sds */
	int *conflict;	     /* 1: narrow and far, a prior–data conflict in waiting */
} xf_cmc_prior_vs_nlsq;

/* Posterior mass beyond the draws, from the exact posterior's profile (beyond.h,
 * adr/0087). Arrays [n_params], NaN where not probed (a fixed parameter, the scaling). */
typedef struct xf_cmc_beyond {
	int done;	  /* 0: not probed (K > 1, or no posterior) */
	int n_flagged;	  /* parameters flagged below */
	long passes;	  /* likelihood passes it took */
	double wall_s;	  /* the seconds they took (reported, never decides) */
	double *mass;	  /* estimated fraction of the posterior beyond the draws, both sides */
	double *sd_ratio; /* the sd with that mass / the draws' sd */
	double *edge;	  /* the draws' extreme on the side of the larger mass (physical) */
	double *reach;	  /* where 90 % of that side's mass beyond the draws is reached */
	double *calib;	  /* the probe's mass between the 5 %/95 % quantile and the extreme
			  * over the draws' (≈ 1 where its Laplace estimate is good) */
	int *flagged;	  /* 1: a quality reason names this parameter */
	int *sides;	  /* sides judged (0–2): not one whose calibration slices do not
			   * converge or whose calibration lies outside [0.2, 5] */
} xf_cmc_beyond;

/* What a chain of the published posterior is (its "layout" in the files) */
typedef enum xf_chain_layout {
	XF_CHAINS_NUTS = 0,    /* nuts_chains: the exact NUTS chains on every point */
	XF_CHAINS_CONSENSUS,   /* consensus_chains: the shards' chains combined draw by draw */
	XF_CHAINS_RESAMPLED,   /* resampled: draws resampled by their importance weights */
	XF_CHAINS_INDEPENDENT, /* independent: draws of a Gaussian, one chain */
	XF_CHAINS_POOLED,      /* pooled: every chain's draws as one */
} xf_chain_layout;

const char *xf_chain_layout_name(xf_chain_layout l);

/* The published posterior as chains and its per-parameter diagnostics (adr/0061): the
 * draws res->draws are n_chains × n_draws rows, chain-major; markov 1 when each chain is
 * a Markov chain (the exact NUTS chains, or the consensus of the shards' chains), 0 for
 * independent draws (resampled or Gaussian: one chain). R̂ (rank-normalised split), bulk
 * and tail ESS, MCSE of the mean and of the sd of every parameter (NaN: fixed, or none). */
typedef struct xf_cmc_posterior_diag {
	int n_chains, n_draws;
	int markov;
	xf_chain_layout layout;
	const char *note; /* one sentence: what a chain is */
	double *rhat, *ess_bulk, *ess_tail, *mcse_mean, *mcse_sd; /* [n_params] */
} xf_cmc_posterior_diag;

/* The sampler's statistics of shard `id`, read back from its shard store: per chain and
 * draw ([chains][draws]) the log density in the sampler's space (Jacobian included), the
 * Hamiltonian, the acceptance statistic, the tree depth, the leapfrog steps, 1 where the
 * transition diverged; per chain the adapted step size. */
typedef struct xf_cmc_shard_stats {
	int n_chains, n_draws;
	double *lp, *energy, *accept_stat, *step_size;
	int *tree_depth, *n_leapfrog, *diverging;
} xf_cmc_shard_stats;
/* One shard's stored record, read back by the method (its shard store): the draws,
 * [chains][draws][dim] in the sampler's space (σ last as log σ) or, physical 1, each
 * sampled parameter in its units and σ itself; and the sampler's statistics. Each returns
 * 0, or an error code with err set. */
typedef int (*xf_cmc_shard_draws_fn)(const void *ctx, long id, int physical, double **draws,
				     int *n_chains, int *n_draws, int *dim, xf_error *err);
typedef int (*xf_cmc_shard_stats_fn)(const void *ctx, long id, xf_cmc_shard_stats *st,
				     xf_error *err);

/* --device's decisions for the posterior's evaluators over all the data (adr/0130): the
 * choice asked ("" for cpu, the default: no lines) and each evaluator's line, in order */
#define XF_CMC_DEVICE_LINES 3
typedef struct xf_cmc_device_record {
	char asked[8]; /* "gpu", "auto"; "": the CPU, nothing decided */
	int n_lines;
	char lines[XF_CMC_DEVICE_LINES][512]; /* "importance route: <decision>", ... */
} xf_cmc_device_record;

/* The appendix borrows every array from the run's result, which must outlive it; it owns
 * only the chains' diagnostics (xf_cmc_appendix_free). */
typedef struct xf_cmc_appendix {
	/* the sampler's space: the logit transform's bounds [n_params] and the sampled
	 * parameters (theta[n_theta], indices into the estimate's parameters) */
	const double *lower, *upper;
	int n_theta;
	const int *theta;
	const double *gp_mean, *gp_cov; /* Gaussian product of the kept shards (u-space) */
	long n_shards, n_kept;
	const xf_cmc_shard *shards;
	int n_chains, n_warmup, n_samples;
	double target_accept, temper;
	xf_combination_rule combination;
	const xf_cmc_check *check;  /* the consensus self-check */
	const xf_cmc_check *approx; /* the importance route's check (approx->done: it ran) */
	const xf_cmc_sensitivity *sensitivity;
	const xf_cmc_prior_vs_nlsq *prior_vs_nlsq;
	const xf_cmc_beyond *beyond;
	uint64_t seed;
	long grad_evals;
	const char *shard_dir;
	const char *route_note;
	char route_text[512]; /* one line: how the posterior was reached, its numbers */
	const xf_cmc_device_record *device; /* --device's decisions (asked "": the CPU) */
	double sigma_mean, sigma_sd;	    /* importance route: σ's posterior (NaN otherwise) */
	double time_approx_s, time_nuts_s, time_sampling_s, time_combine_s, time_total_s;
	xf_cmc_posterior_diag diag; /* the published draws as chains (owned) */
	xf_cmc_shard_draws_fn shard_draws;
	xf_cmc_shard_stats_fn shard_stats;
	const void *store; /* their context */
} xf_cmc_appendix;

void xf_cmc_posterior_diag_free(xf_cmc_posterior_diag *d);
void xf_cmc_shard_stats_free(xf_cmc_shard_stats *st);

#endif
