/* eta.h — how long the posterior will take, for what is printed only (cmc.md "Progress
 * and time", adr/0080): a remaining time from the recent rate, and the one warning at
 * the start of a long exact run. Nothing here may decide a result. */
#ifndef XPCSFIT_CMC_ETA_H
#define XPCSFIT_CMC_ETA_H

/* reports remembered for the rate: about the last 30 s at one report a second */
#define XF_ETA_WINDOW 32
/* an exact run expected to take longer than this says so once at its start */
#define XF_LONG_RUN_S 600.0

/* The recent rate of work: (seconds, units done) of the last XF_ETA_WINDOW reports. A
 * NUTS transition costs what its tree depth costs (1–2^depth gradient passes) and the
 * depth changes through warmup, so the rate since the start misjudges what is left; the
 * rate over the last reports follows it. */
typedef struct xf_eta {
	double t[XF_ETA_WINDOW];
	long done[XF_ETA_WINDOW];
	int n, head;
	long total; /* units of the task being timed; a new total starts a new window */
} xf_eta;

/* Record (t_s, done) of a task of total units and return the seconds left from the rate
 * over the window (NaN until two reports with work between them). */
double xf_eta_update(xf_eta *e, double t_s, long done, long total);

/* Gradient passes per NUTS transition assumed at the start when the first transitions
 * used fewer: adr/0041 measured 18.8 (static, well identified), 31.4 (laminar) and 66.3
 * (a static ridge) at the default targets, warmup included (the largest is taken: a
 * warning too many costs a line, one too few an unexplained hour; 84 measured on a
 * laminar prior-data conflict); the first transitions of a
 * warmup (large steps, shallow trees) use far fewer (measured 2–5). */
#define XF_GRADS_PER_TRANSITION 66.3

/* The seconds an exact NUTS run of `transitions` transitions (every chain, warmup
 * included) will take when its first `done` transitions used `grads` gradient passes in
 * `elapsed_s`: the measured seconds per pass × transitions × the larger of the passes per
 * transition so far and XF_GRADS_PER_TRANSITION. NaN when nothing is measured. */
double xf_nuts_expected_s(double elapsed_s, long done, long grads, long transitions);

/* The threshold of the long-run warning: XF_LONG_RUN_S, or the test knob
 * XPCSFIT_TEST_LONG_RUN_S (seconds, ≥ 0) so that a test need not run for 10 minutes. */
double xf_long_run_threshold_s(void);

/* The transition count at which the long-run estimate is made: 10 per chain (the whole
 * run if shorter; a fixed count, not a time, so that the line does not depend on when the
 * progress reports fall). At 2 % of the run, as before adr/0096, a run on 11.5 M points
 * whose transitions took a minute each said so after 160 of them: hours in. */
long xf_long_run_probe(long transitions, int n_chains);

/* The one line said when the estimate exceeds the threshold: how long (basis: what the
 * estimate rests on), and what would make it faster; the run goes on. */
void xf_long_run_warning(double expected_s, long n_points, int n_chains, int n_threads,
			 const char *basis);

/* One run's use of the above (eta.c; the caller holds the run's lock): the stage of a
 * NUTS progress report (phase, chain), and after each transition the long-run estimate,
 * made once at xf_long_run_probe's count and said when over the threshold (one shard,
 * rank 0). */
struct cmc_run;
struct xf_cmc_progress;
void xf_cmc_nuts_stage(const struct cmc_run *r, struct xf_cmc_progress *p);
void xf_cmc_long_run_check(struct cmc_run *r, double elapsed_s);
/* After the estimate at the probe, each progress report: when the time so far and the
 * ETA from the recent rate exceed the threshold, the line is said then (once): the first
 * transitions of a warmup can use far shallower trees than the rest (measured: 160
 * transitions in 7 s, then ~3 s each on a laminar prior-data conflict) */
void xf_cmc_long_run_recheck(struct cmc_run *r, double elapsed_s, double eta_s);

#endif
