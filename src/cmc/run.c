/* run.c — CMC from start to combined posterior (cmc.h): the CMC layout (the posterior's
 * problem request derived from NLSQ's, xf_request_for_posterior; no config) and warm start,
 * shards and their noise scales and input hashes, the (shard, chain) tasks on the
 * virtual devices, each finished shard saved at once, then diagnostics, exclusions and
 * the combination (result.c assembles the result record).
 *
 * Determinism: a chain is a pure function of (seed, shard, chain); a shard's likelihood
 * pass sums fixed blocks in order whether it runs inline in a task or on the pool; shards
 * are combined in id order. So the bytes do not depend on the thread count, on which
 * thread ran what, or on whether a shard was resumed from the store. */
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmc/cmc_internal.h"
#include "cmc/collapse.h"
#include "cmc/prior_vs_nlsq.h"
#include "cmc/route.h"
#include "cmc/run_internal.h"
#include "util/select.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "xpcsfit/rng.h"
#include "util/clock.h"
#include "util/key_names.h"

#define XF_CMC_RETRIES 2 /* a non-finite start is retried with the next streams */
/* chains start this many metric sds apart: a draw from N(0, jitter² · initial metric),
 * correlated as the metric is (adr/0079: independent per-coordinate jitter put the
 * starts far off a ridge's narrow direction) */
#define XF_INIT_JITTER 0.5
/* the sampler's revision, in each shard's hash: a stored shard of an earlier sampler
 * (adr/0079: whitened coordinates, settling warmup, correlated starts; adr/0082: the
 * power-law coordinates; adr/0086: the scaling integrated out; adr/0090: a one-shard
 * posterior whose draws diverged sampled again; adr/0091: the slope piece read at NLSQ's
 * point) is not reused */
#define XF_SAMPLER_REVISION 7

/* 1.4826·MAD of a shard's residuals at the NLSQ point: a robust noise scale. */
static double shard_noise(const cmc_run *r, const xf_pairset *ps)
{
	size_t n = ps->n_pairs * (size_t)r->pr.n_phi;
	double *res = malloc(sizeof(double) * (n ? n : 1));
	if (!res || n == 0 || xf_problem_residuals(&r->pr, ps, r->x_nlsq, res)) {
		free(res);
		return NAN;
	}
	/* by selection: two sorts of 11.5 M residuals took ~1 s of a ~60 s posterior */
	double med = xf_median(res, n);
	for (size_t k = 0; k < n; k++)
		res[k] = fabs(res[k] - med);
	double mad = xf_median(res, n);
	free(res);
	return 1.4826 * mad;
}

/* Everything a shard's draws depend on, hashed: its pairs and data, the layout, priors,
 * start, metric, the sampler settings and the seed (a stored shard is reused only when
 * every one is the same). */
static uint64_t shard_hash(const cmc_run *r, long s)
{
	const xf_pairset *ps = &r->jobs[s].ps;
	const xf_problem *pr = &r->pr;
	size_t n = (size_t)pr->ds->n_frames, nf = (size_t)pr->n_full;
	uint64_t h = XF_HASH_SEED;
	h = xf_hash_bytes(h, ps->pair_i, sizeof(uint32_t) * ps->n_pairs);
	h = xf_hash_bytes(h, ps->pair_j, sizeof(uint32_t) * ps->n_pairs);
	for (size_t k = 0; k < ps->n_pairs; k++) {
		size_t idx = xf_packed_index(n, ps->pair_i[k], ps->pair_j[k]);
		for (int a = 0; a < pr->n_phi; a++)
			h = xf_hash_bytes(h, &pr->ds->c2[a][idx], sizeof(double));
	}
	h = xf_hash_bytes(h, pr->ds->phi_deg, sizeof(double) * (size_t)pr->n_phi);
	h = xf_hash_bytes(h, &pr->grid, sizeof pr->grid);
	h = xf_hash_bytes(h, pr->lower, sizeof(double) * nf);
	h = xf_hash_bytes(h, pr->upper, sizeof(double) * nf);
	h = xf_hash_bytes(h, pr->prior_mu, sizeof(double) * nf);
	h = xf_hash_bytes(h, pr->prior_sigma, sizeof(double) * nf);
	h = xf_hash_bytes(h, pr->basis, sizeof(double) * (size_t)pr->n_phi * (size_t)pr->n_basis);
	h = xf_hash_bytes(h, r->x_start, sizeof(double) * nf);
	h = xf_hash_bytes(h, r->theta, sizeof(int) * (size_t)r->n_theta);
	h = xf_hash_bytes(h, r->init_cov, sizeof(double) * r->cov_size);
	h = xf_hash_bytes(h, r->init_cov_nlsq, sizeof(double) * r->cov_size);
	const double real[3] = { r->temper, r->jobs[s].sigma_scale, r->target_accept };
	if (r->init_points)
		h = xf_hash_bytes(h, r->init_points,
				  sizeof(double) * (size_t)r->n_chains * (size_t)(r->n_theta + 1));
	const long ints[9] = {
		r->n_chains, r->n_warmup, r->n_samples,	 r->max_depth,	     r->dense,
		r->n_shards, s,		  (long)r->seed, XF_SAMPLER_REVISION
	};
	h = xf_hash_bytes(h, real, sizeof real);
	h = xf_hash_bytes(h, ints, sizeof ints);
	return h;
}

/* Progress (under the lock): shards and transitions done, divergences after warmup, and
 * an ETA from the transitions still to run. Wall time decides only when to tell. */
static void report(cmc_run *r)
{
	if (!r->progress)
		return;
	double now = xf_monotonic_s(), el = now - r->t0;
	long todo = r->n_shards - r->shards_resumed;
	if (r->only_shard >= 0)
		todo = 1;
	long total = todo * r->n_chains * (long)(r->n_warmup + r->n_samples);
	long done = r->iterations_done;
	xf_cmc_progress p = { r->shards_done,
			      r->n_shards,
			      done,
			      total,
			      r->divergences,
			      el,
			      xf_eta_update(&r->eta, el, done, total),
			      XF_CMC_STAGE_NUTS,
			      0,
			      NULL,
			      0,
			      0 };
	xf_cmc_nuts_stage(r, &p);
	xf_cmc_long_run_recheck(r, el, p.eta_s);
	r->last_report = now;
	r->progress(&p, r->progress_ctx);
}

