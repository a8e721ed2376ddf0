/* profile.h — `--profile`: wall time and peak memory of each phase of a run (load,
 * select, fit, covariance, surfaces, plots, writing). Off unless enabled: then every
 * xf_profile_phase() closes the current phase and opens the next; a phase entered twice
 * (writing before and after the plots) adds up. Peak memory is the process's resident
 * high-water mark during the phase (Linux: VmHWM, reset at each switch through
 * /proc/self/clear_refs), for plots also that of the drawing processes. */
#ifndef XPCSFIT_UTIL_PROFILE_H
#define XPCSFIT_UTIL_PROFILE_H

#define XF_PROFILE_MAX_PHASES 12

typedef struct xf_profile_phase_row {
	const char *name; /* "load", "select", "fit", "covariance", "surfaces", "plots", ... */
	double wall_s;	  /* seconds spent in the phase, every visit together */
	double peak_mib;  /* resident high-water mark in the phase (MiB); NaN: not known */
} xf_profile_phase_row;

/* Turn profiling on (dispatch.c: --profile) and start the clock. */
void xf_profile_enable(void);
int xf_profile_enabled(void);
/* Close the current phase, open name (a string literal: it is kept). No-op when off. */
void xf_profile_phase(const char *name);
/* The phases so far in first-entered order, the current one counted up to now; returns
 * their count and sets *total_s to the seconds since xf_profile_enable. */
int xf_profile_snapshot(xf_profile_phase_row *rows, int max, double *total_s);
/* One line "load 0.75 s (120 MiB), ..., total 5.1 s" into buf. */
void xf_profile_format(char *buf, unsigned long size);

#endif
