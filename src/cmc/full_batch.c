/* full_batch.c — the exact full-data log posterior at many points (target.h,
 * xf_full_logp_batch): what the consensus self-check and the posterior's importance route
 * evaluate thousands of times. The prior terms per point, then χ² of a chunk of points in
 * one sweep over the data (xf_lik_eval_values: each block read once for up to 16
 * points), then the same assembly as the sampler's target (xf_cmc_target_combine). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmc/target.h"
#include "util/interrupt.h"
#include "xpcsfit/dist.h"

#define XF_FULL_CHUNK 64 /* points between two looks at interruption and progress */

/* The log target at points [i0, i1) of u into lp. */
static int run_points(xf_full_batch *fb, const double *u, long i0, long i1, double *lp)
{
	const xf_cmc_target *t = fb->t;
	int nt = t->n_theta, nf = t->pr->n_full;
	long n = i1 - i0;
	double *x = malloc(sizeof(double) * (size_t)XF_FULL_CHUNK * (size_t)nf);
	double *prior = malloc(sizeof(double) * XF_FULL_CHUNK);
	double *chi2 = malloc(sizeof(double) * XF_FULL_CHUNK);
	double *ui = malloc(sizeof(double) * (size_t)(nt + 1));
	int rc = 0;
	if (!x || !prior || !chi2 || !ui) {
		rc = -1;
		goto done;
	}
	for (long c0 = 0; c0 < n; c0 += XF_FULL_CHUNK) {
		int m = n - c0 < XF_FULL_CHUNK ? (int)(n - c0) : XF_FULL_CHUNK;
		for (int k = 0; k < m; k++) {
			const double *p = u + (size_t)(i0 + c0 + k) * (size_t)fb->dim;
			prior[k] = xf_cmc_target_prior(t, p, x + (size_t)k * nf);
		}
		if (xf_lik_eval_values(t->lik, m, x, chi2)) {
			rc = -1;
			goto done;
		}
		for (int k = 0; k < m; k++) {
			const double *p = u + (size_t)(i0 + c0 + k) * (size_t)fb->dim;
			memcpy(ui, p, sizeof(double) * (size_t)nt);
			ui[nt] = fb->dim > nt ? p[nt] : fb->log_sigma;
			double v = xf_cmc_target_combine(t, ui, prior[k], chi2[k]);
			lp[c0 + k] = isfinite(v) ? v : -INFINITY;
		}
		if (fb->tick)
			fb->tick(fb->tick_ctx, c0 + m, n);
		if (xf_interrupted())
			break; /* the caller sees it and stops */
	}
done:
	free(x);
	free(prior);
	free(chi2);
	free(ui);
	return rc;
}

int xf_full_logp_batch(void *ctx, int n, const double *u, double *lp)
{
	xf_full_batch *fb = ctx;
	int ranks = fb->spread ? xf_dist_ranks() : 1;
	if (ranks <= 1)
		return run_points(fb, u, 0, n, lp);
	/* this rank's contiguous run of the points, then every run to every rank */
	int first, count;
	xf_dist_blocks(n, ranks, xf_dist_rank(), &first, &count);
	int rc = run_points(fb, u, first, first + count, lp + first);
	if (xf_dist_allgather_run(lp, (size_t)first, (size_t)count, (size_t)n))
		rc = -1;
	return rc;
}