/* After every transition of every chain: count it, and report about once a second. */
static void chain_tick(void *ctx, int sampling, int divergent)
{
	cmc_run *r = ctx;
	pthread_mutex_lock(&r->lock);
	r->iterations_done++;
	r->warmup_done += !sampling;
	r->last_sampling = sampling;
	r->divergences += sampling && divergent;
	xf_cmc_long_run_check(r, xf_monotonic_s() - r->t0);
	if (xf_monotonic_s() - r->last_report >= 1.0)
		report(r);
	pthread_mutex_unlock(&r->lock);
}

/* A chain's start around the NLSQ point, in w: w + XF_INIT_JITTER · L z, L the Cholesky
 * factor of the initial metric cov (its diagonal's square root when that is not positive
 * definite or the metric is diagonal), z standard normal from the chain's own stream.
 * u0 [d] holds the start in u on entry (coordinates pc), its jittered w on return. */
static void start_point(const cmc_run *r, long s, uint64_t key, int d, const xf_plaw_coords *pc,
			const double *cov, double *u0)
{
	double *l = malloc(sizeof(double) * (size_t)d * d), z[64];
	xf_plaw_to_w(pc, u0, u0);
	int full = l && r->dense && d <= 64;
	if (full) {
		memcpy(l, cov, sizeof(double) * (size_t)d * d);
		full = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', d, l, d) == 0;
	}
	for (int k = 0; k < d && k < 64; k++)
		z[k] = xf_rng_normal(r->seed, XF_RNG_CMC_INIT, (uint64_t)s, key, (uint64_t)k);
	for (int k = 0; k < d; k++) {
		double v = 0.0;
		if (full)
			for (int j = 0; j <= k; j++)
				v += l[(size_t)k * d + j] * z[j];
		else
			v = sqrt(r->dense ? cov[(size_t)k * d + k] : cov[k]) *
			    xf_rng_normal(r->seed, XF_RNG_CMC_INIT, (uint64_t)s, key, (uint64_t)k);
		u0[k] += XF_INIT_JITTER * v;
	}
	free(l);
}

/* The collapsed chain's draws (dc, back in u) as full points: each draw's scaling from
 * its exact conditional, keyed (seed; shard, chain·2³² + draw), the full log target as its
 * log density; every other record of the chain as it ran. 0 or −1. */
static int expand_chain(const cmc_run *r, long s, int chain, xf_collapse *col,
			const xf_chain_out *oc, xf_chain_out *out)
{
	int d = r->n_theta + 1, dc = r->dc;
	for (int i = 0; i < r->n_samples; i++)
		if (xf_collapse_expand(col, oc->draws + (size_t)i * dc, r->seed, (uint64_t)s,
				       ((uint64_t)chain << 32) | (uint64_t)i,
				       out->draws + (size_t)i * d, out->logp + i))
			return -1;
	size_t n = (size_t)r->n_samples;
	memcpy(out->energy, oc->energy, sizeof(double) * n);
	memcpy(out->accept_stat, oc->accept_stat, sizeof(double) * n);
	memcpy(out->depth, oc->depth, sizeof(int) * n);
	memcpy(out->n_leapfrog, oc->n_leapfrog, sizeof(int) * n);
	memcpy(out->divergent, oc->divergent, sizeof(int) * n);
	out->step_size = oc->step_size;
	out->grad_evals = oc->grad_evals;
	out->warmup_divergent = oc->warmup_divergent;
	out->warmup_done = oc->warmup_done;
	out->warmup_windows = oc->warmup_windows;
	return 0;
}

/* 1 when this shard's chains run collapsed: scaling sampled, and at the start (the NLSQ
 * point, the shard's noise) its conditional XF_COLLAPSE_MIN_SD sds inside every bound. */
static int collapse_here(const cmc_run *r, const shard_job *job, xf_cmc_target *t, xf_collapse *col)
{
	if (!r->dc || getenv("XPCSFIT_CMC_NO_COLLAPSE") || xf_collapse_init(col, t))
		return 0;
	double *u = malloc(sizeof(double) * (size_t)(r->n_theta + 1));
	double *uc = malloc(sizeof(double) * (size_t)r->dc);
	int ok = u && uc;
	if (ok) {
		xf_cmc_to_u(t, r->x_start, job->noise, u);
		xf_collapse_restrict(col, u, uc);
		ok = xf_collapse_margin(col, uc) >= XF_COLLAPSE_MIN_SD;
	}
	free(u);
	free(uc);
	if (!ok)
		xf_collapse_free(col);
	return ok;
}

/* A collapsed chain's draws are exact where no point of its sampling phase had its
 * scaling near a bound. Warmup points there only shape the adaptation and are forgotten
 * at every warmup transition: the step-size search's far probes (a D0 so large that g1
 * has decayed before the first lag leaves the contrast to its prior, within 8 sds of
 * its bounds) abandoned one chain of static_ridge's default run, whose full sampler
 * then took 88 s instead of 30. */
static int collapse_abandon(void *ctx, int sampling)
{
	xf_collapse *col = ctx;
	if (!sampling) {
		col->near_bound = 0;
		return 0;
	}
	return col->near_bound > 0;
}

/* The target acceptance of shard s's chains: the configured one, raised when the shard
 * samples again (adr/0090). */
static double shard_accept(const cmc_run *r, long s)
{
	return r->jobs[s].resample ? xf_cmc_resample_accept(r->target_accept) : r->target_accept;
}

/* A chain from its start, retried from the next streams when that is not finite; col
 * non-NULL: collapsed (collapse.h), abandoned (−4) once its scaling comes near a bound,
 * at its start too (the start's jitter can carry θ where the scaling's conditional leaves
 * its bounds: weak laminar files).
 * The draws back in u. xf_chain_run's codes. */
