/* clock.h — the monotonic wall clock, for the time stages take (run.log, timing_s) and
 * progress lines only: no decision depends on it (cmc.md, determinism rules). */
#ifndef XPCSFIT_UTIL_CLOCK_H
#define XPCSFIT_UTIL_CLOCK_H

/* seconds on CLOCK_MONOTONIC, from an arbitrary origin */
double xf_monotonic_s(void);

#endif
