/* cmd_simulate.c — `xpcsfit simulate`: a synthetic APS two-time file from a config's
 * initial parameters (spec/cli.md, data.md "Simulated files"), passed to the writer as a
 * problem request and a selection (request_build.c). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_keys.h"
#include "cli/commands.h"
#include "cli/request_build.h"
#include "cli/overrides.h"
#include "util/files.h"
#include "util/verbosity.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "util/key_names.h"

/* More angles than any detector ring holds: a guard against a runaway --phi list. */
#define SIM_MAX_ANGLES 4096

static const char simulate_usage[] =
	"usage: xpcsfit simulate --config C.yaml --phi 0,45,90 --out FILE.h5 [--force]\n"
	"                        [--layout aps-u|aps-old] [--contrast 0.3] [--offset 1.0]\n"
	"                        [--noise 0.002] [--seed 1] [--lzf] [--frames N] [--strict]\n"
	"                        [--q 0.003,0.0054,0.008]\n"
	"\n"
	"Write synthetic two-time data from " XF_KEY_VALUES
	" (null: the middle of\nthe bounds), with q, dt and the gap of the config, as a real APS "
	"8-ID-I file.\n"
	"  --phi LIST      angles in degrees, comma separated, in the order written\n"
	"  --q LIST        q rings in 1/A, comma separated: one file of several rings with\n"
	"                  the same truth and angles (default: the config's wavevector_q,\n"
	"                  a value or a list)\n"
	"  --force         replace FILE.h5 when it exists (refused without it)\n"
	"  --layout L      aps-u (default, current nexus layout) or aps-old (legacy)\n"
	"  --contrast C    contrast of every angle (0.3)\n"
	"  --offset B      offset of every angle (1.0)\n"
	"  --noise SD      sd of the additive Gaussian noise per stored point (0.002)\n"
	"  --seed S        noise seed, keyed with (angle, i, j) (1)\n"
	"  --lzf           compress the maps with LZF (HDF5 filter 32000)\n"
	"  --frames N      frames per map (default: " XF_KEY_END_FRAME
	")\n  --strict        refuse a config with keys xpcsfit does not use (exit 2)\n"
	"The config overrides below apply too, except --phi (the angles written "
	"here).\n" XF_OVERRIDE_USAGE;

static int parse_double(const char *opt, const char *s, double *out)
{
	char *end;
	errno = 0;
	*out = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(*out))
		return xf_cli_error(XF_ERR_CONFIG, "%s: '%s' is not a number", opt, s);
	return 0;
}

/* A comma-separated list of numbers for option opt (--phi: angles, --q: rings). */
static int parse_list(const char *opt, const char *what, int max, const char *s, double **v, int *n)
{
	*n = 0;
	*v = malloc((size_t)max * sizeof **v);
	if (!*v)
		return xf_cli_error(XF_ERR_NOMEM, "out of memory");
	const char *p = s;
	while (*n < max) {
		char *end;
		errno = 0;
		double x = strtod(p, &end);
		if (end == p || errno || !isfinite(x) || (*end && *end != ','))
			return xf_cli_error(XF_ERR_CONFIG,
					    "%s: '%s' is not a comma-separated list of %s", opt, s,
					    what);
		(*v)[(*n)++] = x;
		if (!*end)
			return 0;
		p = end + 1;
	}
	return xf_cli_error(XF_ERR_CONFIG, "%s: more than %d %s", opt, max, what);
}

/* the command line's flags beside the options of the writer */
typedef struct sim_flags {
	const char *q_s; /* --q LIST */
	long frames;
	int strict, force;
} sim_flags;

