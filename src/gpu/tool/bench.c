/* bench.c — xpcsfit-gpu bench (docs/gpu.md): over a sweep of sizes, the laminar passes at
 * each level (values, gradient, JᵀJ) on the CPU (production, the pool) and on the GPU, the
 * device's one-time costs (its context and module, the upload of the data), and from them
 * the jobs users run — NLSQ, the posterior's importance route, exact NUTS — on both sides
 * (run end to end through their services, runs.c: NLSQ, and the posterior by the route
 * it takes; the other route's projected from its passes, as every job with --no-runs);
 * the crossover per job, the per-pass XPCSFIT_DEVICE_THRESHOLD, and the costs the policy
 * weighs (--costs FILE, read back through XPCSFIT_DEVICE_COSTS). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device/policy.h"
#include "gpu/slot.h"
#include "gpu/tool/tool.h"
#include "gpu/tool/tool_params.h"
#include "util/files.h"

#define BENCH_REPS 5 /* passes timed per size and level; the minimum is reported */
/* fp64 operations per point of the laminar Hessian pass, estimated (adr/0037): the row
 * ~140 (two pair integrals, exp and sincos in software ~25 and ~40, the derivatives), the
 * sums ~160 (the full 7×7 outer product 98, Jᵀr, the per-angle sums). */
#define BENCH_FLOPS_PER_POINT 300.0
#define BENCH_LEVELS	      3 /* XF_GPU_VALUE, _GRADIENT, _HESSIAN */
#define BENCH_JOBS	      3 /* xf_device_job_kind */
#define BENCH_MAX_SIZES	      24

static const char *const level_names[BENCH_LEVELS] = { "values", "gradient", "jtj" };

typedef struct bench_row {
	int n_frames;
	size_t points;
	double score; /* work score: points × fitted parameters */
	double cpu_s[BENCH_LEVELS], gpu_s[BENCH_LEVELS]; /* one pass, wall */
	double upload_s, kernel_s, download_s; /* the GPU's JᵀJ pass by phase (device events) */
	double data_upload_s;		       /* once a job: the data and pairs */
	double job_cpu_s[BENCH_JOBS], job_gpu_s[BENCH_JOBS]; /* whole jobs (job_time) */
	/* the jobs run end to end (runs.c; the device's without its first use, context_s,
	 * once a process): NLSQ, and the posterior warm-started from the CPU's fit; made 0
	 * (cpu_s 0) with --no-runs */
	tool_run nlsq, post;
} bench_row;

/* The passes a job makes and at which level on each side (adr/0129, adr/0130): NLSQ's are
 * JᵀJ passes; the importance route's are scaling passes, a values pass on the CPU and
 * the JᵀJ pass on the device; NUTS's gradients of the posterior with the scaling
 * integrated out are one fused pass on the CPU (a gradient pass here) and two JᵀJ passes
 * on the device. */
static const int cpu_level[BENCH_JOBS] = { XF_GPU_HESSIAN, XF_GPU_VALUE, XF_GPU_GRADIENT };

/* The job kind of the posterior's run: the route it took */
static int post_kind(const bench_row *r)
{
	return r->post.route == XF_POSTERIOR_ROUTE_NUTS ? XF_DEVICE_JOB_POSTERIOR_NUTS
							: XF_DEVICE_JOB_POSTERIOR_IMPORTANCE;
}

/* A whole job of kind on this row: the CPU's passes; the device's context once (context_s),
 * the upload, its passes. NLSQ's and the posterior's route's are their end-to-end runs
 * where they were made. */
static void job_time(bench_row *r, double context_s)
{
	for (int k = 0; k < BENCH_JOBS; k++) {
		double passes = xf_device_job_passes((xf_device_job_kind)k);
		double gpu_passes =
			passes * xf_device_job_gpu_passes_per_pass((xf_device_job_kind)k);
		r->job_cpu_s[k] = passes * r->cpu_s[cpu_level[k]];
		r->job_gpu_s[k] =
			context_s + r->data_upload_s + gpu_passes * r->gpu_s[XF_GPU_HESSIAN];
	}
	if (r->nlsq.cpu_s > 0.0 && r->nlsq.gpu_s > 0.0) {
		r->job_cpu_s[XF_DEVICE_JOB_NLSQ] = r->nlsq.cpu_s;
		r->job_gpu_s[XF_DEVICE_JOB_NLSQ] = context_s + r->nlsq.gpu_s;
	}
	if (r->post.cpu_s > 0.0 && r->post.gpu_s > 0.0) {
		r->job_cpu_s[post_kind(r)] = r->post.cpu_s;
		r->job_gpu_s[post_kind(r)] = context_s + r->post.gpu_s;
	}
}

