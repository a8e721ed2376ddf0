/* size.c — overflow-checked sizes and allocations (util/size.h). */
#include "util/size.h"

#include <stdint.h>
#include <stdlib.h>

int xf_size_mul(size_t a, size_t b, size_t *out)
{
	if (a != 0 && b > SIZE_MAX / a) {
		*out = SIZE_MAX;
		return -1;
	}
	*out = a * b;
	return 0;
}

int xf_size_mul3(size_t a, size_t b, size_t c, size_t *out)
{
	size_t ab;
	if (xf_size_mul(a, b, &ab) != 0)
		return *out = SIZE_MAX, -1;
	return xf_size_mul(ab, c, out);
}

void *xf_malloc_array(size_t n, size_t size)
{
	size_t bytes;
	if (xf_size_mul(n ? n : 1, size, &bytes) != 0)
		return NULL;
	return malloc(bytes);
}

void *xf_calloc_array(size_t n, size_t size)
{
	size_t bytes;
	if (xf_size_mul(n ? n : 1, size, &bytes) != 0)
		return NULL;
	return calloc(n ? n : 1, size);
}
