/* json.c — numbers in JSON as the result files write them (spec/cli.md): C locale, the
 * shortest of 15..17 significant digits that reads back bitwise, null for NaN and
 * infinities. cJSON's own printer stops at 15 digits whenever the value is within an
 * epsilon, which is not round-trip exact, so numbers are written as raw text. */
#include <cjson/cJSON.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/io_internal.h"

void xf_io_format_double(double x, char *buf, size_t size)
{
	if (!isfinite(x)) {
		snprintf(buf, size, "null");
		return;
	}
	/* snprintf/strtod follow LC_NUMERIC: pin this thread to "C" while formatting */
	locale_t c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	locale_t old = c_loc ? uselocale(c_loc) : (locale_t)0;
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, size, "%.*g", digits, x);
		if (digits == 17 || strtod(buf, NULL) == x)
			break;
	}
	if (c_loc) {
		uselocale(old);
		freelocale(c_loc);
	}
}

cJSON *xf_json_num(double x)
{
	char buf[32];
	xf_io_format_double(x, buf, sizeof buf);
	return cJSON_CreateRaw(buf);
}

cJSON *xf_json_int(long long v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%lld", v);
	return cJSON_CreateRaw(buf);
}

cJSON *xf_json_numbers(const double *v, int n)
{
	cJSON *arr = cJSON_CreateArray();
	for (int k = 0; k < n; k++)
		cJSON_AddItemToArray(arr, xf_json_num(v ? v[k] : NAN));
	return arr;
}
