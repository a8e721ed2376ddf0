/* test_data.c — the data module: packed index, triangle reconstruction, diagonal
 * correction, φ normalisation and ranges, frame and dt rules, and the simulate → read
 * round trip (exact values, angle order, byte-identical repeated writes). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "data/select.h"
#include "util/select.h"
#include "util/size.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/model.h"
#include "xpcsfit/rng.h"
#include "cli/request_build.h"

static char tmp_dir[1024];

static const char *tmp_path(const char *name)
{
	static char buf[1200];
	snprintf(buf, sizeof buf, "%s/%s", tmp_dir, name);
	return buf;
}

static void test_packed_index(void **state)
{
	(void)state;
	/* walk the upper triangle row-major: the index must count 0, 1, 2, ... */
	for (size_t n = 1; n <= 7; n++) {
		size_t want = 0;
		for (size_t i = 0; i < n; i++)
			for (size_t j = i; j < n; j++)
				assert_int_equal(xf_packed_index(n, i, j), want++);
		assert_int_equal(want, xf_packed_size(n));
	}
	assert_int_equal(xf_fitted_pairs(5), 6);
	assert_int_equal(xf_fitted_pairs(2), 0);
}

static void test_triangle_upper_lower(void **state)
{
	(void)state;
	double up[9] = { 5, 1, 2, 0, 6, 3, 0, 0, 7 };
	double lo[9] = { 5, 0, 0, 1, 6, 0, 2, 3, 7 };
	double want[9] = { 5, 1, 2, 1, 6, 3, 2, 3, 7 };
	assert_int_equal(xf_triangle_to_full(up, 3, "up"), 0);
	assert_int_equal(xf_triangle_to_full(lo, 3, "lo"), 0);
	for (int k = 0; k < 9; k++) {
		assert_true(up[k] == want[k]);
		assert_true(lo[k] == want[k]);
	}
}

static void test_triangle_full(void **state)
{
	(void)state;
	/* a full symmetric map is used as it is: never doubled */
	double sym[9] = { 5, 1, 2, 1, 6, 3, 2, 3, 7 };
	assert_int_equal(xf_triangle_to_full(sym, 3, "sym"), 0);
	assert_true(sym[1] == 1 && sym[3] == 1 && sym[0] == 5);
	/* not symmetric: warn (return 1) and use the upper triangle */
	double asym[9] = { 5, 1, 2, 4, 6, 3, 2, 3, 7 };
	int warnings = xf_log_warning_count();
	assert_int_equal(xf_triangle_to_full(asym, 3, "asym"), 1);
	assert_int_equal(xf_log_warning_count(), warnings + 1);
	assert_true(asym[3] == 1 && asym[1] == 1);
}

static void test_diagonal_correction(void **state)
{
	(void)state;
	double m[9] = { 5, 1, 1, 1, 5, 2, 1, 2, 5 }; /* data.md's example */
	xf_diagonal_correct(m, 3);
	assert_true(m[0] == 1.0);
	assert_true(m[4] == 1.5);
	assert_true(m[8] == 2.0);
	assert_true(m[1] == 1.0 && m[5] == 2.0); /* off-diagonal untouched */
}

static void test_phi_normalise(void **state)
{
	(void)state;
	assert_true(xf_phi_normalise(0) == 0);
	assert_true(xf_phi_normalise(180) == 180);
	assert_true(xf_phi_normalise(-180) == 180);
	assert_true(xf_phi_normalise(190) == -170);
	assert_true(xf_phi_normalise(360) == 0);
	assert_true(xf_phi_normalise(-190) == 170);
	assert_true(xf_phi_normalise(725) == 5);
	assert_false(signbit(xf_phi_normalise(-360)));
}

