/* cmd_nlsq.c — `xpcsfit nlsq`: load, fit, write <out>/nlsq/ (spec/cli.md). */
#include <getopt.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/results.h"
#include "xpcsfit/vdev.h"

static const char nlsq_usage[] =
	"usage: xpcsfit nlsq --config C.yaml [--data FILE.h5] [--out DIR] [--threads N]\n"
	"                    [--no-plots] [--no-surfaces]\n"
	"\n"
	"Bounded least-squares fit of the config's model to the two-time data.\n"
	"Results go to DIR/nlsq/ (DIR defaults to ./xpcsfit_results): results.h5,\n"
	"parameters.json, plots/, run.log.\n"
	"  --threads N     virtual devices (default: parallel.virtual_devices, else cores)\n"
	"  --no-plots      skip the PNG plots\n"
	"  --no-surfaces   skip the (n_phi, N, N) surfaces in results.h5\n";

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct progress_state {
	int tty;
	double t0;
} progress_state;

/* Iteration progress on stderr: one rewritten line on a terminal, log lines otherwise
 * (then only the iterations on all the data: screening makes hundreds of short runs). */
static void show_progress(const xf_nlsq_progress *p, void *ctx)
{
	progress_state *st = ctx;
	if (!st->tty && p->screening)
		return;
	double t = now_s() - st->t0;
	if (st->tty)
		fprintf(stderr, "\r  nlsq %-20s iter %4d  chi2 %.8e  lambda %.1e  %6.1fs ",
			p->phase, p->iteration, p->chi_squared, p->lambda, t);
	else
		fprintf(stderr, "xpcsfit: nlsq %s iteration %d chi2 %.10e lambda %.2e (%.1f s)\n",
			p->phase, p->iteration, p->chi_squared, p->lambda, t);
}

static void print_summary(const char *dir, const xf_nlsq_result *res)
{
	const xf_nlsq_search *s = &res->search;
	printf("nlsq: %s (%s) after %d iterations, chi2 %.6g, reduced chi2 %.6g, %zu points\n",
	       res->status, res->stop_reason, res->iterations, res->chi_squared,
	       res->reduced_chi_squared, res->n_points);
	if (s->n_candidates > 1)
		printf("search: %d starts screened on %zu points, %d basin%s, best from '%s'\n",
		       s->n_candidates, s->round_points[0], s->n_basins,
		       s->n_basins == 1 ? "" : "s", s->chosen);
	for (int k = 0; k < res->n_phys; k++)
		if (res->is_fixed[k])
			printf("  %-20s %.8g (fixed)\n", res->names[k], res->values[k]);
		else
			printf("  %-20s %.8g +/- %.3g\n", res->names[k], res->values[k],
			       res->uncertainties[k]);
	printf("quality: %s\n", xf_quality_level_name(res->quality.overall));
	for (int k = 0; k < res->quality.n_reasons; k++)
		printf("  - %s\n", res->quality.reasons[k]);
	printf("results: %s/\n", dir);
}

/* run.log keeps the config as it was read, so a result can be traced to its input. */
static void log_config_text(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char text[65536];
	size_t len = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[len] = '\0';
	xf_info("config file %s (%zu bytes%s):\n%s", path, len,
		len == sizeof text - 1 ? ", first 64 KiB" : "", text);
}

