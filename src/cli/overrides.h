/* overrides.h — the command-line overrides every subcommand that reads a config accepts
 * (docs/cli.md "Overrides"): --mode, --static-mode, --laminar-flow, --initial, --fix,
 * --max-iterations, --phi, --nlsq-result and --set, parsed here once and handed to
 * xf_config_load_with as xf_config_override items, so the config reader's own checks
 * apply and a bad value names the option it came from. */
#ifndef XPCSFIT_CLI_OVERRIDES_H
#define XPCSFIT_CLI_OVERRIDES_H

#include <getopt.h>
#include <stddef.h>

#include "xpcsfit/config.h"
#include "util/key_names.h"

/* getopt values of the override options (above any short option character) */
enum {
	XF_OPT_MODE = 0x1100,
	XF_OPT_STATIC_MODE,
	XF_OPT_LAMINAR_FLOW,
	XF_OPT_INITIAL,
	XF_OPT_FIX,
	XF_OPT_MAX_ITERATIONS,
	XF_OPT_PHI,
	XF_OPT_NLSQ_RESULT,
	XF_OPT_SET,
};

/* The struct option entries, for a subcommand's option table. */
#define XF_OVERRIDE_OPTIONS                                                                        \
	{ "mode", required_argument, 0, XF_OPT_MODE },                                             \
		{ "static-mode", no_argument, 0, XF_OPT_STATIC_MODE },                             \
		{ "laminar-flow", no_argument, 0, XF_OPT_LAMINAR_FLOW },                           \
		{ "initial", required_argument, 0, XF_OPT_INITIAL },                               \
		{ "fix", required_argument, 0, XF_OPT_FIX },                                       \
		{ "max-iterations", required_argument, 0, XF_OPT_MAX_ITERATIONS },                 \
		{ "phi", required_argument, 0, XF_OPT_PHI },                                       \
		{ "nlsq-result", required_argument, 0, XF_OPT_NLSQ_RESULT },                       \
	{                                                                                          \
		"set", required_argument, 0, XF_OPT_SET                                            \
	}

/* The lines of the usage texts that describe them. */
#define XF_OVERRIDE_USAGE                                                                          \
	"Overrides of the config (each printed, and recorded in run.log and\n"                     \
	"parameters.json under \"overrides\"):\n"                                                  \
	"  --mode static|laminar_flow    analysis_mode (--static-mode, --laminar-flow)\n"          \
	"  --initial NAME=VALUE          start value of a parameter (repeatable)\n"                \
	"  --fix NAME=VALUE              fix a parameter at VALUE (repeatable)\n"                  \
	"  --max-iterations N            " XF_KEY_NLSQ_MAX_ITERATIONS "\n"                         \
	"  --phi MIN:MAX                 fit the angles in [MIN, MAX] degrees (repeatable;\n"      \
	"                                replaces " XF_KEY_TARGET_RANGES ")\n"                     \
	"  --nlsq-result DIR             start from DIR's (or DIR/nlsq's) parameters.json\n"       \
	"  --set KEY=VALUE               any config key by dotted path (repeatable)\n"

typedef struct xf_cli_overrides {
	xf_config_override *items;
	size_t n, cap;
	char **texts; /* the strings items point to, owned */
	size_t n_texts, cap_texts;
	int n_phi; /* --phi ranges given so far */
	const char *nlsq_result;
} xf_cli_overrides;

/* opt one of XF_OPT_*: check the argument's form and add the override. Returns 0, or
 * the exit code (2) after printing one error line naming the option. */
int xf_cli_override_option(xf_cli_overrides *o, int opt, const char *arg);
/* The default branch of a subcommand's option loop: an override option is added as above;
 * anything else is "<command>: unknown or incomplete option '<given>'". 0 or the exit
 * code (2), after one error line. */
int xf_cli_override_or_unknown(xf_cli_overrides *o, int opt, const char *arg, const char *command,
			       const char *given);
/* After the options: --nlsq-result read into --initial items (the ones given explicitly
 * win), and every override printed once on stderr. 0 or the exit code. */
int xf_cli_overrides_finish(xf_cli_overrides *o);
void xf_cli_overrides_free(xf_cli_overrides *o);

#endif
