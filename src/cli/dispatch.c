/* dispatch.c — the command dispatch that xpcsfit (main.c) and xpcsfit-mpi (mpi/main.c)
 * share: the error line, the exit codes, the subcommand table (spec/cli.md). */
#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "util/interrupt.h"
#include "util/profile.h"
#include "util/verbosity.h"
#include "xpcsfit/dist.h"
#include "xpcsfit/error.h"

/* The last error message (the ranks' agreement, xf_cli_agree; batch records) and the
 * text put before each error line (batch: the file). */
static char last_error[4096];
static char error_prefix[1024];
/* xpcsfit-mpi on a rank other than 0: the job's stderr (this rank's fd 2 is /dev/null),
 * -1 elsewhere; and whether the error lines now are this rank's own (a batch file's) */
static int rank_stderr = -1;
static int own_lines;

void xf_cli_rank_stderr(int fd)
{
	rank_stderr = fd;
}

void xf_cli_own_lines(int on)
{
	own_lines = on;
}

/* The line on the job's stderr, in one write so that the ranks' lines never mix; 0, or
 * -1 when it does not go there (then to this process's stderr). An interruption is not
 * a rank's own: mpirun signals every rank, and rank 0 says it once. */
static int rank_line(const char *line)
{
	char text[sizeof last_error + sizeof error_prefix + 32];
	if (rank_stderr < 0 || !own_lines || xf_interrupt_signal())
		return -1;
	int n = snprintf(text, sizeof text, "xpcsfit: error: %s\n", line);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
	return write(rank_stderr, text, len) == (ssize_t)len ? 0 : -1;
}

const char *xf_cli_last_error(void)
{
	return last_error;
}

void xf_cli_error_prefix(const char *prefix)
{
	snprintf(error_prefix, sizeof error_prefix, "%s", prefix ? prefix : "");
	last_error[0] = '\0';
}

int xf_cli_error(int code, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	size_t n = (size_t)snprintf(line, sizeof line, "%s", error_prefix);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - n, fmt, ap);
	va_end(ap);
	if (code == XF_ERR_INTERRUPTED || xf_interrupt_signal()) { /* name the signal */
		char msg[sizeof line];
		snprintf(msg, sizeof msg, "%s", line + n);
		xf_interrupt_name(msg, line + n, sizeof line - n);
	}
	snprintf(last_error, sizeof last_error, "%s", line + n);
	xf_interrupt_reported();
	if (rank_line(line) != 0)
		fprintf(stderr, "xpcsfit: error: %s\n", line);
	xf_interrupt_note(line); /* the reason, in the INCOMPLETE marker of a claimed folder */
	return code;
}

static void usage(FILE *out)
{
	fputs("usage: xpcsfit <command> [options]\n"
	      "       xpcsfit --config C.yaml --method nlsq|cmc|fit [options]\n"
	      "\n"
	      "commands:\n"
	      "  simulate   write a synthetic APS two-time file from a config\n"
	      "  validate   check a config and its data; print what would be fitted\n"
	      "  nlsq       bounded least-squares fit (point estimate + covariance)\n"
	      "  cmc        consensus Monte Carlo posterior (fit: nlsq, then cmc)\n"
	      "  batch      fit many files: one result folder each and a summary\n"
	      "  plot DIR   redraw the plots of a result directory\n"
	      "  config     write a commented config template\n"
	      "  version    print the version\n"
	      "\n"
	      "  plot --config C.yaml   draw the selected data without a fit\n"
	      "  --method M             homodyne's form: 'xpcsfit --config C.yaml --method nlsq'\n"
	      "                         is 'xpcsfit nlsq --config C.yaml' (M: nlsq, cmc, fit)\n"
	      "\n"
	      "A fit writes DIR/nlsq/ (and DIR/cmc/; DIR: --out, default ./xpcsfit_results):\n"
	      "report.html (a page to open or print: status, parameters with uncertainties\n"
	      "and units, plots), parameters.json, results.h5, plots/, run.log.\n"
	      "\n"
	      "Run 'xpcsfit <command> --help' for the options of a command.\n"
	      "Every command takes -q/--quiet (errors only), -v/-vv (more) and -h/--help.\n",
	      out);
}

