/* files.h — file-system helpers shared by every writer (results, plots, the CMC shard
 * store): temporary names, joined paths, folders, atomic writes. */
#ifndef XPCSFIT_UTIL_FILES_H
#define XPCSFIT_UTIL_FILES_H

#include <stddef.h>
#include "xpcsfit/error.h"

/* "<path>.tmp.<pid>" into buf; returns 0, or -1 when it does not fit. */
int xf_tmp_name(const char *path, char *buf, size_t size);

/* Remove the temporary files "<name>.tmp.<pid>" left in dir by runs that died (killed,
 * out of power). base: only those of "<base>.tmp.<pid>" (NULL: any name). any_pid 0: only
 * those whose pid is not alive; 1: every one but this process's own (the caller holds the
 * folder's run lock, so no live run writes there). Returns how many were removed. */
int xf_remove_stale_tmps(const char *dir, const char *base, int any_pid);

/* The same for the temporary files of one target file (simulate, config --out), those of
 * dead processes only. */
int xf_remove_stale_tmp_of(const char *path);

/* "<dir>/<name>" into buf; XF_ERR_DATA with a message when it does not fit. */
int xf_path_join(char *buf, size_t size, const char *dir, const char *name, xf_error *err);

/* Create dir (and parents) if missing. */
int xf_mkdir_p(const char *dir, xf_error *err);

/* A file written completely under tmp_path by someone else (HDF5, PLplot): fsync it,
 * rename it to path, fsync the folder. On failure tmp_path is removed. */
int xf_commit_tmp(const char *tmp_path, const char *path, xf_error *err);

/* The whole of a small file (a JSON record, a list) as NUL-terminated text, malloc'ed;
 * NULL with err set when it cannot be read (XF_ERR_IO), is larger than max_bytes
 * (XF_ERR_DATA) or memory is short. */
char *xf_read_small_file(const char *path, size_t max_bytes, xf_error *err);

/* Write bytes to path atomically: path.tmp.<pid>, fsync, rename. */
int xf_write_file_atomic(const char *path, const void *data, size_t size, xf_error *err);

#endif
