/* cli_options.c — the rules every command's option parsing shares (commands.h,
 * adr/0075): an option's value may not be empty (`--max-iterations ''` used to mean
 * the default), and an option that holds one value may be given once (a second `--out`
 * used to win silently). The config overrides, whose later items win by design
 * (adr/0030), may repeat; --nlsq-result names one folder and may not. */
#include <getopt.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/overrides.h"
#include "xpcsfit/error.h"

/* The options that may be given more than once: edits of the config, in order. */
static int repeatable(int val)
{
	return val >= XF_OPT_MODE && val <= XF_OPT_SET && val != XF_OPT_NLSQ_RESULT;
}

int xf_cli_option_rules(const char *cmd, const struct option *opts, int index, const char *arg,
			xf_cli_seen *seen)
{
	if (index < 0 || opts[index].has_arg != required_argument)
		return 0;
	const struct option *o = &opts[index];
	if (arg && !arg[0])
		return xf_cli_error(XF_ERR_CONFIG,
				    "%s: --%s is empty: give a value, see 'xpcsfit %s --help'", cmd,
				    o->name, cmd);
	if (repeatable(o->val))
		return 0;
	for (int k = 0; k < seen->n; k++) {
		if (seen->val[k] != o->val)
			continue;
		/* an alias (--output-dir) is the same option as its first spelling (--out) */
		const char *first = opts[seen->index[k]].name;
		if (strcmp(first, o->name))
			return xf_cli_error(
				XF_ERR_CONFIG,
				"%s: --%s is given twice (--%s is the same option): give "
				"it once, see 'xpcsfit %s --help'",
				cmd, first, o->name, cmd);
		return xf_cli_error(
			XF_ERR_CONFIG,
			"%s: --%s is given twice: give it once, see 'xpcsfit %s --help'", cmd,
			o->name, cmd);
	}
	if (seen->n < XF_CLI_SEEN_MAX) {
		seen->val[seen->n] = o->val;
		seen->index[seen->n++] = index;
	}
	return 0;
}

int xf_cli_resume_force(const char *cmd, int resume, int force)
{
	if (!resume || !force)
		return 0;
	return xf_cli_error(XF_ERR_CONFIG,
			    "%s: --resume and --force contradict each other (--resume keeps what "
			    "is finished, --force redoes it): give one",
			    cmd);
}