static int chain_attempts(cmc_run *r, long s, int chain, xf_cmc_target *t, xf_collapse *col,
			  xf_chain_out *o, double *u0, double *wu, double *wg)
{
	shard_job *job = &r->jobs[s];
	int d = r->n_theta + 1, dd = col ? r->dc : d, rc = -1;
	const xf_plaw_coords *pc = col ? &r->pcc : &r->pc;
	const double *cov = col ? r->init_cov_wc : r->init_cov_w;
	xf_plaw_target pt = { col ? xf_collapse_logp : xf_cmc_target_logp,
			      col ? (void *)col : (void *)t, pc, wu, wg };
	for (int attempt = 0; attempt <= XF_CMC_RETRIES; attempt++) {
		uint64_t key = (uint64_t)chain + ((uint64_t)attempt << 32);
		int handed = r->init_points && attempt == 0;
		if (handed)
			memcpy(u0, r->init_points + (size_t)chain * d, sizeof(double) * (size_t)d);
		else
			xf_cmc_to_u(t, r->x_start, job->noise, u0);
		if (col) /* in place: mcol[j] ≥ j */
			xf_collapse_restrict(col, u0, u0);
		if (handed)
			xf_plaw_to_w(pc, u0, u0);
		else
			start_point(r, s, key, dd, pc, cov, u0);
		xf_chain_setup cs = { .d = dd,
				      .logp = xf_plaw_target_logp,
				      .ctx = &pt,
				      .n_warmup = r->n_warmup,
				      .n_samples = r->n_samples,
				      .max_depth = r->max_depth,
				      .dense = r->dense,
				      .target_accept = shard_accept(r, s),
				      .settle = 1,
				      .init = u0,
				      .init_cov = cov,
				      .rng = { r->seed, (uint64_t)s, key, 0, XF_RNG_CMC_CHAIN },
				      .tick = chain_tick,
				      .tick_ctx = r,
				      .abandon = col ? collapse_abandon : NULL,
				      .abandon_ctx = col };
		rc = xf_chain_run(&cs, o);
		if (rc == -1 && col && col->near_bound) {
			rc = -4; /* the start's scaling beyond or near a bound: no collapsed start */
			break;
		}
		if (rc != -1)
			break;
	}
	if (rc == 0) /* the draws and their log densities back in u */
		xf_plaw_draws_to_u(pc, r->n_samples, o->draws, o->logp);
	return rc;
}

/* One chain of one shard: collapsed where collapse_here allows, sampled again with every
 * coordinate if its scaling comes near a bound. Returns 0, XF_ERR_INTERRUPTED, or −1
 * (failed, reason set), −2 (memory). */
static int run_chain(cmc_run *r, long s, int chain, xf_lik *lik, xf_chain_out *out, char *reason,
		     size_t reason_size)
{
	shard_job *job = &r->jobs[s];
	int d = r->n_theta + 1;
	xf_cmc_target t;
	xf_collapse col;
	xf_chain_out oc;
	memset(&col, 0, sizeof col);
	memset(&oc, 0, sizeof oc);
	double *u0 = malloc(sizeof(double) * (size_t)d);
	double *wu = malloc(sizeof(double) * (size_t)d), *wg = malloc(sizeof(double) * (size_t)d);
	int rc = -2, collapsed = 0;
	if (xf_cmc_target_alloc(&t, &r->pr) || !u0 || !wu || !wg)
		goto done;
	t.lik = lik;
	t.n_points = job->ps.n_pairs * (size_t)r->pr.n_phi;
	t.n_theta = r->n_theta;
	t.theta = r->theta;
	t.dim = d;
	t.temper = r->temper;
	t.sigma_scale = job->sigma_scale;
	t.x_fixed = r->x_start;
	t.evals_total = &r->grad_evals_done; /* progress only */
	collapsed = collapse_here(r, job, &t, &col);
	if (collapsed && xf_chain_out_alloc(&oc, r->dc, r->n_samples, r->dense))
		goto done;
	rc = chain_attempts(r, s, chain, &t, collapsed ? &col : NULL, collapsed ? &oc : out, u0, wu,
			    wg);
	if (collapsed) {
		pthread_mutex_lock(&r->lock);
		r->chains_collapsed++;
		r->chains_fell_back += rc == -4;
		pthread_mutex_unlock(&r->lock);
	}
	if (rc == -4) {
		xf_info("cmc: shard %ld chain %d: the per-angle scaling came within %g conditional "
			"sds of a bound after %d transitions; the chain samples every coordinate "
			"instead (adr/0086)",
			s, chain, XF_COLLAPSE_MIN_SD, oc.warmup_done + oc.samples_done);
		pthread_mutex_lock(&r->lock); /* progress: its transitions run again */
		r->iterations_done -= oc.warmup_done + oc.samples_done;
		r->warmup_done -= oc.warmup_done;
		pthread_mutex_unlock(&r->lock);
		collapsed = 0;
		xf_collapse_free(&col);
		rc = chain_attempts(r, s, chain, &t, NULL, out, u0, wu, wg);
	}
	if (rc == 0 && collapsed && expand_chain(r, s, chain, &col, &oc, out)) {
		rc = -1;
		snprintf(reason, reason_size,
			 "chain %d: a draw's per-angle scaling has no finite density inside its "
			 "bounds",
			 chain);
	} else if (rc == -1)
		snprintf(reason, reason_size,
			 "the log density is not finite at chain %d's start (%d retries)", chain,
			 XF_CMC_RETRIES);
	if (rc == -3)
		rc = XF_ERR_INTERRUPTED;
done:
	free(u0);
	free(wu);
	free(wg);
	if (collapsed)
		xf_collapse_free(&col);
	xf_chain_out_free(&oc);
	xf_cmc_target_free(&t);
	return rc;
}

/* Copy a finished chain into the shard's draws. */
static void keep_chain(shard_job *job, int chain, const xf_chain_out *o)
{
	xf_shard_draws *d = &job->draws;
	size_t n = (size_t)d->n_draws, off = (size_t)chain * n;
	memcpy(d->draws + off * (size_t)d->dim, o->draws, sizeof(double) * n * (size_t)d->dim);
	memcpy(d->logp + off, o->logp, sizeof(double) * n);
	memcpy(d->energy + off, o->energy, sizeof(double) * n);
	memcpy(d->accept_stat + off, o->accept_stat, sizeof(double) * n);
	memcpy(d->depth + off, o->depth, sizeof(int) * n);
	memcpy(d->n_leapfrog + off, o->n_leapfrog, sizeof(int) * n);
	memcpy(d->divergent + off, o->divergent, sizeof(int) * n);
	d->step_size[chain] = o->step_size;
	d->chain_status[chain] = XF_CHAIN_DONE;
	d->grad_evals += o->grad_evals;
	d->warmup_divergent += o->warmup_divergent;
	for (size_t i = 0; i < n; i++)
		job->diverged += o->divergent[i];
}

/* A one-shard posterior whose chains all finished with divergent draws, sampled at the
 * configured target below XF_RESAMPLE_ACCEPT_MAX: its chains sample it again (adr/0090).
 * Not stored before that, so that a resumed run decides the same. */