int xf_cmd_nlsq(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' }, { "data", required_argument, 0, 'd' },
		{ "out", required_argument, 0, 'o' },	 { "threads", required_argument, 0, 't' },
		{ "no-plots", no_argument, 0, 'P' },	 { "no-surfaces", no_argument, 0, 'S' },
		{ "help", no_argument, 0, 'h' },	 { 0, 0, 0, 0 },
	};
	const char *config_path = NULL, *data_path = NULL, *out = "./xpcsfit_results";
	int threads = 0;
	xf_output_options oopt = { 1, 1, 1 };
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config_path = optarg; break;
		case 'd': data_path = optarg; break;
		case 'o': out = optarg; break;
		case 't': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 1024)
				return xf_cli_error(XF_EXIT_CONFIG,
						    "--threads: '%s' is not allowed "
						    "(a whole number from 1 to 1024)",
						    optarg);
			threads = (int)v;
			break;
		}
		case 'P': oopt.write_plots = 0; break;
		case 'S': oopt.write_surfaces = 0; break;
		case 'h': fputs(nlsq_usage, stdout); return 0;
		default:
			return xf_cli_error(XF_EXIT_CONFIG,
					    "nlsq: unknown or incomplete option '%s', "
					    "see 'xpcsfit nlsq --help'",
					    argv[optind - 1]);
		}
	}
	if (optind < argc)
		return xf_cli_error(XF_EXIT_CONFIG, "nlsq: unexpected argument '%s'", argv[optind]);
	if (!config_path)
		return xf_cli_error(XF_EXIT_CONFIG,
				    "nlsq: --config is required, see 'xpcsfit nlsq --help'");

	double t_start = now_s();
	xf_error err = { 0 };
	xf_config cfg;
	xf_dataset ds;
	xf_nlsq_result res;
	memset(&ds, 0, sizeof ds);
	memset(&res, 0, sizeof res);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	xf_info("xpcsfit %s (HDF5 %d.%d.%d), command: nlsq, config: %s", XPCSFIT_VERSION,
		H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE, config_path);
	if (xf_config_load(config_path, &cfg, &err))
		return xf_cli_error(err.code, "%s", err.msg);
	log_config_text(config_path);
	if (threads == 0)
		threads = cfg.virtual_devices > 0 ? cfg.virtual_devices : xf_online_cores();
	int rc = xf_dataset_load(&cfg, data_path, &ds, &err);
	if (rc) {
		xf_config_free(&cfg);
		return xf_cli_error(err.code, "%s", err.msg);
	}
	oopt.threads = threads;
	double t_loaded = now_s();
	xf_info("data: %s (%s), q %.6g 1/A, %d angles, %d frames, dt %.6g s (%s), %zu points",
		ds.path, xf_layout_name(ds.layout), ds.q, ds.n_phi, ds.n_frames, ds.dt_s,
		ds.dt_source, ds.n_points);
	fprintf(stderr, "xpcsfit: nlsq on %zu points (%d angles x %d frames), %d virtual devices\n",
		ds.n_points, ds.n_phi, ds.n_frames, threads);
	progress_state ps = { isatty(2), now_s() };
	rc = xf_nlsq_fit(&cfg, &ds, threads, show_progress, &ps, &res, &err);
	if (ps.tty)
		fputc('\n', stderr);
	if (rc) {
		xf_dataset_free(&ds);
		xf_config_free(&cfg);
		return xf_cli_error(err.code, "%s", err.msg);
	}
	double t_fit = now_s();
	res.time_load_s = t_loaded - t_start;
	res.time_fit_s = t_fit - t_loaded;
	res.time_total_s = t_fit - t_start;
	if (!strcmp(res.status, "max_iterations"))
		xf_warn("nlsq stopped at max_iterations (%d) before converging",
			cfg.nlsq.max_iterations);
	if (strcmp(cfg.nlsq.loss, "linear"))
		xf_warn("optimization.nlsq.loss '%s' is ignored: xpcsfit fits plain least squares",
			cfg.nlsq.loss);

	size_t len = strlen(out) + 8;
	char *dir = malloc(len);
	if (!dir) {
		rc = xf_cli_error(XF_EXIT_DATA, "out of memory");
		goto done;
	}
	snprintf(dir, len, "%s/nlsq", out);
	fprintf(stderr, "xpcsfit: writing %s/ (results.h5%s%s)\n", dir,
		oopt.write_surfaces ? " with surfaces" : "",
		oopt.write_plots ? ", parameters.json, plots" : ", parameters.json");
	if (xf_results_write_nlsq(dir, &cfg, &ds, &res, &oopt, &err)) {
		rc = xf_cli_error(err.code ? err.code : XF_EXIT_DATA, "%s", err.msg);
		free(dir);
		goto done;
	}
	print_summary(dir, &res);
	rc = !strcmp(res.status, "failed") ? XF_EXIT_DATA : 0;
	if (rc)
		xf_cli_error(rc, "the fit did not converge (%s), results are marked failed, in %s",
			     res.quality.n_reasons ? res.quality.reasons[0] : res.stop_reason, dir);
	free(dir);
done:
	xf_nlsq_result_free(&res);
	xf_dataset_free(&ds);
	xf_config_free(&cfg);
	return rc;
}
