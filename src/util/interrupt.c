/* interrupt.c — SIGINT/SIGTERM handling, phases and helper processes (interrupt.h).
 * Everything the handler touches is prepared beforehand in static storage, and the
 * handler only calls async-signal-safe functions (write, open, kill, alarm, _exit,
 * pthread_self, pthread_kill), and only in the main thread. */
#include "util/interrupt.h"
#include "xpcsfit/error.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define XF_MAX_CHILDREN 256

static volatile sig_atomic_t got_signal; /* SIGINT or SIGTERM, 0 while none */
static volatile sig_atomic_t polling;	 /* the current phase checks the flag itself */
static volatile sig_atomic_t reported;	 /* the CLI printed the line already */
static char phase_name[64] = "start";
#define XF_MAX_MARKERS 4
static char markers[XF_MAX_MARKERS][PATH_MAX]; /* "" when the slot is free */
static volatile sig_atomic_t marker_set;       /* any slot in use */
/* the lock files of the folders held where flock() is missing (lockfile.h): removed by an
 * interruption, so that the next run finds the folder free */
static char lockfiles[XF_MAX_MARKERS][PATH_MAX];
static volatile sig_atomic_t lockfile_set;
static char completed[PATH_MAX]; /* the last folder completed, "" while none */
static volatile pid_t children[XF_MAX_CHILDREN];
static volatile sig_atomic_t n_children;
/* XPCSFIT_INTERRUPT_FILE (adr/0058): where an interruption records its signal, "" for
 * nowhere; the temporary name beside it is prepared here too, the handler only renames */
static char record_path[PATH_MAX];
static char record_tmp[PATH_MAX];
static int record_off; /* xpcsfit-mpi: a rank other than 0 records nothing */
/* where the line goes: fd 2, or the real stderr while fd 2 stands for something else
 * (a PLplot session's capture, plsession.c): a line written to fd 2 then would be lost */
static volatile sig_atomic_t line_fd = 2;
/* the thread that installed the handlers: the only one that runs them (forward_to_main) */
static pthread_t main_thread;
static volatile sig_atomic_t main_known;

static void put(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w <= 0 && errno != EINTR)
			return;
		if (w > 0) {
			s += w;
			n -= (size_t)w;
		}
	}
}

static const char *sig_name(int sig)
{
	return sig == SIGTERM ? "SIGTERM" : "SIGINT";
}

/* The record of XPCSFIT_INTERRUPT_FILE: "interrupted by SIGTERM during fit", whole or not
 * at all (temporary file, then rename: both async-signal-safe). A job script reads it
 * after the launcher ended, when mpirun's own exit code (1) no longer says why. */
static void record_signal(int sig)
{
	if (!record_path[0])
		return;
	/* the temporary name is made anew: a link there is removed, not written through (a
	 * user's file outside), and a FIFO removed, not waited on (a handler that never
	 * returns); unlink and open are async-signal-safe */
	unlink(record_tmp);
	int fd = open(record_tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		      0644);
	if (fd < 0)
		return;
	put(fd, "interrupted by ");
	put(fd, sig_name(sig));
	put(fd, " during ");
	put(fd, phase_name);
	put(fd, "\n");
	if (close(fd) == 0)
		rename(record_tmp, record_path);
	else
		unlink(record_tmp);
}

/* Kill the helpers, note the interruption, one line, exit: async-signal-safe only. */
static void stop_now(void)
{
	int sig = got_signal ? got_signal : SIGINT;
	for (int k = 0; k < n_children; k++)
		if (children[k] > 0)
			kill(children[k], SIGKILL);
	for (int k = 0; lockfile_set && k < XF_MAX_MARKERS; k++)
		if (lockfiles[k][0])
			unlink(lockfiles[k]);
	const char *where = "";
	for (int k = 0; marker_set && k < XF_MAX_MARKERS; k++) {
		if (!markers[k][0])
			continue;
		where = markers[k];
		int fd = open(markers[k], O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd >= 0) {
			put(fd, "interrupted by ");
			put(fd, sig_name(sig));
			put(fd, " during ");
			put(fd, phase_name);
			put(fd, "\n");
			close(fd);
		}
	}
	if (!reported) {
		int fd = line_fd;
		put(fd, "xpcsfit: error: interrupted by ");
		put(fd, sig_name(sig));
		put(fd, " during ");
		put(fd, phase_name);
		if (marker_set) {
			put(fd, ": the result folder is marked incomplete, ");
			put(fd, where);
		} else if (completed[0]) {
			/* the signal came after the results were whole (the exit tail) */
			put(fd, ": the results were complete already, in ");
			put(fd, completed);
		} else {
			put(fd, ": nothing written");
		}
		put(fd, "\n");
	}
	record_signal(sig);
	_exit(128 + sig);
}

