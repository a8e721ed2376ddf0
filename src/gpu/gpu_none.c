/* gpu_none.c — the backend of a build without CUDA (gpu.h): no devices, every call
 * refused, so callers take their CPU path. */
#include <stdio.h>

#include "gpu/gpu.h"

const char *xf_gpu_backend(void)
{
	return "none";
}

int xf_gpu_device_count(void)
{
	return 0;
}

int xf_gpu_device_info(int dev, char *name, size_t name_len, double *score)
{
	(void)dev;
	(void)name;
	(void)name_len;
	(void)score;
	return -1;
}

xf_gpu_ctx *xf_gpu_create(const xf_gpu_data *d, const int *devices, const double *scores, int n_dev,
			  int fp32, char *err_msg, size_t err_len)
{
	(void)d;
	(void)devices;
	(void)scores;
	(void)n_dev;
	(void)fp32;
	snprintf(err_msg, err_len, "this xpcsfit was built without CUDA (XPCSFIT_CUDA)");
	return NULL;
}

void xf_gpu_destroy(xf_gpu_ctx *ctx)
{
	(void)ctx;
}

int xf_gpu_accumulate(xf_gpu_ctx *ctx, const xf_gpu_params *prm, int level, double *total,
		      xf_gpu_timing *t)
{
	(void)ctx;
	(void)prm;
	(void)level;
	(void)total;
	(void)t;
	return -1;
}

int xf_gpu_c2(xf_gpu_ctx *ctx, const xf_gpu_params *prm, double *c2_out, xf_gpu_timing *t)
{
	(void)ctx;
	(void)prm;
	(void)c2_out;
	(void)t;
	return -1;
}
