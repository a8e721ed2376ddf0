/* error.h — status codes, the error context and log lines shared by every module.
 *
 * Library functions never exit(): they return an xf_status (XF_OK, or the class of the
 * failure) and fill an xf_error with one line "what, where". The status says what kind of
 * failure it was; the CLI alone turns it into an exit code (src/cli/main.c, one table:
 * data/io/memory 1, config 2, interrupted 130 or 143), as GSL's gsl_errno.h and SQLite's
 * result codes keep library codes apart from what a program does with them.
 * Warnings and info lines go to stderr (unless silenced) and into an in-memory run log
 * that the result writers save as run.log. */
#ifndef XPCSFIT_ERROR_H
#define XPCSFIT_ERROR_H

#include <stdarg.h>
#include <stddef.h>

typedef enum xf_status {
	XF_OK = 0,
	XF_ERR_DATA = 1,	/* the data cannot be used, or the run failed (fit failed) */
	XF_ERR_CONFIG = 2,	/* usage or config error: the user's request cannot be met */
	XF_ERR_IO = 3,		/* a file could not be read or written (disk full, rights) */
	XF_ERR_NOMEM = 4,	/* an allocation failed */
	XF_ERR_INTERRUPTED = 5, /* SIGINT or SIGTERM asked the run to stop */
	XF_STATUS_COUNT
} xf_status;

/* "ok", "data", "config", "io", "nomem", "interrupted"; "unknown" out of range. */
const char *xf_status_name(int status);
/* One short sentence per status, for logs and tools. */
const char *xf_status_message(int status);

typedef struct xf_error {
	int code;	/* xf_status; XF_OK while no error has been recorded */
	char msg[2048]; /* one line, no trailing newline */
} xf_error;

/* Record the first error only (later calls keep the original cause); returns code. */
int xf_fail(xf_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void xf_error_clear(xf_error *err);

/* Log: warnings are printed as "xpcsfit: warning: ..." on stderr; info lines go to
 * stderr only when verbose. Both are kept for run.log. */
void xf_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void xf_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void xf_log_set_stderr(int warnings_on, int info_on);
/* While on, a warning whose text was already shown on stderr since it was turned on is
 * not shown again (it is still counted and kept for run.log): a run that loads one config
 * and one file for several rings (per-ring fits, validate) says each thing once. Turning
 * it on or off forgets the lines shown. */
#define XF_WARN_ONCE_MAX 256
void xf_log_warn_once(int on);
int xf_log_warning_count(void);
/* The whole log so far (NUL-terminated, owned by the log module). */
const char *xf_log_text(void);
void xf_log_reset(void);

/* Set from a SIGINT/SIGTERM handler; long loops (the optimiser) stop at the next
 * iteration and the CLI exits with XF_ERR_INTERRUPTED, writing no result. */
void xf_request_interrupt(void);
int xf_interrupted(void);

/* Sticky record that an allocation failed where the code has a fallback that would give
 * a different answer (a start dropped, a default scaling, a NaN check): the fit and the
 * sampler check it before they report a result, and fail with "out of memory" instead of
 * returning a result that differs from the one with memory (tests/faults/). */
void xf_note_no_memory(void);
int xf_no_memory(void);
/* Forget it before an independent run in the same process (batch: each file), so that one
 * file's allocation failure does not fail the files after it. */
void xf_no_memory_reset(void);

#endif
