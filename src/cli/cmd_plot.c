/* cmd_plot.c — `xpcsfit plot DIR [--data FILE.h5]`: redraw DIR/plots/ from DIR/results.h5
 * (DIR may be the parent of nlsq/ and cmc/: both are redrawn), from its surfaces or from
 * the data file and the model at the result's values (adr/0059); `xpcsfit plot --config
 * C.yaml`: draw the selected data without a fit into OUT/data_plots/. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli_internal.h"
#include "cli/commands.h"
#include "cli/overrides.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/profile.h"
#include "util/rundir.h"
#include "util/verbosity.h"
#include "xpcsfit/error.h"
#include "xpcsfit/plot.h"

static const char plot_usage[] =
	"usage: xpcsfit plot DIR [--data FILE.h5]\n"
	"       xpcsfit plot --config C.yaml [--data FILE.h5] [--out DIR] [--threads N]\n"
	"                    [--strict] [config overrides]\n"
	"\n"
	"plot DIR: redraw the plots of a result directory (nlsq/, cmc/, nlsq_joint/ or\n"
	"cmc_joint/) from its results.h5: DIR/plots/c2_phi_<index>_<phi>deg.png per angle\n"
	"(a joint fit: c2_ring<r>_q<q>_phi_<index>_<phi>deg.png, each ring at its q;\n"
	"data | fit | residual) and DIR/plots/overview.png. DIR may be a run's --out\n"
	"folder: its nlsq/, cmc/, nlsq_joint/ and cmc_joint/ are redrawn. The maps come\n"
	"from the surfaces when the fit wrote them (--surfaces), else from the data file\n"
	"results.h5 names and the model at the result's values. Of a cmc folder the angle\n"
	"pages, corner.png and overview.png are redrawn; its forest, trace and rank pages\n"
	"stay as the run drew them.\n"
	"  --data FILE.h5   the data file, when it moved since the fit (same window)\n"
	"\n"
	"\n"
	"plot --config: the data the config selects (angles, frames, q ring), without a fit,\n"
	"into DIR/data_plots/ (DIR defaults to ./xpcsfit_results): per angle a PNG with the\n"
	"c2 map, c2 along the diagonal and c2 against lag for a few t1, and overview.png\n"
	"(every angle's c2 against lag, and its short-lag excess and long-lag level against\n"
	"phi). Look at these before a fit.\n"
	"  --config C.yaml  the config whose data selection is drawn\n"
	"  --data FILE.h5   instead of the config's data file\n"
	"  --out DIR        the pages go to DIR/data_plots/ (replaced one by one)\n"
	"  --threads N      processes drawing the angle pages (default: the cores)\n"
	"  --strict         refuse a config with keys xpcsfit does not use (exit 2)\n"
	"With --config, the config overrides below apply too (--phi, --set, ... choose\n"
	"the data drawn the way they choose the data fitted).\n" XF_OVERRIDE_USAGE;

static int is_file(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
		return 0;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int redraw(const char *dir, const char *data)
{
	xf_error err = { 0 };
	xf_rundir rd;
	/* not while a run writes the folder; the plots are replaced one by one, atomically */
	if (xf_rundir_lock(&rd, dir, &err) != 0)
		return xf_cli_error(err.code ? err.code : XF_ERR_DATA, "%s", err.msg);
	xf_phase("plots", 0);
	xf_profile_phase("plots");
	int rc = xf_plot_result_dir_data(dir, data, &err);
	xf_rundir_release(&rd);
	if (rc != 0)
		return xf_cli_error(err.code ? err.code : XF_ERR_DATA, "%s", err.msg);
	xf_say(XF_VERB_NORMAL, "plots written to %s/plots", dir);
	return 0;
}

/* DIR itself, else every method folder of a run's --out that holds a result: one ring's
 * nlsq/ and cmc/, the joint fits' nlsq_joint/ and cmc_joint/ (adr/0068) */
static int redraw_dir(const char *dir, const char *data)
{
	static const char *const subs[] = { "nlsq", "cmc", "nlsq_joint", "cmc_joint" };
	enum { n_subs = sizeof subs / sizeof subs[0] };
	char sub[PATH_MAX], h5[64];
	int held[n_subs], any = 0;
	for (int k = 0; k < n_subs; k++) {
		snprintf(h5, sizeof h5, "%s/results.h5", subs[k]);
		any |= held[k] = is_file(dir, h5);
	}
	if (is_file(dir, "results.h5") || !any)
		return redraw(dir, data);
	int rc = 0;
	for (int k = 0; k < n_subs && rc == 0; k++) {
		if (!held[k])
			continue;
		snprintf(sub, sizeof sub, "%s/%s", dir, subs[k]);
		rc = redraw(sub, data);
	}
	return rc;
}

