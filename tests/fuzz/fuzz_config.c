/* fuzz_config.c — fuzz target: the YAML config loader (xf_config_load) on arbitrary bytes.
 * Any input must end in 0 (a config) or an error with one line and a config/data exit
 * code — never a crash, leak, hang or sanitizer report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "xpcsfit/config.h"
#include "xpcsfit/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = xf_fuzz_scratch(".yaml");
	if (!path || xf_fuzz_write(path, data, size))
		abort();
	xf_config cfg;
	xf_error err = { 0 };
	int rc = xf_config_load(path, &cfg, &err);
	if (rc == 0) {
		xf_config_free(&cfg);
	} else {
		/* an error is one line with a known exit code */
		if (rc != XF_ERR_CONFIG && rc != XF_ERR_DATA) {
			fprintf(stderr, "fuzz_config: exit code %d: %s\n", rc, err.msg);
			abort();
		}
		if (err.msg[0] == '\0' || strchr(err.msg, '\n')) {
			fprintf(stderr, "fuzz_config: not one error line: '%s'\n", err.msg);
			abort();
		}
	}
	xf_log_reset();
	return 0;
}
