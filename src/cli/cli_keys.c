/* cli_keys.c — how the CLI shows the config's key accounting (adr/0032): the keys no
 * reader used, grouped by section ("optimization.nlsq: x_scale, verbose"), as lines for
 * `validate` and run.log, as a JSON object for `validate --json`, and the --strict
 * refusal that names them. */
#include <stdio.h>
#include <string.h>

#include "cli/cli_keys.h"
#include "cli/commands.h"

/* Longest refusal line: the key list is cut there (the count is always whole). */
#define XF_STRICT_LINE_MAX 2048

/* The key after its section: "x_scale" of "optimization.nlsq.x_scale". */
static const char *leaf(const char *path, size_t cut)
{
	return cut ? path + cut + 1 : path;
}

/* Same section as the key before it: the keys of one section are contiguous in file
 * order except under lists, where a new group simply starts. */
static int same_section(const char *a, size_t ca, const char *b, size_t cb)
{
	return ca == cb && strncmp(a, b, ca) == 0;
}

void xf_cli_print_ignored(FILE *f, const xf_config *cfg)
{
	fprintf(f, "ignored_keys: %zu%s\n", cfg->n_ignored_keys,
		cfg->n_ignored_keys ? " (in the config, not used by xpcsfit; --strict refuses "
				      "them)"
				    : "");
	for (size_t k = 0; k < cfg->n_ignored_keys; k++) {
		const char *p = cfg->ignored_keys[k];
		size_t cut = xf_config_key_section(p);
		int cont = k > 0 &&
			   same_section(cfg->ignored_keys[k - 1],
					xf_config_key_section(cfg->ignored_keys[k - 1]), p, cut);
		if (cont)
			fprintf(f, ", %s", leaf(p, cut));
		else
			fprintf(f, "%signored: %.*s: %s", k ? "\n" : "", (int)(cut ? cut : 3),
				cut ? p : "(top)", leaf(p, cut));
	}
	if (cfg->n_ignored_keys)
		fputc('\n', f);
}

cJSON *xf_cli_ignored_json(const xf_config *cfg)
{
	cJSON *o = cJSON_CreateObject();
	char section[512];
	for (size_t k = 0; o && k < cfg->n_ignored_keys; k++) {
		const char *p = cfg->ignored_keys[k];
		size_t cut = xf_config_key_section(p);
		snprintf(section, sizeof section, "%.*s", (int)cut, p);
		cJSON *list = cJSON_GetObjectItemCaseSensitive(o, section);
		if (!list && !(list = cJSON_AddArrayToObject(o, section)))
			break;
		cJSON_AddItemToArray(list, cJSON_CreateString(leaf(p, cut)));
	}
	return o;
}

void xf_cli_log_ignored(const xf_config *cfg)
{
	if (cfg->n_ignored_keys)
		xf_info("config: %zu keys not used by xpcsfit (`xpcsfit validate` lists them, "
			"--strict refuses them)",
			cfg->n_ignored_keys);
}

int xf_cli_strict(const xf_config *cfg, const char *config_path)
{
	char keys[XF_STRICT_LINE_MAX];
	size_t used = 0;
	if (!cfg->n_ignored_keys)
		return 0;
	keys[0] = '\0';
	for (size_t k = 0; k < cfg->n_ignored_keys && used + 8 < sizeof keys; k++) {
		int w = snprintf(keys + used, sizeof keys - used, "%s%s", k ? ", " : "",
				 cfg->ignored_keys[k]);
		if (w < 0 || (size_t)w >= sizeof keys - used) {
			snprintf(keys + used, sizeof keys - used, ", ...");
			break;
		}
		used += (size_t)w;
	}
	return xf_cli_error(XF_ERR_CONFIG,
			    "--strict: %zu config keys are not used by xpcsfit: %s, in %s",
			    cfg->n_ignored_keys, keys, config_path);
}
