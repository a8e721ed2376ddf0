/* gpu_cuda.cu — the CUDA module (libxpcsfit-cuda.so, adr/0055): fp64 kernels for c2, the
 * NLSQ sums (χ², JᵀJ, Jᵀr) and a shard's log density and gradient (the gradient level), on
 * the arithmetic of kernel.h and slot.h that the CPU runs too, behind the one table of
 * gpu_ops.h that the programs dlopen() (gpu_load.c). Compiled with --fmad=false so no
 * fused multiply-add changes a rounding the CPU build (-ffp-contract=off) does not make;
 * the CUDA runtime is linked in statically, so the module needs only the driver. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/gpu_ops.h"
#include "gpu/slot.h"

/* The per-device state: its blocks' data, uploaded once, and the per-pass buffers. */
typedef struct gpu_dev {
	int id;
	size_t block0, n_blocks, pair0, n_pairs;
	uint32_t *pi, *pj;
	double *c2;	/* [n_pairs][n_phi] */
	double *frames; /* [8][n_frames]: cd, dcd, cg, dcg */
	double *angle;	/* [4][n_phi]: contrast, offset, cos, sin */
	double *slots;	/* [n_blocks][n_phi][XF_SLOT_DOUBLES] */
	double *total;	/* [xf_gpu_total_doubles] */
	double *points; /* [n_pairs][n_phi] c2 out (allocated on first use) */
	cudaStream_t stream;
	cudaEvent_t ev[4];
} gpu_dev;

struct xf_gpu_ctx {
	xf_gpu_data d; /* pointers not kept: the host arrays are uploaded */
	int fp32;
	int n_dev;
	gpu_dev dev[XF_GPU_MAX_DEVICES];
	double *staging; /* pinned: frames and angles of a pass */
	double *host_total;
};

/* What a kernel reads, passed by value. */
typedef struct dev_view {
	xf_frames f;
	xf_mode mode;
	xf_shear_model shear_model;
	int n_phi;
	size_t n_pairs;
	const uint32_t *pi, *pj;
	const double *c2, *angle;
} dev_view;

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "xpcsfit: CUDA: %s at %s:%d\n", cudaGetErrorString(e_),    \
				__FILE__, __LINE__);                                               \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

/* fp32 evaluation (the measured option): kernel.h's formulas in float; the sums stay
 * double. Not the production arithmetic, so it lives here and not in kernel.h. */
__device__ static float sinc_f(float x, float *ds)
{
	if (fabsf(x) < 1e-4f) {
		float x2 = x * x;
		*ds = -x / 3.0f + x2 * x / 30.0f;
		return 1.0f - x2 / 6.0f + x2 * x2 / 120.0f;
	}
	float sn, cs;
	sincosf(x, &sn, &cs);
	float sc = sn / x;
	*ds = (cs - sc) / x;
	return sc;
}

__device__ static float integral_f(const double *c, double *const dc[3], int i, int j, float di[3])
{
	float diff = (float)(c[i] - c[j]); /* the difference in double: C_k grows with k */
	float in = sqrtf(diff * diff + 1e-12f);
	float k = diff / in;
	for (int m = 0; m < 3; m++)
		di[m] = k * (float)(dc[m][i] - dc[m][j]);
	return in;
}

