/* test_data_scale.c — the selection of a file of many q rings is n log n (issue 33 item 8,
 * adr/0073): simulated files of 300 and 1 200 rings (one angle each), loaded whole as
 * validate, nlsq --joint and batch load them (every ring, the file's ring table); the
 * work is xf_raw_visits(), the selection's count of map entries and search steps
 * visited, compared between the two files. Deterministic: a count, never a clock. The
 * scans it replaced visited every map per ring (n², and a pairwise count per ring, n³:
 * validate took 239 s on 3 000 rings); their count, kept for a raw file built without the
 * index, is checked to grow as n² so that the comparison can tell the two apart. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "cli/request_build.h"
#include "data/raw.h"
#include "data/select.h"
#include "xpcsfit/config.h"
#include "xpcsfit/dataset.h"

static char tmp_dir[1024];

static void ring_config(xf_config *cfg)
{
	xf_config_defaults(cfg);
	cfg->mode = XF_MODE_STATIC;
	cfg->has_q = 1;
	cfg->wavevector_q = 0.0054;
	cfg->has_dt = 1;
	cfg->dt_s = 0.01;
	cfg->end_frame = 6;
	cfg->values[0] = 1000;
	cfg->values[1] = -0.5;
	cfg->values[2] = 0;
	cfg->value_given[0] = cfg->value_given[1] = cfg->value_given[2] = 1;
}

/* Write n rings (q 0.002 + k 1e-5), then load them all and list the file's rings: the
 * selection's visits over both. */
static size_t visits_for(int n)
{
	char path[1200];
	const double phi[1] = { 0 };
	double *q = malloc(sizeof *q * (size_t)n);
	assert_non_null(q);
	for (int k = 0; k < n; k++)
		q[k] = 0.002 + 1e-5 * k;
	xf_config cfg;
	xf_error err = { 0 };
	ring_config(&cfg);
	snprintf(path, sizeof path, "%s/rings_%d.h5", tmp_dir, n);
	xf_sim_options opt = { path, XF_LAYOUT_APS_U, 1, phi, 6, 0.3, 1.0, 0.002, 1, 0, n, q };
	assert_int_equal(xf_cli_simulate_write(&cfg, &opt, &err), 0);
	free(q);
	xf_selection sel;
	xf_selection_from_config(&cfg, &sel);
	sel.q.pick = XF_Q_PICK_ALL;
	xf_dataset *rings = NULL;
	xf_ring_info *table = NULL;
	int n_rings = 0, n_table = 0;
	size_t before = xf_raw_visits();
	assert_int_equal(xf_dataset_load_rings(&sel, path, &rings, &n_rings, &err), 0);
	assert_int_equal(xf_dataset_file_rings(&sel, path, &table, &n_table, &err), 0);
	size_t work = xf_raw_visits() - before;
	assert_int_equal(n_rings, n);
	assert_int_equal(n_table, n);
	for (int k = 0; k < n; k++) {
		assert_int_equal(rings[k].n_phi, 1);
		assert_int_equal(rings[k].n_q_rings, n);
		assert_true(fabs(rings[k].q - (0.002 + 1e-5 * k)) < 1e-12);
		assert_int_equal(table[k].n_angles, 1);
	}
	xf_dataset_free_rings(rings, n_rings);
	free(table);
	xf_config_free(&cfg);
	return work;
}

static void test_rings_n_log_n(void **state)
{
	(void)state;
	size_t small = visits_for(300), big = visits_for(1200);
	double ratio = (double)big / (double)small;
	printf("selection work: %zu visits for 300 rings, %zu for 1 200 (x%.2f; n log n: "
	       "x%.2f, n²: x16)\n",
	       small, big, ratio, 4.0 * log(1200.0) / log(300.0));
	/* n log n between the two is x4.97; n² x16: anything above x6 is not n log n */
	assert_true(ratio <= 6.0);
}

/* The count tells n² apart: a raw file without the index (built by hand, as before the
 * index) costs the old scans, n² for the ring list. */
static void test_scans_counted(void **state)
{
	(void)state;
	size_t work[2];
	int sizes[2] = { 100, 400 };
	for (int s = 0; s < 2; s++) {
		int m = sizes[s];
		xf_raw_file raw;
		memset(&raw, 0, sizeof raw);
		raw.file = -1;
		raw.file_name = "by hand";
		raw.n_maps = m;
		raw.maps = calloc((size_t)m, sizeof *raw.maps);
		assert_non_null(raw.maps);
		for (int k = 0; k < m; k++) {
			raw.maps[k].q = 0.002 + 1e-5 * k;
			raw.maps[k].map_number = k + 1;
		}
		xf_ring_info *t = calloc((size_t)m + 1, sizeof *t);
		assert_non_null(t);
		size_t before = xf_raw_visits();
		assert_int_equal(xf_select_ring_table(&raw, t), m);
		work[s] = xf_raw_visits() - before;
		free(t);
		free(raw.maps);
	}
	assert_true((double)work[1] / (double)work[0] >= 12.0);
}

int main(void)
{
	const char *t = getenv("XF_TMP");
	snprintf(tmp_dir, sizeof tmp_dir, "%s", t ? t : "/tmp/xf_test_data_scale");
	mkdir(tmp_dir, 0755);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rings_n_log_n),
		cmocka_unit_test(test_scans_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
