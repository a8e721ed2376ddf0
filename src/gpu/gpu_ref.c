/* gpu_ref.c — the CPU reference of the CUDA kernels (gpu.h): slot.h's arithmetic in the
 * kernels' order, so validate can tell libm differences from kernel bugs. */
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/slot.h"

/* The slot of (block, angle p): thread partials, then the kernel's tree over threads. */
static void ref_slot(const xf_gpu_data *d, const xf_gpu_params *prm, int level, size_t block, int p,
		     double part[XF_GPU_THREADS][XF_SLOT_DOUBLES])
{
	size_t first = block * XF_GPU_BLOCK_PAIRS;
	size_t end =
		first + XF_GPU_BLOCK_PAIRS < d->n_pairs ? first + XF_GPU_BLOCK_PAIRS : d->n_pairs;
	memset(part, 0, sizeof(double) * XF_GPU_THREADS * XF_SLOT_DOUBLES);
	for (int t = 0; t < XF_GPU_THREADS; t++)
		for (size_t k = first + (size_t)t; k < end; k += XF_GPU_THREADS) {
			double j[XF_N_PHYS], g1sq;
			double res =
				xf_point_row(prm->frames, d->mode, d->shear_model, prm->cos_a[p],
					     prm->sin_a[p], prm->contrast[p], prm->offset[p],
					     (int)d->pair_i[k], (int)d->pair_j[k],
					     d->c2[k * (size_t)d->n_phi + (size_t)p], j, &g1sq);
			xf_slot_add(part[t], level, res, j, g1sq);
		}
	for (int half = XF_GPU_THREADS / 2; half > 0; half /= 2)
		for (int t = 0; t < half; t++)
			for (int c = 0; c < XF_SLOT_DOUBLES; c++)
				part[t][c] += part[t + half][c];
}

void xf_gpu_ref_accumulate(const xf_gpu_data *d, const xf_gpu_params *prm, int level, size_t block0,
			   size_t block1, double *total)
{
	int n_phi = d->n_phi;
	size_t nb = block1 - block0;
	double(*part)[XF_SLOT_DOUBLES] = malloc(sizeof(double) * XF_GPU_THREADS * XF_SLOT_DOUBLES);
	double *slots = malloc(sizeof(double) * nb * (size_t)n_phi * XF_SLOT_DOUBLES);
	if (!part || !slots)
		abort(); /* a reference run on test sizes; no recovery worth having */
	for (size_t b = 0; b < nb; b++)
		for (int p = 0; p < n_phi; p++) {
			ref_slot(d, prm, level, block0 + b, p, part);
			memcpy(slots + (b * (size_t)n_phi + (size_t)p) * XF_SLOT_DOUBLES, part[0],
			       sizeof(double) * XF_SLOT_DOUBLES);
		}
	/* the final kernel: each total component adds its slots in (block, angle) order */
	memset(total, 0, sizeof(double) * (size_t)xf_gpu_total_doubles(n_phi));
	for (size_t b = 0; b < nb; b++)
		for (int p = 0; p < n_phi; p++) {
			const double *s = slots + (b * (size_t)n_phi + (size_t)p) * XF_SLOT_DOUBLES;
			for (int c = 0; c < XF_SLOT_GLOBAL; c++)
				total[c] += s[c];
			for (int c = XF_SLOT_GLOBAL; c < XF_SLOT_DOUBLES; c++)
				total[xf_gpu_total_index(n_phi, p, c)] += s[c];
		}
	free(part);
	free(slots);
}

void xf_gpu_ref_c2(const xf_gpu_data *d, const xf_gpu_params *prm, double *c2_out)
{
	for (size_t k = 0; k < d->n_pairs; k++)
		for (int p = 0; p < d->n_phi; p++) {
			double g1 = xf_pair_g1(prm->frames, d->mode, d->shear_model, prm->cos_a[p],
					       prm->sin_a[p], (int)d->pair_i[k], (int)d->pair_j[k],
					       NULL);
			c2_out[k * (size_t)d->n_phi + (size_t)p] =
				prm->offset[p] + prm->contrast[p] * g1 * g1;
		}
}
