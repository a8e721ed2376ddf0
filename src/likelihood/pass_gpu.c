/* pass_gpu.c — the likelihood passes of one evaluator on GPUs (xf_lik_use_gpu,
 * docs/gpu.md): its pairs and data uploaded once, each pass's total fetched in the CPU
 * sums' layout; a failing device hands this and every later pass back to the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/slot.h"
#include "likelihood/pass_internal.h"
#include "xpcsfit/error.h"

/* The pairs of the set and their data, pair by pair, as the GPU takes them. */
static int upload_inputs(const xf_lik *lik, xf_gpu_data *d, uint32_t **pi, uint32_t **pj,
			 double **c2)
{
	const xf_pairset *ps = lik->ps;
	size_t na = (size_t)lik->pr->n_phi, n = ps->n_pairs;
	*pi = malloc(sizeof(uint32_t) * n);
	*pj = malloc(sizeof(uint32_t) * n);
	*c2 = malloc(sizeof(double) * n * na);
	if (!*pi || !*pj || !*c2)
		return -1;
	for (int blk = 0; blk < lik->n_blocks; blk++) {
		pair_cursor c = cursor_at(lik, blk);
		int i, j;
		while (cursor_next(&c, &i, &j)) {
			size_t k = c.k - 1, idx = xf_packed_index((size_t)ps->n_frames, i, j);
			(*pi)[k] = (uint32_t)i;
			(*pj)[k] = (uint32_t)j;
			for (size_t p = 0; p < na; p++)
				(*c2)[k * na + p] = pass_data(lik, (int)p, idx, k);
		}
	}
	*d = (xf_gpu_data){ lik->pr->mode,
			    lik->pr->grid.shear_model,
			    ps->n_frames,
			    lik->pr->n_phi,
			    n,
			    *pi,
			    *pj,
			    *c2 };
	return 0;
}

int xf_lik_use_gpu(xf_lik *lik, int fp32, int max_devices, xf_error *err)
{
	int devices[XF_GPU_MAX_DEVICES], n_dev = 0;
	double scores[XF_GPU_MAX_DEVICES];
	int count = xf_gpu_device_count();
	for (int k = 0; k < count && n_dev < max_devices && n_dev < XF_GPU_MAX_DEVICES; k++)
		if (!xf_gpu_device_info(k, NULL, 0, &scores[n_dev]))
			devices[n_dev++] = k;
	if (lik->loss != XF_LOSS_LINEAR || lik->dist_ranks)
		return xf_fail(err, XF_ERR_CONFIG,
			       "--device gpu: only the least-squares loss in one process runs "
			       "on a GPU");
	if (lik->pr->model->g1) /* the device has the written-out kernels only (adr/0116) */
		return xf_fail(err, XF_ERR_CONFIG, "--device gpu: model %s runs on the CPU only",
			       lik->pr->model->name);
	if (lik->pr->n_rings > 1) /* the device kernel has one q (adr/0064) */
		return xf_fail(err, XF_ERR_CONFIG,
			       "--device gpu: a joint fit over %d q rings runs on the CPU only",
			       lik->pr->n_rings);
	if (n_dev == 0)
		return xf_fail(err, XF_ERR_CONFIG, "--device gpu: %s", xf_gpu_why_none());
	xf_gpu_data d;
	uint32_t *pi = NULL, *pj = NULL;
	double *c2 = NULL;
	char msg[200] = "";
	if (upload_inputs(lik, &d, &pi, &pj, &c2))
		snprintf(msg, sizeof msg, "out of memory staging the GPU upload");
	else
		lik->gpu = xf_gpu_create(&d, devices, scores, n_dev, fp32, msg, sizeof msg);
	free(pi);
	free(pj);
	free(c2);
	if (!lik->gpu)
		return xf_fail(err, XF_ERR_CONFIG, "--device gpu: %s", msg);
	return 0;
}

int xf_pass_gpu_run(xf_lik *lik, xf_accum *total)
{
	const xf_problem *pr = lik->pr;
	size_t na = (size_t)pr->n_phi;
	if (!pr->model->shear)
		for (size_t p = 0; p < na; p++) {
			lik->cos_a[p] = 1.0; /* not read by the static kernel */
			lik->sin_a[p] = 0.0;
		}
	int level = lik->level == XF_PASS_HESSIAN    ? XF_GPU_HESSIAN
		    : lik->level == XF_PASS_GRADIENT ? XF_GPU_GRADIENT
						     : XF_GPU_VALUE;
	xf_gpu_params prm = { &lik->frames, lik->contrast, lik->offset, lik->cos_a, lik->sin_a };
	size_t nt = (size_t)xf_gpu_total_doubles(pr->n_phi);
	double *sums = malloc(sizeof(double) * nt);
	if (!sums || xf_gpu_accumulate(lik->gpu, &prm, level, sums, NULL)) {
		free(sums);
		xf_warn("a GPU pass failed; this fit continues on the CPU");
		xf_pass_gpu_free(lik);
		return -1;
	}
	total->chi2 = sums[XF_SLOT_CHI2];
	total->g1sq = sums[XF_SLOT_G1SQ];
	memcpy(total->hpp, sums + XF_SLOT_HPP, sizeof total->hpp);
	memcpy(total->bp, sums + XF_SLOT_BP, sizeof total->bp);
	/* pc, po, scc..bo: contiguous in both layouts (alloc_slots, slot.h) */
	memcpy(total->pc, sums + XF_SLOT_GLOBAL, sizeof(double) * na * XF_SLOT_ANGLE);
	free(sums);
	return 0;
}

void xf_pass_gpu_free(xf_lik *lik)
{
	xf_gpu_destroy(lik->gpu);
	lik->gpu = NULL;
}
