/* gpu_none.c — the GPU table without the CUDA module (gpu_ops.h): no devices, every call
 * refused, so callers take their CPU path; why_none() gives the loader's reason (module
 * not found, not loadable, a build without CUDA). */
#include <stdio.h>

#include "gpu/gpu_ops.h"

static char none_reason[512] = "this xpcsfit was built without CUDA (XPCSFIT_CUDA=OFF, or no nvcc)";

void xf_gpu_none_set_reason(const char *why)
{
	snprintf(none_reason, sizeof none_reason, "%s", why);
}

static int none_device_count(void)
{
	return 0;
}

static const char *none_why(void)
{
	return none_reason;
}

static int none_device_info(int dev, char *name, size_t name_len, double *score)
{
	(void)dev;
	(void)name;
	(void)name_len;
	(void)score;
	return -1;
}

static xf_gpu_ctx *none_create(const xf_gpu_data *d, const int *devices, const size_t *first,
			       const size_t *count, int n_dev, int fp32, char *err_msg,
			       size_t err_len)
{
	(void)d;
	(void)devices;
	(void)first;
	(void)count;
	(void)n_dev;
	(void)fp32;
	snprintf(err_msg, err_len, "%s", none_reason);
	return NULL;
}

static void none_destroy(xf_gpu_ctx *ctx)
{
	(void)ctx;
}

static int none_accumulate(xf_gpu_ctx *ctx, const xf_gpu_params *prm, int level, double *total,
			   xf_gpu_timing *t)
{
	(void)ctx;
	(void)prm;
	(void)level;
	(void)total;
	(void)t;
	return -1;
}

static int none_c2(xf_gpu_ctx *ctx, const xf_gpu_params *prm, double *c2_out, xf_gpu_timing *t)
{
	(void)ctx;
	(void)prm;
	(void)c2_out;
	(void)t;
	return -1;
}

const xf_gpu_ops xf_gpu_none_ops = {
	.abi = XF_GPU_MODULE_ABI,
	.data_size = sizeof(xf_gpu_data),
	.params_size = sizeof(xf_gpu_params),
	.frames_size = sizeof(xf_frames),
	.backend = "none",
	.device_count = none_device_count,
	.why_none = none_why,
	.device_info = none_device_info,
	.create = none_create,
	.destroy = none_destroy,
	.accumulate = none_accumulate,
	.c2 = none_c2,
};