static void test_phi_ranges(void **state)
{
	(void)state;
	xf_phi_range plain = { -10, 10 }, wrapped = { 170, -170 }, all = { -200, 160 };
	xf_phi_range shifted = { 350, 370 }, edge = { 175, 180 };
	assert_true(xf_phi_in_range(0, &plain));
	assert_true(xf_phi_in_range(10, &plain));
	assert_false(xf_phi_in_range(11, &plain));
	assert_true(xf_phi_in_range(360, &plain));
	assert_true(xf_phi_in_range(180, &wrapped));
	assert_true(xf_phi_in_range(-175, &wrapped));
	assert_false(xf_phi_in_range(0, &wrapped));
	assert_true(xf_phi_in_range(77, &all)); /* 360° wide: everything */
	assert_true(xf_phi_in_range(-5, &shifted));
	assert_false(xf_phi_in_range(20, &shifted));
	assert_true(xf_phi_in_range(-180, &edge)); /* -180 is 180 */
}

/* A selection as a config that says nothing makes it: every frame, the file's dt (the
 * data layer's tests build their selection, not a config) */
static xf_selection sel_default(void)
{
	return (xf_selection){ .start_frame = 1, .end_frame = -1 };
}

static void test_frames(void **state)
{
	(void)state;
	xf_selection sel = sel_default();
	xf_error err = { 0 };
	long first;
	int n;
	assert_int_equal(xf_select_frames(&sel, 10, &first, &n, &err), 0);
	assert_int_equal(first, 1);
	assert_int_equal(n, 10);
	sel.start_frame = 0; /* clamped with a warning */
	sel.end_frame = 50;
	int warnings = xf_log_warning_count();
	assert_int_equal(xf_select_frames(&sel, 10, &first, &n, &err), 0);
	assert_int_equal(xf_log_warning_count(), warnings + 2);
	assert_int_equal(first, 1);
	assert_int_equal(n, 10);
	sel.start_frame = 3;
	sel.end_frame = 7;
	assert_int_equal(xf_select_frames(&sel, 10, &first, &n, &err), 0);
	assert_int_equal(first, 3);
	assert_int_equal(n, 5);
	sel.start_frame = 9;
	sel.end_frame = -1;
	assert_int_equal(xf_select_frames(&sel, 10, &first, &n, &err), XF_ERR_DATA);
	assert_non_null(strstr(err.msg, "fewer than 3 frames"));
	xf_error_clear(&err);
	sel.start_frame = 11;
	assert_int_equal(xf_select_frames(&sel, 10, &first, &n, &err), XF_ERR_DATA);
	assert_non_null(strstr(err.msg, "beyond"));
	/* a window above the limit is refused before any allocation (issue 9); a small
	 * window of a huge declared map is fine */
	xf_error_clear(&err);
	sel.start_frame = 1;
	sel.end_frame = -1;
	assert_int_equal(xf_select_frames(&sel, 3000000000L, &first, &n, &err), XF_ERR_DATA);
	assert_non_null(strstr(err.msg, "above the limit of 65536 frames"));
	sel.end_frame = 40;
	assert_int_equal(xf_select_frames(&sel, 3000000000L, &first, &n, &err), 0);
	assert_int_equal(n, 40);
	sel.end_frame = XF_WINDOW_FRAMES_MAX;
	assert_int_equal(xf_select_frames(&sel, 3000000000L, &first, &n, &err), 0);
	assert_int_equal(n, XF_WINDOW_FRAMES_MAX);
}

/* util/size.h: products that overflow are reported, never wrapped (issue 9). */
static void test_size_helpers(void **state)
{
	(void)state;
	size_t out = 0;
	assert_int_equal(xf_size_mul(3, 5, &out), 0);
	assert_int_equal(out, 15);
	assert_int_equal(xf_size_mul(0, SIZE_MAX, &out), 0);
	assert_int_equal(out, 0);
	assert_int_equal(xf_size_mul(SIZE_MAX / 2 + 1, 2, &out), -1);
	assert_true(out == SIZE_MAX);
	/* 3·10⁹ declared rows squared times 8 bytes does not fit in 64 bits */
	assert_int_equal(xf_size_mul3(3000000000u, 3000000000u, 8, &out), -1);
	assert_int_equal(xf_size_mul3(40000, 40000, 8, &out), 0);
	assert_true(out == 12800000000u);
	assert_null(xf_malloc_array(SIZE_MAX / 4, 8));
	assert_null(xf_calloc_array(SIZE_MAX / 4, 8));
	void *p = xf_malloc_array(0, 8); /* one element: NULL only on failure */
	assert_non_null(p);
	free(p);
}

