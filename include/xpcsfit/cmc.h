/* cmc.h — the consensus Monte Carlo posterior (spec/cmc.md, docs/cmc.md): NUTS on shards
 * of frame pairs with tempered priors, warm-started from an NLSQ result, combined into
 * one posterior in the sampler's space; diagnostics per shard. Takes the NLSQ problem
 * request and its own options (adr/0043), never the config. */
#ifndef XPCSFIT_CMC_H
#define XPCSFIT_CMC_H

#include <stddef.h>
#include <stdint.h>
#include "xpcsfit/options.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/quality.h"
#include "xpcsfit/request.h"

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
	double *gap;		/* (mean − NLSQ) / max(sd, NLSQ sd) */
	double *pull;		/* prior log density gained from NLSQ to the mean */
	const char **diagnosis; /* "-", "prior-data conflict", ... */
	int *flagged;		/* 1: a quality reason names this parameter */
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

typedef struct xf_cmc_result {
	xf_mode mode;
	xf_scaling_mode scaling_mode; /* per-angle mode sampled */
	int n_params, n_phys;
	char **names;	       /* [n_params] canonical order, as NLSQ's */
	int *is_fixed;	       /* [n_params] 1: not sampled (fixed by the config) */
	double *lower, *upper; /* [n_params] bounds of the sampler's logit transform, which
				* map the stored u-space draws to physical values */
	int n_theta;	       /* sampled parameters */
	int *theta;	       /* [n_theta] their index */
	/* the combined posterior (physical parameters; fixed ones constant) */
	int n_draws;
	double *draws;				/* [n_draws][n_params] */
	double *mean, *sd, *median, *q05, *q95; /* [n_params] reported summaries */
	double *cov;				/* [n_params²] */
	double *gp_mean, *gp_cov;		/* Gaussian product of the kept shards (u-space) */
	/* per angle: posterior mean and sd of contrast and offset */
	int n_phi;
	double *phi_deg, *contrast, *contrast_sd, *offset, *offset_sd;
	/* shards */
	long n_shards, n_kept;
	xf_cmc_shard *shards;
	int n_chains, n_warmup, n_samples;
	double target_accept;		 /* the one used: the config's, or the mode's default */
	double temper;			 /* 1/K */
	xf_combination_rule combination; /* the combination rule used */
	xf_fit_status status;		 /* converged | failed */
	xf_quality quality;
	xf_cmc_check check;
	xf_cmc_sensitivity sensitivity;
	xf_cmc_prior_vs_nlsq prior_vs_nlsq; /* before sampling (prior_vs_nlsq.c) */
	xf_cmc_beyond beyond;		    /* mass beyond the draws (beyond.c) */
	uint64_t seed;
	long grad_evals;
	char shard_dir[4096];	  /* where every shard's draws are kept */
	xf_posterior_route route; /* how the posterior was reached */
	char route_note[192];
	xf_cmc_check approx;		   /* the importance route's check (approx.done: it ran) */
	double sigma_mean, sigma_sd;	   /* importance route: σ's posterior (NaN otherwise) */
	double time_approx_s, time_nuts_s; /* the route's stages (0: not run) */
	double time_sampling_s, time_combine_s, time_total_s;
} xf_cmc_result;

/* What a posterior run is doing, for its progress line */
typedef enum xf_cmc_stage {
	XF_CMC_STAGE_NUTS = 0,
	XF_CMC_STAGE_IMPORTANCE,
} xf_cmc_stage;

typedef struct xf_cmc_progress {
	long shards_done, shards_total;
	/* NUTS transitions (warmup and sampling, every chain) of this run's shards: done,
	 * and all of them; resumed shards count in neither */
	long iterations_done, iterations_total;
	long divergences; /* after warmup, so far */
	double elapsed_s, eta_s;
	/* NUTS (the fields above), or the importance route's check (iterations are the
	 * points of its current batch) */
	xf_cmc_stage stage;
	/* what the stage is doing (adr/0080): the importance route's round (1, 2, ...);
	 * one shard's NUTS: phase "warmup" or "sampling" and, when its chains run in turn,
	 * the chain running (1-based; 0: the chains run side by side) of n_chains */
	int round;
	const char *phase;
	int chain, n_chains;
} xf_cmc_progress;

typedef void (*xf_cmc_progress_fn)(const xf_cmc_progress *p, void *ctx);

/* The refusals of xf_cmc_run that come before any sampling: the shard count against the
 * data's frame pairs and, with nlsq (NULL: not yet known), the posterior's problem (its
 * per_angle_scaling counts). Run before a result folder is claimed, so that such a
 * refusal leaves a finished result untouched (adr/0071). 0, or the code with err set. */
