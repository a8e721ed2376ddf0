/* verbosity.h — how much xpcsfit says on stderr, and how often progress is shown.
 *
 * One level for the whole process, set once by the command line (dispatch.c: -q/--quiet,
 * -v, -vv on every subcommand): quiet shows error lines only; normal shows the phase
 * lines and warnings; -v adds the info lines of the run log; -vv adds every progress
 * step. Progress on a terminal is one rewritten line; elsewhere (a pipe, a batch job's
 * log file) it is a plain line at most every XF_PROGRESS_PLAIN_S seconds. */
#ifndef XPCSFIT_UTIL_VERBOSITY_H
#define XPCSFIT_UTIL_VERBOSITY_H

enum xf_verbosity_level {
	XF_VERB_QUIET = -1, /* -q: errors only */
	XF_VERB_NORMAL = 0, /* phase lines, warnings, throttled progress */
	XF_VERB_INFO = 1,   /* -v: the run log's info lines too */
	XF_VERB_DEBUG = 2,  /* -vv: every progress step, also without a terminal */
};

/* Seconds between two progress lines when stderr is not a terminal. */
#define XF_PROGRESS_PLAIN_S 5.0

/* Set the level (clamped to quiet..debug) and route the run log's warnings and info
 * lines to stderr accordingly (error.h xf_log_set_stderr). */
void xf_verbosity_set(int level);
int xf_verbosity(void);
/* XF_KEY_LOGGING_LEVEL ERROR: stderr shows error lines only, stdout's summaries stay (-q
 * drops those too). */
void xf_verbosity_stderr_errors_only(int on);

/* 1 when the command line gave -q or -v (then a config's XF_KEY_LOGGING_LEVEL is not used). */
void xf_verbosity_mark_given(int given);
int xf_verbosity_given(void);
/* Put the log routing of the level back after a caller changed it for a while. */
void xf_verbosity_apply_log(void);

/* "xpcsfit: <line>" on stderr when the level is at least min_level (not into run.log:
 * use xf_info/xf_warn for what the log must keep). */
void xf_say(int min_level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Progress is shown at all (not quiet). */
int xf_progress_on(void);
/* stderr is a terminal: progress may rewrite one line with '\r'. */
int xf_progress_tty(void);
/* Without a terminal: 1 when a plain progress line is due now (the first call, then
 * once XF_PROGRESS_PLAIN_S seconds have passed since the last line printed; every
 * call at -vv); *last_s keeps the time of the last line (start it at a negative value). */
int xf_progress_due(double *last_s, double now_s);

/* A counted step of an output phase ("surfaces", "plots"): on a terminal one rewritten
 * line "  surfaces 5/23 angles  1.2s", ended at done == total; otherwise a plain line
 * once the phase has run XF_PROGRESS_PLAIN_S seconds and then at most that often (every
 * step at -vv), so that a short phase adds no line to a piped run. p keeps the state:
 * zero it before the first step. Nothing when progress is off. */
typedef struct xf_count_progress {
	double t0, last; /* start; the last plain line (set on the first call) */
	int started;
} xf_count_progress;
void xf_progress_count(xf_count_progress *p, const char *what, int done, int total,
		       const char *unit);

#endif
