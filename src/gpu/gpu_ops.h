/* gpu_ops.h — the seam between the programs and the CUDA module (docs/gpu.md, adr/0055):
 * one table of function pointers behind gpu.h. The programs carry no CUDA: gpu_load.c
 * dlopen()s libxpcsfit-cuda.so (gpu_cuda.cu) the first time a caller asks for a device
 * and takes its table, or keeps gpu_none.c's (no devices) when the module is absent or
 * cannot be loaded.
 *
 * The module and the program must agree on the structs of gpu.h: the table carries an
 * interface number and their sizes, and a table that differs is refused. */
#ifndef XPCSFIT_GPU_GPU_OPS_H
#define XPCSFIT_GPU_GPU_OPS_H

#include "gpu/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raise on any change of this table or of gpu.h's structs. */
#define XF_GPU_MODULE_ABI  1
#define XF_GPU_MODULE_FILE "libxpcsfit-cuda.so"
/* The one symbol the module exports: const xf_gpu_ops *xf_gpu_module_ops(void). */
#define XF_GPU_MODULE_ENTRY "xf_gpu_module_ops"

typedef struct xf_gpu_ops {
	int abi;	     /* XF_GPU_MODULE_ABI of the module's build */
	size_t data_size;    /* sizeof(xf_gpu_data) there */
	size_t params_size;  /* sizeof(xf_gpu_params) */
	size_t frames_size;  /* sizeof(xf_frames) */
	const char *backend; /* "cuda" */
	int (*device_count)(void);
	/* why device_count() is 0: one phrase (the CUDA runtime's own words) */
	const char *(*why_none)(void);
	int (*device_info)(int dev, char *name, size_t name_len, double *score);
	/* the blocks already split (gpu_load.c, xf_device_split): device devices[k] takes
	 * count[k] blocks from first[k]; a count of 0 leaves it out */
	xf_gpu_ctx *(*create)(const xf_gpu_data *d, const int *devices, const size_t *first,
			      const size_t *count, int n_dev, int fp32, char *err_msg,
			      size_t err_len);
	void (*destroy)(xf_gpu_ctx *ctx);
	int (*accumulate)(xf_gpu_ctx *ctx, const xf_gpu_params *prm, int level, double *total,
			  xf_gpu_timing *t);
	int (*c2)(xf_gpu_ctx *ctx, const xf_gpu_params *prm, double *c2_out, xf_gpu_timing *t);
} xf_gpu_ops;

typedef const xf_gpu_ops *(*xf_gpu_module_entry)(void);

/* The table without a module (gpu_none.c): no devices, every call refused; why_none()
 * says why the module is not there (set by the loader). */
extern const xf_gpu_ops xf_gpu_none_ops;
void xf_gpu_none_set_reason(const char *why);

#ifdef __cplusplus
}
#endif

#endif
