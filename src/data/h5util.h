/* h5util.h — small HDF5 helpers of the data module (internal): typed reads through
 * HDF5's type conversion, rank-agnostic 1-D lists, strings, silenced error stack and
 * translation of HDF5 failures into one-line xf_error messages. */
#ifndef XPCSFIT_DATA_H5UTIL_H
#define XPCSFIT_DATA_H5UTIL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>
#include "xpcsfit/error.h"

/* HDF5's registered id of the LZF filter (h5py, boost_corr). */
#define XF_H5_FILTER_LZF 32000
#define XF_H5_LZF_MESSAGE                                                                          \
	"LZF compression filter (HDF5 filter 32000) is not available: "                            \
	"install Debian package hdf5-plugin-lzf"

/* Limits on what a data file may declare (docs/input-formats.md, "Limits"): a 1-D list
 * (q, φ, bins, mapping) of at most 2^24 entries, string cells of at most 4096 bytes,
 * chunks of at most 256 MiB.
 * Real files hold thousands of bins; a larger declaration is damage or hostility, and
 * refusing it before allocating keeps a 69 KB file from asking for terabytes. */
#define XF_H5_LIST_MAX	 (1 << 24)
#define XF_H5_STRING_MAX 4096
/* A list of names (map_names holds 2 of a few bytes): at most 4096 cells, so that a
 * damaged header cannot make a string read cost gigabytes (fuzz_h5 found 2^27 names). */
#define XF_H5_STRINGS_MAX 4096
/* A chunk of a chunked dataset: HDF5 decompresses whole chunks, so this bounds the cost
 * of reading any part of a map. h5py's automatic chunks are at most 1 MiB. */
#define XF_H5_CHUNK_MAX (256 << 20)

/* Turn off HDF5's automatic error-stack printing and make the LZF plugin loadable
 * (idempotent; call before any HDF5 use). */
void xf_h5_quiet(void);
/* Innermost HDF5 error description of the current stack, "" when none; clears it. */
void xf_h5_last_error(char *buf, size_t len);
/* 1 when the writer put something at `path`: a link whose every parent exists, whatever
 * it leads to (an object of the file, another file, nothing). Optional datasets are
 * defaulted only when absent; a present one is read, and a read refuses a path that
 * leads out of the file or to nothing (ADR 0051). No error stack. */
int xf_h5_present(hid_t file, const char *path);
/* Open a group whose whole path lies in the file (as every dataset read); error naming
 * the path otherwise. Close with H5Gclose. */
hid_t xf_h5_open_group(hid_t file, const char *file_name, const char *path, xf_error *err);
/* 1 when the LZF filter can be used (registered or loadable as a plugin). */
int xf_h5_lzf_available(void);

/* Every HDF5 file xpcsfit opens or creates goes through these two (adr/0056): HDF5's own
 * file lock on, ignored where the filesystem has no locks (ENOSYS by HDF5 itself; ENOLCK
 * and EOPNOTSUPP found by a flock() probe, then the file is opened again without the
 * lock, with a line in run.log). Return what H5Fopen / H5Fcreate return. */
hid_t xf_h5_fopen(const char *path, unsigned flags);
hid_t xf_h5_fcreate(const char *path, hid_t fcpl);
/* 1 when an HDF5 error text (xf_h5_last_error) is a failed file lock: a fault of the
 * filesystem or of another program, never of the file. */
int xf_h5_lock_error(const char *why);

/* Open a file read-only with a translated error (missing, not a regular file, not HDF5,
 * locked by a writer, damaged). */
int xf_h5_open_read(const char *path, hid_t *file, xf_error *err);

/* A 1-D list: scalar, (M,), (1, M) or (M, 1); any numeric type converted to double.
 * *out is malloc'ed (free it). Errors name the file and dataset path. */
int xf_h5_read_list(hid_t file, const char *file_name, const char *path, double **out, size_t *n,
		    xf_error *err);
/* One number (a list of exactly one element). */
int xf_h5_read_scalar(hid_t file, const char *file_name, const char *path, double *out,
		      xf_error *err);
/* A string dataset (fixed or variable length, scalar or one element) into buf. */
int xf_h5_read_string(hid_t file, const char *file_name, const char *path, char *buf, size_t len,
		      xf_error *err);
/* Up to `max` strings of a string dataset (fixed or variable length, any shape) into
 * names[k] (each `len` bytes, truncated); *n receives how many the dataset holds. */
int xf_h5_read_string_list(hid_t file, const char *file_name, const char *path, char *names,
			   size_t len, size_t max, size_t *n, xf_error *err);
/* Shape of a 2-D dataset; error when it is not 2-D. */
int xf_h5_matrix_shape(hid_t file, const char *file_name, const char *path, size_t *rows,
		       size_t *cols, xf_error *err);
/* Read the square block rows [first, first + n) × columns [first, first + n) of a 2-D
 * dataset as double (row-major, n·n values) with a hyperslab, so that cost follows the
 * block and not the stored map; a missing filter (LZF above all) gets a message naming
 * the filter and the package. */
int xf_h5_read_block(hid_t file, const char *file_name, const char *path, size_t first, size_t n,
		     double *out, xf_error *err);

/* Integer-valued list entries (bins, mappings) are read as doubles, exact up to 2^53:
 * a larger entry cannot be told from its neighbours (2^53 + 1 reads as 2^53), so it is
 * refused as out of range; within it, a bin outside the file's lists is skipped with a
 * warning (data.md). */
#define XF_H5_INTEGER_MAX 9007199254740992.0
/* Integer-valued list entries (bins, mappings): error naming the entry when one is not
 * an integer, or is beyond ±XF_H5_INTEGER_MAX. */
int xf_h5_list_to_long(const double *v, size_t n, long *out, const char *file_name,
		       const char *path, xf_error *err);

#endif