static int resample_due(const cmc_run *r, const shard_job *job)
{
	return r->n_shards == 1 && !job->resample && job->diverged > 0 && job->chains_failed == 0 &&
	       r->target_accept < XF_RESAMPLE_ACCEPT_MAX;
}

/* The last chain of a shard saves it (its own file: no lock needed for the write). */
static void finish_shard(cmc_run *r, long s)
{
	shard_job *job = &r->jobs[s];
	xf_error err = { 0 };
	if (resample_due(r, job)) { /* sample_shards runs it again: not stored */
		job->first_grad_evals = job->draws.grad_evals;
		xf_shard_draws_free(&job->draws);
		pthread_mutex_lock(&r->lock);
		report(r);
		pthread_mutex_unlock(&r->lock);
		return;
	}
	job->draws.sigma_scale = job->sigma_scale;
	job->draws.noise = job->noise;
	job->draws.grad_evals += job->first_grad_evals; /* the cost of both, adr/0090 */
	/* another rank than 0 keeps the image for rank 0's store (run_dist.c); one shard run
	 * by every rank together is rank 0's to save */
	int rc = r->dist_exact && r->dist->rank != 0 ? 0
		 : r->dist && r->dist->rank != 0
			 ? xf_store_image(s, job->hash, &job->draws, &job->image, &job->image_len,
					  &err)
			 : xf_store_save(r->dir, s, job->hash, &job->draws, &err);
	xf_shard_draws_free(&job->draws);
	pthread_mutex_lock(&r->lock);
	if (rc && !r->err.code)
		r->err = err;
	r->shards_done++;
	report(r);
	pthread_mutex_unlock(&r->lock);
}

/* Task b of the pool: chain b % n_chains of shard b / n_chains. */
static void chain_task(void *ctx, int b)
{
	cmc_run *r = ctx;
	long s = b / r->n_chains;
	int chain = b % r->n_chains, d = r->n_theta + 1;
	shard_job *job = &r->jobs[s];
	if (job->resumed || job->skipped || job->remote || r->stop)
		return;
	/* the test aid of docs/outputs.md: XPCSFIT_TEST_PAUSE=cmc_chain_<shard>_<chain>:<s>
	 * holds this chain's start, so that a signal can land between two chains of a
	 * shard (tests/test_cmc_interrupt.py); cmc_chain_<shard>_<chain>_again when the
	 * shard samples again (adr/0090, tests/test_cmc_resample_cli.py); a getenv when
	 * unset */
	char hook[64];
	snprintf(hook, sizeof hook, "cmc_chain_%ld_%d%s", s, chain, job->resample ? "_again" : "");
	xf_test_pause(hook);
	xf_error err = { 0 };
	xf_chain_out out;
	char reason[160] = "";
	memset(&out, 0, sizeof out);
	xf_lik *lik = xf_lik_create(&r->pr, &job->ps, r->pooled_passes ? r->pool : NULL, &err);
	int rc = -2, dev_rc = 0;
	if (lik && r->dist_exact && xf_lik_distribute(lik)) {
		xf_lik_destroy(lik);
		lik = NULL;
	}
	/* exact NUTS on all the data, the chains in turn: each chain's passes where --device
	 * says (the chains of several shards, or side by side, stay on the CPU threads) */
	if (lik && r->n_shards == 1 && r->pooled_passes &&
	    (dev_rc = xf_cmc_route_device(r, lik, XF_DEVICE_JOB_POSTERIOR_NUTS, "exact NUTS",
					  chain > 0, &err))) {
		xf_lik_destroy(lik);
		lik = NULL;
	}
	if (lik && xf_chain_out_alloc(&out, d, r->n_samples, r->dense) == 0)
		rc = run_chain(r, s, chain, lik, &out, reason, sizeof reason);
	pthread_mutex_lock(&r->lock);
	/* a shard's buffers exist from its first finished chain until it is saved: memory
	 * grows with the shards in flight, not with K (1 430 shards × 0.5 MB otherwise) */
	if ((rc == 0 || rc == -1) && !job->draws.draws &&
	    xf_shard_draws_alloc(&job->draws, r->n_chains, r->n_samples, d))
		rc = -2;
	if (rc == 0) {
		keep_chain(job, chain, &out);
		/* the progress total counts num_warmup, a cap that a settled metric cuts short
		 * (adr/0079): the transitions not run count as done (display only) */
		r->iterations_done += r->n_warmup - out.warmup_done;
	} else if (rc == -1) {
		job->chains_failed++;
		job->draws.failed = 1;
		job->draws.chain_status[chain] = XF_CHAIN_FAILED;
		snprintf(job->draws.reason, sizeof job->draws.reason, "%s", reason);
	} else {
		r->stop = 1; /* interrupted, no device or out of memory: no more tasks */
		if (r->err.code == 0 && dev_rc) /* else the first reason stands */
			xf_fail(&r->err, dev_rc, "%s", err.msg);
		else if (r->err.code == 0 && rc == XF_ERR_INTERRUPTED)
			xf_fail(&r->err, XF_ERR_INTERRUPTED,
				"interrupted: finished shards are kept for --resume, in %s",
				r->dir);
		else if (r->err.code == 0)
			xf_fail(&r->err, XF_ERR_NOMEM, "out of memory sampling shard %ld", s);
	}
	/* only a chain that completed or failed with its reason counts: an interrupted one
	 * (XF_ERR_INTERRUPTED, positive) left zeros in its slots, and were it the shard's
	 * last, the shard would be saved with them (issue 22, adr/0038) */
	int last = (rc == 0 || rc == -1) && ++job->chains_done == r->n_chains;
	pthread_mutex_unlock(&r->lock);
	xf_lik_destroy(lik);
	xf_chain_out_free(&out);
	if (last)
		finish_shard(r, s);
}

/* Shard s's input hash and, with resume, its stored draws when an earlier run finished
 * it (again after the importance route's fallback changed the initial metric). The
 * store is rank 0's: the others learn what it resumed (run_dist.c). */
static int rehash_shard(cmc_run *r, long s, int resume, xf_error *err)
{
	shard_job *job = &r->jobs[s];
	job->hash = shard_hash(r, s);
	int got = resume && (!r->dist || r->dist->rank == 0)
			  ? xf_store_load(r->dir, s, job->hash, &job->draws, err)
			  : 0;
	if (got < 0)
		return err->code;
	if (got) {
		job->resumed = 1;
		xf_shard_draws_free(&job->draws);
		r->shards_resumed++;
		r->shards_done++;
	}
	return 0;
}