static int parse_args(int argc, char **argv, const char **config_path, const char **phi_s,
		      xf_sim_options *opt, sim_flags *fl, xf_cli_overrides *ov)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' },
		{ "phi", required_argument, 0, 'p' },
		{ "q", required_argument, 0, 'q' },
		{ "out", required_argument, 0, 'o' },
		{ "layout", required_argument, 0, 'l' },
		{ "contrast", required_argument, 0, 'C' },
		{ "offset", required_argument, 0, 'B' },
		{ "noise", required_argument, 0, 'n' },
		{ "seed", required_argument, 0, 's' },
		{ "lzf", no_argument, 0, 'z' },
		{ "frames", required_argument, 0, 'f' },
		{ "strict", no_argument, 0, 'S' },
		{ "force", no_argument, 0, 'F' },
		{ "help", no_argument, 0, 'h' },
		/* --phi above is the list of angles to write: it wins over the override */
		XF_OVERRIDE_OPTIONS,
		{ 0, 0, 0, 0 },
	};
	int c, rc = 0;
	char *end;
	opterr = 0;
	optind = 1;
	xf_cli_seen seen = { 0 };
	for (int li = -1; !rc && (c = getopt_long(argc, argv, "", opts, &li)) != -1; li = -1) {
		rc = xf_cli_option_rules("simulate", opts, li, optarg, &seen);
		if (rc)
			break;
		switch (c) {
		case 'c': *config_path = optarg; break;
		case 'p': *phi_s = optarg; break;
		case 'q': fl->q_s = optarg; break;
		case 'o': opt->out_path = optarg; break;
		case 'l':
			if (!strcmp(optarg, "aps-u"))
				opt->layout = XF_LAYOUT_APS_U;
			else if (!strcmp(optarg, "aps-old"))
				opt->layout = XF_LAYOUT_APS_OLD;
			else
				rc = xf_cli_error(XF_ERR_CONFIG,
						  "--layout: '%s' is not allowed "
						  "(aps-u or aps-old)",
						  optarg);
			break;
		case 'C': rc = parse_double("--contrast", optarg, &opt->contrast); break;
		case 'B': rc = parse_double("--offset", optarg, &opt->offset); break;
		case 'n':
			rc = parse_double("--noise", optarg, &opt->noise_sd);
			if (!rc && opt->noise_sd < 0)
				rc = xf_cli_error(XF_ERR_CONFIG, "--noise: '%s' must be >= 0",
						  optarg);
			break;
		case 's':
			errno = 0;
			opt->seed = strtoull(optarg, &end, 10);
			if (end == optarg || *end || errno || optarg[0] == '-')
				rc = xf_cli_error(XF_ERR_CONFIG,
						  "--seed: '%s' is not a whole "
						  "number >= 0",
						  optarg);
			break;
		case 'z': opt->lzf = 1; break;
		case 'S': fl->strict = 1; break;
		case 'F': fl->force = 1; break;
		case 'f':
			errno = 0;
			fl->frames = strtol(optarg, &end, 10);
			if (end == optarg || *end || errno || fl->frames < 3 ||
			    fl->frames > 1000000)
				rc = xf_cli_error(XF_ERR_CONFIG,
						  "--frames: '%s' is not allowed (a "
						  "whole number from 3 to 1000000)",
						  optarg);
			break;
		case 'h': fputs(simulate_usage, stdout); return -1;
		default:
			rc = xf_cli_override_or_unknown(ov, c, optarg, "simulate",
							argv[optind - 1]);
			break;
		}
	}
	if (rc)
		return rc;
	if (optind < argc)
		return xf_cli_error(XF_ERR_CONFIG, "simulate: unexpected argument '%s'",
				    argv[optind]);
	if (!*config_path || !*phi_s || !opt->out_path)
		return xf_cli_error(XF_ERR_CONFIG, "simulate: --config, --phi and --out are "
						   "required, see 'xpcsfit simulate --help'");
	/* refused before the config is read: an existing file without --force, a device,
	 * FIFO, folder or link whatever is given (util/files.h) */
	xf_error err = { 0 };
	if (opt->out_path[0] &&
	    xf_check_out_file(opt->out_path, "--out", fl->force, "--force", &err))
		return xf_cli_error(err.code, "%s", err.msg);
	return xf_cli_overrides_finish(ov);
}

static void print_written(const xf_config *cfg, const xf_sim_options *opt)
{
	char rings[64];
	if (opt->n_q > 1)
		snprintf(rings, sizeof rings, "%d q rings %g to %g", opt->n_q, opt->q_per_A[0],
			 opt->q_per_A[opt->n_q - 1]);
	else
		snprintf(rings, sizeof rings, "q %g",
			 opt->n_q ? opt->q_per_A[0] : cfg->wavevector_q);
	printf("simulate: wrote %s (%s layout, %s, %d angles, %d frames, %s 1/A, "
	       "dt %g s, noise sd %g, seed %llu%s)\n",
	       opt->out_path, xf_layout_name(opt->layout), xf_mode_name(cfg->mode), opt->n_phi,
	       opt->n_frames, rings, cfg->dt_s, opt->noise_sd, (unsigned long long)opt->seed,
	       opt->lzf ? ", LZF" : "");
}

int xf_cmd_simulate(int argc, char **argv)
{
	const char *config_path = NULL, *phi_s = NULL;
	sim_flags fl = { NULL, 0, 0, 0 };
	double *phi = NULL, *q = NULL;
	xf_sim_options opt = { NULL, XF_LAYOUT_APS_U, 0, NULL, 0, 0.3, 1.0, 0.002, 1, 0, 0, NULL };
	xf_cli_overrides ov = { 0 };
	int rc = parse_args(argc, argv, &config_path, &phi_s, &opt, &fl, &ov);
	if (rc) {
		xf_cli_overrides_free(&ov);
		return rc < 0 ? 0 : rc;
	}
	if ((rc = parse_list("--phi", "angles", SIM_MAX_ANGLES, phi_s, &phi, &opt.n_phi)) ||
	    (fl.q_s && (rc = parse_list("--q", "q rings", XF_Q_LIST_MAX, fl.q_s, &q, &opt.n_q)))) {
		free(phi);
		free(q);
		xf_cli_overrides_free(&ov);
		return rc;
	}
	opt.phi_deg = phi;
	xf_config cfg;
	xf_error err = { 0 };
	rc = xf_config_load_with(config_path, ov.items, ov.n, &cfg, &err);
	xf_cli_overrides_free(&ov);
	if (rc) {
		free(phi);
		free(q);
		return xf_cli_error(err.code, "%s", err.msg);
	}
	/* the rings: --q, else the config's list (a single value: one ring, as before) */
	opt.q_per_A = q ? q : cfg.q_rings.list;
	if (!q && cfg.q_rings.pick == XF_Q_PICK_LIST)
		opt.n_q = cfg.q_rings.n_list;
	if (fl.strict && (rc = xf_cli_strict(&cfg, config_path))) {
		/* nothing written */
	} else if (fl.frames == 0 && cfg.end_frame <= 0) {
		rc = xf_cli_error(XF_ERR_CONFIG,
				  "simulate needs the number of frames: set " XF_KEY_END_FRAME
				  " > 0 in %s or pass --frames N",
				  config_path);
	} else {
		opt.n_frames = (int)(fl.frames ? fl.frames : cfg.end_frame);
		if (xf_cli_simulate_write(&cfg, &opt, &err))
			rc = xf_cli_error(err.code, "%s", err.msg);
		else if (xf_verbosity() >= XF_VERB_NORMAL)
			print_written(&cfg, &opt);
	}
	xf_config_free(&cfg);
	free(phi);
	free(q);
	return rc;
}
