/* device_route.c — where one evaluator's passes run for a job (docs/gpu.md, adr/0129,
 * adr/0130): the options' choice applied once, before the job's first pass. NLSQ's fit
 * and the posterior's evaluators over all the data come through here, so both say why
 * in run.log with the same numbers. */
#include <stdarg.h>
#include <stdio.h>

#include "device/policy.h"
#include "gpu/gpu.h"
#include "likelihood/device_route.h"
#include "xpcsfit/dist.h"

/* The decision's line: into run.log (a warning: also stderr) as "<who>: <line>", unless
 * quiet (the same decision made again), and into ask->said when given. */
__attribute__((format(printf, 3, 4))) static void tell(const xf_device_ask *ask, int warn,
						       const char *fmt, ...)
{
	char line[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (ask->said && ask->said_len)
		snprintf(ask->said, ask->said_len, "%s", line);
	if (warn)
		xf_warn("%s: %s", ask->who, line);
	else if (!ask->quiet)
		xf_info("%s: %s", ask->who, line);
}

int xf_lik_route_device(xf_lik *lik, const xf_device_ask *ask, int n_threads, xf_error *err)
{
	xf_device_policy pol = xf_device_policy_default();
	pol.choice = (xf_device_choice)ask->device;
	pol.gpu_min_score = ask->threshold;
	pol.fp32 = ask->fp32;
	if (pol.choice == XF_DEVICE_CPU)
		return 0; /* the default never touches the CUDA runtime */
	const char *job_name = xf_device_job_name(ask->kind);
	double score = xf_device_work_score(ask->n_points, ask->n_params);
	/* auto decides from the size and the ranks before the module is loaded (adr/0072) */
	if (!xf_device_wants_gpu(&pol, score, xf_dist_ranks())) {
		if (xf_dist_ranks() > 1)
			tell(ask, 0, "--device auto: %s spread over %d MPI ranks runs on the CPU",
			     ask->kind == XF_DEVICE_JOB_NLSQ ? "a fit" : "a posterior",
			     xf_dist_ranks());
		else
			tell(ask, 0,
			     "--device auto: work score %.3g below the threshold %.3g; %s runs on "
			     "the CPU",
			     score, pol.gpu_min_score, ask->work);
		return 0;
	}
	int n_dev = xf_gpu_device_count();
	if (xf_device_refused(&pol, n_dev))
		return xf_fail(err, XF_ERR_CONFIG, "--device gpu: %s", xf_gpu_why_none());
	if (n_dev < 1) { /* auto: quietly the CPU, the reason in run.log */
		tell(ask, 0, "--device auto: %s; %s runs on the CPU", xf_gpu_why_none(), ask->work);
		return 0;
	}
	/* with a device at hand, auto weighs the whole job, not one pass (adr/0129): the
	 * device's context and upload against the passes it would speed up */
	const char *source;
	xf_device_costs costs = xf_device_costs_in_use(&source);
	xf_device_job_estimate job =
		xf_device_job_estimate_of(&costs, ask->kind, ask->n_points, n_threads);
	if (pol.choice == XF_DEVICE_AUTO && !xf_device_job_pays(&job)) {
		tell(ask, 0,
		     "--device auto: %s, %.0f passes over %zu points, is expected to take %.3g s "
		     "on the device (%.3g s of it context and upload) against %.3g s on %d CPU "
		     "thread%s; it runs on the CPU (costs: %s)",
		     job_name, job.passes, ask->n_points, job.gpu_s, job.gpu_once_s, job.cpu_s,
		     n_threads, n_threads == 1 ? "" : "s", source);
		return 0;
	}
	if (!xf_device_use_gpu(&pol, score, n_dev))
		return 0; /* not reached: wants_gpu said the size is enough */
	xf_error gerr = { 0 };
	if (!xf_lik_use_gpu(lik, xf_device_use_fp32(&pol, score), pol.max_devices, &gerr)) {
		if (pol.choice == XF_DEVICE_AUTO) /* one line: the numbers and the outcome */
			tell(ask, 0,
			     "--device auto: %s is expected to take %.3g s on the device against "
			     "%.3g s on %d CPU thread%s (costs: %s); %s on the GPU (auto; %s)",
			     job_name, job.gpu_s, job.cpu_s, n_threads, n_threads == 1 ? "" : "s",
			     source, ask->passes, xf_gpu_module_path());
		else
			tell(ask, 0, "%s on the GPU (gpu; %s)", ask->passes, xf_gpu_module_path());
		return 0;
	}
	if (pol.choice == XF_DEVICE_GPU)
		return xf_fail(err, gerr.code, "%s", gerr.msg);
	tell(ask, 1, "%s; %s runs on the CPU", gerr.msg, ask->work);
	return 0;
}
