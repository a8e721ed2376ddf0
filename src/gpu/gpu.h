/* gpu.h — the CUDA validation backend (docs/gpu.md, adr/0037): the data of one pair set
 * uploaded once, then per pass the per-frame integrals and per-angle scalars go down and
 * one total of xf_accum's layout (slot.h) comes back. The kernels (gpu_cuda.cu) are a
 * separate module, libxpcsfit-cuda.so, built when XPCSFIT_CUDA finds nvcc; the programs
 * link no CUDA and load it on the first call that needs a device (gpu_load.c, adr/0055).
 * Without it every call behaves as gpu_none.c: no devices. gpu_ref.c is the CPU
 * reference of the same arithmetic in the same order.
 *
 * Determinism: a pass adds its points in a fixed order (threads of a block, a fixed tree
 * over threads, blocks in order, devices in order), so a result depends on the inputs
 * and the device list only, never on scheduling. */
#ifndef XPCSFIT_GPU_GPU_H
#define XPCSFIT_GPU_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "model/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pairs of one accumulation block: the CPU pass's block (likelihood.h). */
#define XF_GPU_BLOCK_PAIRS 4096
#define XF_GPU_MAX_DEVICES 16

/* What is uploaded once. */
typedef struct xf_gpu_data {
	xf_mode mode;
	xf_shear_model shear_model;
	int n_frames;
	int n_phi;
	size_t n_pairs;
	const uint32_t *pair_i, *pair_j; /* [n_pairs], i < j */
	const double *c2;		 /* [n_pairs][n_phi] measured c2 */
} xf_gpu_data;

/* What changes every pass (host memory). */
typedef struct xf_gpu_params {
	const xf_frames *frames;     /* xf_frames_compute at theta */
	const double *contrast;	     /* [n_phi] */
	const double *offset;	     /* [n_phi] */
	const double *cos_a, *sin_a; /* [n_phi] of (φ0 − φ) in radians */
} xf_gpu_params;

/* Seconds of the phases of the last call (device events; 0 in the reference). */
typedef struct xf_gpu_timing {
	double upload_s;   /* host → device */
	double kernel_s;   /* kernels */
	double download_s; /* device → host */
} xf_gpu_timing;

typedef struct xf_gpu_ctx xf_gpu_ctx;

/* "cuda", or "none" without a loadable module (a build without nvcc, the module missing
 * or not loadable). The first call of any function here loads the module. */
const char *xf_gpu_backend(void);
/* Devices usable for fp64 work; 0 without a device or without the module. */
int xf_gpu_device_count(void);
/* Why xf_gpu_device_count() is 0, one phrase for an error line: no module (and where it
 * was looked for), the loader's error, a build without CUDA, the CUDA runtime's reason.
 * Never NULL; meaningful only when there is no device. */
const char *xf_gpu_why_none(void);
/* The file of the loaded module; NULL without one. */
const char *xf_gpu_module_path(void);
/* Name and score of device dev (SMs × clock in GHz × fp64 lanes per SM per clock / 64:
 * proportional to its fp64 peak); 0, or −1 when there is no such device. */
int xf_gpu_device_info(int dev, char *name, size_t name_len, double *score);

/* Upload d to devices[0..n_dev) with blocks split in proportion to scores (largest
 * remainder, xf_device_split); fp32: evaluate points in float, accumulate in double (the
 * measured option, docs/gpu.md). NULL on any failure (message in err_msg). */
xf_gpu_ctx *xf_gpu_create(const xf_gpu_data *d, const int *devices, const double *scores, int n_dev,
			  int fp32, char *err_msg, size_t err_len);
void xf_gpu_destroy(xf_gpu_ctx *ctx);
/* One pass at a level (slot.h) into total [xf_gpu_total_doubles(n_phi)]; 0, or −1 when a
 * device failed (the caller reruns the pass on the CPU). */
int xf_gpu_accumulate(xf_gpu_ctx *ctx, const xf_gpu_params *prm, int level, double *total,
		      xf_gpu_timing *t);
/* c2 of every point into c2_out [n_pairs][n_phi]; 0 or −1. */
int xf_gpu_c2(xf_gpu_ctx *ctx, const xf_gpu_params *prm, double *c2_out, xf_gpu_timing *t);

/* The CPU reference (gpu_ref.c): the same sums over blocks [block0, block1) in the
 * kernels' order, the device's total for that range. */
void xf_gpu_ref_accumulate(const xf_gpu_data *d, const xf_gpu_params *prm, int level, size_t block0,
			   size_t block1, double *total);
void xf_gpu_ref_c2(const xf_gpu_data *d, const xf_gpu_params *prm, double *c2_out);
/* Blocks of a pair count (inline: the CUDA module, which links nothing of the programs,
 * counts them too). */
static inline size_t xf_gpu_blocks(size_t n_pairs)
{
	return (n_pairs + XF_GPU_BLOCK_PAIRS - 1) / XF_GPU_BLOCK_PAIRS;
}

#ifdef __cplusplus
}
#endif

#endif
