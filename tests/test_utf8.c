/* test_utf8.c — bytes made valid UTF-8 for the files (io/utf8.h, adr/0075): every byte
 * that starts no valid RFC 3629 sequence becomes U+FFFD, one per byte; valid text,
 * multibyte included, passes unchanged; the bounded form cuts at a character. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "io/utf8.h"

#define R "\xEF\xBF\xBD" /* U+FFFD */

static void clean_is(const char *in, const char *want)
{
	char *out = xf_utf8_clean(in);
	assert_non_null(out);
	assert_string_equal(out, want);
	assert_true(xf_utf8_valid(out));
	free(out);
}

static void test_valid_unchanged(void **state)
{
	(void)state;
	const char *ok[] = { "",
			     "data.h5",
			     "/d/donn\xC3\xA9"
			     "es_\xC3\xA9.h5",
			     "\xE2\x82\xAC",
			     "\xF0\x9F\x98\x80",
			     "\xEF\xBF\xBF",
			     "\xF4\x8F\xBF\xBF" };
	for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
		assert_true(xf_utf8_valid(ok[k]));
		clean_is(ok[k], ok[k]);
	}
}

static void test_invalid_replaced(void **state)
{
	(void)state;
	clean_is("bad\xFF.h5", "bad" R ".h5");
	clean_is("\x80", R);		       /* a lone continuation byte */
	clean_is("\xC0\xAF", R R);	       /* overlong '/' */
	clean_is("\xE0\x80\xAF", R R R);       /* overlong, 3 bytes */
	clean_is("\xED\xA0\x80", R R R);       /* a surrogate, U+D800 */
	clean_is("\xF4\x90\x80\x80", R R R R); /* above U+10FFFF */
	clean_is("\xF5", R);		       /* never a lead byte */
	clean_is("a\xC3", "a" R);	       /* cut at the end */
	clean_is("\xE2\x82", R R);	       /* cut mid-character */
	clean_is("\xC3\xA9\xFF\xC3\xA9", "\xC3\xA9" R "\xC3\xA9");
	assert_false(xf_utf8_valid("bad\xFF"));
	clean_is(NULL, "");
}

static void test_bounded(void **state)
{
	(void)state;
	char buf[6];
	/* "é" (2) + U+FFFD (3) = 5 bytes fit; the next "é" does not and is not cut in two */
	assert_string_equal(xf_utf8_clean_to("\xC3\xA9\xFF\xC3\xA9", buf, sizeof buf),
			    "\xC3\xA9" R);
	assert_string_equal(xf_utf8_clean_to("\xFF\xFF", buf, 4), R);
	assert_string_equal(xf_utf8_clean_to("abc", buf, 1), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_unchanged),
		cmocka_unit_test(test_invalid_replaced),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