/* Shards, their noise scales and hashes; finished shards of an earlier run reused. */
static int prepare_shards(cmc_run *r, int resume, xf_error *err)
{
	const xf_problem *pr = &r->pr;
	r->jobs = calloc((size_t)r->n_shards, sizeof(shard_job));
	xf_pairset *sets = malloc(sizeof(xf_pairset) * (size_t)r->n_shards);
	if (!r->jobs || !sets || xf_cmc_shards_make(sets, r->n_shards, pr->ds->n_frames, r->seed)) {
		free(sets);
		return xf_fail(err, XF_ERR_NOMEM, "out of memory making %ld shards", r->n_shards);
	}
	for (long s = 0; s < r->n_shards; s++)
		r->jobs[s].ps = sets[s];
	free(sets);
	for (long s = 0; s < r->n_shards; s++) {
		shard_job *job = &r->jobs[s];
		if (r->only_shard >= 0 && s != r->only_shard) {
			job->skipped = 1;
			continue;
		}
		job->noise = shard_noise(r, &job->ps);
		if (!(job->noise > 0.0) || !isfinite(job->noise))
			job->noise = 1e-3; /* a perfect NLSQ fit (simulated, noise-free data) */
		job->sigma_scale = 1.5 * job->noise;
		int rc = rehash_shard(r, s, resume, err);
		if (rc)
			return rc;
	}
	if (r->shards_resumed)
		xf_info("cmc: %ld of %ld shards resumed from %s", r->shards_resumed, r->n_shards,
			r->dir);
	return 0;
}

/* The collapsed chains' coordinates (collapse.h): θ's physical ones and log σ, centred
 * at the start u [n_theta + 1], with the initial metric's block of them (a Gaussian's
 * marginal) carried to w. r->dc stays 0 when no scaling coefficient is sampled. 0 or −1. */
static int prepare_collapsed(cmc_run *r, const double *u)
{
	int d = r->n_theta + 1, dc = 0;
	free(r->mcol);
	free(r->init_cov_wc);
	r->mcol = malloc(sizeof(int) * (size_t)d);
	r->init_cov_wc = malloc(sizeof(double) * (size_t)d * d);
	int *param = malloc(sizeof(int) * (size_t)d);
	double *uc = malloc(sizeof(double) * (size_t)d),
	       *cov = malloc(sizeof(double) * (size_t)d * d);
	int rc = -1;
	if (!r->mcol || !r->init_cov_wc || !param || !uc || !cov)
		goto done;
	for (int m = 0; m < r->n_theta; m++)
		if (r->theta[m] < r->pr.n_phys)
			r->mcol[dc++] = m;
	r->dc = dc < r->n_theta ? dc + 1 : 0;
	r->mcol[dc] = r->n_theta;
	dc = r->dc;
	for (int j = 0; j < dc; j++) {
		int mj = r->mcol[j];
		uc[j] = u[mj];
		param[j] = j < dc - 1 ? r->theta[mj] : -1;
		for (int l = 0; l < dc; l++) {
			int ml = r->mcol[l];
			cov[(size_t)j * dc + l] = r->dense ? r->init_cov_nlsq[(size_t)mj * d + ml]
						  : j == l ? r->init_cov_nlsq[mj]
							   : 0.0;
		}
	}
	rc = 0;
	if (dc) {
		xf_plaw_coords_init_at(&r->pcc, &r->pr, param, dc, uc, cov, r->slopes,
				       XF_PLAW_WIDE);
		rc = xf_plaw_gauss_to_w(&r->pcc, uc, cov) ? -1 : 0;
		for (int j = 0; j < dc && !rc; j++)
			for (int l = 0; l < dc; l++)
				if (r->dense)
					r->init_cov_wc[(size_t)j * dc + l] =
						cov[(size_t)j * dc + l];
				else if (j == l)
					r->init_cov_wc[j] = cov[(size_t)j * dc + j];
	}
done:
	free(param);
	free(uc);
	free(cov);
	return rc;
}

/* The chains' coordinates (plaw_coords.h) centred at the start point, and the initial
 * metric carried there: the power laws' ridge and funnel straightened (adr/0082). 0 or
 * −1 out of memory. */
static int prepare_coords(cmc_run *r)
{
	int d = r->n_theta + 1, rc = -1;
	int *param = malloc(sizeof(int) * (size_t)d);
	double *u = malloc(sizeof(double) * (size_t)d);
	double *cov = malloc(sizeof(double) * (size_t)d * d);
	free(r->init_cov_w);
	r->init_cov_w = malloc(sizeof(double) * r->cov_size);
	xf_cmc_target t = { .pr = &r->pr, .n_theta = r->n_theta, .theta = r->theta };
	if (!param || !u || !cov || !r->init_cov_w)
		goto done;
	for (int m = 0; m < d; m++)
		param[m] = m < r->n_theta ? r->theta[m] : -1;
	xf_cmc_to_u(&t, r->x_start, 1.0, u);
	for (int j = 0; j < d; j++)
		for (int l = 0; l < d; l++)
			cov[(size_t)j * d + l] = r->dense ? r->init_cov[(size_t)j * d + l]
						 : j == l ? r->init_cov[j]
							  : 0.0;
	xf_plaw_coords_init_at(&r->pc, &r->pr, param, d, u, cov, r->slopes, XF_PLAW_CHAINS);
	if (xf_plaw_gauss_to_w(&r->pc, u, cov))
		goto done;
	for (int j = 0; j < d; j++)
		for (int l = 0; l < d; l++)
			if (r->dense)
				r->init_cov_w[(size_t)j * d + l] = cov[(size_t)j * d + l];
			else if (j == l)
				r->init_cov_w[j] = cov[(size_t)j * d + j];
	rc = prepare_collapsed(r, u);
	if (!rc) {
		char full[96], col[96];
		xf_plaw_describe(&r->pc, full, sizeof full);
		xf_plaw_describe(&r->pcc, col, sizeof col);
		xf_info("cmc: chains' power-law coordinates (adr/0082): %s; with the scaling "
			"integrated out: %s",
			full, r->dc ? col : "not used");
	}
done:
	free(param);
	free(u);
	free(cov);
	return rc;
}