/* NLSQ and then the posterior warm-started from its CPU fit, end to end on both sides
 * (runs.c), after the passes: the passes' device data freed first, each run uploads its
 * own as a command does. */
static int job_runs(tool_case *c, int threads, bench_row *r)
{
	xf_estimate warm;
	memset(&warm, 0, sizeof warm);
	int rc = tool_run_nlsq(c, threads, &r->nlsq, &warm) ||
		 tool_run_posterior(c, threads, &warm, &r->post);
	xf_estimate_free(&warm);
	return rc ? -1 : 0;
}

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
	for (int lv = 0; lv < BENCH_LEVELS; lv++) {
		xf_lik_out out = { 0, lv == XF_GPU_HESSIAN ? jtj : NULL,
				   lv != XF_GPU_VALUE ? jtj + (size_t)nf * nf : NULL, 0 };
		xf_gpu_timing tm;
		r->cpu_s[lv] = r->gpu_s[lv] = 1e30;
		for (int rep = 0; rep <= BENCH_REPS; rep++) { /* rep 0 warms up */
			t0 = tool_now();
			if (xf_lik_eval(c.cpu, c.x, &out))
				goto done;
			double t1 = tool_now();
			/* the frames are part of a GPU pass too: computed on the host each pass */
			xf_frames_compute(&tp.frames, &c.pr.grid, c.x);
			if (xf_gpu_accumulate(ctx, &tp.prm, lv, total, &tm))
				goto done;
			double t2 = tool_now();
			if (rep && t1 - t0 < r->cpu_s[lv])
				r->cpu_s[lv] = t1 - t0;
			if (rep && t2 - t1 < r->gpu_s[lv]) {
				r->gpu_s[lv] = t2 - t1;
				if (lv == XF_GPU_HESSIAN) {
					r->upload_s = tm.upload_s;
					r->kernel_s = tm.kernel_s;
					r->download_s = tm.download_s;
				}
			}
		}
	}
	xf_gpu_destroy(ctx);
	ctx = NULL;
	rc = o->runs && job_runs(&c, o->threads, r) ? -1 : 0;
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

/* The device's first use in this process (its context and the module's setup): the first
 * create of a small case less a second one, which uploads the same data. */
static double context_time(const tool_opts *o)
{
	tool_case c;
	xf_gpu_data d = { 0 };
	double t[2] = { 0.0, 0.0 }, score = 1.0;
	int dev = 0;
	char msg[200];
	if (tool_case_init(&c, tool_costliest_model()->mode, 100, o->n_phi, 1, -1))
		return 0.0;
	for (int k = 0; k < 2 && !tool_data_init(&c, &d); k++) {
		double t0 = tool_now();
		xf_gpu_ctx *ctx = xf_gpu_create(&d, &dev, &score, 1, 0, msg, sizeof msg);
		t[k] = tool_now() - t0;
		xf_gpu_destroy(ctx);
		tool_data_free(&d);
	}
	tool_case_free(&c);
	return t[0] > t[1] ? t[0] - t[1] : 0.0;
}

/* The policy's costs (src/device/policy.h) from the largest size, each on the side that
 * makes the device look worse (adr/0129): the CPU's JᵀJ pass per thread and point, the
 * device's kernel per point, the rest of its pass as the per-pass cost. */