__device__ static double point_row_f32(const dev_view &v, int p, int i, int j, double data,
				       double jrow[XF_N_PHYS], double *g1sq)
{
	const float con = (float)v.angle[p], cos_a = (float)v.angle[2 * v.n_phi + p];
	const float sin_a = (float)v.angle[3 * v.n_phi + p], w = (float)v.f.w, s = (float)v.f.s;
	float di[3], dg[3] = { 0, 0, 0 }, ig = 0.0f, factor = 1.0f, dfactor = 0.0f;
	float lg = -w * integral_f(v.f.cd, v.f.dcd, i, j, di);
	float g1d = lg < -700.0f ? 0.0f : expf(lg);
	int clipped = lg < -700.0f;
	if (v.f.with_shear) {
		ig = integral_f(v.f.cg, v.f.dcg, i, j, dg);
		float ph = s * cos_a * ig, ds;
		if (v.shear_model == XF_SHEAR_PNAS2024) {
			float sc = sinc_f((float)M_PI * ph, &ds), sg = sc < 0.0f ? -1.0f : 1.0f;
			factor = sg * sc;
			dfactor = sg * (float)M_PI * ds;
		} else {
			float sc = sinc_f(ph, &ds);
			factor = sc * sc;
			dfactor = 2.0f * sc * ds;
		}
	}
	float g1 = g1d * factor;
	for (int m = 0; m < XF_N_PHYS; m++)
		jrow[m] = 0.0;
	if (g1 < (float)XF_G1_FLOOR) {
		g1 = (float)XF_G1_FLOOR;
	} else {
		float two_cg1 = 2.0f * con * g1;
		for (int m = 0; m < 3 && !clipped; m++)
			jrow[m] = (double)(two_cg1 * g1 * -w * di[m]);
		if (v.f.with_shear) {
			float shear = two_cg1 * g1d * dfactor * s;
			for (int m = 0; m < 3; m++)
				jrow[3 + m] = (double)(shear * cos_a * dg[m]);
			jrow[XF_P_PHI0] = (double)(-shear * sin_a * (float)XF_DEG2RAD * ig);
		}
	}
	*g1sq = (double)g1 * (double)g1;
	return data - (v.angle[v.n_phi + p] + v.angle[p] * *g1sq);
}

/* One (block, angle) slot: thread partials, then a fixed tree over the threads (the
 * reference, gpu_ref.c, adds in this order too). */
template <int LEVEL, bool F32> __global__ void accum_kernel(dev_view v, double *slots)
{
	const int p = blockIdx.y, t = threadIdx.x;
	const size_t b = blockIdx.x;
	double s[XF_SLOT_DOUBLES];
	for (int c = 0; c < XF_SLOT_DOUBLES; c++)
		s[c] = 0.0;
	const double con = v.angle[p], off = v.angle[v.n_phi + p];
	const double cos_a = v.angle[2 * v.n_phi + p], sin_a = v.angle[3 * v.n_phi + p];
	size_t first = b * XF_GPU_BLOCK_PAIRS;
	size_t end =
		first + XF_GPU_BLOCK_PAIRS < v.n_pairs ? first + XF_GPU_BLOCK_PAIRS : v.n_pairs;
	for (size_t k = first + (size_t)t; k < end; k += XF_GPU_THREADS) {
		double j[XF_N_PHYS], g1sq, res;
		double data = v.c2[k * (size_t)v.n_phi + (size_t)p];
		if (F32)
			res = point_row_f32(v, p, (int)v.pi[k], (int)v.pj[k], data, j, &g1sq);
		else
			res = xf_point_row(&v.f, v.mode, v.shear_model, cos_a, sin_a, con, off,
					   (int)v.pi[k], (int)v.pj[k], data, j, &g1sq);
		xf_slot_add(s, LEVEL, res, j, g1sq);
	}
	__shared__ double red[XF_GPU_THREADS];
	double *out = slots + (b * (size_t)v.n_phi + (size_t)p) * XF_SLOT_DOUBLES;
	for (int c = 0; c < XF_SLOT_DOUBLES; c++) {
		red[t] = s[c];
		__syncthreads();
		for (int half = XF_GPU_THREADS / 2; half > 0; half /= 2) {
			if (t < half)
				red[t] += red[t + half];
			__syncthreads();
		}
		if (t == 0)
			out[c] = red[0];
		__syncthreads();
	}
}