/* A process-directed signal goes to any thread that does not block it: while the main
 * thread blocks it (xf_interrupt_unmark), to a thread a library started with the signals
 * open (OpenBLAS starts its pool before main). The handler there ran beside the main
 * thread's critical section and said "marked incomplete" of a folder completed a moment
 * later (test_plot_signals, --threads 1, on a loaded machine). Such a thread hands the
 * signal on to the main thread, which takes it once its critical section ends. 1 when
 * handed on. */
static int forward_to_main(int sig)
{
	if (!main_known || pthread_equal(pthread_self(), main_thread))
		return 0;
	pthread_kill(main_thread, sig);
	return 1;
}

static void on_signal(int sig)
{
	if (forward_to_main(sig))
		return;
	if (got_signal) /* a second signal: stop whatever the phase */
		stop_now();
	got_signal = sig;
	xf_request_interrupt();
	if (polling)
		alarm(1); /* the backstop: the loops check the flag far more often */
	else
		stop_now();
}

static void on_alarm(int sig)
{
	if (forward_to_main(sig))
		return;
	stop_now();
}

/* XPCSFIT_INTERRUPT_FILE, read once before any handler can run; a path too long for the
 * buffers records nothing rather than a cut name. */
static void record_setup(void)
{
	const char *path = getenv("XPCSFIT_INTERRUPT_FILE");
	record_path[0] = record_tmp[0] = '\0';
	if (record_off || !path || !path[0])
		return;
	int n = snprintf(record_tmp, sizeof record_tmp, "%s.tmp", path);
	if (n < 0 || (size_t)n >= sizeof record_tmp) {
		record_tmp[0] = '\0';
		return;
	}
	snprintf(record_path, sizeof record_path, "%s", path);
}

void xf_signals_install(void)
{
	main_thread = pthread_self();
	main_known = 1;
	record_setup();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGALRM);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
}

void xf_test_pause(const char *name)
{
	const char *hook = getenv("XPCSFIT_TEST_PAUSE");
	size_t len = strlen(name);
	if (!hook || strncmp(hook, name, len))
		return;
	const char *rest = hook + len;
	/* <phase>#<n>:<s>: only the n-th start of that phase (a batch's second file), so that
	 * a test can hold one file open and wait for that state rather than for seconds */
	if (rest[0] == '#') {
		static int seen; /* the starts of the named phase so far */
		char *end;
		long nth = strtol(rest + 1, &end, 10);
		if (*end != ':' || ++seen != nth)
			return;
		rest = end;
	}
	if (rest[0] != ':')
		return;
	double s = atof(rest + 1);
	/* where the interruption's line would go: the test reads it there */
	dprintf(line_fd, "xpcsfit: test pause in %s (XPCSFIT_TEST_PAUSE)\n", name);
	for (double t = 0; t < s && !got_signal; t += 0.01)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
}

/* Block the signals whose handler reads the state about to change; *old restores. */
static void block_handled_signals(sigset_t *old)
{
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGALRM);
	sigprocmask(SIG_BLOCK, &block, old);
}

