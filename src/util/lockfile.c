/* lockfile.c — the lock file of a folder on a filesystem without flock() (lockfile.h,
 * adr/0056). The file is written whole under a temporary name and link()ed into place:
 * link() fails with EEXIST when the name is taken, atomically on NFS as well, so a lock
 * file is never seen half-written and two runs never both succeed. */
#include "util/lockfile.h"
#include "util/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define XF_LOCKFILE_MAX 1024 /* a lock file is a few lines; a larger one is not ours */

int xf_lock_unsupported(int err_no)
{
	return err_no == ENOSYS || err_no == ENOLCK || err_no == EOPNOTSUPP || err_no == ENOTSUP;
}

const char *xf_errno_name(int err_no)
{
	switch (err_no) {
	case ENOSYS: return "ENOSYS";
	case ENOLCK: return "ENOLCK";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	default: return "errno";
	}
}

int xf_flock_probe(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: not waited on */
	if (fd < 0) { /* not there (a file being created): its folder's filesystem */
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", path);
		char *slash = strrchr(dir, '/');
		if (!slash)
			snprintf(dir, sizeof dir, ".");
		else if (slash == dir)
			dir[1] = '\0';
		else
			*slash = '\0';
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return 0; /* nothing to probe: the caller's own error stands */
	int why = 0;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		flock(fd, LOCK_UN);
	else if (errno != EWOULDBLOCK)
		why = errno;
	close(fd);
	return why;
}

/* The start of process pid in clock ticks after boot (field 22 of /proc/<pid>/stat), 0 when
 * unknown: with the pid it names one process, even after the pid is reused. */
static unsigned long long process_start(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	unsigned long long start = 0;
	for (int field = 2; p && *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (p)
		sscanf(p, "%llu", &start);
	return start;
}

/* The kernel's boot id: a lock file of an earlier boot of this host is stale. */
static void boot_id(char *buf, size_t size)
{
	buf[0] = '\0';
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (!fgets(buf, (int)size, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

static void host_name(char *buf, size_t size)
{
	if (gethostname(buf, size) != 0)
		snprintf(buf, size, "?");
	buf[size - 1] = '\0';
}

/* What a lock file says, as read from it. */
typedef struct lock_text {
	xf_lock_owner who;
	unsigned long long start;
	char boot[64];
	char raw[XF_LOCKFILE_MAX];
} lock_text;

/* 0 read, -1 absent; a file not in the format reads as an unknown holder (pid 0). */
static int read_lock(const char *path, lock_text *t)
{
	memset(t, 0, sizeof *t);
	/* O_NONBLOCK: a FIFO in its place is read as empty (an unknown holder), not waited on */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? -1 : 0;
	ssize_t n = read(fd, t->raw, sizeof t->raw - 1);
	close(fd);
	t->raw[n > 0 ? n : 0] = '\0';
	char *save = NULL, copy[XF_LOCKFILE_MAX];
	snprintf(copy, sizeof copy, "%s", t->raw);
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "pid %ld", &t->who.pid) == 1)
			continue;
		if (sscanf(line, "start %llu", &t->start) == 1)
			continue;
		if (!strncmp(line, "host ", 5))
			snprintf(t->who.host, sizeof t->who.host, "%s", line + 5);
		else if (!strncmp(line, "boot ", 5))
			snprintf(t->boot, sizeof t->boot, "%s", line + 5);
		else if (!strncmp(line, "since ", 6))
			snprintf(t->who.since, sizeof t->who.since, "%s", line + 6);
	}
	return 0;
}

/* 1 when the holder is known to be gone: same host, and its boot is over, its pid is free
 * or its pid is another process now. A holder on another host is never judged stale. */
static int stale(lock_text *t)
{
	char host[256], boot[64];
	host_name(host, sizeof host);
	if (t->who.pid <= 0 || strcmp(t->who.host, host))
		return 0;
	boot_id(boot, sizeof boot);
	if (boot[0] && t->boot[0] && strcmp(boot, t->boot)) {
		snprintf(t->who.reason, sizeof t->who.reason, "this host has restarted since");
		return 1;
	}
	if (kill((pid_t)t->who.pid, 0) != 0 && errno == ESRCH) {
		snprintf(t->who.reason, sizeof t->who.reason, "no such process on this host");
		return 1;
	}
	unsigned long long now = process_start(t->who.pid);
	if (t->start && now && now != t->start) {
		snprintf(t->who.reason, sizeof t->who.reason,
			 "the pid belongs to another process now");
		return 1;
	}
	return 0;
}

int xf_lockfile_held(const char *path, xf_lock_owner *who)
{
	lock_text t;
	if (read_lock(path, &t) != 0 || stale(&t))
		return 0;
	*who = t.who;
	return 1;
}

/* Remove the stale lock file t was read from, unless it changed meanwhile (another run
 * removed it and took the folder): it is renamed aside first, which takes whatever file
 * holds the name now, and given back when it is not the one judged stale. */
static void remove_stale(const char *path, const lock_text *t)
{
	char aside[PATH_MAX];
	lock_text now;
	if (snprintf(aside, sizeof aside, "%s.stale.%ld", path, (long)getpid()) >=
		    (int)sizeof aside ||
	    rename(path, aside) != 0)
		return;
	if (read_lock(aside, &now) == 0 && !strcmp(now.raw, t->raw)) {
		unlink(aside);
		xf_info("lock: removed the stale lock file of pid %ld on %s (%s), %s", t->who.pid,
			t->who.host, t->who.reason, path);
		return;
	}
	if (link(aside, path) != 0) { /* a third run took the name: it holds the folder */
	}
	unlink(aside);
}

/* The lock file's text for this process. */
static int lock_content(char *buf, size_t size)
{
	char host[256], boot[64], when[32] = "?";
	time_t now = time(NULL);
	struct tm tm;
	host_name(host, sizeof host);
	boot_id(boot, sizeof boot);
	if (gmtime_r(&now, &tm))
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return snprintf(buf, size,
			"xpcsfit lock file: a run holds this folder (adr/0056)\n"
			"pid %ld\nhost %s\nstart %llu\nboot %s\nsince %s\n",
			(long)getpid(), host, process_start((long)getpid()), boot, when);
}

/* Put the lock file in place: 0, EEXIST when taken, else the errno. */
static int place(const char *path)
{
	char text[XF_LOCKFILE_MAX], tmp[PATH_MAX];
	int n = lock_content(text, sizeof text);
	if (xf_tmp_name(path, tmp, sizeof tmp) != 0)
		return ENAMETOOLONG;
	/* this process's own name: a link or FIFO there is removed, never written through */
	(void)unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	int bad = write(fd, text, (size_t)n) != n;
	close(fd);
	int why = bad ? EIO : link(tmp, path) == 0 ? 0 : errno;
	unlink(tmp);
	if (why == EPERM || why == EOPNOTSUPP || why == ENOSYS) {
		/* no hard links here (some FUSE filesystems): an exclusive create */
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			return errno;
		why = write(fd, text, (size_t)n) == n ? 0 : EIO;
		close(fd);
	}
	return why;
}

int xf_lockfile_take(const char *path, xf_lock_owner *who, xf_error *err)
{
	/* a stale file removed by us, and the name taken again by another run between,
	 * loops at most a few times before that run is reported as the holder */
	for (int attempt = 0; attempt < 4; attempt++) {
		int why = place(path);
		if (why == 0)
			return 0;
		if (why != EEXIST)
			return xf_fail(err, XF_ERR_IO, "cannot create the lock file: %s, %s",
				       strerror(why), path);
		lock_text t;
		if (read_lock(path, &t) != 0)
			continue; /* removed meanwhile */
		if (!stale(&t)) {
			*who = t.who;
			return 1;
		}
		remove_stale(path, &t);
	}
	lock_text t;
	if (read_lock(path, &t) == 0)
		*who = t.who;
	return 1;
}

void xf_lockfile_release(const char *path)
{
	lock_text t;
	char host[256];
	host_name(host, sizeof host);
	if (read_lock(path, &t) == 0 && t.who.pid == (long)getpid() && !strcmp(t.who.host, host))
		unlink(path);
}

void xf_lock_owner_text(const xf_lock_owner *who, char *buf, size_t size)
{
	if (who->pid <= 0)
		snprintf(buf, size, "an unknown holder");
	else
		snprintf(buf, size, "pid %ld on host %s%s%s", who->pid,
			 who->host[0] ? who->host : "?", who->since[0] ? " since " : "",
			 who->since);
}
