/* policy.c — the device routing predicates (policy.h). */
#include "device/policy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

xf_device_policy xf_device_policy_default(void)
{
	return (xf_device_policy){
		.choice = XF_DEVICE_CPU,
		.gpu_min_score = XF_DEVICE_DEFAULT_THRESHOLD,
		.fp32_min_score = XF_DEVICE_DEFAULT_FP32_MIN,
		.fp32 = 0,
		.max_devices = 16,
	};
}

static const char *const device_names[] = { "cpu", "gpu", "auto" };

int xf_device_parse(const char *text, xf_device_choice *choice)
{
	for (int c = 0; c < 3; c++)
		if (text && !strcmp(text, device_names[c])) {
			*choice = (xf_device_choice)c;
			return 0;
		}
	return -1;
}

const char *xf_device_name(xf_device_choice choice)
{
	return (unsigned)choice < 3 ? device_names[choice] : "?";
}

int xf_device_policy_env(xf_device_policy *pol, const char *(*getenv_fn)(const char *),
			 const char **bad)
{
	const char *dev = getenv_fn("XPCSFIT_DEVICE");
	const char *thr = getenv_fn("XPCSFIT_DEVICE_THRESHOLD");
	if (dev && *dev && xf_device_parse(dev, &pol->choice)) {
		*bad = "XPCSFIT_DEVICE";
		return -1;
	}
	if (thr && *thr) {
		char *end;
		double v = strtod(thr, &end);
		if (*end || !isfinite(v) || !(v > 0.0)) {
			*bad = "XPCSFIT_DEVICE_THRESHOLD";
			return -1;
		}
		pol->gpu_min_score = v;
	}
	return 0;
}

double xf_device_work_score(size_t n_points, int n_params)
{
	return (double)n_points * (double)n_params;
}

int xf_device_wants_gpu(const xf_device_policy *pol, double work_score, int n_ranks)
{
	switch (pol->choice) {
	case XF_DEVICE_GPU: return 1;
	case XF_DEVICE_AUTO: return n_ranks <= 1 && work_score >= pol->gpu_min_score;
	default: return 0;
	}
}

int xf_device_use_gpu(const xf_device_policy *pol, double work_score, int n_devices)
{
	if (n_devices < 1 || pol->max_devices < 1)
		return 0;
	switch (pol->choice) {
	case XF_DEVICE_GPU: return 1;
	case XF_DEVICE_AUTO: return work_score >= pol->gpu_min_score;
	default: return 0;
	}
}

int xf_device_refused(const xf_device_policy *pol, int n_devices)
{
	return pol->choice == XF_DEVICE_GPU && (n_devices < 1 || pol->max_devices < 1);
}

int xf_device_use_fp32(const xf_device_policy *pol, double work_score)
{
	return pol->fp32 && work_score >= pol->fp32_min_score;
}

xf_device_costs xf_device_costs_default(void)
{
	/* issue 36's measurement: a JᵀJ pass over 15 M points 110 ms on 2 threads (the
	 * faster of the two CPU figures per thread: 1.5e-8 thread-s a point), over 61 M
	 * points 9.9 ms on the H200 (1.6e-10 s a point); a whole 11.5 M-point fit lost
	 * 0.26–0.54 s on the device, which its context, module and upload take (the upper
	 * end here, the upload ~1e-8 s a point) */
	return (xf_device_costs){
		.cpu_thread_s_per_point = 1.5e-8,
		.gpu_s_per_point = 1.6e-10,
		.gpu_pass_s = 1e-4,
		.gpu_job_s = 0.6,
		.gpu_upload_s_per_point = 1e-8,
	};
}

double xf_device_job_passes(xf_device_job_kind kind)
{
	switch (kind) {
	case XF_DEVICE_JOB_POSTERIOR_IMPORTANCE: return 2000.0;
	case XF_DEVICE_JOB_POSTERIOR_NUTS: return 60000.0;
	default: return 5.0;
	}
}

static int costs_installed;
static xf_device_costs costs_now;
static char costs_source[512];

xf_device_costs xf_device_costs_in_use(const char **source)
{
	if (source)
		*source = costs_installed ? costs_source : "the defaults of adr/0129";
	return costs_installed ? costs_now : xf_device_costs_default();
}

void xf_device_costs_install(const xf_device_costs *c, const char *source)
{
	costs_now = *c;
	snprintf(costs_source, sizeof costs_source, "%s", source);
	costs_installed = 1;
}

double xf_device_job_gpu_passes_per_pass(xf_device_job_kind kind)
{
	return kind == XF_DEVICE_JOB_POSTERIOR_NUTS ? 2.0 : 1.0;
}

