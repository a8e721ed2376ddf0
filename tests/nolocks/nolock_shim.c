/* nolock_shim.c — LD_PRELOAD library of test_no_flock.py alone: a filesystem without
 * locks (Lustre without -o flock, some NFS). flock() and the fcntl() record locks fail with
 * the errno named by XF_NOLOCK_ERRNO ("ENOSYS", the default, or "ENOLCK"), as the kernel
 * answers there; every other fcntl() goes through. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

static int lock_errno(void)
{
	const char *e = getenv("XF_NOLOCK_ERRNO");
	return e && !strcmp(e, "ENOLCK") ? ENOLCK : ENOSYS;
}

int flock(int fd, int operation)
{
	(void)fd;
	(void)operation;
	errno = lock_errno();
	return -1;
}

static int is_lock_cmd(int cmd)
{
	return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK || cmd == F_OFD_SETLK ||
	       cmd == F_OFD_SETLKW || cmd == F_OFD_GETLK;
}

typedef int (*fcntl_fn)(int, int, ...);

static int forward(const char *name, int fd, int cmd, void *arg)
{
	fcntl_fn next = (fcntl_fn)dlsym(RTLD_NEXT, name);
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(fd, cmd, arg);
}

int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (is_lock_cmd(cmd)) {
		errno = lock_errno();
		return -1;
	}
	return forward("fcntl", fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (is_lock_cmd(cmd)) {
		errno = lock_errno();
		return -1;
	}
	return forward("fcntl64", fd, cmd, arg);
}
