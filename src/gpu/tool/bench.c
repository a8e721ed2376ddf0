/* bench.c — xpcsfit-gpu bench: the laminar JᵀJ pass on the CPU (production, the pool) and
 * on the GPU over a sweep of sizes; the crossover where the GPU starts to win and the
 * XPCSFIT_DEVICE_THRESHOLD it recommends (docs/gpu.md). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "device/policy.h"
#include "gpu/slot.h"
#include "gpu/tool/tool.h"
#include "gpu/tool/tool_params.h"
#include "util/files.h"

#define BENCH_REPS 5 /* passes timed per size; the minimum is reported */
/* fp64 operations per point of the laminar Hessian pass, estimated (adr/0037): the row
 * ~140 (two pair integrals, exp and sincos in software ~25 and ~40, the derivatives), the
 * sums ~160 (the full 7×7 outer product 98, Jᵀr, the per-angle sums). */
#define BENCH_FLOPS_PER_POINT 300.0

typedef struct bench_row {
	int n_frames;
	size_t points;
	double score;	     /* work score: points × fitted parameters */
	double cpu_s, gpu_s; /* one pass, wall (GPU: upload + kernels + download) */
	double upload_s, kernel_s, download_s; /* the GPU's phases (device events) */
	double data_upload_s;		       /* the one-time upload of the data */
} bench_row;

static int bench_size(const tool_opts *o, int n_frames, bench_row *r)
{
	tool_case c;
	if (tool_case_init(&c, tool_costliest_model()->mode, n_frames, o->n_phi, o->threads, -1))
		return -1;
	int nf = c.pr.n_full, rc = -1, dev = 0;
	double score = 1.0;
	double *jtj = malloc(sizeof(double) * ((size_t)nf * nf + nf));
	double *total = malloc(sizeof(double) * (size_t)xf_gpu_total_doubles(c.pr.n_phi));
	xf_gpu_data d = { 0 };
	xf_gpu_ctx *ctx = NULL;
	tool_params tp;
	int have_tp = 0;
	char msg[200];
	if (!jtj || !total || tool_data_init(&c, &d) || tool_params_init(&c, &tp))
		goto done;
	have_tp = 1;
	r->n_frames = n_frames;
	r->points = xf_lik_points(c.cpu);
	r->score = xf_device_work_score(r->points, nf);
	double t0 = tool_now();
	if (!(ctx = xf_gpu_create(&d, &dev, &score, 1, 0, msg, sizeof msg))) {
		fprintf(stderr, "xpcsfit-gpu: %s\n", msg);
		goto done;
	}
	r->data_upload_s = tool_now() - t0;
	xf_lik_out out = { 0, jtj, jtj + (size_t)nf * nf, 0 };
	xf_gpu_timing tm;
	r->cpu_s = r->gpu_s = 1e30;
	for (int rep = 0; rep <= BENCH_REPS; rep++) { /* rep 0 warms up */
		t0 = tool_now();
		if (xf_lik_eval(c.cpu, c.x, &out))
			goto done;
		double t1 = tool_now();
		/* the frames are part of a GPU pass too: computed on the host each pass */
		xf_frames_compute(&tp.frames, &c.pr.grid, c.x);
		if (xf_gpu_accumulate(ctx, &tp.prm, XF_GPU_HESSIAN, total, &tm))
			goto done;
		double t2 = tool_now();
		if (rep && t1 - t0 < r->cpu_s)
			r->cpu_s = t1 - t0;
		if (rep && t2 - t1 < r->gpu_s) {
			r->gpu_s = t2 - t1;
			r->upload_s = tm.upload_s;
			r->kernel_s = tm.kernel_s;
			r->download_s = tm.download_s;
		}
	}
	rc = 0;
done:
	xf_gpu_destroy(ctx);
	if (have_tp)
		tool_params_free(&tp);
	tool_data_free(&d);
	free(jtj);
	free(total);
	tool_case_free(&c);
	return rc;
}

static void write_json(const char *path, const bench_row *rows, int n, double threshold)
{
	char name[256] = "";
	double score = 0.0;
	xf_gpu_device_info(0, name, sizeof name, &score);
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "sweep");
	cJSON_AddStringToObject(root, "device", name);
	cJSON_AddNumberToObject(root, "flops_per_point", BENCH_FLOPS_PER_POINT);
	if (threshold > 0.0)
		cJSON_AddNumberToObject(root, "recommended_threshold", threshold);
	else
		cJSON_AddNullToObject(root, "recommended_threshold");
	for (int k = 0; k < n; k++) {
		const bench_row *r = &rows[k];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "n_frames", r->n_frames);
		cJSON_AddNumberToObject(o, "points", (double)r->points);
		cJSON_AddNumberToObject(o, "work_score", r->score);
		cJSON_AddNumberToObject(o, "cpu_pass_s", r->cpu_s);
		cJSON_AddNumberToObject(o, "gpu_pass_s", r->gpu_s);
		cJSON_AddNumberToObject(o, "gpu_upload_s", r->upload_s);
		cJSON_AddNumberToObject(o, "gpu_kernel_s", r->kernel_s);
		cJSON_AddNumberToObject(o, "gpu_download_s", r->download_s);
		cJSON_AddNumberToObject(o, "data_upload_once_s", r->data_upload_s);
		cJSON_AddNumberToObject(o, "gpu_fp64_gflops",
					BENCH_FLOPS_PER_POINT * (double)r->points / r->kernel_s /
						1e9);
		cJSON_AddItemToArray(arr, o);
	}
	char *text = cJSON_Print(root);
	xf_error err = { 0 }; /* atomically, as every file xpcsfit writes (util/files.h) */
	if (!text || xf_write_file_atomic(path, text, strlen(text), &err))
		fprintf(stderr, "xpcsfit-gpu: cannot write %s\n", path);
	free(text);
	cJSON_Delete(root);
}

int tool_bench(const tool_opts *o)
{
	bench_row rows[24];
	int n = 0;
	for (int nfr = 100; nfr <= o->max_frames && n < 24; nfr *= 2, n++)
		if (bench_size(o, nfr, &rows[n])) {
			fprintf(stderr, "xpcsfit-gpu: bench failed at %d frames\n", nfr);
			return 1;
		}
	/* the crossover: the smallest score from which the GPU wins at every larger size */
	double threshold = 0.0;
	for (int k = n - 1; k >= 0 && rows[k].gpu_s < rows[k].cpu_s; k--)
		threshold = rows[k].score;
	printf("%7s %11s %11s %10s %10s %9s %9s %9s %9s\n", "frames", "points", "score", "cpu s",
	       "gpu s", "up s", "kernel s", "down s", "GFLOP/s");
	for (int k = 0; k < n; k++) {
		const bench_row *r = &rows[k];
		printf("%7d %11zu %11.3e %10.3e %10.3e %9.2e %9.2e %9.2e %9.1f\n", r->n_frames,
		       r->points, r->score, r->cpu_s, r->gpu_s, r->upload_s, r->kernel_s,
		       r->download_s,
		       BENCH_FLOPS_PER_POINT * (double)r->points / r->kernel_s / 1e9);
	}
	if (threshold > 0.0)
		printf("crossover: the GPU wins from work score %.3e; recommended: "
		       "XPCSFIT_DEVICE_THRESHOLD=%.3e\n",
		       threshold, threshold);
	else
		printf("crossover: the GPU did not win at any size measured; keep --device cpu\n");
	if (o->json_path)
		write_json(o->json_path, rows, n, threshold);
	return 0;
}