/* Sample every shard that is not resumed. */
static int sample_shards(cmc_run *r, xf_error *err)
{
	if (prepare_coords(r))
		return xf_fail(err, XF_ERR_NOMEM, "out of memory setting up the chains");
	int n_tasks = (int)(r->n_shards * r->n_chains);
	for (int pass = 0; pass < 2; pass++) {
		if (r->pooled_passes)
			for (int b = 0; b < n_tasks && !r->stop; b++)
				chain_task(r, b); /* chains in turn, each pass on the whole pool */
		else
			xf_pool_run(r->pool, n_tasks, chain_task, r);
		shard_job *job = &r->jobs[0];
		if (r->err.code || r->stop || !resample_due(r, job) ||
		    job->chains_done != r->n_chains)
			break;
		/* the draws are replaced whatever their divergences: which chains diverged
		 * does not choose the draws kept */
		job->resample = 1;
		xf_info("cmc: %d of %d draws diverged at target acceptance %.3g: every chain "
			"samples again at %.3g (adr/0090)",
			job->diverged, r->n_chains * r->n_samples, r->target_accept,
			shard_accept(r, 0));
		job->chains_done = 0;
		job->diverged = 0;
		pthread_mutex_lock(&r->lock); /* progress: the run starts over */
		r->iterations_done = r->warmup_done = 0;
		r->divergences = 0;
		pthread_mutex_unlock(&r->lock);
	}
	if (r->err.code) {
		*err = r->err;
		return err->code;
	}
	return 0;
}

static int load_shard(void *ctx, long id, xf_shard_draws *s, xf_error *err)
{
	cmc_run *r = ctx;
	int got = xf_store_load(r->dir, id, r->jobs[id].hash, s, err);
	if (got < 0)
		return err->code;
	if (got == 0)
		return xf_fail(err, XF_ERR_DATA, "shard %ld is missing from %s", id, r->dir);
	return 0;
}

/* Diagnostics of every shard and the exclusion rules (cmc.md "Diagnostics"). */
static int judge_shards(cmc_run *r, xf_cmc_result *res, xf_error *err)
{
	const xf_cmc_options *o = r->o;
	for (long s = 0; s < r->n_shards; s++) {
		xf_cmc_shard *sh = &res->shards[s];
		xf_shard_draws d;
		int rc = load_shard(r, s, &d, err);
		if (rc)
			return rc;
		sh->id = s;
		sh->n_points = r->jobs[s].ps.n_pairs * (size_t)r->pr.n_phi;
		if (xf_shard_summarize(&r->pr, r->theta, r->n_theta, &d, r->max_depth, sh)) {
			xf_shard_draws_free(&d);
			return xf_fail(err, XF_ERR_NOMEM, "out of memory summarizing shard %ld", s);
		}
		xf_shard_draws_free(&d);
		sh->kept = !sh->failed;
		if (sh->failed)
			continue;
		if (sh->divergence_rate > o->max_divergence_rate) {
			sh->kept = 0;
			snprintf(sh->reason, sizeof sh->reason,
				 "divergence rate %.3g > %.3g (validation.max_divergence_rate)",
				 sh->divergence_rate, o->max_divergence_rate);
		} else if (!(sh->rhat_max <= o->max_per_shard_rhat)) {
			sh->kept = 0;
			snprintf(sh->reason, sizeof sh->reason,
				 "max R-hat %.4g > %.4g (validation.max_per_shard_rhat)",
				 sh->rhat_max, o->max_per_shard_rhat);
		}
	}
	return 0;
}

/* The CMC layout: the posterior's request derived from NLSQ's (xf_request_for_posterior:
 * the per-angle mode asked for or NLSQ's, σ sampled), the free parameters to sample. */
static int build_problem(cmc_run *r, const xf_request *req, const xf_cmc_options *o,
			 const xf_dataset *ds, const xf_estimate *nlsq, xf_error *err)
{
	xf_request post;
	xf_request_for_posterior(req, o->per_angle_mode, nlsq->scaling_mode, &post);
	int rc = xf_problem_build(&r->pr, &post, ds, err);
	if (rc)
		return rc;
	r->theta = malloc(sizeof(int) * (size_t)r->pr.n_full);
	if (!r->theta)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory");
	for (int k = 0; k < r->pr.n_full; k++)
		if (!r->pr.fixed[k])
			r->theta[r->n_theta++] = k;
	return 0;
}

static void free_run(cmc_run *r)
{
	if (r->jobs)
		for (long s = 0; s < r->n_shards; s++) {
			xf_pairset_free(&r->jobs[s].ps);
			xf_shard_draws_free(&r->jobs[s].draws);
			free(r->jobs[s].image);
		}
	free(r->jobs);
	free(r->theta);
	free(r->x_start);
	free(r->x_nlsq);
	free(r->init_cov);
	free(r->init_cov_nlsq);
	free(r->jtj_start);
	free(r->init_cov_w);
	free(r->init_cov_wc);
	free(r->mcol);
	xf_pool_destroy(r->pool);
	xf_problem_free(&r->pr);
	pthread_mutex_destroy(&r->lock);
}

/* more shards than frame pairs would mean shards of one pair or none: a config error,
 * not something to run for hours */
static int check_shards(const xf_cmc_options *o, const xf_dataset *ds, xf_error *err)
{
	size_t n_pairs = xf_fitted_pairs((size_t)ds->n_frames);
	if (o->num_shards > 0 && (size_t)o->num_shards > n_pairs)
		return xf_fail(err, XF_ERR_CONFIG,
			       XF_KEY_CMC_SHARDS ": %ld shards, but the data have "
						 "only %zu frame pairs; use far fewer shards",
			       o->num_shards, n_pairs);
	return 0;
}

int xf_cmc_check_layout(const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
			const xf_estimate *nlsq, xf_error *err)
{
	int rc = check_shards(o, ds, err);
	if (rc || !nlsq)
		return rc;
	cmc_run r;
	memset(&r, 0, sizeof r);
	rc = build_problem(&r, req, o, ds, nlsq, err);
	free(r.theta);
	xf_problem_free(&r.pr);
	return rc;
}

/* The data's precision JᵀJ/σ̂² at the start, σ̂² = χ²/n there, from one pass over every
 * point (NULL where it cannot be had: out of memory, a non-finite or perfect fit). Where
 * NLSQ's JᵀJ was rank-deficient its covariance is a pseudo-inverse of the Jacobi-scaled
 * matrix, whose null direction in x is diag(JᵀJ)·n rather than the ridge n itself: the
 * Laplace metric built from it spread the shear rate along D0's ridge (adr/0097). */
