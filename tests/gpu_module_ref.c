/* gpu_module_ref.c — a stand-in for the CUDA module (gpu_ops.h, adr/0055) for machines
 * without a GPU: "devices" that run the kernels' CPU reference (gpu_ref.c), so
 * test_gpu_module.py drives the loader, the table and the whole `--device gpu` route
 * through XPCSFIT_CUDA_MODULE. One device, or XF_GPU_REF_DEVICES=N (1 to 4) of them, each
 * summing its range of blocks of the proportional split, the totals added in device
 * order as the CUDA module adds them; XF_GPU_REF_FAIL_CREATE=1 makes every setup fail.
 * Built with XF_REF_ABI set, it claims another
 * interface number, which the loader must refuse. */
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_ops.h"
#include "gpu/slot.h"

#ifndef XF_REF_ABI
#define XF_REF_ABI XF_GPU_MODULE_ABI
#endif

#define REF_MAX_DEVICES 4

/* The data, copied: the caller frees its arrays after create (pass_gpu.c); each
 * device's range of blocks [first, first + count). */
struct xf_gpu_ctx {
	xf_gpu_data d;
	uint32_t *pi, *pj;
	double *c2;
	int n_dev;
	size_t first[REF_MAX_DEVICES], count[REF_MAX_DEVICES];
	double *part; /* one device's total */
};

static int ref_device_count(void)
{
	const char *n = getenv("XF_GPU_REF_DEVICES");
	int k = n ? atoi(n) : 1;
	return k >= 1 && k <= REF_MAX_DEVICES ? k : 1;
}

static const char *ref_why_none(void)
{
	return "the reference module has a device";
}

static int ref_device_info(int dev, char *name, size_t name_len, double *score)
{
	if (dev < 0 || dev >= ref_device_count())
		return -1;
	if (name && name_len)
		strncpy(name, "CPU reference (test module)", name_len - 1)[name_len - 1] = '\0';
	*score = 1.0;
	return 0;
}

static void ref_destroy(xf_gpu_ctx *ctx)
{
	if (!ctx)
		return;
	free(ctx->pi);
	free(ctx->pj);
	free(ctx->c2);
	free(ctx->part);
	free(ctx);
}

static xf_gpu_ctx *ref_create(const xf_gpu_data *d, const int *devices, const size_t *first,
			      const size_t *count, int n_dev, int fp32, char *err_msg,
			      size_t err_len)
{
	(void)devices;
	(void)fp32;
	size_t n = d->n_pairs, nc = d->n_pairs * (size_t)d->n_phi;
	xf_gpu_ctx *ctx = calloc(1, sizeof *ctx);
	if (ctx) {
		ctx->pi = malloc(sizeof(uint32_t) * n);
		ctx->pj = malloc(sizeof(uint32_t) * n);
		ctx->c2 = malloc(sizeof(double) * nc);
		ctx->part = malloc(sizeof(double) * (size_t)xf_gpu_total_doubles(d->n_phi));
	}
	/* XF_GPU_REF_FAIL_CREATE=1: a device that cannot take the data (out of memory there),
	 * the path of a setup that fails after the device was found */
	const char *fail = getenv("XF_GPU_REF_FAIL_CREATE");
	if ((fail && !strcmp(fail, "1")) || n_dev < 1 || n_dev > REF_MAX_DEVICES || !ctx ||
	    !ctx->pi || !ctx->pj || !ctx->c2 || !ctx->part) {
		strncpy(err_msg, "reference module: setup failed", err_len - 1)[err_len - 1] = '\0';
		ref_destroy(ctx);
		return NULL;
	}
	for (int k = 0; k < n_dev; k++) /* a device with no blocks is left out, as in CUDA */
		if (count[k]) {
			ctx->first[ctx->n_dev] = first[k];
			ctx->count[ctx->n_dev++] = count[k];
		}
	memcpy(ctx->pi, d->pair_i, sizeof(uint32_t) * n);
	memcpy(ctx->pj, d->pair_j, sizeof(uint32_t) * n);
	memcpy(ctx->c2, d->c2, sizeof(double) * nc);
	ctx->d = *d;
	ctx->d.pair_i = ctx->pi;
	ctx->d.pair_j = ctx->pj;
	ctx->d.c2 = ctx->c2;
	return ctx;
}

static int ref_accumulate(xf_gpu_ctx *ctx, const xf_gpu_params *prm, int level, double *total,
			  xf_gpu_timing *t)
{
	int nt = xf_gpu_total_doubles(ctx->d.n_phi);
	memset(total, 0, sizeof(double) * (size_t)nt);
	for (int k = 0; k < ctx->n_dev; k++) { /* each device's total, added in device order */
		xf_gpu_ref_accumulate(&ctx->d, prm, level, ctx->first[k],
				      ctx->first[k] + ctx->count[k], ctx->part);
		for (int c = 0; c < nt; c++)
			total[c] += ctx->part[c];
	}
	if (t)
		memset(t, 0, sizeof *t);
	return 0;
}

static int ref_c2(xf_gpu_ctx *ctx, const xf_gpu_params *prm, double *c2_out, xf_gpu_timing *t)
{
	xf_gpu_ref_c2(&ctx->d, prm, c2_out);
	if (t)
		memset(t, 0, sizeof *t);
	return 0;
}

static const xf_gpu_ops ref_ops = {
	.abi = XF_REF_ABI,
	.data_size = sizeof(xf_gpu_data),
	.params_size = sizeof(xf_gpu_params),
	.frames_size = sizeof(xf_frames),
	.backend = "reference",
	.device_count = ref_device_count,
	.why_none = ref_why_none,
	.device_info = ref_device_info,
	.create = ref_create,
	.destroy = ref_destroy,
	.accumulate = ref_accumulate,
	.c2 = ref_c2,
};

__attribute__((visibility("default"))) const xf_gpu_ops *xf_gpu_module_ops(void)
{
	return &ref_ops;
}
