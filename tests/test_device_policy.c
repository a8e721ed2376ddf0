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

/* The job decision (adr/0129) on issue 36's first GPU measurement (one H200, 16 EPYC
 * threads): an 11.5 M-point fit took 0.66 s on the CPU and 0.92–1.20 s with the device, a
 * 46 M-point fit 1.88 s against 2.64 s; its posterior makes 2 000 (importance) or ~60 000
 * (NUTS) passes where the device's pass is 8× faster. auto picks the CPU for the fits
 * and the device for their posteriors; a small file's posterior stays on the CPU. */
static void test_job_decision(void **state)
{
	(void)state;
	const xf_device_costs c = xf_device_costs_default();
	xf_device_job_estimate fit =
		xf_device_job_estimate_of(&c, XF_DEVICE_JOB_NLSQ, 11500000, 16);
	assert_true(fit.passes == 5.0);
	assert_false(xf_device_job_pays(&fit));
	/* the model reproduces the measured loss: the device slower by 0.26–0.54 s */
	assert_true(fit.gpu_s - fit.cpu_s > 0.26 && fit.gpu_s - fit.cpu_s < 1.0);
	xf_device_job_estimate big =
		xf_device_job_estimate_of(&c, XF_DEVICE_JOB_NLSQ, 46000000, 16);
	assert_false(xf_device_job_pays(&big));
	assert_true(big.gpu_s > big.cpu_s);
	xf_device_job_estimate is =
		xf_device_job_estimate_of(&c, XF_DEVICE_JOB_POSTERIOR_IMPORTANCE, 11500000, 16);
	assert_true(is.passes == 2000.0 && xf_device_job_pays(&is));
	xf_device_job_estimate nuts =
		xf_device_job_estimate_of(&c, XF_DEVICE_JOB_POSTERIOR_NUTS, 11500000, 16);
	/* the device makes two passes per gradient of the collapsed posterior (adr/0130):
	 * ~234 s against ~647 s, still the device */
	assert_true(nuts.gpu_passes == 120000.0 && is.gpu_passes == 2000.0);
	assert_true(xf_device_job_pays(&nuts) && nuts.gpu_s < 0.4 * nuts.cpu_s);
	/* a small posterior: the context alone outweighs its passes */
	xf_device_job_estimate small =
		xf_device_job_estimate_of(&c, XF_DEVICE_JOB_POSTERIOR_IMPORTANCE, 5000, 2);
	assert_false(xf_device_job_pays(&small));
	/* more CPU threads make the CPU's estimate shorter in proportion */
	xf_device_job_estimate one = xf_device_job_estimate_of(&c, XF_DEVICE_JOB_NLSQ, 11500000, 1);
	assert_true(fabs(one.cpu_s - 16.0 * fit.cpu_s) < 1e-12 * one.cpu_s);
	assert_true(one.gpu_s == fit.gpu_s);
	/* the margin: the device must take at most half the CPU's time */
	xf_device_job_estimate edge = { 5.0, 2.0, 1.0, 0.5, 5.0 };
	assert_true(xf_device_job_pays(&edge));
	edge.gpu_s = 1.0 + 1e-9;
	assert_false(xf_device_job_pays(&edge));
}

/* A costs file (xpcsfit-gpu bench --costs): written and read back to the same numbers; a
 * partial file keeps the rest; comments and blank lines pass; a bad line is named. */
static void test_costs_file(void **state)
{
	(void)state;
	xf_device_costs c = { 2e-8, 3e-10, 2e-4, 0.25, 4e-9 }, back = xf_device_costs_default();
	char text[512];
	int bad = 0, n = xf_device_costs_format(&c, text, sizeof text);
	assert_true(n > 0 && (size_t)n < sizeof text);
	assert_int_equal(xf_device_costs_parse(text, &back, &bad), 0);
	assert_true(back.cpu_thread_s_per_point == 2e-8 && back.gpu_s_per_point == 3e-10 &&
		    back.gpu_pass_s == 2e-4 && back.gpu_job_s == 0.25 &&
		    back.gpu_upload_s_per_point == 4e-9);
	xf_device_costs part = xf_device_costs_default();
	assert_int_equal(
		xf_device_costs_parse("# bench of this machine\n\ngpu_job_s 0.3\n", &part, &bad),
		0);
	assert_true(part.gpu_job_s == 0.3 &&
		    part.gpu_s_per_point == xf_device_costs_default().gpu_s_per_point);
	const char *bads[] = { "gpu_job_s 0.3\nspeed 1\n", "gpu_job_s -1\n", "gpu_job_s\n",
			       "gpu_job_s 1 2\n", "gpu_job_s nan\n" };
	const int lines[] = { 2, 1, 1, 1, 1 };
	for (int k = 0; k < 5; k++) {
		xf_device_costs keep = c;
		bad = 0;
		assert_int_equal(xf_device_costs_parse(bads[k], &keep, &bad), -1);
		assert_int_equal(bad, lines[k]);
		assert_true(keep.gpu_job_s == c.gpu_job_s); /* a refused file changes nothing */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),	   cmocka_unit_test(test_defaults_conservative),
		cmocka_unit_test(test_routing),	   cmocka_unit_test(test_wants),
		cmocka_unit_test(test_fp32),	   cmocka_unit_test(test_env),
		cmocka_unit_test(test_split),	   cmocka_unit_test(test_job_decision),
		cmocka_unit_test(test_costs_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