/* The commands --method names (homodyne's `--method nlsq|cmc`, and fit). */
static int is_method(const char *m)
{
	return !strcmp(m, "nlsq") || !strcmp(m, "cmc") || !strcmp(m, "fit");
}

/* homodyne's form, options first: `xpcsfit --config C.yaml --method M [options]` is
 * `xpcsfit M --config C.yaml [options]` (docs/cli.md). argv is rewritten in place: M
 * becomes argv[1] and --method M (or --method=M) leaves the options. Returns 0 (argv[1]
 * is now the command, or there was no --method: the caller reports the leading option),
 * or the exit code of a bad --method after its one error line. */
static int method_form(int *argc, char **argv)
{
	int m = 1, skip = 0;
	char *method = NULL;
	for (; m < *argc && strcmp(argv[m], "--"); m++) {
		if (!strcmp(argv[m], "--method")) {
			if (m + 1 >= *argc)
				return xf_cli_error(XF_ERR_CONFIG,
						    "--method needs a value: nlsq, cmc or fit, see "
						    "'xpcsfit --help'");
			method = argv[m + 1];
			skip = 2;
			break;
		}
		if (!strncmp(argv[m], "--method=", 9)) {
			method = argv[m] + 9;
			skip = 1;
			break;
		}
	}
	if (!method)
		return 0;
	if (!is_method(method))
		return xf_cli_error(XF_ERR_CONFIG,
				    "--method '%s' is not allowed (must be nlsq, cmc or fit), see "
				    "'xpcsfit --help'",
				    method);
	/* argv[0], M, the options before --method, the options after it */
	memmove(&argv[2], &argv[1], (size_t)(m - 1) * sizeof *argv);
	argv[1] = method;
	for (int k = m + skip; k < *argc; k++)
		argv[k - skip + 1] = argv[k];
	*argc -= skip - 1;
	argv[*argc] = NULL;
	return 0;
}

/* printed after every subcommand's own help: what dispatch handles for all of them */
static const char common_help[] =
	"\n"
	"common options (every command):\n"
	"  -q, --quiet     errors only (no progress, no summary, no warnings)\n"
	"  -v, --verbose   also the run log's info lines; -vv: also every progress step\n"
	"  --profile       time and peak memory of each phase (stderr, run.log,\n"
	"                  parameters.json \"timings\"; docs/cli.md)\n"
	"  -h, --help      show this help\n"
	"Progress is one rewritten line on a terminal; without one (a pipe, a job's log),\n"
	"a plain line at most every 10 s.\n";

/* The options every subcommand takes, taken out of argv here (in place; argv[0] stays):
 * -q/--quiet, -v/--verbose (repeatable), -vv, --profile; -h becomes --help. Everything after "--"
 * is left alone. Returns the new argc; *help is set when --help or -h was given. */
static int common_options(int argc, char **argv, int *help)
{
	static char help_arg[] = "--help";
	int level = XF_VERB_NORMAL, out = 1, quiet = 0, rest = 0;
	*help = 0;
	for (int k = 1; k < argc; k++) {
		const char *a = argv[k];
		if (!rest && !strcmp(a, "--"))
			rest = 1;
		if (rest) {
			argv[out++] = argv[k];
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = 1;
		} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			level++;
		} else if (!strcmp(a, "-vv") || !strcmp(a, "-vvv")) {
			level += (int)strlen(a) - 1;
		} else if (!strcmp(a, "--profile")) {
			xf_profile_enable();
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			*help = 1;
			argv[out++] = help_arg;
		} else {
			argv[out++] = argv[k];
		}
	}
	xf_verbosity_set(quiet ? XF_VERB_QUIET : level);
	xf_verbosity_mark_given(quiet || level != XF_VERB_NORMAL);
	return out;
}

static int run(int argc, char **argv);

/* --profile: the phases on stderr once everything is written (the total includes the
 * writing, which run.log and parameters.json, written before their own end, cannot) */
static void print_profile(void)
{
	if (!xf_profile_enabled() || xf_verbosity() < XF_VERB_NORMAL)
		return;
	char line[1024];
	xf_profile_format(line, sizeof line);
	fprintf(stderr, "xpcsfit: profile: %s\n", line);
}

