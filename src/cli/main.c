/* main.c — the xpcsfit program: dispatch to a subcommand (spec/cli.md). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "xpcsfit/error.h"

int xf_cli_error(int code, const char *fmt, ...)
{
	va_list ap;
	fputs("xpcsfit: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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
	      "  plot DIR   redraw the plots of a result directory\n"
	      "  config     write a commented config template\n"
	      "  version    print the version\n"
	      "\n"
	      "Run 'xpcsfit <command> --help' for the options of a command.\n",
	      out);
}

/* First Ctrl-C: stop at the next optimiser iteration and exit 130 without writing a
 * result; a second one ends the process at once (the default action). */
static void on_interrupt(int sig)
{
	xf_request_interrupt();
	signal(sig, SIG_DFL);
}

int main(int argc, char **argv)
{
	signal(SIGINT, on_interrupt);
	signal(SIGTERM, on_interrupt);
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} commands[] = {
		{ "simulate", xf_cmd_simulate }, { "validate", xf_cmd_validate },
		{ "nlsq", xf_cmd_nlsq },	 { "plot", xf_cmd_plot },
		{ "config", xf_cmd_config },	 { "cmc", xf_cmd_cmc },
		{ "fit", xf_cmd_fit },
	};
	if (argc < 2) {
		usage(stderr);
		return XF_EXIT_CONFIG;
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
	if (!strcmp(cmd, "batch"))
		return xf_cli_error(XF_EXIT_CONFIG,
				    "command '%s' is not available in this version, "
				    "see 'xpcsfit --help'",
				    cmd);
	usage(stderr);
	return xf_cli_error(XF_EXIT_CONFIG, "unknown command '%s', see 'xpcsfit --help'", cmd);
}
