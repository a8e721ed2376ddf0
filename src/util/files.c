/* files.c — the one home of the file-system helpers (util/files.h): creating result
 * folders and writing files atomically. A killed run must never leave a half-written
 * file under a final name (spec/cli.md, "Result directory").
 * Files go to "<path>.tmp.<pid>", are fsync'ed, then renamed; the folder is fsync'ed so
 * the rename itself survives a crash. */
#include "util/files.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int xf_tmp_name(const char *path, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s.tmp.%ld", path, (long)getpid());
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The pid of a temporary name "<base>.tmp.<pid>", or 0 when name is not one. */
static long tmp_pid(const char *name, size_t *base_len)
{
	const char *t = strstr(name, ".tmp.");
	while (t) {
		const char *d = t + 5;
		if (*d && strspn(d, "0123456789") == strlen(d)) {
			*base_len = (size_t)(t - name);
			return strtol(d, NULL, 10);
		}
		t = strstr(t + 1, ".tmp.");
	}
	return 0;
}

int xf_remove_stale_tmps(const char *dir, const char *base, int any_pid)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t base_len = 0;
		long pid = tmp_pid(e->d_name, &base_len);
		if (pid <= 0 || pid == (long)getpid())
			continue;
		if (base && (strlen(base) != base_len || strncmp(e->d_name, base, base_len)))
			continue;
		/* a live writer's file is left alone unless the caller holds the folder's
		 * lock (then no live xpcsfit can be writing there) */
		if (!any_pid && !(kill((pid_t)pid, 0) != 0 && errno == ESRCH))
			continue;
		char path[PATH_MAX];
		int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (n > 0 && (size_t)n < sizeof path && unlink(path) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

int xf_remove_stale_tmp_of(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t n = slash ? (size_t)(slash - path) : 1;
	if (n >= sizeof dir || !*base)
		return 0;
	if (slash)
		memcpy(dir, slash == path ? "/" : path, slash == path ? 1 : n);
	else
		dir[0] = '.';
	dir[slash == path ? 1 : n] = '\0';
	return xf_remove_stale_tmps(dir, base, 0);
}

int xf_path_join(char *buf, size_t size, const char *dir, const char *name, xf_error *err)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= size)
		return xf_fail(err, XF_ERR_DATA, "path too long, %s/%s", dir, name);
	return 0;
}

int xf_mkdir_p(const char *dir, xf_error *err)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);
	if (len == 0)
		return xf_fail(err, XF_ERR_IO, "cannot create a folder with an empty name");
	if (len >= sizeof path)
		return xf_fail(err, XF_ERR_DATA, "folder name too long, %s", dir);
	memcpy(path, dir, len + 1);
	/* create each prefix in turn; EEXIST is fine as long as it is a folder */
	for (size_t k = 1; k <= len; k++) {
		if (path[k] != '/' && path[k] != '\0')
			continue;
		char saved = path[k];
		path[k] = '\0';
		if (mkdir(path, 0777) != 0 && errno != EEXIST) {
			int e = errno;
			path[k] = saved;
			return xf_fail(err, XF_ERR_IO, "cannot create folder: %s, %s", strerror(e),
				       dir);
		}
		path[k] = saved;
	}
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return xf_fail(err, XF_ERR_DATA, "not a folder, %s", dir);
	return 0;
}

int xf_mkdir_here(const char *dir, xf_error *err)
{
	struct stat st;
	char parent[PATH_MAX];
	const char *slash = strrchr(dir, '/');
	size_t n = slash ? (size_t)(slash - dir) : 0;
	if (n >= sizeof parent)
		return xf_fail(err, XF_ERR_DATA, "folder name too long, %s", dir);
	/* the folders above (the user's --out, which may be a link) as xf_mkdir_p */
	if (n > 0) {
		memcpy(parent, dir, n);
		parent[n] = '\0';
		if (xf_mkdir_p(parent, err) != 0)
			return err->code;
	}
	/* a link in place of the folder is removed, never followed (adr/0071) */
	if (lstat(dir, &st) == 0 && S_ISLNK(st.st_mode) && unlink(dir) != 0 && errno != ENOENT)
		return xf_fail(err, XF_ERR_IO, "cannot remove the symbolic link: %s, %s",
			       strerror(errno), dir);
	if (mkdir(dir, 0777) != 0 && errno != EEXIST)
		return xf_fail(err, XF_ERR_IO, "cannot create folder: %s, %s", strerror(errno),
			       dir);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return xf_fail(err, XF_ERR_DATA, "not a folder, %s", dir);
	close(fd);
	return 0;
}