/* the names of xf_device_costs' fields in a costs file, in the struct's order */
static const char *const cost_names[] = { "cpu_thread_s_per_point", "gpu_s_per_point", "gpu_pass_s",
					  "gpu_job_s", "gpu_upload_s_per_point" };
#define N_COSTS ((int)(sizeof cost_names / sizeof cost_names[0]))

static double *cost_slot(xf_device_costs *c, int k)
{
	double *slots[N_COSTS] = { &c->cpu_thread_s_per_point, &c->gpu_s_per_point, &c->gpu_pass_s,
				   &c->gpu_job_s, &c->gpu_upload_s_per_point };
	return slots[k];
}

int xf_device_costs_format(const xf_device_costs *c, char *buf, size_t size)
{
	xf_device_costs copy = *c;
	int n = 0;
	for (int k = 0; k < N_COSTS; k++) {
		size_t at = (size_t)n < size ? (size_t)n : size;
		n += snprintf(buf + at, size - at, "%s %.6e\n", cost_names[k],
			      *cost_slot(&copy, k));
	}
	return n;
}

int xf_device_costs_parse(const char *text, xf_device_costs *c, int *bad_line)
{
	xf_device_costs got = *c;
	int line = 0;
	for (const char *p = text; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char row[256], name[64], extra[8];
		double value;
		line++;
		snprintf(row, sizeof row, "%.*s", (int)(len < sizeof row ? len : sizeof row - 1),
			 p);
		p += len + (end != NULL);
		int got_n = sscanf(row, " %63s %lf %7s", name, &value, extra);
		if (got_n <= 0 || name[0] == '#')
			continue; /* a blank line or a comment */
		int k = 0;
		while (k < N_COSTS && strcmp(name, cost_names[k]))
			k++;
		if (len >= sizeof row || got_n != 2 || k == N_COSTS || !isfinite(value) ||
		    !(value > 0.0)) {
			*bad_line = line;
			return -1;
		}
		*cost_slot(&got, k) = value;
	}
	*c = got;
	return 0;
}

const char *xf_device_job_name(xf_device_job_kind kind)
{
	switch (kind) {
	case XF_DEVICE_JOB_POSTERIOR_IMPORTANCE: return "the posterior's importance route";
	case XF_DEVICE_JOB_POSTERIOR_NUTS: return "the posterior by NUTS";
	default: return "the fit";
	}
}

xf_device_job_estimate xf_device_job_estimate_of(const xf_device_costs *costs,
						 xf_device_job_kind kind, size_t n_points,
						 int n_threads)
{
	double points = (double)n_points, passes = xf_device_job_passes(kind);
	double gpu_passes = passes * xf_device_job_gpu_passes_per_pass(kind);
	double threads = n_threads > 0 ? (double)n_threads : 1.0;
	double once = costs->gpu_job_s + points * costs->gpu_upload_s_per_point;
	return (xf_device_job_estimate){
		.passes = passes,
		.cpu_s = passes * points * costs->cpu_thread_s_per_point / threads,
		.gpu_s = once + gpu_passes * (points * costs->gpu_s_per_point + costs->gpu_pass_s),
		.gpu_once_s = once,
		.gpu_passes = gpu_passes,
	};
}

int xf_device_job_pays(const xf_device_job_estimate *e)
{
	return e->gpu_s <= 0.5 * e->cpu_s;
}

int xf_device_split(const double *score, int n, size_t n_blocks, size_t *first, size_t *count)
{
	double sum = 0.0;
	for (int d = 0; d < n; d++)
		sum += score[d] > 0.0 ? score[d] : 0.0;
	if (n < 1 || !(sum > 0.0))
		return -1;
	size_t given = 0;
	for (int d = 0; d < n; d++) {
		double share = score[d] > 0.0 ? (double)n_blocks * score[d] / sum : 0.0;
		count[d] = (size_t)floor(share);
		given += count[d];
	}
	/* the rest, one each, to the largest remainders (ties: lower index) */
	while (given < n_blocks) {
		int best = -1;
		double best_rem = -1.0;
		for (int d = 0; d < n; d++) {
			if (!(score[d] > 0.0))
				continue;
			double rem = (double)n_blocks * score[d] / sum - (double)count[d];
			if (rem > best_rem) {
				best_rem = rem;
				best = d;
			}
		}
		count[best]++;
		given++;
	}
	size_t at = 0;
	for (int d = 0; d < n; d++) {
		first[d] = at;
		at += count[d];
	}
	return 0;
}
