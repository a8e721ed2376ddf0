/* interrupt.h — what SIGINT and SIGTERM do (spec/cli.md: exit 130 for SIGINT, 143 for
 * SIGTERM; docs/outputs.md "Interrupted runs"). The run is a sequence of phases. In a
 * polling phase (the NLSQ fit, CMC sampling) the handler only sets the flag of error.h:
 * the loops stop at their next check and the CLI exits with the signal's code; a backstop
 * alarm ends the process one second later if they do not. In every other phase (load,
 * validate, surfaces, plots, writing) the handler ends the process at once: it kills the
 * helper processes, notes the interruption in the run folder's INCOMPLETE marker, prints
 * one error line and _exit()s with 128 + signal. Files are only ever renamed into place
 * whole, so an exit at any instant leaves at most temporary files (removed by the next
 * run into the folder) and the marker. */
#ifndef XPCSFIT_UTIL_INTERRUPT_H
#define XPCSFIT_UTIL_INTERRUPT_H

#include <pthread.h>
#include <sys/types.h>

/* Install the SIGINT/SIGTERM handlers (main, before anything else). The calling thread
 * is the one that runs them: another thread that takes a signal hands it on. */
void xf_signals_install(void);

/* pthread_create for the program's own threads (the virtual-device pool): the thread
 * starts with SIGINT, SIGTERM and SIGALRM blocked, so the handler only ever runs in the
 * main thread, whose critical sections block them. sigprocmask is per thread: a signal
 * taken by a pool thread ran the handler beside xf_interrupt_unmark in the main thread
 * and said "marked incomplete" of a folder whose marker it had just removed
 * (test_plot_signals, --threads 2, on a loaded machine). Returns pthread_create's. */
int xf_thread_create(pthread_t *thread, void *(*start)(void *), void *arg);

/* Enter a phase: name for the messages ("load", "fit", "plots", ...), polls 1 when the
 * code of this phase checks xf_interrupted() itself. Entering a non-polling phase after a
 * signal arrived ends the process now. Test hook: XPCSFIT_TEST_PAUSE=<phase>:<seconds>
 * sleeps at the start of that phase (tests/test_run_dir.py; documented in docs/outputs.md),
 * so that a signal can be sent during a phase that is otherwise too short to hit;
 * <phase>#<n>:<seconds> at its n-th start only (tests/test_batch.py). */
void xf_phase(const char *name, int polls);

/* The test hook alone, at points that are no phase: "plot_worker" at the start of each
 * plot worker process, "plot:<file name>" inside the PLplot session of that page (stderr
 * held in memory: plsession.c). */
void xf_test_pause(const char *name);

/* While fd 2 stands for something else (plsession.c holds PLplot's stderr in memory during
 * a session), fd is the real stderr: the interruption's line (and the test hook's) go
 * there, so that a signal at any instant of the plots still prints its one line. -1: back
 * to fd 2. */
void xf_interrupt_stderr(int fd);

/* The signal that interrupted the run (SIGINT or SIGTERM), 0 while none did. */
int xf_interrupt_signal(void);
/* An error message about the interruption ("interrupted: no result written",
 * "interrupted during the self-check") with the signal and the phase named, as the
 * handler's own line says them ("interrupted by SIGTERM during fit: no result
 * written"), into out; any other message, or no signal, is copied as it is. */
void xf_interrupt_name(const char *msg, char *out, size_t size);

/* The exit code of an interrupted run: 130 for SIGINT, 143 for SIGTERM. */
int xf_interrupt_exit_code(void);

/* XPCSFIT_INTERRUPT_FILE=<path> (docs/cluster.md, adr/0058): an interrupted run records
 * "interrupted by SIGTERM during <phase>" there (whole: temporary file, then rename), as
 * it exits 130/143, so that a job script can tell an interruption from a failure where a
 * launcher's exit code cannot (Open MPI 4.1's mpirun exits 1 after relaying either
 * signal). Read by xf_signals_install; the handler writes it when it ends the process,
 * xf_interrupt_record when a graceful stop returns (nothing when no signal came).
 * xf_interrupt_record_off, before xf_signals_install: this process records nothing
 * (xpcsfit-mpi: every rank but 0, whose status is the job's). */
void xf_interrupt_record(void);
void xf_interrupt_record_off(void);

/* The CLI has printed the error line of a graceful stop: cancel the backstop alarm. */
void xf_interrupt_reported(void);

/* The marker files of the run folders being written (fit writes two); an interruption
 * appends a line to each. */
void xf_interrupt_add_marker(const char *path);
void xf_interrupt_remove_marker(const char *path);

/* The lock files of the folders held where flock() is missing (lockfile.h): an
 * interruption that ends the process at once removes them. */
void xf_interrupt_add_lockfile(const char *path);
void xf_interrupt_remove_lockfile(const char *path);

/* A result folder is complete (its marker removed): a signal from here on says so
 * instead of "nothing written" (the exit code stays 130 / 143). */
void xf_interrupt_completed(const char *dir);
/* unlink(marker) and xf_interrupt_remove_marker + xf_interrupt_completed, with the
 * handled signals blocked across them. 0, or -1 (errno) when unlink failed. */
int xf_interrupt_unmark(const char *marker, const char *dir);

/* Append a line (the error that ended the run) to the markers of the folders in work. */
void xf_interrupt_note(const char *line);

/* Helper processes (plot workers): fork() for them. The parent tracks the child so that
 * an interruption kills it (xf_child_untrack once reaped); the child dies with its parent
 * (PR_SET_PDEATHSIG) and leaves the signals to the parent (default actions). SIGINT and
 * SIGTERM are blocked across the fork, so that the child never runs the parent's handler
 * (a second "interrupted" line) and the parent never stops between the fork and the
 * tracking (a child left to run). Returns what fork() returns. */
pid_t xf_child_fork(void);
void xf_child_untrack(pid_t pid);

#endif