int xf_remove_folder_files(const char *dir)
{
	/* O_NOFOLLOW: a link in place of the folder is removed itself, its target untouched */
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		struct stat st;
		if (lstat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
			return unlink(dir) == 0;
		return 0;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		/* a file or a link goes; a folder (a user's own) stays, and so does this one */
		removed += unlinkat(fd, e->d_name, 0) == 0;
	}
	closedir(d);
	rmdir(dir);
	return removed;
}

/* fsync the folder holding path so that a rename into it is durable */
static void fsync_parent(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash) {
		strcpy(dir, ".");
	} else {
		size_t n = (size_t)(slash - path);
		if (n == 0)
			n = 1; /* "/file" lives in "/" */
		if (n >= sizeof dir)
			return;
		memcpy(dir, path, n);
		dir[n] = '\0';
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		(void)fsync(fd); /* best effort: some file systems refuse folder fsync */
		close(fd);
	}
}

int xf_commit_tmp(const char *tmp_path, const char *path, xf_error *err)
{
	int fd = open(tmp_path, O_RDONLY);
	if (fd < 0) {
		int e = errno;
		unlink(tmp_path);
		return xf_fail(err, XF_ERR_IO, "cannot reopen temporary file: %s, %s", strerror(e),
			       tmp_path);
	}
	if (fsync(fd) != 0 && errno != EINVAL) {
		int e = errno;
		close(fd);
		unlink(tmp_path);
		return xf_fail(err, XF_ERR_IO, "cannot flush file to disk: %s, %s", strerror(e),
			       path);
	}
	close(fd);
	if (rename(tmp_path, path) != 0) {
		int e = errno;
		unlink(tmp_path);
		return xf_fail(err, XF_ERR_IO, "cannot rename %s to final name: %s, %s", tmp_path,
			       strerror(e), path);
	}
	fsync_parent(path);
	return 0;
}

/* what a file-system node is, in words, for a refusal */
static const char *node_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a folder";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISLNK(mode))
		return "a symbolic link";
	return S_ISCHR(mode) || S_ISBLK(mode) ? "a device" : "not a file";
}

/* "64 MiB" for a whole number of MiB, else bytes */
static void format_limit(char *buf, size_t size, size_t bytes)
{
	if (bytes >= ((size_t)1 << 20) && bytes % ((size_t)1 << 20) == 0)
		snprintf(buf, size, "%zu MiB", bytes >> 20);
	else
		snprintf(buf, size, "%zu bytes", bytes);
}

