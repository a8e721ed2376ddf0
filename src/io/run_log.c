/* run_log.c — <dir>/run.log: the in-memory log of the run (error.h) saved atomically. */
#include "io/io_internal.h"
#include "xpcsfit/results.h"

#include <limits.h>
#include <string.h>

int xf_results_write_log(const char *dir, xf_error *err)
{
	char path[PATH_MAX];
	if (xf_path_join(path, sizeof path, dir, "run.log", err) != 0)
		return err->code;
	const char *text = xf_log_text();
	if (!text)
		text = "";
	return xf_write_file_atomic(path, text, strlen(text), err);
}
