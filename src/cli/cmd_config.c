/* cmd_config.c — `xpcsfit config --mode static|laminar_flow [--out C.yaml [--force]]`:
 * print or write a commented config template (spec/cli.md). An existing file is replaced
 * only with --force, and never a device, FIFO, folder or link (util/files.h,
 * xf_check_out_file); the file is written to a temporary name and renamed, so an existing
 * config is never left half-written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "util/files.h"
#include "xpcsfit/config.h"
#include "xpcsfit/error.h"

static void config_usage(FILE *out)
{
	fputs("usage: xpcsfit config --mode static|laminar_flow [--out C.yaml [--force]]\n"
	      "       xpcsfit config --keys\n"
	      "\n"
	      "Write a commented configuration template with every key xpcsfit reads; --keys:\n"
	      "the key reference instead (markdown, docs/config-keys.md).\n"
	      "\n"
	      "options:\n"
	      "  --mode MODE   static or laminar_flow (also static_isotropic,\n"
	      "                static_anisotropic)\n"
	      "  --out FILE    write FILE instead of standard output (a new file, or an\n"
	      "                existing one with --force, replaced atomically)\n"
	      "  --force       replace an existing FILE\n"
	      "  --help        show this help\n",
	      out);
}

/* The template built in memory, then written by the one atomic writer (util/files.h):
 * temporary name, fsync, rename, fsync the folder. */
static int write_file(xf_mode mode, const char *path, int force)
{
	xf_error err = { 0 };
	if (xf_check_out_file(path, "--out", force, "--force", &err))
		return xf_cli_error(err.code, "%s", err.msg);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return xf_cli_error(XF_ERR_NOMEM, "out of memory, writing %s", path);
	int wrc = xf_config_write_template(mode, f);
	if (fclose(f) != 0 || wrc) {
		free(text);
		return xf_cli_error(XF_ERR_DATA, "cannot build the template, %s", path);
	}
	xf_remove_stale_tmp_of(path);
	int rc = xf_write_file_atomic(path, text, len, &err);
	free(text);
	return rc ? xf_cli_error(err.code, "%s", err.msg) : 0;
}

int xf_cmd_config(int argc, char **argv)
{
	const char *mode_name = NULL, *out_path = NULL;
	int force = 0, keys = 0;
	for (int k = 1; k < argc; k++) {
		const char *arg = argv[k];
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			config_usage(stdout);
			return 0;
		}
		if (!strcmp(arg, "--force")) {
			force = 1;
			continue;
		}
		if (!strcmp(arg, "--keys")) {
			keys = 1;
			continue;
		}
		const char **target = NULL;
		const char *value = NULL;
		if (!strncmp(arg, "--mode", 6) && (arg[6] == '\0' || arg[6] == '=')) {
			target = &mode_name;
			value = arg[6] == '=' ? arg + 7 : NULL;
		} else if (!strncmp(arg, "--out", 5) && (arg[5] == '\0' || arg[5] == '=')) {
			target = &out_path;
			value = arg[5] == '=' ? arg + 6 : NULL;
		} else {
			return xf_cli_error(XF_ERR_CONFIG,
					    "unknown option '%s', see 'xpcsfit "
					    "config --help'",
					    arg);
		}
		if (!value) {
			if (k + 1 >= argc)
				return xf_cli_error(XF_ERR_CONFIG,
						    "option '%s' needs a value, "
						    "see 'xpcsfit config --help'",
						    arg);
			value = argv[++k];
		}
		*target = value;
	}
	if (keys) {
		if (mode_name || out_path)
			return xf_cli_error(XF_ERR_CONFIG, "--keys takes no --mode or --out, see "
							   "'xpcsfit config --help'");
		xf_config_write_key_reference(stdout);
		return fflush(stdout) ? xf_cli_error(XF_ERR_DATA,
						     "cannot write the key reference: %s, "
						     "standard output",
						     strerror(errno))
				      : 0;
	}
	xf_mode mode;
	if (!mode_name)
		return xf_cli_error(XF_ERR_CONFIG, "missing --mode (static or laminar_flow), "
						   "see 'xpcsfit config --help'");
	if (xf_mode_parse(mode_name, &mode))
		return xf_cli_error(XF_ERR_CONFIG,
				    "--mode '%s' is not allowed (must be static "
				    "or laminar_flow), see 'xpcsfit config --help'",
				    mode_name);
	if (out_path && !out_path[0])
		return xf_cli_error(XF_ERR_CONFIG, "--out needs a file name, see 'xpcsfit "
						   "config --help'");
	if (out_path)
		return write_file(mode, out_path, force);
	if (xf_config_write_template(mode, stdout))
		return xf_cli_error(XF_ERR_DATA, "cannot write the template: %s, standard output",
				    strerror(errno));
	return 0;
}