static xf_device_costs measured_costs(const bench_row *big, double context_s, int threads)
{
	double pts = (double)big->points, wall = big->gpu_s[XF_GPU_HESSIAN];
	/* a backend without device events (the test stand-in) reports no kernel time: the
	 * whole pass then counts per point */
	double kernel = big->kernel_s > 0.0 ? big->kernel_s : wall;
	double rest = wall - kernel, per_point = kernel / pts;
	return (xf_device_costs){
		.cpu_thread_s_per_point = big->cpu_s[XF_GPU_HESSIAN] * threads / pts,
		.gpu_s_per_point = per_point > 1e-15 ? per_point : 1e-15,
		.gpu_pass_s = rest > 1e-6 ? rest : 1e-6,
		.gpu_job_s = context_s > 1e-3 ? context_s : 1e-3,
		.gpu_upload_s_per_point =
			big->data_upload_s > 0.0 ? big->data_upload_s / pts : 1e-15,
	};
}

/* Per job kind, the smallest size from which the whole job on the device takes at most
 * half the CPU's time at every larger size measured (auto's rule); 0: none. */
static size_t job_crossover(const bench_row *rows, int n, int kind)
{
	size_t from = 0;
	for (int k = n - 1; k >= 0 && rows[k].job_gpu_s[kind] <= 0.5 * rows[k].job_cpu_s[kind]; k--)
		from = rows[k].points;
	return from;
}

/* fp64 throughput of the JᵀJ kernel by the flop estimate; 0 where no kernel time was
 * measured (a backend without device events) */
static double gflops(const bench_row *r)
{
	return r->kernel_s > 0.0 ? BENCH_FLOPS_PER_POINT * (double)r->points / r->kernel_s / 1e9
				 : 0.0;
}

/* "cpu_<what>" and "gpu_<what>" of a pair of times: form has one %s for what */
static void add_pair(cJSON *o, const char *form, const char *what, double cpu_s, double gpu_s)
{
	char key[80], name[72];
	snprintf(name, sizeof name, form, what);
	snprintf(key, sizeof key, "cpu_%s", name);
	cJSON_AddNumberToObject(o, key, cpu_s);
	snprintf(key, sizeof key, "gpu_%s", name);
	cJSON_AddNumberToObject(o, key, gpu_s);
}

