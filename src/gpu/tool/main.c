/* main.c — xpcsfit-gpu validate|bench (docs/gpu.md): arguments, the device check. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/tool/tool.h"
#include "util/files.h"

static const char usage[] =
	"usage: xpcsfit-gpu validate|bench [--json FILE [--force]] [--frames N] [--angles N]\n"
	"                   [--threads N] [--max-frames N] [--costs FILE] [--no-runs]\n"
	"  validate  CPU and GPU on the same inputs: max abs/rel differences of c2, chi2,\n"
	"            JtJ, Jtr, log-likelihood and gradient (fp64 and the fp32 option)\n"
	"  bench     a sweep over work size: the passes at each level on both sides, the\n"
	"            device's context and upload, whole jobs (NLSQ, the posterior's\n"
	"            importance route, NUTS) on both sides, NLSQ and the posterior also\n"
	"            run end to end through their services; the crossover per pass (a\n"
	"            recommended XPCSFIT_DEVICE_THRESHOLD) and per job\n"
	"  --json FILE  also write the table as JSON (an existing FILE only with --force)\n"
	"  --costs FILE bench: write the costs --device auto weighs, for\n"
	"               XPCSFIT_DEVICE_COSTS=FILE (an existing FILE only with --force)\n"
	"  --no-runs    bench: project the jobs from their passes instead of running them\n"
	"  env XPCSFIT_CUDA_MODULE=FILE  the CUDA module to load (docs/gpu.md)\n"
	"exit: 0 done, 1 a check failed, 2 usage, 3 no CUDA device, driver or module\n";

/* a usage error: one line, exit 2 */
static int usage_error(const char *what, const char *where)
{
	fprintf(stderr, "xpcsfit-gpu: error: %s%s%s, see 'xpcsfit-gpu --help'\n", what,
		where[0] ? ": " : "", where);
	return 2;
}

static int positive(const char *s, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < 1 || v > 1000000)
		return -1;
	*out = (int)v;
	return 0;
}

int main(int argc, char **argv)
{
	tool_opts o = { NULL, 400, 3, 2, 3200, NULL, 1 };
	static const struct option longs[] = { { "json", required_argument, 0, 'j' },
					       { "frames", required_argument, 0, 'f' },
					       { "angles", required_argument, 0, 'a' },
					       { "threads", required_argument, 0, 't' },
					       { "max-frames", required_argument, 0, 'm' },
					       { "force", no_argument, 0, 'F' },
					       { "costs", required_argument, 0, 'c' },
					       { "no-runs", no_argument, 0, 'n' },
					       { "help", no_argument, 0, 'h' },
					       { 0, 0, 0, 0 } };
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc < 2 || (strcmp(argv[1], "validate") && strcmp(argv[1], "bench")))
		return usage_error(argc < 2 ? "no command given (validate or bench)"
					    : "unknown command (validate or bench)",
				   argc < 2 ? "" : argv[1]);
	int c, bad = 0, force = 0;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 'j': o.json_path = optarg; break;
		case 'f': bad |= positive(optarg, &o.n_frames); break;
		case 'a': bad |= positive(optarg, &o.n_phi); break;
		case 't': bad |= positive(optarg, &o.threads); break;
		case 'm': bad |= positive(optarg, &o.max_frames); break;
		case 'F': force = 1; break;
		case 'c': o.costs_path = optarg; break;
		case 'n': o.runs = 0; break;
		case 'h': fputs(usage, stdout); return 0;
		default: bad = 1;
		}
	}
	if (bad || optind != argc)
		return usage_error("a bad option or value", optind < argc ? argv[optind] : "");
	xf_error err = { 0 };
	if (o.costs_path && strcmp(argv[1], "bench"))
		return usage_error("--costs is an option of bench", o.costs_path);
	if (!o.runs && strcmp(argv[1], "bench"))
		return usage_error("--no-runs is an option of bench", "");
	if ((o.json_path && xf_check_out_file(o.json_path, "--json", force, "--force", &err)) ||
	    (o.costs_path && xf_check_out_file(o.costs_path, "--costs", force, "--force", &err))) {
		fprintf(stderr, "xpcsfit-gpu: error: %s\n", err.msg);
		return 2;
	}
	if (xf_gpu_device_count() < 1) { /* this loads the CUDA module (adr/0055) */
		fprintf(stderr, "xpcsfit-gpu: %s; nothing to %s\n", xf_gpu_why_none(), argv[1]);
		return XF_TOOL_NO_DEVICE;
	}
	return !strcmp(argv[1], "validate") ? tool_validate(&o) : tool_bench(&o);
}
