/* cli_keys.h — the config's ignored keys as the CLI shows them (cli_keys.c). */
#ifndef XPCSFIT_CLI_KEYS_H
#define XPCSFIT_CLI_KEYS_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "xpcsfit/config.h"

/* "ignored_keys: N ..." then one "ignored: <section>: k1, k2" line per section. */
void xf_cli_print_ignored(FILE *f, const xf_config *cfg);
/* {"section": ["k1", "k2"], ...}; "" is the top level. NULL when out of memory. */
cJSON *xf_cli_ignored_json(const xf_config *cfg);
/* One info line (run.log) with the count, when there are any. */
void xf_cli_log_ignored(const xf_config *cfg);
/* --strict: 0 when every key is used, else the error line naming the keys and
 * XF_ERR_CONFIG (exit 2). */
int xf_cli_strict(const xf_config *cfg, const char *config_path);

#endif
