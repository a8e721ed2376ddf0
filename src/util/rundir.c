/* rundir.c — the result folder as a unit: lock, INCOMPLETE marker, removal of a previous
 * result (rundir.h, adr/0017; the lock file where flock() is missing: adr/0056). */
#include "util/rundir.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/lockfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the files of a result; plots/ is emptied and removed as well. A per-ring run's folder
 * (adr/0065) holds its summary; its rings' folders are results of their own. CMC's
 * posterior.nc is one of them: an old one never sits beside a new run's shards. */
static const char *const result_files[] = { "results.h5",      "parameters.json", "run.log",
					    "report.html",     "rings.csv",	  "rings.json",
					    "params_vs_q.png", "posterior.nc" };

static int exists_in(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	int n = snprintf(path, sizeof path, "%s/%s", dir, name);
	return n > 0 && (size_t)n < sizeof path && lstat(path, &st) == 0;
}

static int regular_fd(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

int xf_rundir_incomplete(const char *dir)
{
	return exists_in(dir, XF_RUNDIR_MARKER);
}

/* a folder holding a whole result of an earlier run */
static int holds_result(const char *dir)
{
	if (xf_rundir_incomplete(dir))
		return 0;
	for (size_t k = 0; k < sizeof result_files / sizeof result_files[0]; k++)
		if (exists_in(dir, result_files[k]))
			return 1;
	return exists_in(dir, "plots");
}

/* pid written in the lock file by its holder, 0 when unknown */
static long lock_holder(int fd)
{
	char buf[32] = { 0 };
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	long pid = 0;
	if (n > 0)
		sscanf(buf, "%ld", &pid);
	return pid;
}

static int refuse_locked(int fd, const char *dir, xf_error *err)
{
	long pid = lock_holder(fd);
	char who[48] = "";
	if (pid > 0)
		snprintf(who, sizeof who, " (pid %ld)", pid);
	return xf_fail(err, XF_ERR_CONFIG,
		       "another xpcsfit run%s is writing this result folder: wait for it to "
		       "end or choose another --out, %s",
		       who, dir);
}

/* The folder's lock file (no flock() here) is held by a live run, or one of another host. */
static int refuse_lockfile(const xf_lock_owner *who, const char *lockfile, const char *dir,
			   xf_error *err)
{
	char whom[400];
	xf_lock_owner_text(who, whom, sizeof whom);
	return xf_fail(err, XF_ERR_CONFIG,
		       "another xpcsfit run (%s) holds this result folder's lock file: wait for it "
		       "to end or choose another --out; if that run is gone, remove %s, %s",
		       whom, lockfile, dir);
}

/* 1 (err set) when dir's lock file says a live run holds the folder */
static int lockfile_busy(const char *dir, xf_error *err)
{
	char path[PATH_MAX];
	xf_lock_owner who;
	if (snprintf(path, sizeof path, "%s/%s", dir, XF_RUNDIR_LOCKFILE) >= (int)sizeof path ||
	    !xf_lockfile_held(path, &who))
		return 0;
	refuse_lockfile(&who, path, dir, err);
	return 1;
}

static int refuse_existing(const char *dir, const char *hint, xf_error *err)
{
	return xf_fail(err, XF_ERR_CONFIG,
		       "the result folder already holds a finished result: add %s to replace "
		       "it or choose another --out, %s",
		       hint, dir);
}

int xf_rundir_check(const char *dir, int replace, const char *replace_hint, xf_error *err)
{
	struct stat st;
	if (!dir || !dir[0])
		return xf_fail(err, XF_ERR_CONFIG, "--out is empty: give a folder name");
	if (strlen(dir) + 32 >= PATH_MAX)
		return xf_fail(err, XF_ERR_CONFIG, "--out is too long (%zu characters), %.64s...",
			       strlen(dir), dir);
	/* the nearest part of the path that exists must be a folder */
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s", dir);
	for (;;) {
		if (stat(path, &st) == 0) {
			if (!S_ISDIR(st.st_mode))
				return xf_fail(err, XF_ERR_CONFIG,
					       "--out: %s is a file, not a folder, %s", path, dir);
			break;
		}
		char *slash = strrchr(path, '/');
		if (!slash || slash == path)
			break;
		*slash = '\0';
	}
	if (stat(dir, &st) != 0)
		return 0; /* created by the claim */
	char lock[PATH_MAX];
	if (xf_path_join(lock, sizeof lock, dir, XF_RUNDIR_LOCK, err) != 0)
		return err->code;
	/* never through a link, never waiting on a FIFO: a lock is a regular file */
	int fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0 && !regular_fd(fd)) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0) {
		int busy = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
		int rc = busy ? refuse_locked(fd, dir, err) : 0;
		close(fd);
		if (rc)
			return rc;
	}
	if (lockfile_busy(dir, err))
		return err->code;
	if (!replace && holds_result(dir))
		return refuse_existing(dir, replace_hint, err);
	return 0;
}