static double *start_precision(cmc_run *r)
{
	int nf = r->pr.n_full;
	double *jtj = malloc(sizeof(double) * (size_t)nf * nf);
	double *b = malloc(sizeof(double) * (size_t)nf);
	xf_pairset all = { 0 };
	xf_error err = { 0 };
	xf_lik *lik = NULL;
	xf_lik_out out = { 0 };
	out.jtj = jtj;
	out.b = b;
	if (!jtj || !b || xf_pairset_all(&all, r->pr.ds->n_frames) ||
	    !(lik = xf_lik_create(&r->pr, &all, r->pool, &err)) ||
	    xf_lik_eval(lik, r->x_start, &out))
		goto fail;
	double s2 = out.chi2 / (double)xf_lik_points(lik);
	if (!(s2 > 0.0) || !isfinite(s2))
		goto fail;
	for (size_t k = 0; k < (size_t)nf * nf; k++)
		jtj[k] /= s2;
	xf_lik_destroy(lik);
	xf_pairset_free(&all);
	free(b);
	return jtj;
fail:
	xf_lik_destroy(lik);
	xf_pairset_free(&all);
	free(jtj);
	free(b);
	return NULL;
}

static int setup(cmc_run *r, const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
		 const xf_estimate *nlsq, int n_threads, xf_error *err)
{
	int rc = build_problem(r, req, o, ds, nlsq, err);
	if (rc)
		return rc;
	r->o = o;
	r->nlsq = nlsq;
	r->n_threads = n_threads;
	r->seed = o->seed;
	r->n_chains = o->num_chains;
	r->n_warmup = o->num_warmup;
	r->n_samples = o->num_samples;
	r->max_depth = o->max_tree_depth;
	r->dense = o->dense_mass;
	r->target_accept = o->target_accept_prob;
	/* the model's default when the config leaves it out, and its floor (adr/0041) */
	const xf_model_record *model = xf_model_record_of(req->mode);
	if (!(r->target_accept > 0.0))
		r->target_accept = model->nuts_accept_default;
	if (r->target_accept < model->nuts_accept_floor)
		r->target_accept = model->nuts_accept_floor;
	size_t n_pairs = xf_fitted_pairs((size_t)ds->n_frames);
	if ((rc = check_shards(o, ds, err)))
		return rc;
	r->n_shards = xf_cmc_shard_count(o, ds->n_points, n_pairs);
	r->temper = 1.0 / (double)r->n_shards;
	if (o->use_nlsq_informed_priors) {
		int n = xf_cmc_informed_priors(&r->pr, nlsq, o->nlsq_prior_width_factor);
		xf_warn(XF_KEY_CMC_INFORMED_PRIORS ": %d priors are centred on the NLSQ result "
						   "(width factor %g): the data then enter twice",
			n, o->nlsq_prior_width_factor);
	}
	int d = r->n_theta + 1;
	r->cov_size = r->dense ? (size_t)d * d : (size_t)d;
	r->x_start = malloc(sizeof(double) * (size_t)r->pr.n_full);
	r->x_nlsq = malloc(sizeof(double) * (size_t)r->pr.n_full);
	r->init_cov = malloc(sizeof(double) * r->cov_size);
	r->init_cov_nlsq = malloc(sizeof(double) * r->cov_size);
	xf_blas_single_thread();
	if (xf_blas_reserve(err)) /* a limited address space (adr/0072) */
		return err->code;
	r->pool = xf_pool_create(n_threads);
	if (!r->x_start || !r->x_nlsq || !r->init_cov || !r->init_cov_nlsq || !r->pool)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory setting up CMC");
	xf_cmc_warm_start(&r->pr, nlsq, r->x_nlsq, r->x_start);
	{
		int known[XF_PLAW_MAX];
		double q[XF_PLAW_MAX], sd_q[XF_PLAW_MAX];
		xf_cmc_nlsq_slopes(&r->pr, nlsq, known, q, sd_q);
		for (int i = 0; i < XF_PLAW_MAX; i++)
			r->slopes[i] = (xf_plaw_slope){ known[i], q[i], sd_q[i] };
	}
	/* the pass for the data's precision only where the Laplace metric applies (a ridge):
	 * elsewhere the metric is NLSQ's and the pass would be wasted */
	size_t n_shard = ds->n_points / (size_t)r->n_shards;
	int laplace = xf_cmc_initial_metric(&r->pr, nlsq, r->theta, r->n_theta, r->x_start,
					    r->temper, n_shard, r->dense, NULL, r->init_cov);
	if (laplace && (r->jtj_start = start_precision(r)))
		xf_cmc_initial_metric(&r->pr, nlsq, r->theta, r->n_theta, r->x_start, r->temper,
				      n_shard, r->dense, r->jtj_start, r->init_cov);
	if (laplace)
		xf_info("cmc: NLSQ's covariance is a ridge: the initial metric is the Laplace "
			"approximation with the priors in (adr/0084)");
	memcpy(r->init_cov_nlsq, r->init_cov, sizeof(double) * r->cov_size);
	/* one shard with a block of pairs for every device: its passes use the whole pool;
	 * otherwise one chain per device (a pass sums the same blocks in the same order
	 * either way: the same bytes; small data then use every core, not one) */
	r->pooled_passes =
		r->n_shards == 1 &&
		n_pairs >= (size_t)XF_PAIRS_PER_BLOCK * (size_t)(n_threads > 1 ? n_threads : 1);
	return 0;
}

