/* device.c — where the NLSQ accumulation over all the data runs (docs/gpu.md): the policy
 * of the options (src/device/policy.h) applied once per fit. */
#include "device/policy.h"
#include "gpu/gpu.h"
#include "nlsq/nlsq_internal.h"
#include "xpcsfit/dist.h"
#include "xpcsfit/error.h"

int xf_nlsq_route_device(xf_lik *lik, const xf_problem *pr, const xf_nlsq_options *o, int n_threads,
			 xf_error *err)
{
	xf_device_policy pol = xf_device_policy_default();
	pol.choice = (xf_device_choice)o->device;
	pol.gpu_min_score = o->device_threshold;
	pol.fp32 = o->device_fp32;
	if (pol.choice == XF_DEVICE_CPU)
		return 0; /* the default never touches the CUDA runtime */
	double score = xf_device_work_score(pr->n_points, pr->n_full);
	/* auto decides from the size and the ranks before the module is loaded (adr/0072) */
	if (!xf_device_wants_gpu(&pol, score, xf_dist_ranks())) {
		if (xf_dist_ranks() > 1)
			xf_info("nlsq: --device auto: a fit spread over %d MPI ranks runs on the "
				"CPU",
				xf_dist_ranks());
		else
			xf_info("nlsq: --device auto: work score %.3g below the threshold %.3g; "
				"the fit runs on the CPU",
				score, pol.gpu_min_score);
		return 0;
	}
	int n_dev = xf_gpu_device_count();
	if (xf_device_refused(&pol, n_dev))
		return xf_fail(err, XF_ERR_CONFIG, "--device gpu: %s", xf_gpu_why_none());
	if (n_dev < 1) { /* auto: quietly the CPU, the reason in run.log */
		xf_info("nlsq: --device auto: %s; the fit runs on the CPU", xf_gpu_why_none());
		return 0;
	}
	/* with a device at hand, auto weighs the whole fit, not one pass (adr/0129): the
	 * device's context and upload against the few passes it would speed up */
	xf_device_costs costs = xf_device_costs_default();
	xf_device_job_estimate job =
		xf_device_job_estimate_of(&costs, XF_DEVICE_JOB_NLSQ, pr->n_points, n_threads);
	if (pol.choice == XF_DEVICE_AUTO && !xf_device_job_pays(&job)) {
		xf_info("nlsq: --device auto: %s, %.0f passes over %zu points, is expected to take "
			"%.3g s on the device (%.3g s of it context and upload) against %.3g s on "
			"%d CPU thread%s; it runs on the CPU",
			xf_device_job_name(XF_DEVICE_JOB_NLSQ), job.passes, pr->n_points, job.gpu_s,
			job.gpu_once_s, job.cpu_s, n_threads, n_threads == 1 ? "" : "s");
		return 0;
	}
	if (!xf_device_use_gpu(&pol, score, n_dev))
		return 0; /* not reached: wants_gpu said the size is enough */
	xf_error gerr = { 0 };
	if (!xf_lik_use_gpu(lik, xf_device_use_fp32(&pol, score), pol.max_devices, &gerr)) {
		xf_info("nlsq: the accumulation over all the data runs on the GPU (%s; %s)",
			xf_device_name(pol.choice), xf_gpu_module_path());
		if (pol.choice == XF_DEVICE_AUTO)
			xf_info("nlsq: --device auto: %s is expected to take %.3g s on the device "
				"against %.3g s on %d CPU thread%s",
				xf_device_job_name(XF_DEVICE_JOB_NLSQ), job.gpu_s, job.cpu_s,
				n_threads, n_threads == 1 ? "" : "s");
		return 0;
	}
	if (pol.choice == XF_DEVICE_GPU)
		return xf_fail(err, gerr.code, "%s", gerr.msg);
	xf_warn("nlsq: %s; the fit runs on the CPU", gerr.msg);
	return 0;
}
