/* cmd_nlsq.c — `xpcsfit nlsq`: load, fit, write <out>/nlsq/ (spec/cli.md). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_internal.h"
#include "cli/commands.h"

static const char nlsq_usage[] =
	"usage: xpcsfit nlsq --config C.yaml [--data FILE.h5] [--out DIR] [--threads N]\n"
	"                    [--no-plots] [--no-surfaces] [--force]\n"
	"\n"
	"Bounded least-squares fit of the config's model to the two-time data.\n"
	"Results go to DIR/nlsq/ (DIR defaults to ./xpcsfit_results): results.h5,\n"
	"parameters.json, plots/, run.log.\n"
	"  --threads N     virtual devices (default: parallel.virtual_devices, else cores)\n"
	"  --no-plots      skip the PNG plots\n"
	"  --no-surfaces   skip the (n_phi, N, N) surfaces in results.h5\n"
	"  --force         replace a finished result in DIR/nlsq/ (refused without it)\n"
	"A run holds DIR/nlsq/.lock (a second run into it is refused) and keeps\n"
	"DIR/nlsq/INCOMPLETE until every file is written (docs/outputs.md).\n";

int xf_cmd_nlsq(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },
		{ "data", required_argument, 0, 'd' },
		{ "out", required_argument, 0, 'o' },
		{ "threads", required_argument, 0, 't' },
		{ "no-plots", no_argument, 0, 'P' },
		{ "no-surfaces", no_argument, 0, 'S' },
		{ "force", no_argument, 0, 'f' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *config_path = NULL, *data_path = NULL, *out = "./xpcsfit_results";
	int threads = 0, force = 0, c;
	xf_output_options oopt = { 1, 1, 1 };
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config_path = optarg; break;
		case 'd': data_path = optarg; break;
		case 'o': out = optarg; break;
		case 't':
			if (xf_cli_threads(optarg, &threads))
				return XF_ERR_CONFIG;
			break;
		case 'P': oopt.write_plots = 0; break;
		case 'S': oopt.write_surfaces = 0; break;
		case 'f': force = 1; break;
		case 'h': fputs(nlsq_usage, stdout); return 0;
		default:
			return xf_cli_error(XF_ERR_CONFIG,
					    "nlsq: unknown or incomplete option '%s', "
					    "see 'xpcsfit nlsq --help'",
					    argv[optind - 1]);
		}
	}
	if (optind < argc)
		return xf_cli_error(XF_ERR_CONFIG, "nlsq: unexpected argument '%s'", argv[optind]);
	if (!config_path)
		return xf_cli_error(XF_ERR_CONFIG,
				    "nlsq: --config is required, see 'xpcsfit nlsq --help'");
	int rc = xf_cli_check_out(out, "nlsq", force, "--force");
	if (rc)
		return rc;
	double t_start = xf_cli_now_s();
	xf_config cfg;
	xf_dataset ds;
	xf_nlsq_result res;
	rc = xf_cli_load("nlsq", config_path, data_path, &cfg, &ds, &threads);
	if (rc)
		return rc;
	oopt.threads = threads;
	memset(&res, 0, sizeof res);
	rc = xf_cli_nlsq_step(&cfg, &ds, out, threads, &oopt, force, "nlsq", t_start,
			      xf_cli_now_s(), &res);
	xf_nlsq_result_free(&res);
	xf_dataset_free(&ds);
	xf_config_free(&cfg);
	return rc;
}