static void test_dt_rules(void **state)
{
	(void)state;
	xf_selection sel = sel_default();
	xf_raw_file raw;
	xf_error err = { 0 };
	char src[160];
	double dt;
	memset(&raw, 0, sizeof raw);
	raw.file_name = "f.h5";
	assert_int_equal(xf_select_dt(&raw, &sel, &dt, src, sizeof src, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "frame_time"));
	xf_error_clear(&err);
	raw.has_file_dt = 1;
	raw.file_dt_s = 0.002;
	strcpy(raw.file_dt_desc, "frame_time × stride × avg = 0.001 × 2 × 1");
	assert_int_equal(xf_select_dt(&raw, &sel, &dt, src, sizeof src, &err), 0);
	assert_true(dt == 0.002);
	assert_non_null(strstr(src, "file: frame_time"));
	sel.has_dt = 1;
	sel.dt_s = 0.0021; /* 5 % off: warning, config wins */
	int warnings = xf_log_warning_count();
	assert_int_equal(xf_select_dt(&raw, &sel, &dt, src, sizeof src, &err), 0);
	assert_true(dt == 0.0021);
	assert_string_equal(src, "config");
	assert_int_equal(xf_log_warning_count(), warnings + 1);
	sel.dt_s = 0.002002; /* 0.1 %: no warning */
	assert_int_equal(xf_select_dt(&raw, &sel, &dt, src, sizeof src, &err), 0);
	assert_int_equal(xf_log_warning_count(), warnings + 1);
	sel.dt_s = 0;
	assert_int_equal(xf_select_dt(&raw, &sel, &dt, src, sizeof src, &err), XF_ERR_CONFIG);
	xf_error_clear(&err);
	sel.dt_s = 1e308; /* finite but not a frame time */
	assert_int_equal(xf_select_dt(&raw, &sel, &dt, src, sizeof src, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "outside 1e-12 to 86400 s"));
	xf_error_clear(&err);
	sel.has_dt = 0;
	raw.file_dt_s = -1;
	assert_int_equal(xf_select_dt(&raw, &sel, &dt, src, sizeof src, &err), XF_ERR_DATA);
	xf_error_clear(&err);
	raw.file_dt_s = INFINITY;
	assert_int_equal(xf_select_dt(&raw, &sel, &dt, src, sizeof src, &err), XF_ERR_DATA);
	assert_non_null(strstr(err.msg, "set analyzer_parameters.dt"));
}

/* a laminar-flow config for simulate */
static void sim_config(xf_config *cfg, int n_frames)
{
	const double theta[XF_N_PHYS] = { 1200, -0.8, 3, 0.02, 0.3, 0.001, 4 };
	xf_config_defaults(cfg);
	cfg->mode = XF_MODE_LAMINAR;
	cfg->has_q = 1;
	cfg->wavevector_q = 0.0054;
	cfg->has_dt = 1;
	cfg->dt_s = 0.01;
	cfg->end_frame = n_frames;
	for (int k = 0; k < XF_N_PHYS; k++) {
		cfg->values[k] = theta[k];
		cfg->value_given[k] = 1;
	}
}

/* Expected stored-then-read matrix of angle a: model upper + noise, mirrored, corrected */
static void expected_matrix(const xf_config *cfg, const xf_sim_options *opt, int a, double *m)
{
	size_t n = (size_t)opt->n_frames;
	xf_model_grid g = { cfg->mode, cfg->shear_model,  opt->n_frames,
			    cfg->dt_s, cfg->wavevector_q, cfg->gap_A };
	assert_int_equal(
		xf_model_c2_full(&g, cfg->values, opt->phi_deg[a], opt->contrast, opt->offset, m),
		0);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i; j < n; j++) {
			if (opt->noise_sd != 0.0)
				m[i * n + j] += opt->noise_sd * xf_rng_normal(opt->seed,
									      XF_RNG_SIMULATE_NOISE,
									      (uint64_t)a, i, j);
			m[j * n + i] = m[i * n + j];
		}
	xf_diagonal_correct(m, n);
}

