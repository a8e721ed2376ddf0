/* The device policy's predicates (src/device/policy.h, docs/gpu.md): no device needed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "device/policy.h"

static void test_parse(void **state)
{
	(void)state;
	xf_device_choice c = XF_DEVICE_GPU;
	assert_int_equal(xf_device_parse("cpu", &c), 0);
	assert_int_equal(c, XF_DEVICE_CPU);
	assert_int_equal(xf_device_parse("auto", &c), 0);
	assert_int_equal(c, XF_DEVICE_AUTO);
	assert_int_equal(xf_device_parse("gpu", &c), 0);
	assert_int_equal(c, XF_DEVICE_GPU);
	assert_int_equal(xf_device_parse("GPU", &c), -1);
	assert_int_equal(xf_device_parse("", &c), -1);
	assert_int_equal(xf_device_parse(NULL, &c), -1);
	assert_string_equal(xf_device_name(XF_DEVICE_AUTO), "auto");
}

static void test_defaults_conservative(void **state)
{
	(void)state;
	xf_device_policy p = xf_device_policy_default();
	assert_int_equal(p.choice, XF_DEVICE_CPU);
	assert_true(p.gpu_min_score == XF_DEVICE_DEFAULT_THRESHOLD);
	assert_int_equal(p.fp32, 0);
	/* the default never picks the GPU, whatever the size and the devices */
	assert_int_equal(xf_device_use_gpu(&p, 1e20, 8), 0);
	assert_int_equal(xf_device_refused(&p, 0), 0);
}

static void test_routing(void **state)
{
	(void)state;
	xf_device_policy p = xf_device_policy_default();
	p.choice = XF_DEVICE_AUTO;
	p.gpu_min_score = 1e6;
	assert_int_equal(xf_device_use_gpu(&p, 999999.0, 1), 0);
	assert_int_equal(xf_device_use_gpu(&p, 1e6, 1), 1);
	assert_int_equal(xf_device_use_gpu(&p, 1e9, 0), 0); /* auto without a device: cpu */
	assert_int_equal(xf_device_refused(&p, 0), 0);	    /* ... quietly */
	p.choice = XF_DEVICE_GPU;
	assert_int_equal(xf_device_use_gpu(&p, 1.0, 1), 1); /* asked: any size */
	assert_int_equal(xf_device_refused(&p, 0), 1);
	assert_int_equal(xf_device_refused(&p, 2), 0);
	p.max_devices = 0;
	assert_int_equal(xf_device_refused(&p, 2), 1);
	assert_true(xf_device_work_score(1000, 13) == 13000.0);
}

/* Whether the module is looked at: decided from the options and the size alone, before
 * anything is loaded (adr/0072) */
static void test_wants(void **state)
{
	(void)state;
	xf_device_policy p = xf_device_policy_default();
	assert_int_equal(xf_device_wants_gpu(&p, 1e20, 1), 0); /* cpu: never */
	p.choice = XF_DEVICE_AUTO;
	p.gpu_min_score = 1e6;
	assert_int_equal(xf_device_wants_gpu(&p, 999999.0, 1), 0); /* small: not even looked */
	assert_int_equal(xf_device_wants_gpu(&p, 1e6, 1), 1);
	assert_int_equal(xf_device_wants_gpu(&p, 1e9, 2), 0); /* spread over ranks: the CPU */
	p.choice = XF_DEVICE_GPU;
	assert_int_equal(xf_device_wants_gpu(&p, 1.0, 1), 1); /* asked: its refusals say why */
	assert_int_equal(xf_device_wants_gpu(&p, 1.0, 3), 1);
}

static void test_fp32(void **state)
{
	(void)state;
	xf_device_policy p = xf_device_policy_default();
	assert_int_equal(xf_device_use_fp32(&p, 1e30), 0); /* not asked */
	p.fp32 = 1;
	assert_int_equal(xf_device_use_fp32(&p, p.fp32_min_score * 0.5), 0);
	assert_int_equal(xf_device_use_fp32(&p, p.fp32_min_score), 1);
}

static const char *env_table[4];
static const char *fake_env(const char *name)
{
	if (!strcmp(name, "XPCSFIT_DEVICE"))
		return env_table[0];
	if (!strcmp(name, "XPCSFIT_DEVICE_THRESHOLD"))
		return env_table[1];
	return NULL;
}

static void test_env(void **state)
{
	(void)state;
	xf_device_policy p = xf_device_policy_default();
	const char *bad = NULL;
	env_table[0] = env_table[1] = NULL;
	assert_int_equal(xf_device_policy_env(&p, fake_env, &bad), 0);
	assert_int_equal(p.choice, XF_DEVICE_CPU);
	env_table[0] = "auto";
	env_table[1] = "2.5e7";
	assert_int_equal(xf_device_policy_env(&p, fake_env, &bad), 0);
	assert_int_equal(p.choice, XF_DEVICE_AUTO);
	assert_true(p.gpu_min_score == 2.5e7);
	env_table[0] = "fast";
	assert_int_equal(xf_device_policy_env(&p, fake_env, &bad), -1);
	assert_string_equal(bad, "XPCSFIT_DEVICE");
	const char *bad_thresholds[] = { "-1", "0", "1e7x", "nan", "inf" };
	env_table[0] = "cpu";
	for (size_t k = 0; k < sizeof bad_thresholds / sizeof *bad_thresholds; k++) {
		env_table[1] = bad_thresholds[k];
		assert_int_equal(xf_device_policy_env(&p, fake_env, &bad), -1);
		assert_string_equal(bad, "XPCSFIT_DEVICE_THRESHOLD");
	}
}

/* The split tiles [0, n) exactly, in device order, in proportion to the scores. */
static void check_split(const double *score, int n, size_t blocks)
{
	size_t first[8], count[8], at = 0;
	double sum = 0.0;
	for (int d = 0; d < n; d++)
		sum += score[d] > 0.0 ? score[d] : 0.0;
	assert_int_equal(xf_device_split(score, n, blocks, first, count), 0);
	for (int d = 0; d < n; d++) {
		assert_int_equal(first[d], at);
		at += count[d];
		double share = score[d] > 0.0 ? (double)blocks * score[d] / sum : 0.0;
		assert_true(fabs((double)count[d] - share) < 1.0); /* largest remainder */
	}
	assert_int_equal(at, blocks);
}

static void test_split(void **state)
{
	(void)state;
	const double one[1] = { 3.0 }, even[3] = { 1.0, 1.0, 1.0 },
		     mixed[4] = { 2.0, 1.0, 0.0, 1.0 };
	check_split(one, 1, 17);
	check_split(even, 3, 10);
	check_split(even, 3, 0);
	check_split(even, 3, 2);
	check_split(mixed, 4, 101);
	size_t first[3], count[3];
	/* ties go to the lower index: 10 over three equal devices is 4, 3, 3 */
	assert_int_equal(xf_device_split(even, 3, 10, first, count), 0);
	assert_int_equal(count[0], 4);
	assert_int_equal(count[1], 3);
	assert_int_equal(count[2], 3);
	const double none[2] = { 0.0, -1.0 };
	assert_int_equal(xf_device_split(none, 2, 5, first, count), -1);
	assert_int_equal(xf_device_split(even, 0, 5, first, count), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),	cmocka_unit_test(test_defaults_conservative),
		cmocka_unit_test(test_routing), cmocka_unit_test(test_wants),
		cmocka_unit_test(test_fp32),	cmocka_unit_test(test_env),
		cmocka_unit_test(test_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
