/* size.h — the one home of size arithmetic for counts that come from outside (data
 * files, configs, the command line): overflow-checked products and the allocations
 * built on them. Every module that sizes a buffer from such a count calls these, so a
 * declared 3·10⁹ × 3·10⁹ map or n_starts of 10⁹ ends in one line, not a wrapped size. */
#ifndef XPCSFIT_UTIL_SIZE_H
#define XPCSFIT_UTIL_SIZE_H

#include <stddef.h>

/* *out = a · b; returns 0, or -1 (and *out = SIZE_MAX) when the product overflows. */
int xf_size_mul(size_t a, size_t b, size_t *out);
/* *out = a · b · c, the same way. */
int xf_size_mul3(size_t a, size_t b, size_t c, size_t *out);
/* malloc of n elements of `size` bytes; NULL on overflow or when memory is short.
 * n = 0 allocates one element so that NULL always means failure. */
void *xf_malloc_array(size_t n, size_t size);
/* calloc with the same conventions. */
void *xf_calloc_array(size_t n, size_t size);

#endif
