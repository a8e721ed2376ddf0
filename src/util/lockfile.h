/* lockfile.h — locks where flock() is missing (adr/0056). A result folder is locked with
 * flock() (rundir.c); a filesystem without it (Lustre mounted without flock, some NFS)
 * answers ENOSYS, ENOLCK or EOPNOTSUPP, and the folder is then locked by a lock file made
 * with O_CREAT|O_EXCL that names its holder (pid, host, the process's start, the time).
 * A lock file of a process that is gone from this host is stale and removed (a line in
 * run.log); one of another host is never judged from here: the run is refused with a line
 * naming host and pid and how to clear it (no age rule: a fit may run for days). */
#ifndef XPCSFIT_UTIL_LOCKFILE_H
#define XPCSFIT_UTIL_LOCKFILE_H

#include <stddef.h>
#include "xpcsfit/error.h"

/* 1 when a failed flock()/fcntl() lock says that the filesystem has no locks (as opposed
 * to EWOULDBLOCK: another process holds the lock). */
int xf_lock_unsupported(int err_no);

/* "ENOSYS", "ENOLCK", ...: the errno's name for run.log lines. */
const char *xf_errno_name(int err_no);

/* The errno of a non-blocking shared flock() on path (or on its folder when path does not
 * exist), released again at once; 0 when it works or another process holds it. */
int xf_flock_probe(const char *path);

/* Who holds a lock file. */
typedef struct xf_lock_owner {
	long pid;
	char host[256];
	char since[32];	 /* UTC, ISO 8601 */
	char reason[96]; /* why a lock file was judged stale, for run.log */
} xf_lock_owner;

/* Take the lock file path: 0 taken; 1 held by another run (who says whom); otherwise an
 * error code with err set. A stale one (its process gone from this host) is removed first,
 * with a line in run.log. */
int xf_lockfile_take(const char *path, xf_lock_owner *who, xf_error *err);

/* 1 when path is a lock file of a live run (who says whom), 0 when absent or stale. */
int xf_lockfile_held(const char *path, xf_lock_owner *who);

/* Remove the lock file if this process holds it. */
void xf_lockfile_release(const char *path);

/* The refusal's text: "pid 12 on host n1 since 2026-...Z" into buf. */
void xf_lock_owner_text(const xf_lock_owner *who, char *buf, size_t size);

#endif
