/* main.c — the xpcsfit program: dispatch to a subcommand (spec/cli.md). */
#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "util/interrupt.h"
#include "xpcsfit/error.h"

static char error_prefix[1024]; /* xf_cli_error_prefix() */
static char last_error[4096];	/* xf_cli_last_error() */

void xf_cli_error_prefix(const char *prefix)
{
	snprintf(error_prefix, sizeof error_prefix, "%s", prefix ? prefix : "");
	last_error[0] = '\0';
}

const char *xf_cli_last_error(void)
{
	return last_error;
}

int xf_cli_error(int code, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	size_t n = (size_t)snprintf(line, sizeof line, "%s", error_prefix);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - n, fmt, ap);
	va_end(ap);
	snprintf(last_error, sizeof last_error, "%s", line + n);
	xf_interrupt_reported();
	fprintf(stderr, "xpcsfit: error: %s\n", line);
	xf_interrupt_note(line); /* the reason, in the INCOMPLETE marker of a claimed folder */
	return code;
}

static void usage(FILE *out)
{
	fputs("usage: xpcsfit <command> [options]\n"
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
	      "Run 'xpcsfit <command> --help' for the options of a command.\n",
	      out);
}

static int run(int argc, char **argv);

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
int main(int argc, char **argv)
{
	H5dont_atexit();
	xf_signals_install();
	int rc = run(argc, argv);
	if (xf_interrupt_signal() && rc != 0)
		rc = XF_ERR_INTERRUPTED;
	return exit_code(rc);
}

static int run(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} commands[] = {
		{ "simulate", xf_cmd_simulate }, { "validate", xf_cmd_validate },
		{ "nlsq", xf_cmd_nlsq },	 { "plot", xf_cmd_plot },
		{ "config", xf_cmd_config },	 { "cmc", xf_cmd_cmc },
		{ "fit", xf_cmd_fit },		 { "batch", xf_cmd_batch },
	};
	if (argc < 2) {
		usage(stderr);
		return XF_ERR_CONFIG;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("xpcsfit %s\n", XPCSFIT_VERSION);
		return 0;
	}
	for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
		if (!strcmp(cmd, commands[k].name))
			return commands[k].run(argc - 1, argv + 1);
	usage(stderr);
	return xf_cli_error(XF_ERR_CONFIG, "unknown command '%s', see 'xpcsfit --help'", cmd);
}
