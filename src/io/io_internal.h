/* io_internal.h — helpers shared by the result writers (src/io) and the plots
 * (src/plot): temporary names, committing a finished temporary file, JSON numbers. */
#ifndef XPCSFIT_IO_INTERNAL_H
#define XPCSFIT_IO_INTERNAL_H

#include <stddef.h>
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"

/* "<path>.tmp.<pid>" into buf; returns 0, or -1 when it does not fit. */
int xf_io_tmp_name(const char *path, char *buf, size_t size);

/* A file written completely under tmp_path by someone else (HDF5, PLplot): fsync it,
 * rename it to path, fsync the folder. On failure tmp_path is removed. */
int xf_io_commit_tmp(const char *tmp_path, const char *path, xf_error *err);

/* "<dir>/<name>" into buf; XF_EXIT_DATA with a message when it does not fit. */
int xf_io_join(char *buf, size_t size, const char *dir, const char *name, xf_error *err);

/* Shortest decimal (15..17 significant digits, C locale) that reads back as exactly
 * x; "null" for NaN and infinities. buf needs 32 bytes. */
void xf_io_format_double(double x, char *buf, size_t size);

#endif
