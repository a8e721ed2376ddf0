/* test_plot.c — the PNG plots: file names (index and signed φ), PNG signature and page
 * size, block averaging of large maps (N > 500), a single angle, PLplot failures
 * coming back as error codes (never exit()), the overview's legend clear of its panels, and
 * the PNG encoder (same pixels, same bytes; a lossless round trip; a full disk an error). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "plot/plot_internal.h"
#include "xpcsfit/model.h"
#include "xpcsfit/plot.h"
#include "xpcsfit/results_config.h"
#include <plplot.h>
#include "util/files.h"
#include "xpcsfit/results.h"

static char tmp_root[1024];

static void test_angle_names(void **state)
{
	(void)state;
	char buf[64];
	xf_plot_angle_name(buf, sizeof buf, 0, 45.0);
	assert_string_equal(buf, "c2_phi_000_+045.00deg.png");
	xf_plot_angle_name(buf, sizeof buf, 7, -2.5);
	assert_string_equal(buf, "c2_phi_007_-002.50deg.png");
	xf_plot_angle_name(buf, sizeof buf, 12, 180.0);
	assert_string_equal(buf, "c2_phi_012_+180.00deg.png");
	xf_plot_angle_name(buf, sizeof buf, 123, -179.994);
	assert_string_equal(buf, "c2_phi_123_-179.99deg.png");
}

/* width and height from the PNG's IHDR chunk, after checking the signature */
static void png_size(const char *path, unsigned *w, unsigned *h, long *bytes)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	unsigned char head[24];
	FILE *fp = fopen(path, "rb");
	if (!fp)
		fail_msg("missing %s", path);
	assert_int_equal(fread(head, 1, 24, fp), 24);
	fseek(fp, 0, SEEK_END);
	*bytes = ftell(fp);
	fclose(fp);
	assert_memory_equal(head, sig, 8);
	assert_memory_equal(head + 12, "IHDR", 4);
	*w = (unsigned)head[16] << 24 | (unsigned)head[17] << 16 | (unsigned)head[18] << 8 |
	     head[19];
	*h = (unsigned)head[20] << 24 | (unsigned)head[21] << 16 | (unsigned)head[22] << 8 |
	     head[23];
}