static void write_json(const char *path, const bench_row *rows, int n, double threshold,
		       double context_s, const xf_device_costs *costs, const size_t *crossover)
{
	char name[256] = "";
	double score = 0.0;
	xf_gpu_device_info(0, name, sizeof name, &score);
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "device", name);
	cJSON_AddNumberToObject(root, "flops_per_point", BENCH_FLOPS_PER_POINT);
	if (threshold > 0.0)
		cJSON_AddNumberToObject(root, "recommended_threshold", threshold);
	else
		cJSON_AddNullToObject(root, "recommended_threshold");
	cJSON_AddNumberToObject(root, "context_once_s", context_s);
	cJSON *cj = cJSON_AddObjectToObject(root, "costs");
	cJSON_AddNumberToObject(cj, "cpu_thread_s_per_point", costs->cpu_thread_s_per_point);
	cJSON_AddNumberToObject(cj, "gpu_s_per_point", costs->gpu_s_per_point);
	cJSON_AddNumberToObject(cj, "gpu_pass_s", costs->gpu_pass_s);
	cJSON_AddNumberToObject(cj, "gpu_job_s", costs->gpu_job_s);
	cJSON_AddNumberToObject(cj, "gpu_upload_s_per_point", costs->gpu_upload_s_per_point);
	cJSON *xj = cJSON_AddObjectToObject(root, "job_crossover_points");
	const char *job_keys[BENCH_JOBS] = { "nlsq", "posterior_importance", "posterior_nuts" };
	for (int k = 0; k < BENCH_JOBS; k++)
		if (crossover[k])
			cJSON_AddNumberToObject(xj, job_keys[k], (double)crossover[k]);
		else
			cJSON_AddNullToObject(xj, job_keys[k]);
	cJSON *arr = cJSON_AddArrayToObject(root, "sweep");
	for (int k = 0; k < n; k++) {
		const bench_row *r = &rows[k];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "n_frames", r->n_frames);
		cJSON_AddNumberToObject(o, "points", (double)r->points);
		cJSON_AddNumberToObject(o, "work_score", r->score);
		cJSON_AddNumberToObject(o, "cpu_pass_s", r->cpu_s[XF_GPU_HESSIAN]);
		cJSON_AddNumberToObject(o, "gpu_pass_s", r->gpu_s[XF_GPU_HESSIAN]);
		for (int lv = 0; lv < BENCH_LEVELS; lv++)
			add_pair(o, "%s_pass_s", level_names[lv], r->cpu_s[lv], r->gpu_s[lv]);
		cJSON_AddNumberToObject(o, "gpu_upload_s", r->upload_s);
		cJSON_AddNumberToObject(o, "gpu_kernel_s", r->kernel_s);
		cJSON_AddNumberToObject(o, "gpu_download_s", r->download_s);
		cJSON_AddNumberToObject(o, "data_upload_once_s", r->data_upload_s);
		cJSON_AddNumberToObject(o, "gpu_fp64_gflops", gflops(r));
		for (int j = 0; j < BENCH_JOBS; j++)
			add_pair(o, "job_%s_s", job_keys[j], r->job_cpu_s[j], r->job_gpu_s[j]);
		if (r->nlsq.cpu_s > 0.0) { /* measured, not projected: without the context */
			add_pair(o, "%s_s", "nlsq_run", r->nlsq.cpu_s, r->nlsq.gpu_s);
			cJSON_AddNumberToObject(o, "nlsq_run_iterations", r->nlsq.iterations);
			cJSON_AddNumberToObject(o, "nlsq_runs_worst_rel", r->nlsq.worst_rel);
			cJSON_AddBoolToObject(o, "nlsq_runs_agree", r->nlsq.agree);
		}
		if (r->post.cpu_s > 0.0) {
			add_pair(o, "%s_s", "posterior_run", r->post.cpu_s, r->post.gpu_s);
			cJSON_AddStringToObject(o, "posterior_run_job", job_keys[post_kind(r)]);
			cJSON_AddNumberToObject(o, "posterior_runs_worst_rel", r->post.worst_rel);
			cJSON_AddBoolToObject(o, "posterior_runs_agree", r->post.agree);
		}
		cJSON_AddItemToArray(arr, o);
	}
	char *text = cJSON_Print(root);
	xf_error err = { 0 }; /* atomically, as every file xpcsfit writes (util/files.h) */
	if (!text || xf_write_file_atomic(path, text, strlen(text), &err))
		fprintf(stderr, "xpcsfit-gpu: cannot write %s\n", path);
	free(text);
	cJSON_Delete(root);
}

static void print_tables(const bench_row *rows, int n, double context_s)
{
	printf("passes, one each (s):\n%7s %11s %11s", "frames", "points", "score");
	for (int lv = 0; lv < BENCH_LEVELS; lv++)
		printf(" %9s %9s", "cpu", level_names[lv]);
	printf(" %9s %9s %9s %9s\n", "up s", "kernel s", "down s", "GFLOP/s");
	for (int k = 0; k < n; k++) {
		const bench_row *r = &rows[k];
		printf("%7d %11zu %11.3e", r->n_frames, r->points, r->score);
		for (int lv = 0; lv < BENCH_LEVELS; lv++)
			printf(" %9.2e %9.2e", r->cpu_s[lv], r->gpu_s[lv]);
		printf(" %9.2e %9.2e %9.2e %9.1f\n", r->upload_s, r->kernel_s, r->download_s,
		       gflops(r));
	}
	int runs = 0;
	for (int k = 0; k < n; k++)
		runs |= rows[k].nlsq.cpu_s > 0.0;
	if (runs) {
		printf("NLSQ end to end (s; xf_nlsq_run from the same start, the device's without "
		       "its first use):\n%7s %11s %11s %11s %6s %9s %6s\n",
		       "frames", "points", "cpu", "gpu", "iter", "worst rel", "agree");
		for (int k = 0; k < n; k++)
			printf("%7d %11zu %11.3e %11.3e %6d %9.1e %6s\n", rows[k].n_frames,
			       rows[k].points, rows[k].nlsq.cpu_s, rows[k].nlsq.gpu_s,
			       rows[k].nlsq.iterations, rows[k].nlsq.worst_rel,
			       rows[k].nlsq.agree ? "yes" : "NO");
		printf("the posterior end to end (s; xf_posterior_run from the CPU's fit, the "
		       "device's without its first use):\n%7s %11s %11s %11s %11s %9s %6s\n",
		       "frames", "points", "cpu", "gpu", "route", "worst rel", "agree");
		for (int k = 0; k < n; k++)
			printf("%7d %11zu %11.3e %11.3e %11s %9.1e %6s\n", rows[k].n_frames,
			       rows[k].points, rows[k].post.cpu_s, rows[k].post.gpu_s,
			       xf_route_record_of(rows[k].post.route)->name, rows[k].post.worst_rel,
			       rows[k].post.agree ? "yes" : "NO");
	}
	printf("whole jobs (s; the device's with its context %.3g s and the upload%s):\n",
	       context_s, runs ? "; NLSQ's and the posterior's route's as run" : "");
	printf("%7s %11s %11s %11s %11s %11s %11s %11s\n", "frames", "points", "nlsq cpu",
	       "nlsq gpu", "is cpu", "is gpu", "nuts cpu", "nuts gpu");
	for (int k = 0; k < n; k++) {
		const bench_row *r = &rows[k];
		printf("%7d %11zu", r->n_frames, r->points);
		for (int j = 0; j < BENCH_JOBS; j++)
			printf(" %11.3e %11.3e", r->job_cpu_s[j], r->job_gpu_s[j]);
		printf("\n");
	}
}