int xf_cmc_run(const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
	       const xf_estimate *nlsq, int n_threads, const char *shard_dir, int resume,
	       xf_cmc_progress_fn progress, void *progress_ctx, xf_cmc_result *res, xf_error *err)
{
	cmc_run r;
	memset(&r, 0, sizeof r);
	memset(res, 0, sizeof *res);
	pthread_mutex_init(&r.lock, NULL);
	r.only_shard = -1;
	r.device = &res->device;
	r.dir = shard_dir;
	r.progress = progress;
	r.progress_ctx = progress_ctx;
	r.dist = xf_dist_get();
	int root = !r.dist || r.dist->rank == 0;
	double t0 = xf_monotonic_s(), route_time = 0.0;
	xf_cmc_route_out ro;
	memset(&ro, 0, sizeof ro);
	/* the layout first: a config error leaves nothing on disk. An MPI run agrees on
	 * the status after each step where the ranks can differ (xpcsfit/dist.h); only
	 * rank 0 has a shard store, sums up and combines. */
	int rc = setup(&r, req, o, ds, nlsq, n_threads, err);
	if (rc == 0 && root) /* a prior far from the data, named before the sampling */
		rc = xf_cmc_compare_priors(&r, res, err);
	if (rc == 0 && root)
		rc = xf_mkdir_here(shard_dir, err);
	if ((rc = xf_dist_agree(rc, err)))
		goto done;
	/* the exact posterior under several ranks: the importance route shares its points,
	 * NUTS its passes (every rank runs the same chains in step; adr/0045) */
	r.dist_exact = r.dist && r.dist->n_ranks > 1 && r.n_shards == 1;
	if (r.dist_exact)
		r.pooled_passes = 1;
	xf_info("cmc: %ld shards of ~%zu points, %d chains x (%d warmup + %d draws), %s metric, "
		"target acceptance %.2f, %d sampled parameters + sigma per shard",
		r.n_shards, ds->n_points / (size_t)r.n_shards, r.n_chains, r.n_warmup, r.n_samples,
		r.dense ? "dense" : "diagonal", r.target_accept, r.n_theta);
	/* K = 1: the exact posterior, first by the importance route (route.c), NUTS when its
	 * check fails or when asked for */
	int route = r.n_shards == 1 && o->route == XF_CMC_ROUTE_AUTO;
	rc = prepare_shards(&r, resume && !route, err);
	if ((rc = xf_dist_agree(rc, err)))
		goto done;
	double t_route = xf_monotonic_s();
	if (route) {
		r.t0 = t_route;
		int rr = xf_cmc_route_importance(&r, res, r.init_cov, &ro, err);
		route_time = xf_monotonic_s() - t_route;
		if (rr == 0) {
			r.route_draws = &ro.draws;
			rc = xf_cmc_finish_route(&r, res, err);
			res->sigma_mean = ro.sigma_mean;
			res->sigma_sd = ro.sigma_sd;
			res->time_sampling_s = route_time;
			goto finish;
		}
		r.init_points = ro.inits; /* NULL unless the route's weights meant something */
		rc = rr == 1 ? rehash_shard(&r, 0, resume, err) : rr;
		if (rc == 0 && r.jobs[0].resumed)
			xf_info("cmc: shard 0 resumed from %s", r.dir);
		if ((rc = xf_dist_agree(rc, err)))
			goto done;
	}
	if ((rc = xf_cmc_dist_assign(&r, err)))
		goto done;
	r.t0 = xf_monotonic_s();
	report(&r);
	rc = sample_shards(&r, err);
	/* the finished shards reach rank 0's store even when a rank failed (--resume) */
	xf_error gerr = { 0 };
	int grc = xf_cmc_dist_gather(&r, &gerr);
	if (!rc && grc) {
		rc = grc;
		*err = gerr;
	}
	if ((rc = xf_dist_agree(rc, err)))
		goto done;
	double t_sampled = xf_monotonic_s();
	if (root) {
		if ((rc = xf_cmc_result_init(&r, res, err)) == 0 &&
		    (rc = judge_shards(&r, res, err)) == 0)
			rc = xf_cmc_finish(&r, res, load_shard, &r, err);
		res->time_sampling_s = t_sampled - r.t0;
		res->time_combine_s = xf_monotonic_s() - t_sampled;
		res->time_nuts_s = r.n_shards == 1 ? res->time_sampling_s : 0.0;
		/* run.log only: resumed shards and other ranks' chains are not counted, so
		 * parameters.json (the same bytes over ranks and resumes) does not say it */
		if (r.chains_collapsed)
			xf_info("cmc: %ld chains of this process sampled with the per-angle "
				"scaling "
				"integrated out (adr/0086), %ld of them again with every "
				"coordinate "
				"near a bound",
				r.chains_collapsed, r.chains_fell_back);
	}
finish:
	if (rc == 0) {
		res->route = r.route_draws     ? XF_POSTERIOR_ROUTE_IMPORTANCE
			     : r.n_shards == 1 ? XF_POSTERIOR_ROUTE_NUTS
					       : XF_POSTERIOR_ROUTE_CMC;
		snprintf(res->route_note, sizeof res->route_note, "%s", ro.note);
		res->approx = ro.check; /* moved: the result frees its arrays */
		memset(&ro.check, 0, sizeof ro.check);
		res->time_approx_s = route_time;
		if (!r.route_draws)
			res->sigma_mean = res->sigma_sd = NAN;
		res->time_total_s = xf_monotonic_s() - t0;
	}
	rc = xf_dist_agree(rc, err);
done:
	xf_cmc_route_out_free(&ro);
	if (rc)
		xf_cmc_result_free(res);
	free_run(&r);
	return rc;
}

int xf_cmc_sample_one(const xf_request *req, const xf_cmc_options *o, const xf_dataset *ds,
		      const xf_estimate *nlsq, int n_threads, const char *shard_dir, long id,
		      long *n_shards, xf_cmc_shard *out, xf_error *err)
{
	cmc_run r;
	memset(&r, 0, sizeof r);
	memset(out, 0, sizeof *out);
	pthread_mutex_init(&r.lock, NULL);
	r.dir = shard_dir;
	r.only_shard = id;
	int rc = xf_mkdir_here(shard_dir, err);
	if (rc || (rc = setup(&r, req, o, ds, nlsq, n_threads, err)))
		goto done;
	*n_shards = r.n_shards;
	if (id < 0 || id >= r.n_shards) {
		rc = xf_fail(err, XF_ERR_CONFIG, "shard %ld does not exist (%ld shards)", id,
			     r.n_shards);
		goto done;
	}
	if ((rc = prepare_shards(&r, 0, err)) || (rc = sample_shards(&r, err)))
		goto done;
	xf_shard_draws d;
	if ((rc = load_shard(&r, id, &d, err)))
		goto done;
	out->id = id;
	out->n_points = r.jobs[id].ps.n_pairs * (size_t)r.pr.n_phi;
	if (xf_shard_summarize(&r.pr, r.theta, r.n_theta, &d, r.max_depth, out))
		rc = xf_fail(err, XF_ERR_NOMEM, "out of memory summarizing shard %ld", id);
	xf_shard_draws_free(&d);
done:
	free_run(&r);
	return rc;
}