/* The one table from library status to exit code (spec/cli.md): 1 when the run or the
 * data failed (an I/O error or exhausted memory included), 2 for usage and config, 128 +
 * the signal when interrupted (130 SIGINT, 143 SIGTERM). */
static int exit_code(int status)
{
	switch (status) {
	case XF_OK: return 0;
	case XF_ERR_CONFIG: return 2;
	case XF_ERR_INTERRUPTED: return xf_interrupt_exit_code();
	case XF_ERR_DATA:
	case XF_ERR_IO:
	case XF_ERR_NOMEM:
	default: return 1;
	}
}

/* SIGINT/SIGTERM: see util/interrupt.h (exit 130 / 143, every phase). HDF5 must not
 * close files from an atexit handler: after a failed H5Fclose (disk full) its library
 * shutdown crashes on the half-closed file, and every file is closed explicitly anyway. */
int xf_cli_main(int argc, char **argv)
{
	H5dont_atexit();
	xf_signals_install();
	int rc = run(argc, argv);
	if (xf_interrupt_signal() && rc != 0) {
		rc = XF_ERR_INTERRUPTED;
		xf_interrupt_record(); /* XPCSFIT_INTERRUPT_FILE, for the job script */
	}
	return exit_code(rc);
}

static int run(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
		int collective; /* runs on every rank of an MPI run */
	} commands[] = {
		{ "simulate", xf_cmd_simulate, 0 },
		{ "validate", xf_cmd_validate, 0 },
		{ "nlsq", xf_cmd_nlsq, 1 },
		{ "plot", xf_cmd_plot, 0 },
		{ "config", xf_cmd_config, 0 },
		{ "cmc", xf_cmd_cmc, 1 },
		{ "fit", xf_cmd_fit, 1 },
		/* each rank runs its share of the files (cmd_batch.c, finish_ranks) */
		{ "batch", xf_cmd_batch, 1 },
	};
	/* a usage error is one line, as every error (spec/cli.md); the list of commands is
	 * on stdout with --help */
	int help = 0;
	argc = argc < 2 ? argc : common_options(argc, argv, &help);
	if (argc < 2 && help) {
		usage(stdout);
		return 0;
	}
	if (argc < 2)
		return xf_cli_error(XF_ERR_CONFIG, "no command given, see 'xpcsfit --help'");
	if (argv[1][0] == '-' && strcmp(argv[1], "--version")) {
		int rc = method_form(&argc, argv);
		if (rc)
			return rc;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if ((!strcmp(cmd, "version") || !strcmp(cmd, "--version")) && argc > 2 && !help)
		return xf_cli_error(XF_ERR_CONFIG,
				    "version takes no argument: '%s', see 'xpcsfit "
				    "--help'",
				    argv[2]);
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("xpcsfit %s\n", XPCSFIT_VERSION);
		return 0;
	}
	for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++) {
		if (strcmp(cmd, commands[k].name))
			continue;
		if (help) { /* the command's usage, then the common options */
			static char help_arg[] = "--help";
			char *help_argv[3] = { argv[1], help_arg, NULL };
			int rc = commands[k].run(2, help_argv);
			if (rc == 0)
				fputs(common_help, stdout);
			return rc;
		}
		/* several ranks (xpcsfit-mpi): the fits run on all of them; the other
		 * commands on rank 0 alone, the others waiting for its status */
		int rc;
		if (commands[k].collective || !xf_dist_get())
			rc = commands[k].run(argc - 1, argv + 1);
		else
			rc = xf_cli_agree(xf_dist_is_root() ? commands[k].run(argc - 1, argv + 1)
							    : 0);
		print_profile();
		return rc;
	}
	if (cmd[0] == '-') /* an option where the command goes, and no --method */
		return xf_cli_error(
			XF_ERR_CONFIG,
			"'%s' before a command: give the command first ('xpcsfit nlsq "
			"--config C.yaml') or --method nlsq|cmc|fit, see 'xpcsfit --help'",
			cmd);
	return xf_cli_error(XF_ERR_CONFIG, "unknown command '%s', see 'xpcsfit --help'", cmd);
}
