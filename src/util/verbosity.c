/* verbosity.c — the process's verbosity level and progress pacing (verbosity.h). */
#include "util/verbosity.h"
#include "xpcsfit/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "util/clock.h"

static int level = XF_VERB_NORMAL;
static int given;
static int stderr_errors_only;

void xf_verbosity_stderr_errors_only(int on)
{
	stderr_errors_only = on;
	xf_verbosity_apply_log();
}

void xf_verbosity_mark_given(int g)
{
	given = g;
}

int xf_verbosity_given(void)
{
	return given;
}

void xf_verbosity_set(int new_level)
{
	level = new_level < XF_VERB_QUIET   ? XF_VERB_QUIET
		: new_level > XF_VERB_DEBUG ? XF_VERB_DEBUG
					    : new_level;
	xf_verbosity_apply_log();
}

int xf_verbosity(void)
{
	return level;
}

void xf_verbosity_apply_log(void)
{
	xf_log_set_stderr(level >= XF_VERB_NORMAL && !stderr_errors_only,
			  level >= XF_VERB_INFO && !stderr_errors_only);
}

void xf_say(int min_level, const char *fmt, ...)
{
	if (level < min_level || stderr_errors_only)
		return;
	char line[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "xpcsfit: %s\n", line);
}

int xf_progress_on(void)
{
	return level >= XF_VERB_NORMAL && !stderr_errors_only;
}

int xf_progress_tty(void)
{
	return level >= XF_VERB_NORMAL && isatty(STDERR_FILENO);
}

void xf_progress_count(xf_count_progress *p, const char *what, int done, int total,
		       const char *unit)
{
	if (!xf_progress_on() || stderr_errors_only)
		return;
	double now = xf_monotonic_s();
	if (!p->started) {
		p->started = 1;
		p->t0 = now;
		p->last = now; /* a pipe hears of a phase only once it has lasted a while */
	}
	if (xf_progress_tty()) {
		fprintf(stderr, "\r  %s %d/%d %s  %.1fs ", what, done, total, unit, now - p->t0);
		if (done >= total)
			fputc('\n', stderr);
	} else if (xf_progress_due(&p->last, now)) {
		xf_say(XF_VERB_NORMAL, "%s %d/%d %s (%.1f s)", what, done, total, unit,
		       now - p->t0);
	}
}

int xf_progress_due(double *last_s, double now_s)
{
	if (level < XF_VERB_NORMAL || stderr_errors_only)
		return 0;
	if (level >= XF_VERB_DEBUG || *last_s < 0.0 || now_s - *last_s >= XF_PROGRESS_PLAIN_S) {
		*last_s = now_s;
		return 1;
	}
	return 0;
}