/* one static angle with N = 1100: the maps are block-averaged to ≤ 500 pixels */
static void test_large_single_angle(void **state)
{
	(void)state;
	enum { N = 1100 };
	double phi = -12.5, contrast = 0.25, offset = 1.02, contrast_unc = 1e-3, offset_unc = 1e-4;
	double theta[XF_N_PHYS] = { 800.0, 0.2, 5.0, 0, 0, 0, 0 };
	xf_model_grid grid = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, N, 0.01, 0.01, 2e6 };
	double *full = malloc((size_t)N * N * sizeof *full);
	double *packed = malloc(xf_packed_size(N) * sizeof *packed);
	assert_non_null(full);
	assert_non_null(packed);
	assert_int_equal(xf_model_c2_full(&grid, theta, phi, contrast, offset, full), 0);
	for (size_t i = 0; i < N; i++)
		for (size_t j = i; j < N; j++)
			packed[xf_packed_index(N, i, j)] =
				full[i * N + j] + 0.003 * sin(0.37 * (double)(i * 31 + j * 17));
	free(full);
	xf_config cfg;
	xf_config_defaults(&cfg);
	double *c2[1] = { packed };
	xf_dataset ds = { 0 };
	ds.path = "sim.h5";
	ds.q = 0.01;
	ds.n_phi = 1;
	ds.phi_deg = &phi;
	ds.n_frames = N;
	ds.dt_s = 0.01;
	ds.c2 = c2;
	ds.n_points = xf_fitted_pairs(N);
	char *names[5] = { "D0", "alpha", "D_offset", "contrast", "offset" };
	double values[5] = { 800.0, 0.2, 5.0, contrast, offset };
	double unc[5] = { 2.0, 1e-3, 0.1, contrast_unc, offset_unc };
	int fixed[5] = { 0 };
	xf_nlsq_result res = { 0 };
	res.mode = XF_MODE_STATIC;
	res.scaling_mode = XF_SCALING_CONSTANT;
	res.n_params = 5;
	res.names = names;
	res.values = values;
	res.uncertainties = unc;
	res.is_fixed = fixed;
	res.n_phys = 3;
	res.n_phi = 1;
	res.phi_deg = &phi;
	res.contrast = &contrast;
	res.contrast_unc = &contrast_unc;
	res.offset = &offset;
	res.offset_unc = &offset_unc;
	res.status = XF_STATUS_CONVERGED;
	res.stop_reason = "ftol";
	res.sigma_rule = XF_SIGMA_RESIDUAL_VARIANCE;
	res.n_points = ds.n_points;
	res.reduced_chi_squared = 1.0;

	char dir[1200], path[1400];
	snprintf(dir, sizeof dir, "%s/large/plots", tmp_root);
	xf_error err = { 0 };
	if (xf_plot_nlsq(dir, &cfg, &ds, &res, &err) != 0)
		fail_msg("plot failed: %s", err.msg);
	unsigned w, h;
	long bytes;
	snprintf(path, sizeof path, "%s/c2_phi_000_-012.50deg.png", dir);
	png_size(path, &w, &h, &bytes);
	assert_int_equal(w, XF_PLOT_ANGLE_W);
	assert_int_equal(h, XF_PLOT_ANGLE_H);
	assert_true(bytes > 50000); /* three filled heatmaps, not an empty page */
	snprintf(path, sizeof path, "%s/overview.png", dir);
	png_size(path, &w, &h, &bytes);
	assert_int_equal(w, XF_PLOT_OVERVIEW_W);
	assert_int_equal(h, XF_PLOT_OVERVIEW_H);
	assert_true(bytes > 30000);
	/* the same plots from results.h5 */
	char rdir[1200];
	snprintf(rdir, sizeof rdir, "%s/large", tmp_root);
	assert_int_equal(xf_results_write_nlsq_h5(rdir, &cfg, &ds, &res, 1, &err), 0);
	snprintf(path, sizeof path, "%s/c2_phi_000_-012.50deg.png", dir);
	assert_int_equal(unlink(path), 0);
	if (xf_plot_result_dir(rdir, &err) != 0)
		fail_msg("redraw failed: %s", err.msg);
	png_size(path, &w, &h, &bytes);
	assert_true(bytes > 50000);
	free(packed);
	xf_config_free(&cfg);
}

static void draw_nothing(void *ctx)
{
	(void)ctx;
	pladv(0);
}

static void test_pl_file_errors(void **state)
{
	(void)state;
	char path[1400];
	xf_error err = { 0 };
	/* a folder that does not exist: an error code and the path, the process goes on */
	snprintf(path, sizeof path, "%s/no/such/folder/x.png", tmp_root);
	assert_int_equal(xf_pl_file(path, 200, 100, draw_nothing, NULL, &err), 1);
	assert_non_null(strstr(err.msg, path));
	/* and PLplot still works afterwards */
	xf_error_clear(&err);
	snprintf(path, sizeof path, "%s/blank.png", tmp_root);
	assert_int_equal(xf_pl_file(path, 200, 100, draw_nothing, NULL, &err), 0);
	unsigned w, h;
	long bytes;
	png_size(path, &w, &h, &bytes);
	assert_int_equal(w, 200);
	assert_int_equal(h, 100);
}

/* The overview with every lag curve coloured (23 angles, widest φ labels): its legend is
 * right of the lag axes, on the page, clear of the text and per-angle panels. */
typedef struct legend_case {
	const xf_plot_src *src;
	const xf_plot_cuts *cuts;
} legend_case;

