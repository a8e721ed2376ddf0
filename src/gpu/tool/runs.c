/* runs.c — the jobs users run, run end to end on both sides at one bench size (bench.c,
 * adr/0130): NLSQ through its service (xf_nlsq_run) from the case's start off the truth,
 * and the posterior through its service (xf_posterior_run) warm-started from the CPU's
 * fit, at the shipped options: the importance route, exact NUTS where its check fails.
 * Each side runs as a command does — the device's run uploads its own data — and the two
 * results are compared value by value. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/tool/tool.h"
#include "services/nlsq.h"
#include "services/posterior.h"
#include "util/files.h"

/* how far b is from a, relative to a (0 when both are NaN: a fixed parameter's sd) */
static double rel_diff(double a, double b)
{
	if (isnan(a) && isnan(b))
		return 0.0;
	double scale = fabs(a) > 1e-300 ? fabs(a) : 1.0;
	double d = fabs(a - b) / scale;
	return isnan(d) ? INFINITY : d;
}

/* the largest relative difference of n values of a and b (either NULL: none to compare) */
static double worst_of(const double *a, const double *b, int n, double worst)
{
	for (int k = 0; a && b && k < n; k++) {
		double d = rel_diff(a[k], b[k]);
		worst = d > worst ? d : worst;
	}
	return worst;
}

/* One NLSQ fit of the case on one side (device 0 the CPU, 1 the module), from D0 30 % and
 * alpha 0.1 off the truth: wall seconds into *wall_s; 0 with *fit published and not
 * failed (the caller frees it), or -1 with a message. */
static int nlsq_side(tool_case *c, int threads, int device, double *wall_s, xf_nlsq_fitted *fit)
{
	xf_nlsq_options o;
	xf_nlsq_options_defaults(&o);
	o.device = device;
	xf_request req = c->req; /* started off the truth, as a config's starts are */
	req.start[XF_P_D0] *= 1.3;
	req.start[XF_P_ALPHA] += 0.1;
	xf_error err = { 0 };
	double t0 = tool_now();
	int rc = xf_nlsq_run(&req, &o, &c->ds, threads, NULL, NULL, t0, t0, fit, &err);
	*wall_s = tool_now() - t0;
	if (rc == 0 && fit->published && fit->res.status != XF_STATUS_FAILED)
		return 0;
	fprintf(stderr, "xpcsfit-gpu: the NLSQ run on the %s failed%s%s\n",
		device ? "device" : "CPU", rc ? ": " : "", rc ? err.msg : "");
	return -1;
}

int tool_run_nlsq(tool_case *c, int threads, tool_run *r, xf_estimate *warm)
{
	xf_nlsq_fitted cpu, gpu; /* zeroed: freed whether or not a side ran */
	memset(&cpu, 0, sizeof cpu);
	memset(&gpu, 0, sizeof gpu);
	memset(r, 0, sizeof *r);
	int rc = nlsq_side(c, threads, 0, &r->cpu_s, &cpu);
	rc = rc || nlsq_side(c, threads, 1, &r->gpu_s, &gpu);
	if (rc == 0) {
		r->iterations = cpu.res.iterations;
		r->worst_rel =
			cpu.res.n_params == gpu.res.n_params
				? worst_of(cpu.res.values, gpu.res.values, cpu.res.n_params, 0.0)
				: INFINITY;
		r->agree = r->worst_rel <= TOOL_RUNS_AGREE;
		xf_nlsq_fitted_take_estimate(&cpu, warm);
	}
	xf_nlsq_fitted_free(&cpu);
	xf_nlsq_fitted_free(&gpu);
	return rc;
}

/* The posterior on one side, its shards (if NUTS saves any: files in one flat folder) in a
 * folder of its own under TMPDIR, removed after as a result folder's are
 * (xf_remove_folder_files: no link followed): 0 with *post published, or -1 with a
 * message. */
static int posterior_side(tool_case *c, int threads, int device, const xf_estimate *warm,
			  double *wall_s, xf_posterior *post)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/xpcsfit-gpu-bench.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr,
			"xpcsfit-gpu: cannot make a folder for the posterior's shards in %s\n",
			tmp && *tmp ? tmp : "/tmp");
		memset(post, 0, sizeof *post);
		return -1;
	}
	char shards[4200];
	snprintf(shards, sizeof shards, "%s/shards", dir);
	xf_cmc_options o;
	xf_cmc_options_defaults(&o);
	o.device = device;
	xf_error err = { 0 };
	double t0 = tool_now();
	int rc = xf_posterior_run(&c->req, &o, &c->ds, warm, threads, shards, 0, NULL, NULL, post,
				  &err);
	*wall_s = tool_now() - t0;
	xf_remove_folder_files(shards);
	rmdir(dir);
	if (rc == 0 && post->published)
		return 0;
	fprintf(stderr, "xpcsfit-gpu: the posterior's run on the %s failed%s%s\n",
		device ? "device" : "CPU", rc ? ": " : "", rc ? err.msg : "");
	return -1;
}

int tool_run_posterior(tool_case *c, int threads, const xf_estimate *warm, tool_run *r)
{
	xf_posterior cpu, gpu; /* zeroed: freed whether or not a side ran */
	memset(&cpu, 0, sizeof cpu);
	memset(&gpu, 0, sizeof gpu);
	memset(r, 0, sizeof *r);
	int rc = posterior_side(c, threads, 0, warm, &r->cpu_s, &cpu);
	rc = rc || posterior_side(c, threads, 1, warm, &r->gpu_s, &gpu);
	if (rc == 0) {
		const xf_estimate *a = &cpu.est, *b = &gpu.est;
		r->route = a->route;
		r->worst_rel = INFINITY;
		if (a->route == b->route && a->n_params == b->n_params) {
			/* every summary the files write: mean, sd, median and the 90 % interval */
			int n = a->n_params;
			double w = worst_of(a->values, b->values, n, 0.0);
			w = worst_of(a->sd, b->sd, n, w);
			w = worst_of(a->median, b->median, n, w);
			w = worst_of(a->q05, b->q05, n, w);
			r->worst_rel = worst_of(a->q95, b->q95, n, w);
		}
		r->agree = r->worst_rel <= TOOL_RUNS_AGREE;
	}
	xf_posterior_free(&cpu);
	xf_posterior_free(&gpu);
	return rc;
}