static void round_trip(xf_layout layout, double noise, int lzf, double tol)
{
	const double phi[3] = { 90, -30, 200 }; /* read back as -160, -30, 90 */
	const int order[3] = { 2, 1, 0 };	/* written index of each read angle */
	xf_config cfg;
	xf_dataset ds;
	xf_error err = { 0 };
	const int n = 24;
	sim_config(&cfg, n);
	xf_sim_options opt = {
		tmp_path("rt.h5"), layout, 3, phi, n, 0.25, 1.1, noise, 7, lzf, 0, NULL
	};
	assert_int_equal(xf_cli_simulate_write(&cfg, &opt, &err), 0);
	assert_int_equal(xf_cli_dataset_load(&cfg, opt.out_path, &ds, &err), 0);
	assert_int_equal(ds.layout, layout);
	assert_int_equal(ds.n_phi, 3);
	assert_int_equal(ds.n_frames, n);
	assert_true(ds.q == 0.0054 && ds.dt_s == 0.01);
	assert_true(ds.phi_deg[0] == -160 && ds.phi_deg[1] == -30 && ds.phi_deg[2] == 90);
	assert_int_equal(ds.n_points, 3 * xf_fitted_pairs(n));
	double *want = malloc(sizeof(double) * n * n), *got = malloc(sizeof(double) * n * n);
	for (int a = 0; a < 3; a++) {
		assert_int_equal(ds.map_number[a], order[a] + 1);
		expected_matrix(&cfg, &opt, order[a], want);
		xf_dataset_full_matrix(&ds, a, got);
		for (int k = 0; k < n * n; k++)
			if (!(fabs(got[k] - want[k]) <= tol))
				fail_msg("angle %d element %d: got %.17g want %.17g", a, k, got[k],
					 want[k]);
	}
	free(want);
	free(got);
	xf_dataset_free(&ds);
}

static void test_round_trip_exact(void **state)
{
	(void)state;
	round_trip(XF_LAYOUT_APS_U, 0.0, 0, 1e-15);
	round_trip(XF_LAYOUT_APS_OLD, 0.0, 1, 1e-15);
	/* with noise the file holds model + noise exactly (float64, same arithmetic) */
	round_trip(XF_LAYOUT_APS_U, 0.002, 1, 0.0);
	round_trip(XF_LAYOUT_APS_OLD, 0.002, 0, 0.0);
}

static int read_all(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	*buf = malloc(*len);
	size_t got = fread(*buf, 1, *len, f);
	fclose(f);
	return got == *len ? 0 : -1;
}

static void test_simulate_reproducible(void **state)
{
	(void)state;
	const double phi[2] = { 0, 45 };
	xf_config cfg;
	xf_error err = { 0 };
	sim_config(&cfg, 30);
	for (int layout = 0; layout < 2; layout++) {
		char a[1200], b[1200];
		char *ba, *bb;
		size_t la, lb;
		snprintf(a, sizeof a, "%s", tmp_path("rep_a.h5"));
		snprintf(b, sizeof b, "%s", tmp_path("rep_b.h5"));
		xf_sim_options opt = { a,   (xf_layout)layout, 2, phi, 30, 0.3, 1.0, 0.002, 1, 1, 0,
				       NULL };
		assert_int_equal(xf_cli_simulate_write(&cfg, &opt, &err), 0);
		sleep(1); /* a time stamp in the file would now differ */
		opt.out_path = b;
		assert_int_equal(xf_cli_simulate_write(&cfg, &opt, &err), 0);
		assert_int_equal(read_all(a, &ba, &la), 0);
		assert_int_equal(read_all(b, &bb, &lb), 0);
		assert_int_equal(la, lb);
		assert_memory_equal(ba, bb, la);
		free(ba);
		free(bb);
		/* and no temporary file is left behind */
		char tmp_name[1300];
		snprintf(tmp_name, sizeof tmp_name, "%s.tmp%ld", b, (long)getpid());
		assert_int_not_equal(access(tmp_name, F_OK), 0);
	}
}

