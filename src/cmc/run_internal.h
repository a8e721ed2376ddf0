/* run_internal.h — the state of one CMC run, shared by the driver (run.c) and the result
 * assembly (result.c). */
#ifndef XPCSFIT_CMC_RUN_INTERNAL_H
#define XPCSFIT_CMC_RUN_INTERNAL_H

#include <pthread.h>
#include "cmc/plaw_coords.h"
#include "cmc/cmc_internal.h"
#include "cmc/eta.h"
#include "device/policy.h"
#include "xpcsfit/dist.h"

/* One shard: its pairs, noise scale and input hash, and the draws its chains fill. */
/* A one-shard posterior with divergent draws is sampled again, once, by every chain at
 * the target acceptance 1 − (1 − target)·XF_RESAMPLE_GAP (adr/0090), from a target
 * below XF_RESAMPLE_ACCEPT_MAX. */
#define XF_RESAMPLE_GAP	       0.5
#define XF_RESAMPLE_ACCEPT_MAX 0.999
static inline double xf_cmc_resample_accept(double target)
{
	return 1.0 - (1.0 - target) * XF_RESAMPLE_GAP;
}

typedef struct shard_job {
	xf_pairset ps;
	double noise, sigma_scale;
	uint64_t hash;
	int resumed; /* loaded from the store: nothing to sample */
	int skipped; /* not this run's shard (xf_cmc_sample_one) */
	int remote;  /* sampled by another rank of an MPI run (run_dist.c) */
	/* a non-root rank's finished shard: its store image, sent to rank 0 at the end */
	unsigned char *image;
	size_t image_len;
	int chains_done;
	/* this run's chains: draws that diverged, chains that failed; resample 1: the
	 * chains sample the shard again at the raised target acceptance (adr/0090) */
	int diverged, chains_failed, resample;
	long first_grad_evals; /* the gradient passes of the draws sampled again */
	xf_shard_draws draws;  /* filled chain by chain, saved and freed when complete */
} shard_job;

typedef struct cmc_run {
	const xf_cmc_options *o;
	xf_problem pr; /* the CMC layout */
	int n_theta;
	int *theta;	 /* [n_theta] sampled parameters */
	double *x_start; /* [n_full] the chains' start: NLSQ's point, off the bounds */
	double *x_nlsq;	 /* [n_full] NLSQ's point in the CMC layout (noise estimate) */
	/* [n_full²] the data's precision JᵀJ/σ̂² at x_start over every point, for the
	 * Laplace metric (adr/0097); NULL where that metric does not apply or the pass
	 * could not be made */
	double *jtj_start;
	xf_plaw_slope slopes[XF_PLAW_MAX]; /* the slopes e·A NLSQ measured (adr/0091) */
	double *init_cov;		   /* initial metric, cov_size values */
	/* the initial metric before a failed importance route replaced init_cov with its
	 * weighted covariance: the collapsed chains' (adr/0088) */
	double *init_cov_nlsq;
	/* the chains sample in the power-law coordinates w (plaw_coords.h, adr/0082), from
	 * init_cov carried to w at the start point (sample_shards sets both) */
	xf_plaw_coords pc;
	double *init_cov_w;
	/* the same for chains with the scaling integrated out (collapse.h, adr/0086): over
	 * the dc coordinates θ's physical ones and log σ (u-indices mcol); dc 0: none */
	int dc;
	int *mcol;
	xf_plaw_coords pcc;
	double *init_cov_wc;
	/* the chains' starts in u-space [n_chains × (n_theta + 1)] handed over by a failed
	 * importance route (route_handoff.c); NULL: drawn around the NLSQ point */
	const double *init_points;
	size_t cov_size;
	long n_shards;
	long only_shard; /* ≥ 0: sample this shard alone (xf_cmc_sample_one); −1: all */
	double temper;
	shard_job *jobs;
	int n_chains, n_warmup, n_samples, max_depth, dense;
	double target_accept;
	uint64_t seed;
	const char *dir;
	const xf_dist *dist; /* several ranks: shard s on rank s % n_ranks; NULL: one */
	xf_pool *pool;
	int pooled_passes; /* 1: chains in turn, each pass on the pool */
	/* one shard under several ranks: every rank runs the same chains in the same order,
	 * each pass split over the ranks (the bits of one process); rank 0 keeps the shard */
	int dist_exact;
	/* progress, shared between tasks under the lock */
	pthread_mutex_t lock;
	long shards_done, shards_resumed, divergences;
	long iterations_done; /* transitions of every chain so far (progress only) */
	double last_report;   /* when progress was last reported (display only) */
	int stop;
	xf_error err;
	double t0;
	xf_cmc_progress_fn progress;
	void *progress_ctx;
	long route_points; /* points of the importance route evaluated (progress only) */
	/* the importance route's published draws as a one-chain shard (route.c): what the
	 * prior sensitivity reads of that exact posterior; NULL otherwise */
	const xf_shard_draws *route_draws;
	/* the warm start; the prior check (sensitivity.c) compares with it */
	const xf_estimate *nlsq;
	/* progress and time, for what is printed only (eta.h, adr/0080) */
	xf_eta eta;
	long warmup_done;  /* warmup transitions of every chain so far */
	int last_sampling; /* the latest transition was a draw (1) or warmup (0) */
	long chains_collapsed, chains_fell_back; /* adr/0086, under the lock */
	long grad_evals_done;	      /* NUTS gradient passes so far, every chain (atomic) */
	int long_checked;	      /* the long-run estimate was made */
	int long_warned;	      /* the long-run line was said */
	int n_threads;		      /* virtual devices, for the long-run line */
	xf_cmc_device_record *device; /* the result's record of --device (NULL: none kept) */
	int route_round;	      /* the importance route's round now running … */
	int route_round_base; /* … after this many (the ridge's rounds follow the fitted ones) */
} cmc_run;

/* Route lik, an evaluator of the exact posterior over all the data, to the device when
 * the options' --device and the job of kind say so (device.c, docs/gpu.md); stage names
 * the evaluator in the result's record ("importance route"); quiet: the run's decision
 * made again (a later chain), said and recorded once already. The evaluators decide one
 * after another (the route, the first chain, the self-check), never at once. 0, or the
 * error code (--device gpu without a usable device). */
int xf_cmc_route_device(const cmc_run *r, xf_lik *lik, xf_device_job_kind kind, const char *stage,
			int quiet, xf_error *err);

/* An MPI run (run_dist.c): rank 0's resumed shards told to every rank and each shard
 * given to rank s % R (collective; 0 or an error code); the finished shards of the other
 * ranks sent to rank 0 and saved in its store (collective, always completes the
 * exchange; 0 or the first error). */
int xf_cmc_dist_assign(cmc_run *r, xf_error *err);
int xf_cmc_dist_gather(cmc_run *r, xf_error *err);

/* The result record's layout and per-shard slots (result.c). */
int xf_cmc_result_init(const cmc_run *r, xf_cmc_result *res, xf_error *err);
/* The importance route's result (published by xf_cmc_route_publish, route.h): the prior
 * sensitivity on its draws, status and quality (result.c). */
int xf_cmc_finish_route(const cmc_run *r, xf_cmc_result *res, xf_error *err);
/* Combine, summarize, per-angle values, status and quality (result.c). */
int xf_cmc_finish(const cmc_run *r, xf_cmc_result *res, xf_shard_loader load, void *ctx,
		  xf_error *err);

#endif
