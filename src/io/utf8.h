/* utf8.h — text from outside (a data file's path, a config's path or value) made valid
 * UTF-8 before it goes into a file whose format says UTF-8: JSON, HDF5 and netCDF
 * strings, HTML, CSV (adr/0075, docs/outputs.md "Text"). A Linux path is any bytes but
 * '/' and NUL; a byte that is not part of a valid UTF-8 sequence (0xFF, a lone
 * continuation byte, an overlong form, a surrogate) is written as U+FFFD, one per byte.
 * Valid text, multibyte included ("données_é.h5"), passes unchanged. */
#ifndef XPCSFIT_IO_UTF8_H
#define XPCSFIT_IO_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (1 … 4), 0 when the byte at p starts none
 * (p points at a byte that is not NUL). */
size_t xf_utf8_seq(const unsigned char *p);
/* 1 when s (NUL-terminated) is valid UTF-8. */
int xf_utf8_valid(const char *s);
/* A malloc'd copy of s with each invalid byte replaced by U+FFFD (EF BF BD); NULL when
 * out of memory. NULL s gives "". */
char *xf_utf8_clean(const char *s);
/* The same into buf (cut at a character boundary when too small); returns buf. */
char *xf_utf8_clean_to(const char *s, char *buf, size_t size);

#endif
