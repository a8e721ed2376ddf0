/* fuzz_common.h — shared by the fuzz targets (tests/fuzz/): each target writes the input
 * bytes to one scratch file of its own process and runs the same entry point the CLI
 * uses on it. Built two ways: with libFuzzer (XPCSFIT_FUZZ=ON, clang) and with the plain
 * replay driver replay.c (every build; `make test` replays the kept corpus). */
#ifndef XPCSFIT_FUZZ_COMMON_H
#define XPCSFIT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Path of this process's scratch file with the given suffix ("$TMPDIR/xf_fuzz_<pid><sfx>"),
 * created once; the file is removed at exit. Returns NULL when no path can be made. */
const char *xf_fuzz_scratch(const char *suffix);
/* Replace the scratch file's contents with data[0..size). Returns 0 or -1. */
int xf_fuzz_write(const char *path, const uint8_t *data, size_t size);

#endif
