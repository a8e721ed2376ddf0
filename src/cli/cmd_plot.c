/* cmd_plot.c — `xpcsfit plot DIR`: redraw DIR/plots/ from DIR/results.h5. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "util/interrupt.h"
#include "util/rundir.h"
#include "xpcsfit/error.h"
#include "xpcsfit/plot.h"

static void usage(FILE *out)
{
	fputs("usage: xpcsfit plot DIR\n"
	      "\n"
	      "Redraw the plots of a result directory (e.g. xpcsfit_results/nlsq) from its\n"
	      "results.h5: DIR/plots/c2_phi_<index>_<phi>deg.png per angle (data | fit |\n"
	      "residual) and DIR/plots/overview.png. Needs the c2 surfaces, i.e. a fit run\n"
	      "without --no-surfaces. A cmc result folder is redrawn by `xpcsfit cmc ...\n"
	      "--resume`, which reuses the sampled shards.\n"
	      "\n"
	      "options:\n"
	      "  -h, --help   show this help\n",
	      out);
}

int xf_cmd_plot(int argc, char **argv)
{
	const char *dir = NULL;
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
			usage(stdout);
			return 0;
		}
		if (argv[k][0] == '-' && argv[k][1] != '\0')
			return xf_cli_error(XF_ERR_CONFIG,
					    "unknown option '%s', see 'xpcsfit "
					    "plot --help'",
					    argv[k]);
		if (dir)
			return xf_cli_error(XF_ERR_CONFIG,
					    "more than one result directory given "
					    "('%s' and '%s'), see 'xpcsfit plot --help'",
					    dir, argv[k]);
		dir = argv[k];
	}
	if (!dir)
		return xf_cli_error(XF_ERR_CONFIG, "missing result directory, usage: xpcsfit "
						   "plot DIR");
	xf_error err = { 0 };
	xf_rundir rd;
	/* not while a run writes the folder; the plots are replaced one by one, atomically */
	if (xf_rundir_lock(&rd, dir, &err) != 0)
		return xf_cli_error(err.code ? err.code : XF_ERR_DATA, "%s", err.msg);
	xf_phase("plots", 0);
	int rc = xf_plot_result_dir(dir, &err);
	xf_rundir_release(&rd);
	if (rc != 0)
		return xf_cli_error(err.code ? err.code : XF_ERR_DATA, "%s", err.msg);
	fprintf(stderr, "xpcsfit: plots written to %s/plots\n", dir);
	return 0;
}
