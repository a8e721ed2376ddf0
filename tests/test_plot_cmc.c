/* test_plot_cmc.c — the CMC plots from a tiny CMC run through the API (static, 2 angles,
 * 2 shards of 2 short chains): every expected PNG exists with a valid signature and the
 * page size its layout gives, the trace/rank pages are bounded to the chosen shards
 * (shard 0 and an excluded one), and two drawings of the same result are byte-identical.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "plot/plot_cmc.h"
#include "plot/plot_internal.h"
#include "synth.h"
#include "xpcsfit/cmc.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/plot.h"
#include "fit_request.h"
#include "services/posterior.h"

static char tmp_root[1024];

/* the whole file, or NULL; its size in *n */
static unsigned char *slurp(const char *path, long *n)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	fseek(fp, 0, SEEK_END);
	*n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	unsigned char *buf = malloc((size_t)*n + 1);
	if (buf && fread(buf, 1, (size_t)*n, fp) != (size_t)*n) {
		free(buf);
		buf = NULL;
	}
	fclose(fp);
	return buf;
}

/* PNG signature and IHDR size */
static void png_check(const char *dir, const char *name, unsigned want_w, long min_bytes,
		      unsigned *h)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	char path[2048];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	long n = 0;
	unsigned char *b = slurp(path, &n);
	if (!b)
		fail_msg("missing %s", path);
	assert_true(n > 24);
	assert_memory_equal(b, sig, 8);
	assert_memory_equal(b + 12, "IHDR", 4);
	unsigned w = (unsigned)b[16] << 24 | (unsigned)b[17] << 16 | (unsigned)b[18] << 8 | b[19];
	*h = (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23];
	if (want_w)
		assert_int_equal(w, want_w);
	if (n < min_bytes)
		fail_msg("%s: %ld bytes, expected a drawn page (≥ %ld)", name, n, min_bytes);
	free(b);
}

static void same_bytes(const char *dir_a, const char *dir_b, const char *name)
{
	char pa[2048], pb[2048];
	snprintf(pa, sizeof pa, "%s/%s", dir_a, name);
	snprintf(pb, sizeof pb, "%s/%s", dir_b, name);
	long na = 0, nb = 0;
	unsigned char *a = slurp(pa, &na), *b = slurp(pb, &nb);
	assert_non_null(a);
	assert_non_null(b);
	if (na != nb || memcmp(a, b, (size_t)na) != 0)
		fail_msg("%s differs between two drawings", name);
	free(a);
	free(b);
}