int xf_thread_create(pthread_t *thread, void *(*start)(void *), void *arg)
{
	sigset_t old;
	block_handled_signals(&old); /* the new thread inherits the mask */
	int rc = pthread_create(thread, NULL, start, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

void xf_phase(const char *name, int polls)
{
	/* the name is read by the handler: block the signals while it changes */
	sigset_t old;
	block_handled_signals(&old);
	snprintf(phase_name, sizeof phase_name, "%s", name);
	polling = polls;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (got_signal && !polls)
		stop_now();
	xf_test_pause(name);
	if (got_signal && !polls)
		stop_now();
}

void xf_interrupt_stderr(int fd)
{
	line_fd = fd >= 0 ? fd : 2;
}

int xf_interrupt_signal(void)
{
	return got_signal;
}

int xf_interrupt_exit_code(void)
{
	return 128 + (got_signal == SIGTERM ? SIGTERM : SIGINT);
}

void xf_interrupt_name(const char *msg, char *out, size_t size)
{
	static const char word[] = "interrupted", vague[] = "interrupted by a signal";
	int sig = got_signal;
	if (!sig || strncmp(msg, word, sizeof word - 1) || strstr(msg, "SIGINT") ||
	    strstr(msg, "SIGTERM")) {
		snprintf(out, size, "%s", msg);
		return;
	}
	const char *rest =
		msg + (strncmp(msg, vague, sizeof vague - 1) ? sizeof word - 1 : sizeof vague - 1);
	/* a message that says where ("during the self-check") keeps its own words */
	int where = !strncmp(rest, " during ", 8) || !strncmp(rest, " while ", 7);
	snprintf(out, size, "interrupted by %s%s%s%s", sig_name(sig), where ? "" : " during ",
		 where ? "" : phase_name, rest);
}

void xf_interrupt_record_off(void)
{
	record_off = 1;
	record_path[0] = '\0';
}

void xf_interrupt_record(void)
{
	if (!got_signal)
		return;
	sigset_t old;
	block_handled_signals(&old);
	record_signal(got_signal);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

void xf_interrupt_reported(void)
{
	if (got_signal) {
		alarm(0);
		reported = 1;
	}
}

/* Add or remove a path of a table the handler reads; *set says whether any slot is used. */
static void set_paths(char (*table)[PATH_MAX], volatile sig_atomic_t *set, const char *add,
		      const char *remove)
{
	sigset_t old;
	block_handled_signals(&old);
	int any = 0;
	for (int k = 0; k < XF_MAX_MARKERS; k++) {
		if (remove && !strcmp(table[k], remove))
			table[k][0] = '\0';
		if (add && !table[k][0] && strlen(add) < PATH_MAX) {
			strcpy(table[k], add);
			add = NULL;
		}
		any |= table[k][0] != '\0';
	}
	*set = any;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

void xf_interrupt_add_marker(const char *path)
{
	set_paths(markers, &marker_set, path, NULL);
}

void xf_interrupt_remove_marker(const char *path)
{
	set_paths(markers, &marker_set, NULL, path);
}

void xf_interrupt_add_lockfile(const char *path)
{
	set_paths(lockfiles, &lockfile_set, path, NULL);
}

void xf_interrupt_remove_lockfile(const char *path)
{
	set_paths(lockfiles, &lockfile_set, NULL, path);
}

/* The folder's marker removed and the folder recorded as complete as one step for the
 * handler: a signal between the unlink and the bookkeeping said "marked incomplete" of a
 * folder whose marker was gone (test_plot_signals under ASan and load). 0, or −1 with
 * errno when the marker could not be removed. */
int xf_interrupt_unmark(const char *marker, const char *dir)
{
	sigset_t old;
	block_handled_signals(&old);
	int rc = unlink(marker) != 0 && errno != ENOENT ? -1 : 0;
	int saved = errno;
	if (rc == 0) {
		set_paths(markers, &marker_set, NULL, marker);
		snprintf(completed, sizeof completed, "%s", dir ? dir : "");
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return rc;
}

void xf_interrupt_completed(const char *dir)
{
	sigset_t old;
	block_handled_signals(&old);
	snprintf(completed, sizeof completed, "%s", dir ? dir : "");
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void child_track(pid_t pid)
{
	if (pid > 0 && n_children < XF_MAX_CHILDREN) {
		children[n_children] = pid;
		n_children = n_children + 1;
	}
}

void xf_child_untrack(pid_t pid)
{
	for (int k = 0; k < n_children; k++)
		if (children[k] == pid)
			children[k] = 0;
	while (n_children > 0 && children[n_children - 1] == 0)
		n_children = n_children - 1;
}

static void child_setup(pid_t parent)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGALRM, SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) /* the parent died before the line above */
		_exit(1);
}

pid_t xf_child_fork(void)
{
	sigset_t old;
	pid_t parent = getpid();
	block_handled_signals(&old);
	pid_t pid = fork();
	int why = errno;
	if (pid == 0)
		child_setup(parent);
	else
		child_track(pid);
	sigprocmask(SIG_SETMASK, &old, NULL); /* a signal held meanwhile arrives now */
	errno = why;
	return pid;
}

void xf_interrupt_note(const char *line)
{
	for (int k = 0; k < XF_MAX_MARKERS; k++) {
		if (!markers[k][0])
			continue;
		int fd = open(markers[k], O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd >= 0) {
			put(fd, line);
			put(fd, "\n");
			close(fd);
		}
	}
}
