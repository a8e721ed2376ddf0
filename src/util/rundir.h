/* rundir.h — a result folder (<out>/nlsq/, <out>/cmc/) as one unit (adr/0017):
 * - a lock: <dir>/.lock held with flock() for the whole run, so that a second run into the
 *   same folder is refused (exit 2) instead of interleaving its files; where the
 *   filesystem has no flock() (ENOSYS, ENOLCK), the lock file <dir>/.lockfile naming its
 *   holder (lockfile.h, adr/0056); run.log says which ("lock: flock" / "lock: lock file");
 * - a marker: <dir>/INCOMPLETE exists from the moment the run claims the folder until
 *   every file is written; a folder without it holds one whole result;
 * - a claim removes the previous result (results.h5, parameters.json, run.log, plots/) and
 *   the temporary files of dead runs, after writing the marker, so that old and new files
 *   never sit side by side. A finished result is only replaced when the caller says so
 *   (--force, or cmc --resume); an interrupted one (marker present) always is. */
#ifndef XPCSFIT_UTIL_RUNDIR_H
#define XPCSFIT_UTIL_RUNDIR_H

#include <limits.h>
#include <sys/types.h>
#include "xpcsfit/error.h"

#define XF_RUNDIR_MARKER   "INCOMPLETE"
#define XF_RUNDIR_LOCK	   ".lock"
#define XF_RUNDIR_LOCKFILE ".lockfile" /* where flock() is missing (adr/0056) */

typedef struct xf_rundir {
	char dir[PATH_MAX];
	char marker[PATH_MAX];	 /* <dir>/INCOMPLETE */
	int lock_fd;		 /* the flock()ed <dir>/.lock; -1 when not held */
	char lockfile[PATH_MAX]; /* <dir>/.lockfile when held instead of flock(), else "" */
	pid_t owner;		 /* the process that took the lock file */
	int completed;		 /* xf_rundir_complete() done */
	char created[PATH_MAX];	 /* the outermost folder the claim created ("": none) */
} xf_rundir;

/* Before any work, nothing created: refuse (XF_ERR_CONFIG) an empty name, a dir that is
 * not a folder, a folder another run holds, or a finished result when !replace.
 * replace_hint names the option that would allow it ("--force"). */
int xf_rundir_check(const char *dir, int replace, const char *replace_hint, xf_error *err);

/* Create dir, take its lock, refuse a finished result when !replace, write the marker,
 * remove the previous result and stale temporary files. rd->lock_fd is -1 on failure. */
int xf_rundir_claim(xf_rundir *rd, const char *dir, int replace, const char *replace_hint,
		    const char *command, xf_error *err);

/* Every file is written: remove the marker (and make that durable). */
int xf_rundir_complete(xf_rundir *rd, xf_error *err);

/* Let the lock go (a no-op when not held). A run that ends before writing anything into
 * the folder (an error or Ctrl-C during the fit, a config error found late) leaves no
 * trace: the marker, the lock and the folders the claim created are removed again.
 * Otherwise the marker stays unless completed. */
void xf_rundir_release(xf_rundir *rd);

/* Take only the lock of an existing folder (xpcsfit plot DIR redraws its plots). */
int xf_rundir_lock(xf_rundir *rd, const char *dir, xf_error *err);

/* 1 when dir carries the INCOMPLETE marker. */
int xf_rundir_incomplete(const char *dir);

#endif
