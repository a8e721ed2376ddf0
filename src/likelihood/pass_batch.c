/* pass_batch.c — χ² at several points in one sweep over the data (likelihood.h,
 * xf_lik_eval_values). The posterior's importance sampling evaluates the exact log
 * density at thousands of points; one pass per point reads all the data each time. Here a
 * pool task takes one block of pairs and evaluates it at every point of the batch before
 * the next block, so the block's data (≤ 4 096 pairs × n_phi values, < 1 MB) come from
 * memory once and from cache for the other points.
 *
 * Each point has an evaluator of its own — a copy of the caller's that shares its data,
 * pairs and block starts, with its own per-x workspace and block slots — and its slots are
 * reduced in block order by the same code as xf_lik_eval: the bits of one pass per point,
 * whatever the batch size or the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "likelihood/pass_internal.h"

/* The batch evaluators: shallow copies of lik that own only their workspace. */
static int batch_alloc(xf_lik *lik)
{
	if (lik->batch)
		return 0;
	size_t na = (size_t)lik->pr->n_phi;
	lik->batch = calloc(XF_LIK_BATCH, sizeof(xf_lik));
	if (!lik->batch)
		return -1;
	lik->n_batch = XF_LIK_BATCH;
	for (int i = 0; i < XF_LIK_BATCH; i++) {
		xf_lik *b = &lik->batch[i];
		*b = *lik;
		b->pool = NULL;
		b->batch = NULL;
		b->n_batch = 0;
		b->gpu = NULL;
		b->dist_ranks = 0;
		b->dist_blocks = b->dist_counts = NULL;
		b->dist_send = b->dist_recv = NULL;
		b->level = XF_PASS_VALUE;
		b->contrast = malloc(sizeof(double) * na);
		b->offset = malloc(sizeof(double) * na);
		b->cos_a = malloc(sizeof(double) * na);
		b->sin_a = malloc(sizeof(double) * na);
		b->phase_sin = b->phase_cos = NULL;
		b->slots = NULL;
		b->slot_store = NULL;
		memset(&b->frames, 0, sizeof b->frames);
		if (!b->contrast || !b->offset || !b->cos_a || !b->sin_a ||
		    xf_pass_phase_alloc(b) || xf_pass_alloc_slots(b) ||
		    xf_frames_alloc(&b->frames, lik->pr->ds->n_frames, lik->pr->model->shear))
			return -1; /* what was allocated is freed by xf_pass_batch_free */
	}
	return 0;
}

void xf_pass_batch_free(xf_lik *lik)
{
	for (int i = 0; lik->batch && i < lik->n_batch; i++) {
		xf_lik *b = &lik->batch[i];
		free(b->contrast);
		free(b->offset);
		free(b->cos_a);
		free(b->sin_a);
		free(b->phase_sin);
		free(b->phase_cos);
		free(b->slots);
		free(b->slot_store);
		xf_frames_free(&b->frames);
	}
	free(lik->batch);
	lik->batch = NULL;
	lik->n_batch = 0;
}

typedef struct sweep {
	xf_lik *batch;
	int n; /* points in this sweep */
} sweep;

/* Pool task: one block at every point of the sweep. */
static void sweep_block(void *ctx, int block)
{
	const sweep *s = ctx;
	for (int i = 0; i < s->n; i++)
		xf_pass_run_block(&s->batch[i], block);
}

/* Points [i0, i0 + m) of x through one sweep at level (m ≤ XF_LIK_BATCH); each batch
 * evaluator's slots then hold its point's sums, reduced into its total slot. */
static void sweep_points(xf_lik *lik, xf_pass_level level, int i0, int m, const double *x)
{
	size_t nf = (size_t)lik->pr->n_full;
	for (int i = 0; i < m; i++) {
		lik->batch[i].level = level;
		xf_pass_prepare(&lik->batch[i], x + (size_t)(i0 + i) * nf);
	}
	sweep s = { lik->batch, m };
	if (lik->pool)
		xf_pool_run(lik->pool, lik->n_blocks, sweep_block, &s);
	else
		for (int blk = 0; blk < lik->n_blocks; blk++)
			sweep_block(&s, blk);
	for (int i = 0; i < m; i++) {
		xf_lik *b = &lik->batch[i];
		xf_pass_reduce_slots(b, &b->slots[b->n_blocks]);
	}
}

/* n points of x through sweeps at level (values or scaling): χ² into chi2 (+∞ where not
 * finite, as one pass per point gives it) and, at the scaling level, each point's h_ss
 * and b_s (xf_lik_eval_scaling's). 0, or −1 out of memory. */
static int run_sweeps(xf_lik *lik, xf_pass_level level, int n, const double *x, double *chi2,
		      double *h_ss, double *b_s)
{
	const xf_problem *pr = lik->pr;
	size_t ns = 2 * (size_t)pr->n_basis;
	if (batch_alloc(lik)) {
		xf_pass_batch_free(lik);
		return -1;
	}
	for (int i0 = 0; i0 < n; i0 += XF_LIK_BATCH) {
		int m = n - i0 < XF_LIK_BATCH ? n - i0 : XF_LIK_BATCH;
		sweep_points(lik, level, i0, m, x);
		for (int i = 0; i < m; i++) {
			const xf_accum *total = &lik->batch[i].slots[lik->batch[i].n_blocks];
			size_t k = (size_t)(i0 + i);
			double c = total->chi2 / (pr->sigma * pr->sigma); /* as xf_lik_eval */
			chi2[k] = isfinite(c) ? c : INFINITY;
			if (level == XF_PASS_SCALING && isfinite(c))
				xf_pass_scaling_out(pr, total, h_ss + k * ns * ns, b_s + k * ns);
		}
	}
	return 0;
}

int xf_lik_eval_scalings(xf_lik *lik, int n, const double *x, double *chi2, double *h_ss,
			 double *b_s)
{
	const xf_problem *pr = lik->pr;
	size_t nf = (size_t)pr->n_full, ns = 2 * (size_t)pr->n_basis;
	if (lik->loss != XF_LOSS_LINEAR)
		return -1;
	if (lik->dist_ranks || lik->gpu) { /* their own sweep: one point at a time */
		for (int i = 0; i < n; i++)
			if (xf_lik_eval_scaling(lik, x + (size_t)i * nf, chi2 + i,
						h_ss + i * ns * ns, b_s + i * ns))
				chi2[i] = INFINITY;
		return 0;
	}
	return run_sweeps(lik, XF_PASS_SCALING, n, x, chi2, h_ss, b_s);
}

int xf_lik_eval_values(xf_lik *lik, int n, const double *x, double *chi2)
{
	size_t nf = (size_t)lik->pr->n_full;
	/* a distributed or GPU evaluator has its own sweep: one point at a time */
	if (lik->dist_ranks || lik->gpu || lik->loss != XF_LOSS_LINEAR) {
		for (int i = 0; i < n; i++) {
			xf_lik_out out = { 0.0, NULL, NULL, 0.0 };
			chi2[i] = xf_lik_eval(lik, x + (size_t)i * nf, &out) ? INFINITY : out.chi2;
		}
		return 0;
	}
	return run_sweeps(lik, XF_PASS_VALUE, n, x, chi2, NULL, NULL);
}
