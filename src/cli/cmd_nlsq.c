/* cmd_nlsq.c — `xpcsfit nlsq`: load, build the problem request from the config
 * (adr/0043), fit, write <out>/nlsq/ (spec/cli.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "cli/commands.h"
#include "cli/overrides.h"
#include "outputs/rings_summary.h"
#include "util/key_names.h"

static const char nlsq_usage[] =
	"usage: xpcsfit nlsq --config C.yaml [--data FILE.h5] [--out DIR] [--threads N]\n"
	"                    [--no-plots] [--surfaces|--no-surfaces] [--force] [--strict]\n"
	"                    [--device cpu|gpu|auto] [--joint]\n"
	"\n"
	"Bounded least-squares fit of the config's model to the two-time data.\n"
	"Results go to DIR/nlsq/ (DIR defaults to the config's " XF_KEY_BASE_DIRECTORY
	", else\n./xpcsfit_results): report.html (the page to open or print), results.h5,\n"
	"parameters.json, plots/, run.log.\n"
	"  --threads N     virtual devices (default: " XF_KEY_VIRTUAL_DEVICES
	", else cores)\n  --no-plots      skip the PNG plots\n"
	"  --surfaces      write the full-resolution (n_phi, N, N) data, fit and residual\n"
	"                  surfaces into results.h5 (default: the config's " XF_KEY_SURFACES
	",\n                  none; `xpcsfit plot DIR` redraws from the parameters and the data)\n"
	"  --no-surfaces   leave them out whatever " XF_KEY_SURFACES
	" says\n  --force         replace a finished result in DIR/nlsq/ (refused without it)\n"
	"  --strict        refuse a config with keys xpcsfit does not use (exit 2)\n"
	"  --device D      where the accumulation runs: cpu (default), gpu (exit 2 without\n"
	"                  a CUDA device), auto (the GPU above XPCSFIT_DEVICE_THRESHOLD);\n"
	"                  docs/gpu.md\n"
	"A run holds DIR/nlsq/.lock (a second run into it is refused) and keeps\n"
	"DIR/nlsq/INCOMPLETE until every file is written (docs/outputs.md).\n"
	"  --joint         one fit over every selected q ring (wavevector_q: all, a list\n"
	"                  or a range) with shared physical parameters, into\n"
	"                  DIR/nlsq_joint/, with a leave-one-out check of each ring\n"
	"                  (docs/user-guide.md \"Several q rings\", adr/0066)\n"
	"  --output-dir DIR  the same as --out (homodyne's spelling)\n" XF_OVERRIDE_USAGE;

int xf_cli_run_nlsq(const xf_cli_job *given)
{
	xf_cli_job copy;
	char base[4096];
	char *text; /* the config's bytes, read once for the whole run */
	const xf_cli_job *job = xf_cli_job_out(given, &copy, base, sizeof base, &text);
	int handled = 0;
	/* the config is parsed and the file read once per ring: each warning shown once */
	xf_log_warn_once(1);
	/* several rings one by one (adr/0065), unless one joint fit is asked for (adr/0066) */
	int rc = job->joint ? 0 : xf_cli_run_rings(job, &handled);
	if (!handled && !rc)
		rc = xf_cli_run_nlsq_one(job, NULL);
	xf_log_warn_once(0);
	free(text);
	return rc;
}