int tool_bench(const tool_opts *o)
{
	bench_row rows[BENCH_MAX_SIZES];
	memset(rows, 0, sizeof rows); /* a size's runs are 0 unless made (--no-runs) */
	int n = 0;
	double context_s = context_time(o);
	for (int nfr = 100; nfr <= o->max_frames && n < BENCH_MAX_SIZES; nfr *= 2, n++) {
		if (bench_size(o, nfr, &rows[n])) {
			fprintf(stderr, "xpcsfit-gpu: bench failed at %d frames\n", nfr);
			return 1;
		}
		job_time(&rows[n], context_s);
	}
	/* the per-pass crossover: the smallest score from which the GPU's JᵀJ pass wins at
	 * every larger size (XPCSFIT_DEVICE_THRESHOLD, the floor under which auto never
	 * looks at the module) */
	double threshold = 0.0;
	for (int k = n - 1; k >= 0 && rows[k].gpu_s[XF_GPU_HESSIAN] < rows[k].cpu_s[XF_GPU_HESSIAN];
	     k--)
		threshold = rows[k].score;
	size_t crossover[BENCH_JOBS];
	for (int j = 0; j < BENCH_JOBS; j++)
		crossover[j] = job_crossover(rows, n, j);
	print_tables(rows, n, context_s);
	if (threshold > 0.0)
		printf("crossover per pass: the GPU's pass wins from work score %.3e; "
		       "recommended: XPCSFIT_DEVICE_THRESHOLD=%.3e\n",
		       threshold, threshold);
	else
		printf("crossover per pass: the GPU's pass did not win at any size measured\n");
	for (int j = 0; j < BENCH_JOBS; j++)
		if (crossover[j])
			printf("crossover of %s: the device takes at most half the CPU's time "
			       "from %zu points\n",
			       xf_device_job_name((xf_device_job_kind)j), crossover[j]);
		else
			printf("crossover of %s: none at the sizes measured (the CPU)\n",
			       xf_device_job_name((xf_device_job_kind)j));
	xf_device_costs costs = measured_costs(&rows[n - 1], context_s, o->threads);
	char text[512];
	xf_device_costs_format(&costs, text, sizeof text);
	printf("costs for --device auto (--costs FILE, then XPCSFIT_DEVICE_COSTS=FILE):\n%s", text);
	if (o->json_path)
		write_json(o->json_path, rows, n, threshold, context_s, &costs, crossover);
	if (o->costs_path) {
		xf_error err = { 0 };
		char body[640];
		int len = snprintf(body, sizeof body,
				   "# xpcsfit-gpu bench on this machine's device and %d CPU "
				   "thread(s)\n%s",
				   o->threads, text);
		if (xf_write_file_atomic(o->costs_path, body, (size_t)len, &err)) {
			fprintf(stderr, "xpcsfit-gpu: cannot write %s: %s\n", o->costs_path,
				err.msg);
			return 1;
		}
	}
	return 0;
}
