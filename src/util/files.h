/* files.h — file-system helpers shared by every writer (results, plots, the CMC shard
 * store): temporary names, joined paths, folders, atomic writes. */
#ifndef XPCSFIT_UTIL_FILES_H
#define XPCSFIT_UTIL_FILES_H

#include <stddef.h>
#include <sys/stat.h>
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

/* Create the folder dir inside a result folder (plots/, shards/), its parents as
 * xf_mkdir_p: a symbolic link at dir's own name is removed, not followed, and the folder
 * made in its place; anything else but a folder there is refused (adr/0071). */
int xf_mkdir_here(const char *dir, xf_error *err);
/* Empty and remove the folder dir inside a result folder without following any link: a
 * link (or any non-folder) in place of dir is removed itself; each file or link in it is
 * removed (unlinkat on the folder's descriptor, never a path through a link); a folder of
 * the user's inside stays, and so dir with it. Returns how many entries were removed. */
int xf_remove_folder_files(const char *dir);
/* A file written completely under tmp_path by someone else (HDF5, PLplot): fsync it,
 * rename it to path, fsync the folder. On failure tmp_path is removed. */
int xf_commit_tmp(const char *tmp_path, const char *path, xf_error *err);

/* The one rule for a file read by name (adr/0050: a config, a batch --list or
 * --overrides CSV, an NLSQ result's parameters.json, a batch record, a batch input's
 * bytes): open it for reading without blocking and refuse, before a byte is read, anything but a regular file (a folder, a FIFO, a
 * device such as /dev/zero, a socket: each would block or never end) and a file above
 * max_bytes. what names it in the messages ("config file"); code is the status of a
 * refusal or open failure. Returns the descriptor (blocking again), or -1 with err set. */
int xf_open_input_file(const char *path, const char *what, size_t max_bytes, int code,
		       xf_error *err);

/* The one open of a file that is read (every input, and every file read back from a
 * result folder: shards, parameters.json, results.h5, batch records): without blocking
 * (a FIFO with no writer would wait forever), and only a regular file. nofollow: a
 * symbolic link is not followed (inside a result folder). Returns the descriptor
 * (blocking again) and *st, or -1 with errno: EINVAL when something that is not a
 * regular file sits there (*st says what: xf_node_kind), else open()'s errno. */
int xf_open_regular(const char *path, int nofollow, struct stat *st);
/* "a FIFO", "a folder", "a symbolic link", ... for a refusal */
const char *xf_node_kind(mode_t mode);
/* The whole of such a file as NUL-terminated text, malloc'ed, through
 * xf_open_input_file; a NUL byte inside is refused too (it would cut a line short: text,
 * not binary, is expected), naming its line. *len (may be NULL) is the length. NULL with
 * err set (code, or XF_ERR_NOMEM). */
char *xf_read_text_file(const char *path, const char *what, size_t max_bytes, int code, size_t *len,
			xf_error *err);

/* The same for a small file of our own (a JSON record): XF_ERR_DATA when refused. */
char *xf_read_small_file(const char *path, size_t max_bytes, xf_error *err);

/* The one rule for a file the user names as an output (config --out, simulate --out,
 * xpcsfit-gpu --json): a name that does not exist yet is fine; an existing regular file is
 * replaced only when replace is set (else refused, naming replace_hint: "--force"); a
 * folder, a device, a FIFO, a socket or a symbolic link is always refused (the atomic
 * rename would put a file in place of the node or the link). option names the option in
 * the messages ("--out"). Nothing is created. XF_ERR_CONFIG with err set when refused. */
int xf_check_out_file(const char *path, const char *option, int replace, const char *replace_hint,
		      xf_error *err);

/* Write bytes to path atomically: path.tmp.<pid>, fsync, rename. */
int xf_write_file_atomic(const char *path, const void *data, size_t size, xf_error *err);

#endif
