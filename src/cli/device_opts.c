/* device_opts.c — `xpcsfit nlsq --device cpu|gpu|auto` and the XPCSFIT_DEVICE*
 * environment (docs/gpu.md): --device over XPCSFIT_DEVICE over cpu; the threshold of
 * auto from XPCSFIT_DEVICE_THRESHOLD; XPCSFIT_GPU_FP32=1 asks for fp32 evaluation. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "cli/commands.h"
#include "device/policy.h"
#include "gpu/gpu.h"
#include "xpcsfit/dist.h"

static const char *env(const char *name)
{
	return getenv(name);
}

int xf_cli_device(const char *flag, xf_nlsq_options *o)
{
	xf_device_policy pol = xf_device_policy_default();
	const char *bad = NULL;
	if (xf_device_policy_env(&pol, env, &bad))
		return xf_cli_error(XF_ERR_CONFIG, "%s='%s': expected %s", bad, getenv(bad),
				    strcmp(bad, "XPCSFIT_DEVICE") ? "a positive number"
								  : "cpu, gpu or auto");
	if (flag && xf_device_parse(flag, &pol.choice))
		return xf_cli_error(XF_ERR_CONFIG, "--device '%s': expected cpu, gpu or auto",
				    flag);
	const char *fp32 = getenv("XPCSFIT_GPU_FP32");
	pol.fp32 = fp32 && !strcmp(fp32, "1");
	/* a fit spread over MPI ranks runs on the CPU: said before the module is loaded
	 * (adr/0072) and before any folder is claimed */
	if (pol.choice == XF_DEVICE_GPU && xf_dist_ranks() > 1)
		return xf_cli_error(XF_ERR_CONFIG,
				    "--device gpu: a fit spread over %d MPI ranks runs on the CPU "
				    "only (one process runs on a GPU)",
				    xf_dist_ranks());
	/* a GPU asked for where there is none: said now, before the data are read; this
	 * loads the CUDA module (adr/0055), which cpu and auto never do here */
	if (pol.choice == XF_DEVICE_GPU && xf_device_refused(&pol, xf_gpu_device_count()))
		return xf_cli_error(XF_ERR_CONFIG, "--device gpu: %s", xf_gpu_why_none());
	o->device = (int)pol.choice;
	o->device_threshold = pol.gpu_min_score;
	o->device_fp32 = pol.fp32;
	return 0;
}
