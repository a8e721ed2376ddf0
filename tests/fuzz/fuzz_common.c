/* fuzz_common.c — scratch files for the fuzz targets (see fuzz_common.h). */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xpcsfit/error.h"

#define XF_FUZZ_MAX_SCRATCH 4

static char scratch[XF_FUZZ_MAX_SCRATCH][512];
static int n_scratch;

static void remove_scratch(void)
{
	for (int k = 0; k < n_scratch; k++)
		unlink(scratch[k]);
}

const char *xf_fuzz_scratch(const char *suffix)
{
	for (int k = 0; k < n_scratch; k++) {
		size_t ls = strlen(scratch[k]), lx = strlen(suffix);
		if (ls >= lx && strcmp(scratch[k] + ls - lx, suffix) == 0)
			return scratch[k];
	}
	if (n_scratch == XF_FUZZ_MAX_SCRATCH)
		return NULL;
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	int n = snprintf(scratch[n_scratch], sizeof scratch[0], "%s/xf_fuzz_%ld%s", tmp,
			 (long)getpid(), suffix);
	if (n < 0 || (size_t)n >= sizeof scratch[0])
		return NULL;
	if (n_scratch == 0) {
		atexit(remove_scratch);
		/* warnings of bad inputs are expected; keep the fuzzer's output readable */
		xf_log_set_stderr(0, 0);
	}
	return scratch[n_scratch++];
}

int xf_fuzz_write(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = size ? fwrite(data, 1, size, f) : 0;
	int rc = (w == size) ? 0 : -1;
	if (fclose(f))
		rc = -1;
	return rc;
}
