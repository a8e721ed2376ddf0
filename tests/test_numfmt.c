/* test_numfmt.c — the one rule for numbers a person reads (util/numfmt.h, adr/0062):
 * 2 significant digits of the uncertainty and the value rounded to that place, 6
 * significant digits without one, scientific notation below 1e-4 and from 1e6 on. The
 * cases are the numbers of the demo reports that issue 25 quotes. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util/numfmt.h"

static void check_pm(double v, double u, const char *want)
{
	char buf[XF_NUM_TEXT];
	xf_num_pm(v, u, " +/- ", buf, sizeof buf);
	assert_string_equal(buf, want);
}

/* the numbers of demo_output/chx and laminar: report.html showed 17 digits of each */
static void test_value_with_uncertainty(void **state)
{
	(void)state;
	check_pm(26149.650446510565, 6295.321979919238, "26100 +/- 6300");
	check_pm(-0.5214915612027388, 0.04599965903110426, "-0.521 +/- 0.046");
	check_pm(0.05912893345317176, 0.001782032513268336, "0.0591 +/- 0.0018");
	check_pm(1198.4029394554964, 3.7043310423723046, "1198.4 +/- 3.7");
	check_pm(0.30001193358965855, 1.0120570824686035e-05, "0.300012 +/- 0.000010");
	check_pm(1.0000061454240066, 4.516725315411128e-06, "1.0000061 +/- 0.0000045");
	check_pm(0.011974311313078625, 3.874458033143412e-05, "0.011974 +/- 0.000039");
	check_pm(30.817873717894695, 21.525136502582757, "31 +/- 22");
	check_pm(-446.64684494325974, 235.9314960845936, "-450 +/- 240");
	/* below 1e-4: scientific, digits still set by the uncertainty */
	check_pm(4.2853144588198195e-05, 4.253192735901754e-06, "4.29e-05 +/- 4.3e-06");
	/* from 1e6 on: scientific */
	check_pm(12345678.9, 4321.0, "1.23457e+07 +/- 4.3e+03");
}

/* rounding that carries into a new digit keeps 2 significant digits of the uncertainty */
static void test_carry(void **state)
{
	(void)state;
	check_pm(1.23456, 0.0996, "1.23 +/- 0.10");
	check_pm(5.0, 9.96, "5 +/- 10");
	assert_int_equal(xf_num_place(0.0996), -2);
	assert_int_equal(xf_num_place(6295.3), 2);
	assert_int_equal(xf_num_place(1.01e-5), -6);
	assert_int_equal(xf_num_place(0.0), INT_MIN);
	assert_int_equal(xf_num_place(NAN), INT_MIN);
}

/* a value smaller than its uncertainty's last digit is 0 at that place, never "-0" */
static void test_zero(void **state)
{
	(void)state;
	check_pm(-1e-9, 0.25, "0.00 +/- 0.25");
	check_pm(0.0, 2.0, "0.0 +/- 2.0");
	check_pm(1e-12, 2.5e-5, "0.0e+00 +/- 2.5e-05");
}

/* no uncertainty (fixed, not estimated): 6 significant digits, as %g */
static void test_bare(void **state)
{
	(void)state;
	char buf[XF_NUM_TEXT];
	check_pm(26149.650446510565, NAN, "26149.7");
	check_pm(0.0, NAN, "0");
	check_pm(-0.0, 0.0, "0");
	check_pm(1e-6, -1.0, "1e-06");
	check_pm(NAN, 1.0, "nan");
	check_pm(-INFINITY, NAN, "-inf");
	xf_num_value(313.3723811589912, NAN, buf, sizeof buf);
	assert_string_equal(buf, "313.372");
	xf_num_unc(1.0, NAN, buf, sizeof buf);
	assert_string_equal(buf, "nan");
	xf_num_unc(26149.65, 6295.321979919238, buf, sizeof buf);
	assert_string_equal(buf, "6300");
}

/* the same interval bounds as the value: to the place of the sd */
static void test_value_at_place(void **state)
{
	(void)state;
	char buf[XF_NUM_TEXT];
	xf_num_value(1211.3553528738312, 14.964630279147793, buf, sizeof buf);
	assert_string_equal(buf, "1211");
	xf_num_value(0.00019092369478832666, 0.0002325538765885015, buf, sizeof buf);
	assert_string_equal(buf, "0.00019");
}

/* any finite input gives a finite, bounded text: no power of ten overflows, no value is
 * asked for more digits than a double holds */
static void test_extremes(void **state)
{
	(void)state;
	static const double pairs[][2] = {
		{ 1.0, 1e-300 },   { 1e-309, 1e-310 }, { 1e300, 1e299 }, { DBL_MAX, DBL_MAX },
		{ -DBL_MAX, 1.0 }, { 5e-324, 5e-324 }, { 1.0, DBL_MAX }, { 123.456, 1e-20 },
	};
	char buf[XF_NUM_TEXT];
	for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
		xf_num_pm(pairs[k][0], pairs[k][1], " +/- ", buf, sizeof buf);
		assert_null(strstr(buf, "nan"));
		assert_null(strstr(buf, "inf"));
		assert_true(strlen(buf) < 60);
	}
	check_pm(1.0, 1e-300, "1.0000000000000000 +/- 0.0000000000000000");
	check_pm(1e300, 2.5e299, "1.00e+300 +/- 2.5e+299");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_value_with_uncertainty),
		cmocka_unit_test(test_carry),
		cmocka_unit_test(test_zero),
		cmocka_unit_test(test_bare),
		cmocka_unit_test(test_value_at_place),
		cmocka_unit_test(test_extremes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
