/* error.c — the error context and the in-memory run log (see error.h). */
#include "xpcsfit/error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	pthread_mutex_t lock;
	char *text; /* every log line so far */
	size_t len, cap;
	int warnings_to_stderr;
	int info_to_stderr;
	int n_warnings;
	/* xf_log_warn_once(1): hashes of the warnings already shown on stderr */
	int once;
	int n_shown;
	unsigned long long shown[XF_WARN_ONCE_MAX];
} log_state = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 1, 0, 0, 0, 0, { 0 } };

/* FNV-1a: a warning's identity for the once-only stderr rule */
static unsigned long long line_hash(const char *s)
{
	unsigned long long h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* 1 when line was shown on stderr already under the once rule (else it is recorded;
 * past XF_WARN_ONCE_MAX distinct lines every further line is shown) */
static int shown_before(const char *line)
{
	if (!log_state.once)
		return 0;
	unsigned long long h = line_hash(line);
	for (int k = 0; k < log_state.n_shown; k++)
		if (log_state.shown[k] == h)
			return 1;
	if (log_state.n_shown < XF_WARN_ONCE_MAX)
		log_state.shown[log_state.n_shown++] = h;
	return 0;
}

int xf_fail(xf_error *err, int code, const char *fmt, ...)
{
	if (err && err->code == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
		/* one line: fold any newline a caller let through */
		for (char *c = err->msg; *c; c++)
			if (*c == '\n')
				*c = ' ';
		err->code = code;
	}
	return err && err->code ? err->code : code;
}

static const struct {
	const char *name, *message;
} status_text[XF_STATUS_COUNT] = {
	[XF_OK] = { "ok", "success" },
	[XF_ERR_DATA] = { "data", "the data cannot be used or the run failed" },
	[XF_ERR_CONFIG] = { "config", "usage or configuration error" },
	[XF_ERR_IO] = { "io", "a file could not be read or written" },
	[XF_ERR_NOMEM] = { "nomem", "out of memory" },
	[XF_ERR_INTERRUPTED] = { "interrupted", "interrupted by a signal" },
};

const char *xf_status_name(int status)
{
	return status >= 0 && status < XF_STATUS_COUNT ? status_text[status].name : "unknown";
}

const char *xf_status_message(int status)
{
	return status >= 0 && status < XF_STATUS_COUNT ? status_text[status].message
						       : "unknown status";
}

void xf_error_clear(xf_error *err)
{
	err->code = 0;
	err->msg[0] = '\0';
}

static void log_append(const char *prefix, const char *line)
{
	size_t need = strlen(prefix) + strlen(line) + 2;
	if (log_state.len + need + 1 > log_state.cap) {
		size_t cap = log_state.cap ? log_state.cap : 4096;
		while (cap < log_state.len + need + 1)
			cap *= 2;
		char *p = realloc(log_state.text, cap);
		if (!p)
			return; /* the log is best effort; the run goes on */
		log_state.text = p;
		log_state.cap = cap;
	}
	log_state.len += (size_t)sprintf(log_state.text + log_state.len, "%s%s\n", prefix, line);
}

static void log_line(int is_warning, const char *fmt, va_list ap)
{
	char line[4096];
	vsnprintf(line, sizeof line, fmt, ap);
	pthread_mutex_lock(&log_state.lock);
	if (is_warning) {
		log_state.n_warnings++;
		log_append("warning: ", line);
		if (log_state.warnings_to_stderr && !shown_before(line))
			fprintf(stderr, "xpcsfit: warning: %s\n", line);
	} else {
		log_append("", line);
		if (log_state.info_to_stderr)
			fprintf(stderr, "xpcsfit: %s\n", line);
	}
	pthread_mutex_unlock(&log_state.lock);
}

void xf_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_line(1, fmt, ap);
	va_end(ap);
}

void xf_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_line(0, fmt, ap);
	va_end(ap);
}

void xf_log_set_stderr(int warnings_on, int info_on)
{
	log_state.warnings_to_stderr = warnings_on;
	log_state.info_to_stderr = info_on;
}

void xf_log_warn_once(int on)
{
	pthread_mutex_lock(&log_state.lock);
	log_state.once = on;
	log_state.n_shown = 0;
	pthread_mutex_unlock(&log_state.lock);
}

int xf_log_warning_count(void)
{
	return log_state.n_warnings;
}

const char *xf_log_text(void)
{
	return log_state.text ? log_state.text : "";
}

void xf_log_reset(void)
{
	pthread_mutex_lock(&log_state.lock);
	free(log_state.text);
	log_state.text = NULL;
	log_state.len = log_state.cap = 0;
	log_state.n_warnings = 0;
	pthread_mutex_unlock(&log_state.lock);
}

static volatile sig_atomic_t interrupt_requested;

void xf_request_interrupt(void)
{
	interrupt_requested = 1;
}

int xf_interrupted(void)
{
	return interrupt_requested != 0;
}

static atomic_int no_memory;

void xf_note_no_memory(void)
{
	atomic_store(&no_memory, 1);
}

int xf_no_memory(void)
{
	return atomic_load(&no_memory);
}

void xf_no_memory_reset(void)
{
	atomic_store(&no_memory, 0);
}
