/* error.h — error context and log lines shared by every module.
 *
 * Library functions never exit(): they return an int status (0 ok, XF_EXIT_DATA for bad
 * data or a failed run, XF_EXIT_CONFIG for a usage/config error) and fill an xf_error with
 * one line "what, where". The CLI prints it once as "xpcsfit: error: <msg>".
 * Warnings and info lines go to stderr (unless silenced) and into an in-memory run log
 * that the result writers save as run.log. */
#ifndef XPCSFIT_ERROR_H
#define XPCSFIT_ERROR_H

#include <stdarg.h>
#include <stddef.h>

enum {
	XF_OK = 0,
	XF_EXIT_DATA = 1,   /* run failed: bad data, fit failed */
	XF_EXIT_CONFIG = 2, /* usage or config error */
	XF_EXIT_INTERRUPT = 130,
};

typedef struct xf_error {
	int code;	/* 0 while no error has been recorded */
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
int xf_log_warning_count(void);
/* The whole log so far (NUL-terminated, owned by the log module). */
const char *xf_log_text(void);
void xf_log_reset(void);

/* Set from a SIGINT/SIGTERM handler; long loops (the optimiser) stop at the next
 * iteration and the CLI exits with XF_EXIT_INTERRUPT, writing no result. */
void xf_request_interrupt(void);
int xf_interrupted(void);

/* Sticky record that an allocation failed where the code has a fallback that would give
 * a different answer (a start dropped, a default scaling, a NaN check): the fit and the
 * sampler check it before they report a result, and fail with "out of memory" instead of
 * returning a result that differs from the one with memory (tests/faults/). */
void xf_note_no_memory(void);
int xf_no_memory(void);

#endif