static int file_exists(const char *dir, const char *name)
{
	char path[2048];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* The result's pages as `xpcsfit cmc` draws them: its estimate on the request's grid
 * (the posterior service's) and its appendix, at the default resolution. */
static int plot_pages(const char *dir, const xf_request *req, const xf_dataset *ds,
		      const xf_cmc_result *res, xf_error *err)
{
	xf_model_grid grid = xf_request_grid(req, ds->n_frames, ds->dt_s, ds->q);
	xf_estimate est;
	xf_cmc_appendix app;
	if (xf_posterior_estimate(res, &grid, NULL, &est, &app, err))
		return err->code;
	int rc = xf_plot_cmc_estimate(dir, ds, &est, &app, 0, err);
	xf_estimate_free(&est);
	xf_cmc_appendix_free(&app);
	return rc;
}

static void test_cmc_plots(void **state)
{
	(void)state;
	xf_model_grid g = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, 40, 0.1, 0.01, 2e6 };
	const double truth[7] = { 2000, 0.3, 50, 0, 0, 0, 0 };
	const double phi[2] = { 0, 90 }, con[2] = { 0.2, 0.25 }, off[2] = { 1.0, 1.02 };
	xf_dataset ds;
	assert_int_equal(xf_synth_dataset(&g, truth, 2, phi, con, off, 2e-3, 9, &ds), 0);
	const double start[7] = { 1800.0, 0.25, 40.0 }; /* static: the first 3 */
	xf_test_fit fc;
	xf_test_fit_init(&fc, XF_MODE_STATIC, start);
	fc.cmc.num_shards = 2;
	fc.cmc.num_warmup = 60;
	fc.cmc.num_samples = 50;
	fc.cmc.num_chains = 2;
	fc.cmc.max_tree_depth = 6;
	/* chains this short rarely pass R̂ < 1.1: keep every shard, exclude one below */
	fc.cmc.max_per_shard_rhat = 100.0;
	fc.cmc.max_divergence_rate = 1.0;
	fc.cmc.min_success_rate = 0.01;
	xf_nlsq_result nlsq;
	xf_error err = { 0 };
	assert_int_equal(xf_test_fit_run(&fc, &ds, 1, &nlsq, &err), 0);
	char shard_dir[1200];
	snprintf(shard_dir, sizeof shard_dir, "%s/shards", tmp_root);
	xf_cmc_result res;
	if (xf_test_posterior_run(&fc, &ds, &nlsq, 1, shard_dir, &res, &err) != 0)
		fail_msg("cmc failed: %s", err.msg);
	assert_int_equal(res.n_shards, 2);
	/* shard 1 as if its diagnostics had been bad: its pages must be drawn and it must
	 * be marked on the forest plot */
	res.shards[1].kept = 0;
	snprintf(res.shards[1].reason, sizeof res.shards[1].reason, "%s",
		 "max R-hat 1.2 > 1.1 (validation.max_per_shard_rhat)");

	char dir_a[1200], dir_b[1200];
	snprintf(dir_a, sizeof dir_a, "%s/a/plots", tmp_root);
	snprintf(dir_b, sizeof dir_b, "%s/b/plots", tmp_root);
	if (plot_pages(dir_a, &fc.req, &ds, &res, &err) != 0)
		fail_msg("plot failed: %s", err.msg);
	if (plot_pages(dir_b, &fc.req, &ds, &res, &err) != 0)
		fail_msg("plot failed: %s", err.msg);

	const char *pages[] = {
		"c2_phi_000_+000.00deg.png",
		"c2_phi_001_+090.00deg.png",
		"overview.png",
		"corner.png",
		"forest.png",
		"trace_shard000.png",
		"rank_shard000.png",
		"trace_shard001.png",
		"rank_shard001.png",
	};
	const unsigned widths[] = {
		XF_PLOT_ANGLE_W, XF_PLOT_ANGLE_W, XF_PLOT_OVERVIEW_W, 0,
		XF_PLOT_CMC_W,	 XF_PLOT_CMC_W,	  XF_PLOT_CMC_W,      XF_PLOT_CMC_W,
		XF_PLOT_CMC_W,
	};
	unsigned h;
	for (size_t k = 0; k < sizeof pages / sizeof pages[0]; k++) {
		png_check(dir_a, pages[k], widths[k], 15000, &h);
		same_bytes(dir_a, dir_b, pages[k]);
	}
	/* static, nothing fixed: 3 × 3 corner; trace pages hold 3 physical + σ + the
	 * scaling coefficients in 3 columns */
	png_check(dir_a, "corner.png", 0, 15000, &h);
	assert_true(h > 3 * 300);
	png_check(dir_a, "trace_shard000.png", XF_PLOT_CMC_W, 15000, &h);
	int panels = res.n_theta + 1, cols = xf_plot_cmc_cols(panels);
	assert_true(h >= (unsigned)(((panels + cols - 1) / cols) * XF_PLOT_CMC_TRACE_ROW));
	/* nothing else: the pages per shard are bounded */
	assert_false(file_exists(dir_a, "trace_shard002.png"));

	xf_cmc_result_free(&res);
	xf_nlsq_result_free(&nlsq);
	xf_synth_free(&ds);
}

/* Rank pages from synthetic chains: one chain shifted away from the others still
 * draws, and a stuck chain (all ties) does not break the ranking. */
static void test_rank_page_synthetic(void **state)
{
	(void)state;
	enum { NC = 3, ND = 200, NP = 2 };
	static double values[NP][NC][ND];
	for (int p = 0; p < NP; p++)
		for (int c = 0; c < NC; c++)
			for (int i = 0; i < ND; i++)
				values[p][c][i] = p == 1 && c == 2
							  ? 5.0 /* stuck */
							  : sin(0.7 * i + c) + (c == 1 ? 1.5 : 0.0);
	const char *names[NP] = { "D0", "alpha" };
	double rhat[NP] = { 1.3, NAN }, ess[NP] = { 40, NAN };
	xf_plot_chains c = {
		.shard = 7,
		.kept = 0,
		.reason = "test",
		.n_chains = NC,
		.n_draws = ND,
		.n_panels = NP,
		.values = &values[0][0][0],
		.ranked = &values[0][0][0],
		.names = names,
		.rhat = rhat,
		.ess = ess,
		.physical = 1,
		.rhat_max = 1.3,
	};
	char path[1200];
	xf_error err = { 0 };
	snprintf(path, sizeof path, "%s/rank_synthetic.png", tmp_root);
	assert_int_equal(xf_plot_cmc_rank(path, &c, &err), 0);
	snprintf(path, sizeof path, "%s/trace_synthetic.png", tmp_root);
	assert_int_equal(xf_plot_cmc_trace(path, &c, &err), 0);
	unsigned h;
	png_check(tmp_root, "rank_synthetic.png", XF_PLOT_CMC_W, 5000, &h);
	png_check(tmp_root, "trace_synthetic.png", XF_PLOT_CMC_W, 5000, &h);
}

int main(void)
{
	const char *t = getenv("XF_TMP");
	snprintf(tmp_root, sizeof tmp_root, "%s", t ? t : "/tmp/xf_test_plot_cmc");
	mkdir(tmp_root, 0755);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmc_plots),
		cmocka_unit_test(test_rank_page_synthetic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
