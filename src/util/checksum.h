/* checksum.h — the one home of content checksums: CRC-32 (zlib's, the IEEE polynomial
 * that `crc32`, Python's zlib.crc32 and cksum -a crc32b print) of memory and of whole
 * files read in blocks. Used to tell whether an input changed since a result was made
 * (batch --resume, adr/0023); not a defence against a deliberate collision. */
#ifndef XPCSFIT_UTIL_CHECKSUM_H
#define XPCSFIT_UTIL_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>
#include "xpcsfit/error.h"

/* Continue crc (0 to start) over n bytes. */
uint32_t xf_crc32(uint32_t crc, const void *data, size_t n);

/* CRC-32 and size of the file's bytes, read in 1 MiB blocks (constant memory).
 * XF_ERR_DATA naming the file when it cannot be opened or read. */
int xf_file_crc32(const char *path, uint32_t *crc, uint64_t *bytes, xf_error *err);

#endif