static int plot_command(int argc, char **argv, xf_cli_overrides *ov);

static int plot_data(const xf_cli_job *job)
{
	char dir[PATH_MAX];
	int threads = job->threads;
	if (xf_cli_out_dir(dir, sizeof dir, job->out, "data_plots"))
		return XF_ERR_CONFIG;
	xf_config cfg;
	xf_dataset ds;
	double t0 = xf_cli_now_s();
	int rc = xf_cli_load(job, &cfg, &ds, &threads);
	if (rc)
		return rc;
	double t_loaded = xf_cli_now_s();
	xf_error err = { 0 };
	xf_phase("plots", 0);
	xf_profile_phase("plots");
	if (xf_plot_data(dir, &ds, threads, &err) != 0)
		rc = xf_cli_error(err.code ? err.code : XF_ERR_DATA, "%s", err.msg);
	else
		xf_say(XF_VERB_NORMAL,
		       "data plots written to %s/ (%d angle pages + overview.png; load %.2f s, "
		       "draw %.2f s)",
		       dir, ds.n_phi, t_loaded - t0, xf_cli_now_s() - t_loaded);
	xf_dataset_free(&ds);
	xf_config_free(&cfg);
	return rc;
}

int xf_cmd_plot(int argc, char **argv)
{
	xf_cli_overrides ov = { 0 };
	int rc = plot_command(argc, argv, &ov);
	xf_cli_overrides_free(&ov);
	return rc;
}

static int plot_command(int argc, char **argv, xf_cli_overrides *ov)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },
		{ "data", required_argument, 0, 'd' },
		{ "out", required_argument, 0, 'o' },
		{ "threads", required_argument, 0, 't' },
		{ "strict", no_argument, 0, 's' },
		{ "help", no_argument, 0, 'h' },
		XF_OVERRIDE_OPTIONS,
		{ 0, 0, 0, 0 },
	};
	xf_cli_job job;
	int c, out_given = 0;
	xf_cli_job_init(&job, "plot");
	opterr = 0;
	optind = 1;
	xf_cli_seen seen = { 0 };
	for (int li = -1; (c = getopt_long(argc, argv, "", opts, &li)) != -1; li = -1) {
		if (xf_cli_option_rules("plot", opts, li, optarg, &seen))
			return XF_ERR_CONFIG;
		switch (c) {
		case 's': job.strict = 1; break;
		case 'c': job.config = optarg; break;
		case 'd': job.data = optarg; break;
		case 'o':
			job.out = optarg;
			out_given = 1;
			break;
		case 't':
			if (xf_cli_threads(optarg, &job.threads))
				return XF_ERR_CONFIG;
			break;
		case 'h': fputs(plot_usage, stdout); return 0;
		default:
			if (xf_cli_override_or_unknown(ov, c, optarg, "plot", argv[optind - 1]))
				return XF_ERR_CONFIG;
			break;
		}
	}
	if (job.config) {
		if (optind < argc)
			return xf_cli_error(XF_ERR_CONFIG,
					    "plot: unexpected argument '%s' with --config (the "
					    "pages go to --out DIR/data_plots), see 'xpcsfit plot "
					    "--help'",
					    argv[optind]);
		if (xf_cli_overrides_finish(ov))
			return XF_ERR_CONFIG;
		job.overrides = ov->items;
		job.n_overrides = ov->n;
		return plot_data(&job);
	}
	if (out_given || job.threads || job.strict || ov->n || ov->nlsq_result)
		return xf_cli_error(XF_ERR_CONFIG,
				    "plot: --out, --threads, --strict and the config overrides "
				    "need --config (plot DIR redraws DIR's own plots), see "
				    "'xpcsfit plot --help'");
	if (optind >= argc)
		return xf_cli_error(XF_ERR_CONFIG,
				    "missing result directory or --config, usage: xpcsfit plot DIR "
				    "| xpcsfit plot --config C.yaml");
	if (optind + 1 < argc)
		return xf_cli_error(XF_ERR_CONFIG,
				    "more than one result directory given ('%s' and '%s'), see "
				    "'xpcsfit plot --help'",
				    argv[optind], argv[optind + 1]);
	return redraw_dir(argv[optind], job.data);
}
