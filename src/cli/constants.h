/* constants.h — the physical constants a fit uses (q, dt, the gap, the angles) with
 * where each came from: the file, the config, a command-line override or a default.
 * `validate` prints them as key: value lines or JSON, nlsq/cmc/fit on stderr and in
 * run.log (docs/cli.md "Constants and their sources"). */
#ifndef XPCSFIT_CLI_CONSTANTS_H
#define XPCSFIT_CLI_CONSTANTS_H

#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"

typedef struct xf_constant_sources {
	char q[320];
	char dt[320];
	char gap[320];
	char angles[320];
} xf_constant_sources;

void xf_cli_constant_sources(const xf_config *cfg, const xf_dataset *ds, xf_constant_sources *out);
/* "xpcsfit: q = ... 1/A (source)" and the others on stderr, and in the log. */
void xf_cli_print_constants(const xf_config *cfg, const xf_dataset *ds);

#endif