/* Each total component adds its slots in (block, angle) order. */
__global__ void total_kernel(const double *slots, size_t n_blocks, int n_phi, double *total)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c >= xf_gpu_total_doubles(n_phi))
		return;
	double sum = 0.0;
	if (c < XF_SLOT_GLOBAL) {
		for (size_t b = 0; b < n_blocks; b++)
			for (int p = 0; p < n_phi; p++)
				sum += slots[(b * (size_t)n_phi + (size_t)p) * XF_SLOT_DOUBLES + c];
		total[c] = sum;
		return;
	}
	int a = c - XF_SLOT_GLOBAL, p, comp;
	if (a < XF_N_PHYS * n_phi) {
		p = a / XF_N_PHYS;
		comp = XF_SLOT_PC + a % XF_N_PHYS;
	} else if (a < 2 * XF_N_PHYS * n_phi) {
		a -= XF_N_PHYS * n_phi;
		p = a / XF_N_PHYS;
		comp = XF_SLOT_PO + a % XF_N_PHYS;
	} else {
		a -= 2 * XF_N_PHYS * n_phi;
		p = a % n_phi;
		comp = XF_SLOT_SCC + a / n_phi;
	}
	for (size_t b = 0; b < n_blocks; b++)
		sum += slots[(b * (size_t)n_phi + (size_t)p) * XF_SLOT_DOUBLES + comp];
	total[c] = sum;
}

__global__ void c2_kernel(dev_view v, double *out)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= v.n_pairs * (size_t)v.n_phi)
		return;
	size_t k = idx / (size_t)v.n_phi;
	int p = (int)(idx % (size_t)v.n_phi);
	double g1 = xf_pair_g1(&v.f, v.mode, v.shear_model, v.angle[2 * v.n_phi + p],
			       v.angle[3 * v.n_phi + p], (int)v.pi[k], (int)v.pj[k], NULL);
	out[idx] = v.angle[v.n_phi + p] + v.angle[p] * g1 * g1;
}

/* Why there is no device (no driver, a driver older than the runtime linked in, no
 * device), kept for xf_gpu_why_none(). */
static char no_device[256] = "no CUDA device";

static int cuda_device_count(void)
{
	int n = 0, driver = 0, runtime = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e == cudaSuccess)
		return n;
	cudaDriverGetVersion(&driver); /* 0: no driver library at all */
	cudaRuntimeGetVersion(&runtime);
	if (driver == 0)
		snprintf(no_device, sizeof no_device,
			 "no CUDA driver (libcuda.so.1, the NVIDIA driver, is not installed)");
	else if (e == cudaErrorInsufficientDriver)
		snprintf(no_device, sizeof no_device,
			 "the CUDA driver (%d.%d) is older than the module's CUDA runtime (%d.%d)",
			 driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
	else
		snprintf(no_device, sizeof no_device, "no CUDA device (%s)", cudaGetErrorString(e));
	return 0;
}

static const char *cuda_why_none(void)
{
	return no_device;
}

static int cuda_device_info(int dev, char *name, size_t name_len, double *score)
{
	cudaDeviceProp prop;
	int sm = 0, khz = 0, ratio = 0;
	if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&ratio, cudaDevAttrSingleToDoublePrecisionPerfRatio, dev) !=
		    cudaSuccess)
		return -1;
	if (name)
		snprintf(name, name_len, "%s", prop.name);
	/* 64 fp32 lanes per SM per clock on current parts; fp64 is that over the ratio */
	*score = (double)sm * (double)khz * 1e-6 * 64.0 / (ratio > 0 ? ratio : 64);
	return 0;
}

static void dev_free(gpu_dev *g)
{
	cudaSetDevice(g->id);
	cudaFree(g->pi);
	cudaFree(g->pj);
	cudaFree(g->c2);
	cudaFree(g->frames);
	cudaFree(g->angle);
	cudaFree(g->slots);
	cudaFree(g->total);
	cudaFree(g->points);
	for (int e = 0; e < 4; e++)
		if (g->ev[e])
			cudaEventDestroy(g->ev[e]);
	if (g->stream)
		cudaStreamDestroy(g->stream);
}