static void draw_overview_and_boxes(void *p)
{
	legend_case *c = p;
	xf_plot_draw_overview(c->src, c->cuts);
	/* the recorded legend box in red, so a look at the PNG shows the record is where
	 * PLplot drew it */
	xf_plot_overview_boxes b = xf_plot_overview_layout();
	plvpor(0.0, 1.0, 0.0, 1.0);
	plwind(0.0, 1.0, 0.0, 1.0);
	plcol0(2);
	PLFLT x[5] = { b.legend.x0, b.legend.x1, b.legend.x1, b.legend.x0, b.legend.x0 };
	PLFLT y[5] = { b.legend.y0, b.legend.y0, b.legend.y1, b.legend.y1, b.legend.y0 };
	plline(5, x, y);
}

static int boxes_overlap(xf_plot_box a, xf_plot_box b)
{
	return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

static void test_overview_legend_clear(void **state)
{
	(void)state;
	enum { n_phi = 23, n = 60 };
	double phi[n_phi], contrast[n_phi], unc[n_phi], offset[n_phi];
	for (int a = 0; a < n_phi; a++) {
		phi[a] = -179.9 + a * (359.8 / (n_phi - 1));
		contrast[a] = 0.2 + 0.001 * a;
		offset[a] = 1.0;
		unc[a] = 0.001;
	}
	double cut_data[n_phi * (n - 2)], cut_fit[n_phi * (n - 2)];
	for (int a = 0; a < n_phi; a++)
		for (int k = 0; k < n - 2; k++) {
			cut_fit[a * (n - 2) + k] = 1.0 + contrast[a] * exp(-0.1 * (k + 1));
			cut_data[a * (n - 2) + k] = cut_fit[a * (n - 2) + k] + 1e-3 * ((k % 3) - 1);
		}
	xf_plot_cuts cuts = { n - 2, cut_data, cut_fit };
	char *names[] = { "D0", "alpha", "D_offset" };
	double values[] = { 1000.0, -0.5, 1.0 }, uncs[] = { 10.0, 0.01, 0.1 };
	xf_plot_src src = { .n_phi = n_phi,
			    .phi_deg = phi,
			    .n_frames = n,
			    .dt_s = 0.1,
			    .q = 0.0054,
			    .mode_name = "static",
			    .status = "converged",
			    .stop_reason = "ftol",
			    .quality_known = 1,
			    .quality = XF_QUALITY_GOOD,
			    .quality_reasons = "",
			    .chi_squared = 1.0,
			    .reduced_chi_squared = 1.0,
			    .residual_sd = NAN,
			    .n_points = 1000,
			    .n_params = 3,
			    .n_phys = 3,
			    .names = names,
			    .values = values,
			    .uncertainties = uncs,
			    .contrast = contrast,
			    .contrast_unc = unc,
			    .offset = offset,
			    .offset_unc = unc };
	legend_case c = { &src, &cuts };
	char path[1400];
	snprintf(path, sizeof path, "%s/overview_legend.png", tmp_root);
	xf_error err = { 0 };
	if (xf_pl_file(path, XF_PLOT_OVERVIEW_W, XF_PLOT_OVERVIEW_H, draw_overview_and_boxes, &c,
		       &err) != 0)
		fail_msg("overview: %s", err.msg);
	xf_plot_overview_boxes b = xf_plot_overview_layout();
	assert_true(b.legend.x1 > b.legend.x0 && b.legend.y1 > b.legend.y0);
	assert_true(b.legend.x0 >= b.lag_axes.x1); /* right of the axes: no curve under it */
	assert_true(b.legend.x0 >= 0.0 && b.legend.x1 <= 1.0);
	assert_true(b.legend.y0 >= 0.0 && b.legend.y1 <= 1.0);
	assert_false(boxes_overlap(b.legend, b.text));
	assert_false(boxes_overlap(b.legend, b.contrast));
	assert_false(boxes_overlap(b.legend, b.offset));
}

/* the encoded bytes of an image, read back from a memfd */
static unsigned char *png_bytes(const unsigned char *rgb, int w, int h, size_t *n)
{
	int fd = memfd_create("test-png", 0);
	assert_true(fd >= 0);
	assert_int_equal(xf_png_write_rgb(fd, rgb, w, h), 0);
	off_t size = lseek(fd, 0, SEEK_END);
	assert_true(size > 20);
	unsigned char *buf = malloc((size_t)size);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)size, 0), size);
	close(fd);
	*n = (size_t)size;
	return buf;
}