int xf_cmc_check_layout(const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
			const xf_estimate *nlsq, xf_error *err);

/* Run CMC on ds warm-started from nlsq, the NLSQ fit's estimate (xf_estimate_from_nlsq, or
 * a folder read back by xf_results_read_nlsq; it must fit the same data and mode), with the
 * method options o; req is the NLSQ fit's problem request, from which the posterior's is
 * derived (xf_request_for_posterior, o->per_angle_mode): shards
 * sampled on n_threads virtual devices, each finished shard saved at once in shard_dir
 * (created), reused when resume is set and its inputs match. Returns 0 when a result was
 * produced (its status may be failed: the caller writes it and exits 1), or an error code
 * (XF_ERR_INTERRUPTED when interrupted: finished shards stay in shard_dir). */
int xf_cmc_run(const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
	       const xf_estimate *nlsq, int n_threads, const char *shard_dir, int resume,
	       xf_cmc_progress_fn progress, void *progress_ctx, xf_cmc_result *res, xf_error *err);
void xf_cmc_result_free(xf_cmc_result *res);

/* One line saying how the posterior was reached (res->route) and, for the importance
 * route, the numbers of its check; for the console, run.log and the report. */
void xf_cmc_route_describe(const xf_cmc_result *res, char *buf, size_t size);

/* res as the method-neutral estimate on grid (the geometry it was sampled on): the
 * posterior mean and sd, summaries, covariance; the draws are borrowed from res, which
 * must outlive e. Free e with xf_estimate_free. */
int xf_estimate_from_cmc(const xf_cmc_result *res, const xf_model_grid *grid, xf_estimate *e,
			 xf_error *err);

/* One point of the sampler's space (n_theta logits, then log sigma) in physical units:
 * x[m] the sampled parameter theta[m] within its bounds, x[n_theta] sigma. x may be u. */
void xf_cmc_result_to_physical(const xf_cmc_result *res, const double *u, double *x);
/* The logit transform's inverse on [lower, upper], never outside the box. */
double xf_cmc_u_to_x(double lower, double upper, double u);
/* 1 when x lies within 1e-3 of the width of [lower, upper] from a bound: there du/dx is so
 * large that a variance in u no longer says how well x is known (adr/0083) */
int xf_cmc_near_bound(double lower, double upper, double x);

/* The draws of shard `id` of a result, read back from its shard store: [chains][draws]
 * [n_theta + 1] in the sampler's space (σ last as log σ). Returns 0, or an error code. */
int xf_cmc_shard_draws(const xf_cmc_result *res, long id, double **draws, int *n_chains,
		       int *n_draws, int *dim, xf_error *err);

/* The published posterior as chains and its per-parameter diagnostics (adr/0061): the
 * draws res->draws are n_chains × n_draws rows, chain-major; markov 1 when each chain is
 * a Markov chain (the exact NUTS chains, or the consensus of the shards' chains), 0 for
 * independent draws (resampled or Gaussian: one chain). R̂ (rank-normalised split), bulk
 * and tail ESS, MCSE of the mean and of the sd of every parameter (NaN: fixed, or none). */
typedef struct xf_cmc_posterior_diag {
	int n_chains, n_draws;
	int markov;
	const char *layout; /* nuts_chains | consensus_chains | resampled | independent |
			       pooled */
	const char *note;   /* one sentence: what a chain is */
	double *rhat, *ess_bulk, *ess_tail, *mcse_mean, *mcse_sd; /* [n_params] */
} xf_cmc_posterior_diag;
/* 0, or -1 when out of memory (d then holds nothing to free) */
int xf_cmc_posterior_diagnostics(const xf_cmc_result *res, xf_cmc_posterior_diag *d);
void xf_cmc_posterior_diag_free(xf_cmc_posterior_diag *d);

/* The sampler's statistics of shard `id`, read back from its shard store: per chain and
 * draw ([chains][draws]) the log density in the sampler's space (Jacobian included), the
 * Hamiltonian, the acceptance statistic, the tree depth, the leapfrog steps, 1 where the
 * transition diverged; per chain the adapted step size. */
typedef struct xf_cmc_shard_stats {
	int n_chains, n_draws;
	double *lp, *energy, *accept_stat, *step_size;
	int *tree_depth, *n_leapfrog, *diverging;
} xf_cmc_shard_stats;
int xf_cmc_shard_stats_load(const xf_cmc_result *res, long id, xf_cmc_shard_stats *st,
			    xf_error *err);
void xf_cmc_shard_stats_free(xf_cmc_shard_stats *st);

#endif