int xf_cli_run_nlsq_one(const xf_cli_job *job, xf_ring_record *rec)
{
	const char *method_dir = job->method_dir ? job->method_dir : "nlsq";
	int threads = job->threads;
	xf_output_options oopt = { job->surfaces, job->plots, 1, NULL, NULL };
	int rc;
	double t_start = xf_cli_now_s();
	xf_config cfg;
	xf_dataset ds;
	xf_nlsq_fitted fit;
	xf_nlsq_options device; /* the device fields only */
	if ((rc = xf_cli_device(job->device, &device)))
		return rc;
	if ((rc = xf_cli_load_config(job, &cfg, &threads)))
		return rc;
	/* several rings in one fit: --joint or XF_KEY_RINGS: joint (adr/0066) */
	if (!rec && (job->joint || cfg.rings_joint)) {
		if ((rc = xf_cli_device_joint(&device))) {
			xf_config_free(&cfg);
			return rc;
		}
		return xf_cli_run_nlsq_joint(job, &cfg, threads, t_start);
	}
	if ((rc = xf_cli_check_out(job->out, method_dir, job->force, "--force"))) {
		xf_config_free(&cfg);
		return rc;
	}
	if ((rc = xf_cli_load_data(job, &cfg, &ds)))
		return rc;
	xf_nlsq_options nopt = cfg.nlsq; /* with this run's device (the config is not edited) */
	nopt.device = device.device;
	nopt.device_threshold = device.device_threshold;
	nopt.device_fp32 = device.device_fp32;
	oopt.threads = threads;
	oopt.write_surfaces = xf_cli_surfaces(job, &cfg);
	memset(&fit, 0, sizeof fit);
	xf_request req; /* the config read once for the fit (adr/0043) */
	xf_request_from_config(&cfg, &req);
	rc = xf_cli_nlsq_step_in(&cfg, &req, &nopt, &ds, job->out, method_dir, threads, &oopt,
				 job->force, job->command, t_start, xf_cli_now_s(), &fit);
	/* the step leaves the fit published only once the folder is whole */
	if (job->written && fit.published)
		*job->written = 1;
	if (rec && fit.published) /* the ring's row from the files' estimate */
		xf_ring_record_fill(rec, &fit.est, &fit.app);
	xf_nlsq_fitted_free(&fit);
	xf_dataset_free(&ds);
	xf_config_free(&cfg);
	return rc;
}

static int parse(int argc, char **argv, xf_cli_job *job, xf_cli_overrides *ov);

int xf_cmd_nlsq(int argc, char **argv)
{
	xf_cli_job job;
	xf_cli_overrides ov = { 0 };
	int rc = parse(argc, argv, &job, &ov);
	if (rc < 0)
		rc = xf_cli_run_nlsq(&job);
	xf_cli_overrides_free(&ov);
	return rc;
}

/* Parse into job and ov; returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, xf_cli_job *job, xf_cli_overrides *ov)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },
		{ "data", required_argument, 0, 'd' },
		{ "out", required_argument, 0, 'o' },
		{ "threads", required_argument, 0, 't' },
		{ "no-plots", no_argument, 0, 'P' },
		{ "no-surfaces", no_argument, 0, 'S' },
		{ "surfaces", no_argument, 0, 'F' },
		{ "force", no_argument, 0, 'f' },
		{ "strict", no_argument, 0, 's' },
		{ "help", no_argument, 0, 'h' },
		{ "output-dir", required_argument, 0, 'o' },
		{ "device", required_argument, 0, 'D' },
		{ "joint", no_argument, 0, 'J' },
		XF_OVERRIDE_OPTIONS,
		{ 0, 0, 0, 0 },
	};
	int c;
	xf_cli_job_init(job, "nlsq");
	job->per_ring = 1;
	opterr = 0;
	optind = 1;
	xf_cli_seen seen = { 0 };
	for (int li = -1; (c = getopt_long(argc, argv, "", opts, &li)) != -1; li = -1) {
		if (xf_cli_option_rules("nlsq", opts, li, optarg, &seen))
			return XF_ERR_CONFIG;
		switch (c) {
		case 'c': job->config = optarg; break;
		case 'd': job->data = optarg; break;
		case 'o':
			job->out = optarg;
			job->out_given = 1;
			break;
		case 't':
			if (xf_cli_threads(optarg, &job->threads))
				return XF_ERR_CONFIG;
			break;
		case 'P': job->plots = 0; break;
		case 'S': job->surfaces = 0; break;
		case 'F': job->surfaces = 1; break;
		case 'f': job->force = 1; break;
		case 's': job->strict = 1; break;
		case 'D': job->device = optarg; break;
		case 'J': job->joint = 1; break;
		case 'h': fputs(nlsq_usage, stdout); return 0;
		default:
			if (xf_cli_override_or_unknown(ov, c, optarg, "nlsq", argv[optind - 1]))
				return XF_ERR_CONFIG;
			break;
		}
	}
	if (optind < argc)
		return xf_cli_error(XF_ERR_CONFIG, "nlsq: unexpected argument '%s'", argv[optind]);
	if (!job->config)
		return xf_cli_error(XF_ERR_CONFIG,
				    "nlsq: --config is required, see 'xpcsfit nlsq --help'");
	if (xf_cli_overrides_finish(ov))
		return XF_ERR_CONFIG;
	job->overrides = ov->items;
	job->n_overrides = ov->n;
	return -1;
}