static void test_png_write(void **state)
{
	(void)state;
	enum { W = 97, H = 41 };
	unsigned char *rgb = malloc(W * H * 3);
	assert_non_null(rgb);
	for (int i = 0; i < W * H * 3; i++)
		rgb[i] = (unsigned char)(i % 3 == 0 ? (unsigned)i / 7
						    : ((unsigned)i * 2654435761u) >> 24);
	size_t n1, n2;
	unsigned char *a = png_bytes(rgb, W, H, &n1), *b = png_bytes(rgb, W, H, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(a, b, n1);
	static const unsigned char iend[12] = { 0,   0,	  0,	0,    'I',  'E',
						'N', 'D', 0xae, 0x42, 0x60, 0x82 };
	assert_memory_equal(a + n1 - 12, iend, 12);
	/* no chunk but IHDR, IDAT, IEND (no time, text or gamma that could differ) */
	for (size_t p = 8; p < n1;) {
		uint32_t len = (uint32_t)a[p] << 24 | (uint32_t)a[p + 1] << 16 |
			       (uint32_t)a[p + 2] << 8 | a[p + 3];
		assert_true(!memcmp(a + p + 4, "IHDR", 4) || !memcmp(a + p + 4, "IDAT", 4) ||
			    !memcmp(a + p + 4, "IEND", 4));
		p += 12 + len;
	}
	/* lossless: libpng reads back the same pixels */
	png_image img;
	memset(&img, 0, sizeof img);
	img.version = PNG_IMAGE_VERSION;
	assert_true(png_image_begin_read_from_memory(&img, a, n1));
	assert_int_equal(img.width, W);
	assert_int_equal(img.height, H);
	img.format = PNG_FORMAT_RGB;
	unsigned char *back = malloc(W * H * 3);
	assert_non_null(back);
	assert_true(png_image_finish_read(&img, NULL, back, 0, NULL));
	assert_memory_equal(back, rgb, W * H * 3);
	/* a full disk: an error with ENOSPC, not a crash nor a success, and not a word of
	 * libpng's on stderr ("libpng error: write failed" beside our one line) */
	int full = open("/dev/full", O_WRONLY);
	if (full >= 0) {
		char said[PATH_MAX];
		snprintf(said, sizeof said, "%s/png_stderr.txt", tmp_root);
		int capture = open(said, O_RDWR | O_CREAT | O_TRUNC, 0644);
		assert_true(capture >= 0);
		fflush(stderr);
		int saved = dup(2);
		assert_true(saved >= 0 && dup2(capture, 2) == 2);
		errno = 0;
		int rc = xf_png_write_rgb(full, rgb, W, H);
		int why = errno;
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		assert_int_equal(rc, -1);
		assert_int_equal(why, ENOSPC);
		assert_int_equal(lseek(capture, 0, SEEK_END), 0);
		close(capture);
		close(full);
	}
	free(back);
	free(a);
	free(b);
	free(rgb);
}

/* A page of ≤ 256 colours is a palette PNG that reads back the same pixels; a page of
 * more is brought to 256 (xf_png_quantise): the colours to keep stay whatever their
 * count, the most frequent stay, a rare one goes to its nearest kept colour, and the
 * same pixels give the same bytes (adr/0077). */
static void test_png_palette(void **state)
{
	(void)state;
	enum { W = 64, H = 40, N = W * H };
	unsigned char *rgb = malloc(N * 3), *back = malloc(N * 3);
	assert_non_null(rgb);
	assert_non_null(back);
	/* 300 colours: 0..299 (r = k, g = 2k mod 256, b = 7), colour k on 8 pixels, then
	 * the rest white; colours 250..299 on one pixel each */
	int k = 0;
	for (int c = 0; c < 300; c++)
		for (int r = 0; r < (c < 250 ? 8 : 1); r++, k++) {
			rgb[3 * k] = (unsigned char)c;
			rgb[3 * k + 1] = (unsigned char)(2 * c);
			rgb[3 * k + 2] = (unsigned char)(c >= 256 ? 9 : 7);
		}
	memset(rgb + 3 * k, 255, (size_t)(N - k) * 3);
	/* colour 299 (one pixel) to keep */
	unsigned char keep[1][3] = { { (unsigned char)299, (unsigned char)(2 * 299), 9 } };
	unsigned char *q = malloc(N * 3);
	assert_non_null(q);
	memcpy(q, rgb, N * 3);
	assert_int_equal(xf_png_quantise(q, W, H, (const unsigned char(*)[3])keep, 1), 1);
	unsigned char plte[3 * XF_PNG_PALETTE_N], *idx = malloc(N);
	assert_non_null(idx);
	int n = xf_png_palette(q, W, H, plte, idx);
	assert_true(n > 0 && n <= XF_PNG_PALETTE_N);
	/* white, the 8-pixel colours and the kept one are unchanged; the one-pixel colour
	 * 260 moved, to a colour near it */
	assert_memory_equal(q + 3 * (N - 1), rgb + 3 * (N - 1), 3);
	for (int p = 0; p < 250 * 8; p++)
		assert_memory_equal(q + 3 * p, rgb + 3 * p, 3);
	assert_memory_equal(q + 3 * (250 * 8 + 49), rgb + 3 * (250 * 8 + 49), 3); /* c 299 */
	const unsigned char *moved = q + 3 * (250 * 8 + 10), *was = rgb + 3 * (250 * 8 + 10);
	assert_memory_not_equal(moved, was, 3);
	int d = abs(moved[0] - was[0]) + abs(moved[1] - was[1]) + abs(moved[2] - was[2]);
	assert_true(d < 40);
	/* the quantised page: a palette PNG (colour type 3) that reads back the same pixels,
	 * the same bytes twice */
	size_t n1, n2;
	unsigned char *a = png_bytes(q, W, H, &n1), *b = png_bytes(q, W, H, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(a, b, n1);
	assert_int_equal(a[8 + 8 + 9], 3);
	png_image img;
	memset(&img, 0, sizeof img);
	img.version = PNG_IMAGE_VERSION;
	assert_true(png_image_begin_read_from_memory(&img, a, n1));
	img.format = PNG_FORMAT_RGB;
	assert_true(png_image_finish_read(&img, NULL, back, 0, NULL));
	assert_memory_equal(back, q, N * 3);
	/* ≤ 256 colours already: nothing to change */
	assert_int_equal(xf_png_quantise(q, W, H, NULL, 0), 0);
	free(a);
	free(b);
	free(idx);
	free(q);
	free(back);
	free(rgb);
}

int main(void)
{
	const char *tmp = getenv("XF_TMP");
	snprintf(tmp_root, sizeof tmp_root, "%s", tmp ? tmp : "/tmp/xf_test_plot");
	xf_error err = { 0 };
	if (xf_mkdir_p(tmp_root, &err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	xf_log_set_stderr(0, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_angle_names),    cmocka_unit_test(test_large_single_angle),
		cmocka_unit_test(test_pl_file_errors), cmocka_unit_test(test_overview_legend_clear),
		cmocka_unit_test(test_png_write),      cmocka_unit_test(test_png_palette),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