int xf_open_regular(const char *path, int nofollow, struct stat *st)
{
	/* O_NONBLOCK: opening a FIFO with no writer would wait for one; O_NOFOLLOW: a link
	 * inside a result folder is not followed (ELOOP) */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
	memset(st, 0, sizeof *st);
	if (fd < 0) {
		int e = errno;
		/* a node open() refuses (a socket: ENXIO) or a link that is not followed
		 * (ELOOP): "not a regular file" as well, st says what it is */
		if (lstat(path, st) == 0 && !S_ISREG(st->st_mode) &&
		    (!S_ISLNK(st->st_mode) || (nofollow && e == ELOOP)))
			e = EINVAL;
		else
			memset(st, 0, sizeof *st);
		errno = e;
		return -1;
	}
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		int e = S_ISREG(st->st_mode) ? errno : EINVAL;
		close(fd);
		errno = e;
		return -1;
	}
	int flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		(void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

const char *xf_node_kind(mode_t mode)
{
	return node_kind(mode);
}

int xf_open_input_file(const char *path, const char *what, size_t max_bytes, int code,
		       xf_error *err)
{
	struct stat st;
	int fd = xf_open_regular(path, 0, &st);
	if (fd < 0 && errno != EINVAL) {
		xf_fail(err, code, "cannot open %s: %s, %s", what, strerror(errno), path);
		return -1;
	}
	if (fd < 0) {
		xf_fail(err, code, "%s is not a regular file (%s): %s", what, node_kind(st.st_mode),
			path);
		return -1;
	}
	if ((unsigned long long)st.st_size > (unsigned long long)max_bytes) {
		char limit[64];
		close(fd);
		format_limit(limit, sizeof limit, max_bytes);
		xf_fail(err, code, "%s is %lld bytes, above the limit of %s: %s", what,
			(long long)st.st_size, limit, path);
		return -1;
	}
	return fd;
}

/* 0 when text[0..len) holds no NUL byte, else the 1-based line of the first one */
static int nul_line(const char *text, size_t len)
{
	const char *nul = memchr(text, '\0', len);
	if (!nul)
		return 0;
	int line = 1;
	for (const char *p = text; p < nul; p++)
		line += *p == '\n';
	return line;
}

char *xf_read_text_file(const char *path, const char *what, size_t max_bytes, int code, size_t *len,
			xf_error *err)
{
	int fd = xf_open_input_file(path, what, max_bytes, code, err);
	if (fd < 0)
		return NULL;
	struct stat st;
	/* one byte more than announced, so a file that grows meanwhile (or a /proc-like
	 * file announcing 0 bytes) is read on, up to the limit + 1, and refused past it */
	size_t cap = (fstat(fd, &st) == 0 ? (size_t)st.st_size : 0) + 1, n = 0;
	char *text = malloc(cap + 1);
	int bad = !text;
	while (!bad) {
		if (n == cap) {
			if (cap > max_bytes)
				break;
			size_t more = 2 * cap < max_bytes + 1 ? 2 * cap : max_bytes + 1;
			char *t = realloc(text, more + 1);
			if (!t) {
				bad = 1;
				break;
			}
			text = t;
			cap = more;
		}
		ssize_t got = read(fd, text + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			bad = 2;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	int e = errno;
	close(fd);
	if (bad) {
		free(text);
		if (bad == 2)
			xf_fail(err, code, "cannot read %s: %s, %s", what, strerror(e), path);
		else
			xf_fail(err, XF_ERR_NOMEM, "out of memory reading %s", path);
		return NULL;
	}
	text[n] = '\0';
	int line = nul_line(text, n);
	if (n > max_bytes || line) {
		char limit[64];
		format_limit(limit, sizeof limit, max_bytes);
		free(text);
		if (line)
			xf_fail(err, code, "%s holds a NUL byte (not text), in %s:%d", what, path,
				line);
		else
			xf_fail(err, code, "%s grew above the limit of %s while read: %s", what,
				limit, path);
		return NULL;
	}
	if (len)
		*len = n;
	return text;
}

char *xf_read_small_file(const char *path, size_t max_bytes, xf_error *err)
{
	return xf_read_text_file(path, "the file", max_bytes, XF_ERR_DATA, NULL, err);
}

int xf_check_out_file(const char *path, const char *option, int replace, const char *replace_hint,
		      xf_error *err)
{
	struct stat st;
	if (!path || !path[0])
		return xf_fail(err, XF_ERR_CONFIG, "%s needs a file name", option);
	if (lstat(path, &st) != 0)
		return 0; /* missing: created; any other trouble is the writer's to report */
	if (S_ISDIR(st.st_mode))
		return xf_fail(err, XF_ERR_CONFIG, "%s is a folder: give a file name, %s", option,
			       path);
	if (S_ISLNK(st.st_mode))
		return xf_fail(err, XF_ERR_CONFIG,
			       "%s names a symbolic link: give the file's own name (writing "
			       "would replace the link, not the file it points to), %s",
			       option, path);
	if (!S_ISREG(st.st_mode))
		return xf_fail(err, XF_ERR_CONFIG,
			       "%s names %s, not a regular file: nothing is written there, "
			       "give the name of a file, %s",
			       option, node_kind(st.st_mode), path);
	if (!replace)
		return xf_fail(err, XF_ERR_CONFIG,
			       "%s names a file that already exists: add %s to replace it or "
			       "choose another name, %s",
			       option, replace_hint, path);
	return 0;
}

int xf_write_file_atomic(const char *path, const void *data, size_t size, xf_error *err)
{
	char tmp[PATH_MAX];
	if (xf_tmp_name(path, tmp, sizeof tmp) != 0)
		return xf_fail(err, XF_ERR_DATA, "path too long, %s", path);
	/* the name is this process's own: whatever sits there (a file of an earlier process
	 * with this pid, a FIFO that would block the open, a link) is removed, and the file
	 * created anew, never opened through a link */
	(void)unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	if (fd < 0)
		return xf_fail(err, XF_ERR_IO, "cannot write file: %s, %s", strerror(errno), path);
	const char *p = data;
	size_t left = size;
	while (left > 0) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : ENOSPC;
			close(fd);
			unlink(tmp);
			return xf_fail(err, XF_ERR_IO, "cannot write file: %s, %s", strerror(e),
				       path);
		}
		p += w;
		left -= (size_t)w;
	}
	if (fsync(fd) != 0 && errno != EINVAL) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return xf_fail(err, XF_ERR_IO, "cannot flush file to disk: %s, %s", strerror(e),
			       path);
	}
	if (close(fd) != 0) {
		int e = errno;
		unlink(tmp);
		return xf_fail(err, XF_ERR_IO, "cannot write file: %s, %s", strerror(e), path);
	}
	if (rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return xf_fail(err, XF_ERR_IO, "cannot rename temporary file: %s, %s", strerror(e),
			       path);
	}
	fsync_parent(path);
	return 0;
}