static int dev_init(xf_gpu_ctx *ctx, gpu_dev *g, const xf_gpu_data *d)
{
	size_t np = (size_t)d->n_phi, nf = (size_t)d->n_frames;
	g->pair0 = g->block0 * XF_GPU_BLOCK_PAIRS;
	size_t end = (g->block0 + g->n_blocks) * XF_GPU_BLOCK_PAIRS;
	g->n_pairs = (end < d->n_pairs ? end : d->n_pairs) - g->pair0;
	CK(cudaSetDevice(g->id));
	CK(cudaStreamCreate(&g->stream));
	for (int e = 0; e < 4; e++)
		CK(cudaEventCreate(&g->ev[e]));
	CK(cudaMalloc(&g->pi, sizeof(uint32_t) * g->n_pairs));
	CK(cudaMalloc(&g->pj, sizeof(uint32_t) * g->n_pairs));
	CK(cudaMalloc(&g->c2, sizeof(double) * g->n_pairs * np));
	CK(cudaMalloc(&g->frames, sizeof(double) * 8 * nf));
	CK(cudaMalloc(&g->angle, sizeof(double) * 4 * np));
	CK(cudaMalloc(&g->slots, sizeof(double) * g->n_blocks * np * XF_SLOT_DOUBLES));
	CK(cudaMalloc(&g->total, sizeof(double) * (size_t)xf_gpu_total_doubles(d->n_phi)));
	CK(cudaMemcpy(g->pi, d->pair_i + g->pair0, sizeof(uint32_t) * g->n_pairs,
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(g->pj, d->pair_j + g->pair0, sizeof(uint32_t) * g->n_pairs,
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(g->c2, d->c2 + g->pair0 * np, sizeof(double) * g->n_pairs * np,
		      cudaMemcpyHostToDevice));
	(void)ctx;
	return 0;
}

static void cuda_destroy(xf_gpu_ctx *ctx);

static xf_gpu_ctx *cuda_create(const xf_gpu_data *d, const int *devices, const size_t *first,
			       const size_t *count, int n_dev, int fp32, char *err_msg,
			       size_t err_len)
{
	xf_gpu_ctx *ctx = (xf_gpu_ctx *)calloc(1, sizeof *ctx);
	if (!ctx) {
		snprintf(err_msg, err_len, "out of memory");
		return NULL;
	}
	ctx->d = *d;
	ctx->d.pair_i = ctx->d.pair_j = NULL;
	ctx->d.c2 = NULL;
	ctx->fp32 = fp32;
	size_t stage = 8 * (size_t)d->n_frames + 4 * (size_t)d->n_phi;
	int ok = cudaMallocHost(&ctx->staging, sizeof(double) * stage) == cudaSuccess;
	ctx->host_total = (double *)malloc(sizeof(double) * (size_t)xf_gpu_total_doubles(d->n_phi));
	ok = ok && ctx->host_total;
	for (int k = 0; ok && k < n_dev; k++) {
		if (!count[k])
			continue;
		gpu_dev *g = &ctx->dev[ctx->n_dev++];
		g->id = devices[k];
		g->block0 = first[k];
		g->n_blocks = count[k];
		ok = !dev_init(ctx, g, d);
	}
	if (!ok) {
		snprintf(err_msg, err_len, "GPU setup failed (memory or device error)");
		cuda_destroy(ctx);
		return NULL;
	}
	return ctx;
}

static void cuda_destroy(xf_gpu_ctx *ctx)
{
	if (!ctx)
		return;
	for (int k = 0; k < ctx->n_dev; k++)
		dev_free(&ctx->dev[k]);
	cudaFreeHost(ctx->staging);
	free(ctx->host_total);
	free(ctx);
}

/* Pack the pass's frames and angles into the pinned staging buffer. */
static void stage_params(xf_gpu_ctx *ctx, const xf_gpu_params *prm)
{
	size_t nf = (size_t)ctx->d.n_frames, np = (size_t)ctx->d.n_phi;
	const xf_frames *f = prm->frames;
	double *s = ctx->staging;
	const double *src[8] = { f->cd, f->dcd[0], f->dcd[1], f->dcd[2],
				 f->cg, f->dcg[0], f->dcg[1], f->dcg[2] };
	for (int a = 0; a < 8; a++)
		if (src[a])
			memcpy(s + a * nf, src[a], sizeof(double) * nf);
		else
			memset(s + a * nf, 0, sizeof(double) * nf);
	const double *ang[4] = { prm->contrast, prm->offset, prm->cos_a, prm->sin_a };
	for (int a = 0; a < 4; a++)
		memcpy(s + 8 * nf + a * np, ang[a], sizeof(double) * np);
}

static dev_view view_of(const xf_gpu_ctx *ctx, const gpu_dev *g, const xf_frames *host_f)
{
	size_t nf = (size_t)ctx->d.n_frames;
	dev_view v;
	memset(&v, 0, sizeof v);
	v.f.n = ctx->d.n_frames;
	v.f.with_shear = host_f->with_shear; /* the model's shear terms (its record) */
	v.f.w = host_f->w;
	v.f.s = host_f->s;
	v.f.cd = g->frames;
	v.f.cg = g->frames + 4 * nf;
	for (int m = 0; m < 3; m++) {
		v.f.dcd[m] = g->frames + (size_t)(1 + m) * nf;
		v.f.dcg[m] = g->frames + (size_t)(5 + m) * nf;
	}
	v.mode = ctx->d.mode;
	v.shear_model = ctx->d.shear_model;
	v.n_phi = ctx->d.n_phi;
	v.n_pairs = g->n_pairs;
	v.pi = g->pi;
	v.pj = g->pj;
	v.c2 = g->c2;
	v.angle = g->angle;
	return v;
}

static int upload(xf_gpu_ctx *ctx, gpu_dev *g)
{
	size_t nf = (size_t)ctx->d.n_frames, np = (size_t)ctx->d.n_phi;
	CK(cudaSetDevice(g->id));
	CK(cudaEventRecord(g->ev[0], g->stream));
	CK(cudaMemcpyAsync(g->frames, ctx->staging, sizeof(double) * 8 * nf, cudaMemcpyHostToDevice,
			   g->stream));
	CK(cudaMemcpyAsync(g->angle, ctx->staging + 8 * nf, sizeof(double) * 4 * np,
			   cudaMemcpyHostToDevice, g->stream));
	CK(cudaEventRecord(g->ev[1], g->stream));
	return 0;
}

static int launch_accum(const dev_view &v, int level, int fp32, gpu_dev *g)
{
	dim3 grid((unsigned)g->n_blocks, (unsigned)v.n_phi);
	cudaStream_t st = g->stream;
	if (fp32) {
		if (level == XF_GPU_HESSIAN)
			accum_kernel<XF_GPU_HESSIAN, true>
				<<<grid, XF_GPU_THREADS, 0, st>>>(v, g->slots);
		else if (level == XF_GPU_GRADIENT)
			accum_kernel<XF_GPU_GRADIENT, true>
				<<<grid, XF_GPU_THREADS, 0, st>>>(v, g->slots);
		else
			accum_kernel<XF_GPU_VALUE, true>
				<<<grid, XF_GPU_THREADS, 0, st>>>(v, g->slots);
	} else {
		if (level == XF_GPU_HESSIAN)
			accum_kernel<XF_GPU_HESSIAN, false>
				<<<grid, XF_GPU_THREADS, 0, st>>>(v, g->slots);
		else if (level == XF_GPU_GRADIENT)
			accum_kernel<XF_GPU_GRADIENT, false>
				<<<grid, XF_GPU_THREADS, 0, st>>>(v, g->slots);
		else
			accum_kernel<XF_GPU_VALUE, false>
				<<<grid, XF_GPU_THREADS, 0, st>>>(v, g->slots);
	}
	CK(cudaGetLastError());
	int nt = xf_gpu_total_doubles(v.n_phi);
	total_kernel<<<(nt + 127) / 128, 128, 0, st>>>(g->slots, g->n_blocks, v.n_phi, g->total);
	CK(cudaGetLastError());
	return 0;
}

static float elapsed(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0.0f;
	cudaEventElapsedTime(&ms, a, b);
	return ms;
}

static int cuda_accumulate(xf_gpu_ctx *ctx, const xf_gpu_params *prm, int level, double *total,
			   xf_gpu_timing *t)
{
	int nt = xf_gpu_total_doubles(ctx->d.n_phi);
	stage_params(ctx, prm);
	/* every device starts its blocks, then the totals come back in device order */
	for (int k = 0; k < ctx->n_dev; k++) {
		gpu_dev *g = &ctx->dev[k];
		if (upload(ctx, g) ||
		    launch_accum(view_of(ctx, g, prm->frames), level, ctx->fp32, g))
			return -1;
		CK(cudaEventRecord(g->ev[2], g->stream));
	}
	memset(total, 0, sizeof(double) * (size_t)nt);
	if (t)
		memset(t, 0, sizeof *t);
	for (int k = 0; k < ctx->n_dev; k++) {
		gpu_dev *g = &ctx->dev[k];
		CK(cudaSetDevice(g->id));
		CK(cudaMemcpyAsync(ctx->host_total, g->total, sizeof(double) * (size_t)nt,
				   cudaMemcpyDeviceToHost, g->stream));
		CK(cudaEventRecord(g->ev[3], g->stream));
		CK(cudaStreamSynchronize(g->stream));
		for (int c = 0; c < nt; c++)
			total[c] += ctx->host_total[c];
		if (t) {
			t->upload_s += 1e-3 * elapsed(g->ev[0], g->ev[1]);
			t->kernel_s += 1e-3 * elapsed(g->ev[1], g->ev[2]);
			t->download_s += 1e-3 * elapsed(g->ev[2], g->ev[3]);
		}
	}
	return 0;
}

static int cuda_c2(xf_gpu_ctx *ctx, const xf_gpu_params *prm, double *c2_out, xf_gpu_timing *t)
{
	size_t np = (size_t)ctx->d.n_phi;
	stage_params(ctx, prm);
	if (t)
		memset(t, 0, sizeof *t);
	for (int k = 0; k < ctx->n_dev; k++) {
		gpu_dev *g = &ctx->dev[k];
		if (upload(ctx, g))
			return -1;
		if (!g->points)
			CK(cudaMalloc(&g->points, sizeof(double) * g->n_pairs * np));
		dev_view v = view_of(ctx, g, prm->frames);
		size_t n = g->n_pairs * np;
		c2_kernel<<<(unsigned)((n + 255) / 256), 256, 0, g->stream>>>(v, g->points);
		CK(cudaGetLastError());
		CK(cudaEventRecord(g->ev[2], g->stream));
		CK(cudaMemcpyAsync(c2_out + g->pair0 * np, g->points, sizeof(double) * n,
				   cudaMemcpyDeviceToHost, g->stream));
		CK(cudaEventRecord(g->ev[3], g->stream));
		CK(cudaStreamSynchronize(g->stream));
		if (t) {
			t->upload_s += 1e-3 * elapsed(g->ev[0], g->ev[1]);
			t->kernel_s += 1e-3 * elapsed(g->ev[1], g->ev[2]);
			t->download_s += 1e-3 * elapsed(g->ev[2], g->ev[3]);
		}
	}
	return 0;
}

static const xf_gpu_ops cuda_ops = {
	XF_GPU_MODULE_ABI,
	sizeof(xf_gpu_data),
	sizeof(xf_gpu_params),
	sizeof(xf_frames),
	"cuda",
	cuda_device_count,
	cuda_why_none,
	cuda_device_info,
	cuda_create,
	cuda_destroy,
	cuda_accumulate,
	cuda_c2,
};

/* The module's one exported symbol (everything else is hidden, -fvisibility=hidden). */
extern "C" __attribute__((visibility("default"))) const xf_gpu_ops *xf_gpu_module_ops(void)
{
	return &cuda_ops;
}