static void test_simulate_bad_inputs(void **state)
{
	(void)state;
	const double phi[1] = { 0 };
	xf_config cfg;
	xf_error err = { 0 };
	sim_config(&cfg, 10);
	xf_sim_options opt = {
		tmp_path("bad.h5"), XF_LAYOUT_APS_U, 1, phi, 2, 0.3, 1, 0, 1, 0, 0, NULL
	};
	assert_int_equal(xf_cli_simulate_write(&cfg, &opt, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "frames"));
	xf_error_clear(&err);
	opt.n_frames = 10;
	cfg.has_q = 0;
	assert_int_equal(xf_cli_simulate_write(&cfg, &opt, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "wavevector_q"));
	assert_int_not_equal(access(opt.out_path, F_OK), 0);
	/* angles that validate would refuse in the file: 0 and 360 are one angle */
	xf_error_clear(&err);
	cfg.has_q = 1;
	const double same[2] = { 0, 360 };
	opt.phi_deg = same;
	opt.n_phi = 2;
	assert_int_equal(xf_cli_simulate_write(&cfg, &opt, &err), XF_ERR_CONFIG);
	assert_non_null(strstr(err.msg, "0 and 360 are the same angle"));
	assert_int_not_equal(access(opt.out_path, F_OK), 0);
	opt.phi_deg = phi;
	opt.n_phi = 1;
	xf_error_clear(&err);
	cfg.has_q = 1;
	opt.out_path = tmp_path("no_such_dir/x.h5");
	assert_int_equal(xf_cli_simulate_write(&cfg, &opt, &err), XF_ERR_DATA);
	assert_non_null(strstr(err.msg, "cannot create"));
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* xf_median: the values a sort gives, bit for bit (odd and even counts, ties, one value) */
static void test_median(void **state)
{
	(void)state;
	double v[257], w[257];
	for (int n = 1; n <= 257; n += 17) {
		for (int i = 0; i < n; i++) /* a scramble with ties (mod 97) */
			v[i] = w[i] = (double)((i * 7919 + 13) % 97) * 0.37 - 11.0;
		qsort(w, (size_t)n, sizeof(double), cmp_dbl);
		double want = n % 2 ? w[n / 2] : 0.5 * (w[n / 2 - 1] + w[n / 2]);
		assert_true(xf_median(v, (size_t)n) == want);
		if (n + 1 <= 257) { /* and the even count above it */
			for (int i = 0; i <= n; i++)
				v[i] = w[i] = (double)((i * 104729 + 5) % 89) * -0.21 + 3.0;
			qsort(w, (size_t)n + 1, sizeof(double), cmp_dbl);
			int m = n + 1;
			want = m % 2 ? w[m / 2] : 0.5 * (w[m / 2 - 1] + w[m / 2]);
			assert_true(xf_median(v, (size_t)m) == want);
		}
	}
}

int main(void)
{
	const char *t = getenv("XF_TMP");
	snprintf(tmp_dir, sizeof tmp_dir, "%s", t ? t : "/tmp/xf_test_data");
	mkdir(tmp_dir, 0755);
	xf_log_set_stderr(0, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_packed_index),
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_size_helpers),
		cmocka_unit_test(test_triangle_upper_lower),
		cmocka_unit_test(test_triangle_full),
		cmocka_unit_test(test_diagonal_correction),
		cmocka_unit_test(test_phi_normalise),
		cmocka_unit_test(test_phi_ranges),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_dt_rules),
		cmocka_unit_test(test_round_trip_exact),
		cmocka_unit_test(test_simulate_reproducible),
		cmocka_unit_test(test_simulate_bad_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