/* No flock() on this filesystem (why: its errno): the lock file instead (adr/0056). */
static int take_lockfile(xf_rundir *rd, int why, xf_error *err)
{
	xf_lock_owner who;
	char path[PATH_MAX];
	if (xf_path_join(path, sizeof path, rd->dir, XF_RUNDIR_LOCKFILE, err) != 0)
		return err->code;
	int rc = xf_lockfile_take(path, &who, err);
	if (rc == 1)
		return refuse_lockfile(&who, path, rd->dir, err);
	if (rc)
		return rc;
	snprintf(rd->lockfile, sizeof rd->lockfile, "%s", path);
	rd->owner = getpid();
	xf_interrupt_add_lockfile(rd->lockfile);
	xf_info("lock: lock file (flock unsupported: %s), %s", xf_errno_name(why), path);
	return 0;
}

/* The lock file opened for writing its holder's pid: a link or any other node in its
 * place (never a lock of ours) is removed and the file made anew, never written through
 * (adr/0071). -1 with errno on failure. */
static int open_lock(const char *lock)
{
	for (int tries = 0; tries < 2; tries++) {
		int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
		if (fd >= 0 && regular_fd(fd)) {
			int flags = fcntl(fd, F_GETFL);
			if (flags >= 0)
				(void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
			return fd;
		}
		if (fd >= 0)
			close(fd);
		else if (errno != ELOOP && errno != ENXIO)
			return -1;
		if (unlink(lock) != 0)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

static int take_lock(xf_rundir *rd, const char *dir, xf_error *err)
{
	char lock[PATH_MAX];
	rd->lock_fd = -1;
	rd->lockfile[0] = '\0';
	if (snprintf(rd->dir, sizeof rd->dir, "%s", dir) >= (int)sizeof rd->dir ||
	    xf_path_join(rd->marker, sizeof rd->marker, dir, XF_RUNDIR_MARKER, err) != 0 ||
	    xf_path_join(lock, sizeof lock, dir, XF_RUNDIR_LOCK, err) != 0)
		return xf_fail(err, XF_ERR_CONFIG, "path too long, %s", dir);
	int fd = open_lock(lock);
	if (fd < 0)
		return xf_fail(err, XF_ERR_IO, "cannot create the lock file: %s, %s",
			       strerror(errno), lock);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int why = errno, rc;
		if (xf_lock_unsupported(why))
			rc = take_lockfile(rd, why, err);
		else if (why == EWOULDBLOCK)
			rc = refuse_locked(fd, dir, err);
		else
			rc = xf_fail(err, XF_ERR_IO, "cannot lock the result folder: %s, %s",
				     strerror(why), lock);
		if (rc) {
			close(fd);
			return rc;
		}
		rd->lock_fd = fd; /* kept open: the folder is held (by its lock file) */
		return 0;
	}
	/* a run on a host without flock() may hold the folder by its lock file */
	if (lockfile_busy(dir, err)) {
		close(fd);
		return err->code;
	}
	xf_info("lock: flock, %s", lock);
	char pid[32];
	int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
		/* only the message of a refused run names the pid: not worth failing */
	}
	rd->lock_fd = fd;
	return 0;
}

int xf_rundir_lock(xf_rundir *rd, const char *dir, xf_error *err)
{
	struct stat st;
	rd->lock_fd = -1;
	rd->completed = 1; /* nothing of the folder is ever rolled back */
	rd->created[0] = '\0';
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return xf_fail(err, XF_ERR_DATA, "no such result folder, %s", dir);
	return take_lock(rd, dir, err);
}

/* remove every file of dir/plots, then the folder; a link in its place is removed
 * itself, never followed (adr/0071) */
static void remove_plots(const char *dir)
{
	char plots[PATH_MAX];
	if (snprintf(plots, sizeof plots, "%s/plots", dir) < (int)sizeof plots)
		xf_remove_folder_files(plots);
}

/* a symbolic link (or any non-folder) named shards: removed itself, so the shards the run
 * reads and writes are the folder's own, not the link target's (adr/0071) */
static int remove_shards_link(const char *dir)
{
	char shards[PATH_MAX];
	struct stat st;
	if (snprintf(shards, sizeof shards, "%s/shards", dir) >= (int)sizeof shards ||
	    lstat(shards, &st) != 0 || S_ISDIR(st.st_mode))
		return 0;
	return unlink(shards) == 0;
}

static int write_marker(xf_rundir *rd, const char *command, xf_error *err)
{
	char text[1024];
	time_t now = time(NULL);
	struct tm tm;
	char when[64] = "?";
	if (gmtime_r(&now, &tm))
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	int n = snprintf(text, sizeof text,
			 "xpcsfit %s (pid %ld) started writing this folder at %s.\n"
			 "While this file exists the folder does not hold a whole result: the run "
			 "is still going, or it was interrupted or failed (reason below, when "
			 "known). Rerun it (nlsq, fit: --force; cmc: --resume reuses the finished "
			 "shards).\n",
			 command, (long)getpid(), when);
	return xf_write_file_atomic(rd->marker, text, (size_t)n, err);
}

int xf_rundir_claim(xf_rundir *rd, const char *dir, int replace, const char *replace_hint,
		    const char *command, xf_error *err)
{
	rd->lock_fd = -1;
	rd->completed = 0;
	rd->created[0] = '\0';
	int rc = xf_rundir_check(dir, replace, replace_hint, err);
	/* remember the outermost folder that does not exist yet */
	struct stat st;
	char probe[PATH_MAX];
	snprintf(probe, sizeof probe, "%s", dir);
	while (rc == 0 && stat(probe, &st) != 0) {
		snprintf(rd->created, sizeof rd->created, "%s", probe);
		char *slash = strrchr(probe, '/');
		if (!slash || slash == probe)
			break;
		*slash = '\0';
	}
	/* the folders above (--out, which may be a link) are followed; a link in place of
	 * the result folder itself is removed and a folder made there (adr/0071 addendum) */
	if (rc == 0)
		rc = xf_mkdir_here(dir, err);
	if (rc == 0)
		rc = take_lock(rd, dir, err);
	if (rc)
		return rc;
	/* checked again under the lock: a run that finished since the check above */
	if (!replace && holds_result(dir)) {
		xf_rundir_release(rd);
		return refuse_existing(dir, replace_hint, err);
	}
	int had_marker = xf_rundir_incomplete(dir);
	/* the marker first: from here on a kill leaves a folder marked incomplete */
	if ((rc = write_marker(rd, command, err)) != 0) {
		xf_rundir_release(rd);
		return rc;
	}
	xf_interrupt_add_marker(rd->marker);
	int removed = 0;
	for (size_t k = 0; k < sizeof result_files / sizeof result_files[0]; k++) {
		char path[PATH_MAX];
		if (snprintf(path, sizeof path, "%s/%s", dir, result_files[k]) < (int)sizeof path &&
		    unlink(path) == 0)
			removed++;
	}
	if (exists_in(dir, "plots")) {
		remove_plots(dir);
		removed++;
	}
	removed += remove_shards_link(dir);
	/* under the lock no live run writes here: every temporary file is stale */
	char sub[PATH_MAX];
	int stale = xf_remove_stale_tmps(dir, NULL, 1);
	if (snprintf(sub, sizeof sub, "%s/shards", dir) < (int)sizeof sub)
		stale += xf_remove_stale_tmps(sub, NULL, 1);
	if (removed)
		xf_info("%s: removed the previous %s result (%s)", dir,
			had_marker ? "incomplete" : "finished",
			had_marker ? "interrupted or failed run" : replace_hint);
	if (stale)
		xf_info("%s: removed %d temporary file%s of interrupted runs", dir, stale,
			stale == 1 ? "" : "s");
	return 0;
}

int xf_rundir_complete(xf_rundir *rd, xf_error *err)
{
	if (xf_interrupt_unmark(rd->marker, rd->dir))
		return xf_fail(err, XF_ERR_IO, "cannot remove the marker: %s, %s", strerror(errno),
			       rd->marker);
	rd->completed = 1;
	int fd = open(rd->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	return 0;
}

/* 1 when dir holds nothing but the locks and the marker */
static int only_bookkeeping(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int other = 0;
	struct dirent *e;
	while (!other && (e = readdir(d)) != NULL)
		other = strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			strcmp(e->d_name, XF_RUNDIR_LOCK) && strcmp(e->d_name, XF_RUNDIR_MARKER) &&
			strcmp(e->d_name, XF_RUNDIR_LOCKFILE);
	closedir(d);
	return !other;
}

/* The lock file, when this process took one (a forked helper never removes it). */
static void release_lockfile(xf_rundir *rd)
{
	if (!rd->lockfile[0] || rd->owner != getpid())
		return;
	xf_interrupt_remove_lockfile(rd->lockfile);
	xf_lockfile_release(rd->lockfile);
	rd->lockfile[0] = '\0';
}

void xf_rundir_release(xf_rundir *rd)
{
	if (rd->lock_fd < 0)
		return;
	int only = !rd->completed && only_bookkeeping(rd->dir);
	release_lockfile(rd);
	if (only) {
		char lock[PATH_MAX];
		xf_interrupt_remove_marker(rd->marker);
		unlink(rd->marker);
		if (snprintf(lock, sizeof lock, "%s/%s", rd->dir, XF_RUNDIR_LOCK) <
		    (int)sizeof lock)
			unlink(lock);
		/* the folder, and its parents up to the outermost one this claim created */
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s", rd->dir);
		size_t stop = strlen(rd->created);
		while (stop > 0 && strlen(path) >= stop && rmdir(path) == 0) {
			char *slash = strrchr(path, '/');
			if (!slash || slash == path)
				break;
			*slash = '\0';
		}
	}
	close(rd->lock_fd);
	rd->lock_fd = -1;
}
