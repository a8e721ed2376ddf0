/* device_opts.c — `xpcsfit nlsq --device cpu|gpu|auto` and the XPCSFIT_DEVICE*
 * environment (docs/gpu.md): --device over XPCSFIT_DEVICE over cpu; the threshold of
 * auto from XPCSFIT_DEVICE_THRESHOLD; XPCSFIT_GPU_FP32=1 asks for fp32 evaluation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "cli/commands.h"
#include "device/policy.h"
#include "gpu/gpu.h"
#include "util/files.h"
#include "xpcsfit/dist.h"

static const char *env(const char *name)
{
	return getenv(name);
}

/* auto's job decisions from this machine's costs when XPCSFIT_DEVICE_COSTS names a file
 * of `xpcsfit-gpu bench --costs` (docs/gpu.md): 0, or 2 after one line naming the file
 * (and the line) that is refused */
static int install_costs(void)
{
	const char *path = getenv("XPCSFIT_DEVICE_COSTS");
	if (!path || !*path)
		return 0;
	xf_error err = { 0 };
	char *text =
		xf_read_text_file(path, "XPCSFIT_DEVICE_COSTS", 65536, XF_ERR_CONFIG, NULL, &err);
	if (!text)
		return xf_cli_error(XF_ERR_CONFIG, "%s", err.msg);
	xf_device_costs costs = xf_device_costs_default();
	int bad = 0, rc = xf_device_costs_parse(text, &costs, &bad);
	free(text);
	if (rc)
		return xf_cli_error(XF_ERR_CONFIG,
				    "XPCSFIT_DEVICE_COSTS=%s: line %d: expected 'NAME VALUE', a "
				    "cost of xpcsfit-gpu bench --costs and a positive number",
				    path, bad);
	char source[600];
	snprintf(source, sizeof source, "XPCSFIT_DEVICE_COSTS=%s", path);
	xf_device_costs_install(&costs, source);
	return 0;
}

int xf_cli_device_joint(const xf_nlsq_options *o)
{
	if (o->device != XF_DEVICE_GPU)
		return 0; /* auto: the CPU, as for any job the device does not run */
	return xf_cli_error(XF_ERR_CONFIG,
			    "--device gpu: a joint fit over several q rings runs on the CPU only "
			    "(the device's kernel has one q; fit the rings one by one on it)");
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
	if (pol.choice == XF_DEVICE_AUTO && install_costs())
		return XF_ERR_CONFIG;
	o->device = (int)pol.choice;
	o->device_threshold = pol.gpu_min_score;
	o->device_fp32 = pol.fp32;
	return 0;
}
