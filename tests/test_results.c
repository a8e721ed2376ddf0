/* test_results.c — the NLSQ result directory (spec/cli.md "Result directory"): a small
 * dataset and result built by hand are written, then read back with the HDF5 C API and
 * cJSON: values, shapes, units/description attributes, chunking and filters, NaN
 * placement of residuals, bitwise-equal JSON numbers with NaN as null, byte-identical
 * results.h5 on a second write, atomic writes (no temporary left, clear errors). */
#include <dirent.h>
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

#include <cjson/cJSON.h>
#include <hdf5.h>

#include "io/io_internal.h"
#include "xpcsfit/model.h"
#include "xpcsfit/plot.h"
#include "util/files.h"
#include "xpcsfit/results_config.h"
#include "xpcsfit/results.h"
#include "cli/request_build.h"
#include "services/nlsq.h"

#define N_PHI	 3
#define N_FRAMES 40

/* ---------- fixture: dataset + result built by hand ---------- */

typedef struct fixture {
	xf_config cfg;
	xf_dataset ds;
	xf_nlsq_result res;
	double phi[N_PHI];
	double *c2_store[N_PHI];
	char *names[16];
	double values[16], unc[16], cov[16 * 16];
	int fixed[16];
	double contrast[N_PHI], contrast_unc[N_PHI], offset[N_PHI], offset_unc[N_PHI];
	char *at_bounds[1];
} fixture;

static char tmp_root[1024];

/* deterministic noise in [-1, 1) from (angle, i, j): no pattern visible in plots */
static double noise(int a, int i, int j)
{
	uint64_t x = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ (uint64_t)i * 0xBF58476D1CE4E5B9ull ^
		     (uint64_t)j * 0x94D049BB133111EBull;
	x ^= x >> 31;
	x *= 0xD6E8FEB86659FD93ull;
	x ^= x >> 32;
	return (double)(x >> 11) / (double)(1ull << 52) - 1.0;
}

static void make_dir(const char *sub, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", tmp_root, sub);
	xf_error err = { 0 };
	assert_int_equal(xf_mkdir_p(out, &err), 0);
}

static void build_fixture(fixture *f, xf_mode mode)
{
	memset(f, 0, sizeof *f);
	xf_config_defaults(&f->cfg);
	f->cfg.mode = mode;
	f->cfg.gap_A = 2e6;
	f->cfg.shear_model = XF_SHEAR_HOMODYNE;
	static const double phi[N_PHI] = { -30.0, 0.0, 45.0 };
	/* values with long decimal expansions: the JSON must keep every bit */
	double theta[XF_N_PHYS] = { 1234.5678901234567, 0.1 + 0.2, 10.0 / 3.0, 0.01 / 3.0, -0.25,
				    1e-3 / 7.0,		2.0 / 3.0 };
	int n_phys = xf_mode_n_phys(mode);
	f->ds.path = "/data/sample_0001.h5";
	f->ds.layout = XF_LAYOUT_APS_U;
	f->ds.q = 0.01;
	f->ds.n_q_rings = 1;
	f->ds.n_phi = N_PHI;
	f->ds.phi_deg = f->phi;
	f->ds.n_frames = N_FRAMES;
	f->ds.first_frame = 1;
	f->ds.dt_s = 0.1;
	snprintf(f->ds.dt_source, sizeof f->ds.dt_source, "config");
	f->ds.n_points = (size_t)N_PHI * xf_fitted_pairs(N_FRAMES);
	f->ds.c2 = f->c2_store;
	xf_model_grid grid = { mode, XF_SHEAR_HOMODYNE, N_FRAMES, 0.1, 0.01, 2e6 };
	double *full = malloc(N_FRAMES * N_FRAMES * sizeof *full);
	assert_non_null(full);
	for (int a = 0; a < N_PHI; a++) {
		f->phi[a] = phi[a];
		f->contrast[a] = 0.3 + 0.01 * a;
		f->offset[a] = 1.0 + 0.001 * a;
		f->contrast_unc[a] = 1e-3 * (a + 1);
		f->offset_unc[a] = 2e-4 * (a + 1);
		assert_int_equal(
			xf_model_c2_full(&grid, theta, phi[a], f->contrast[a], f->offset[a], full),
			0);
		f->c2_store[a] = malloc(xf_packed_size(N_FRAMES) * sizeof(double));
		assert_non_null(f->c2_store[a]);
		for (int i = 0; i < N_FRAMES; i++)
			for (int j = i; j < N_FRAMES; j++)
				f->c2_store[a][xf_packed_index(N_FRAMES, i, j)] =
					full[i * N_FRAMES + j] + 0.002 * noise(a, i, j);
	}
	free(full);

	xf_nlsq_result *r = &f->res;
	r->mode = mode;
	r->scaling_mode = XF_SCALING_INDIVIDUAL;
	r->n_phys = n_phys;
	r->n_params = n_phys + 2 * N_PHI;
	static char sbuf[2 * N_PHI][32];
	for (int k = 0; k < n_phys; k++) {
		f->names[k] = (char *)xf_param_names[k];
		f->values[k] = theta[k];
		f->unc[k] = fabs(theta[k]) * 1e-3 + 1.0 / 3.0 * 1e-4;
	}
	for (int a = 0; a < N_PHI; a++) {
		snprintf(sbuf[a], 32, "contrast_%03d", a);
		snprintf(sbuf[N_PHI + a], 32, "offset_%03d", a);
		f->names[n_phys + a] = sbuf[a];
		f->names[n_phys + N_PHI + a] = sbuf[N_PHI + a];
		f->values[n_phys + a] = f->contrast[a];
		f->values[n_phys + N_PHI + a] = f->offset[a];
		f->unc[n_phys + a] = f->contrast_unc[a];
		f->unc[n_phys + N_PHI + a] = f->offset_unc[a];
	}
	/* D_offset held fixed: NaN uncertainty, NaN covariance row/column */
	f->fixed[XF_P_D_OFFSET] = 1;
	f->unc[XF_P_D_OFFSET] = NAN;
	int n = r->n_params;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			f->cov[i * n + j] = (f->fixed[i] || f->fixed[j])
						    ? NAN
						    : (i == j ? f->unc[i] * f->unc[i]
							      : 1e-9 * (i + 1) * (j + 1) / 7.0);
	r->names = f->names;
	r->values = f->values;
	r->uncertainties = f->unc;
	r->is_fixed = f->fixed;
	r->covariance = f->cov;
	r->n_phi = N_PHI;
	r->phi_deg = f->phi;
	r->contrast = f->contrast;
	r->contrast_unc = f->contrast_unc;
	r->offset = f->offset;
	r->offset_unc = f->offset_unc;
	r->chi_squared = 12345.678901234567;
	r->n_points = f->ds.n_points;
	r->n_free = n - 1;
	r->reduced_chi_squared = r->chi_squared / (double)(r->n_points - (size_t)r->n_free);
	r->residual_sd = sqrt(r->reduced_chi_squared);
	r->iterations = 14;
	r->cov_rank = n - 1;
	r->status = XF_STATUS_CONVERGED;
	r->stop_reason = "xtol";
	r->sigma_rule = XF_SIGMA_RESIDUAL_VARIANCE;
	r->sigma = 1.0;
	f->at_bounds[0] = "alpha";
	r->n_at_bounds = 1;
	r->at_bounds = f->at_bounds;
	r->n_starts_run = 1;
	r->time_load_s = 0.125;
	r->time_fit_s = 2.5;
	r->time_total_s = 2.75;
}

static void free_fixture(fixture *f)
{
	for (int a = 0; a < N_PHI; a++)
		free(f->c2_store[a]);
	xf_config_free(&f->cfg);
}

/* ---------- small readers ---------- */

static char *read_text(const char *path)
{
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static char *attr_string(hid_t obj, const char *name)
{
	hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
	assert_true(a >= 0);
	hid_t t = H5Aget_type(a);
	assert_int_equal(H5Tget_class(t), H5T_STRING);
	size_t len = H5Tget_size(t);
	char *s = calloc(len + 1, 1);
	hid_t mt = H5Tcopy(H5T_C_S1);
	H5Tset_size(mt, len + 1);
	H5Tset_cset(mt, H5Tget_cset(t));
	assert_true(H5Aread(a, mt, s) >= 0);
	H5Tclose(mt);
	H5Tclose(t);
	H5Aclose(a);
	return s;
}

static double *read_ds(hid_t f, const char *name, int *rank, hsize_t *dims)
{
	hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
	if (d < 0)
		fail_msg("missing dataset %s", name);
	hid_t s = H5Dget_space(d);
	*rank = H5Sget_simple_extent_ndims(s);
	H5Sget_simple_extent_dims(s, dims, NULL);
	hssize_t n = H5Sget_simple_extent_npoints(s);
	double *v = malloc((size_t)n * sizeof *v);
	assert_true(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
	/* every dataset documents itself */
	if (H5Aexists(d, "units") <= 0 || H5Aexists(d, "description") <= 0)
		fail_msg("%s lacks a units or description attribute", name);
	char *desc = attr_string(d, "description");
	assert_true(strlen(desc) > 5);
	free(desc);
	H5Sclose(s);
	H5Dclose(d);
	return v;
}

static double scalar(hid_t f, const char *name)
{
	int rank;
	hsize_t dims[4];
	double *v = read_ds(f, name, &rank, dims);
	assert_int_equal(rank, 0);
	double x = v[0];
	free(v);
	return x;
}

static int count_tmp_files(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".tmp."))
			n++;
	closedir(d);
	return n;
}

static void assert_png(const char *path)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	unsigned char head[8] = { 0 };
	FILE *fp = fopen(path, "rb");
	if (!fp)
		fail_msg("missing plot %s", path);
	assert_int_equal(fread(head, 1, 8, fp), 8);
	fclose(fp);
	assert_memory_equal(head, sig, 8);
	if (file_size(path) < 20000)
		fail_msg("plot %s is suspiciously small (%ld bytes)", path, file_size(path));
}

/* The fixture's folder as the command line writes it: the estimate on the request's grid
 * (the NLSQ service's) and the appendix. */
static int write_nlsq(const char *dir, fixture *f, const xf_output_options *opt, xf_error *err)
{
	xf_request req;
	xf_estimate est;
	xf_nlsq_appendix app;
	xf_request_from_config(&f->cfg, &req);
	if (xf_nlsq_estimate(&f->res, &req, &f->ds, NULL, &est, err))
		return err->code;
	xf_nlsq_appendix_of(&f->res, &app);
	int rc = xf_results_write_nlsq(dir, &f->cfg, &f->ds, &est, &app, opt, err);
	xf_estimate_free(&est);
	return rc;
}

static void write_all(fixture *f, const char *dir, int surfaces, int plots)
{
	xf_output_options opt = { surfaces, plots, 1, NULL, NULL };
	xf_error err = { 0 };
	int rc = write_nlsq(dir, f, &opt, &err);
	if (rc != 0)
		fail_msg("write failed: %s", err.msg);
}

/* ---------- tests ---------- */

static void test_h5_contents(void **state)
{
	(void)state;
	fixture f;
	build_fixture(&f, XF_MODE_STATIC);
	char dir[1200], path[1400];
	make_dir("h5", dir, sizeof dir);
	write_all(&f, dir, 1, 0);
	snprintf(path, sizeof path, "%s/results.h5", dir);
	hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(file >= 0);

	int rank;
	hsize_t dims[4];
	double *v = read_ds(file, "/data/phi_deg", &rank, dims);
	assert_int_equal(rank, 1);
	assert_int_equal(dims[0], N_PHI);
	assert_memory_equal(v, f.phi, sizeof f.phi);
	free(v);
	v = read_ds(file, "/data/t", &rank, dims);
	assert_int_equal(dims[0], N_FRAMES);
	for (int k = 0; k < N_FRAMES; k++)
		assert_true(v[k] == k * 0.1);
	free(v);
	assert_true(scalar(file, "/data/q") == 0.01);

	/* parameter names as variable-length strings (netCDF reads them, adr/0060) in
	 * canonical order */
	hid_t d = H5Dopen2(file, "/nlsq/parameter_names", H5P_DEFAULT);
	hid_t t = H5Dget_type(d);
	assert_int_equal(H5Tget_class(t), H5T_STRING);
	assert_true(H5Tis_variable_str(t) > 0);
	char **names = calloc((size_t)f.res.n_params, sizeof *names);
	assert_true(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, names) >= 0);
	for (int k = 0; k < f.res.n_params; k++)
		assert_string_equal(names[k], f.names[k]);
	hid_t sp = H5Dget_space(d);
	H5Dvlen_reclaim(t, sp, H5P_DEFAULT, names);
	H5Sclose(sp);
	free(names);
	H5Tclose(t);
	H5Dclose(d);

	v = read_ds(file, "/nlsq/values", &rank, dims);
	assert_int_equal(dims[0], f.res.n_params);
	assert_memory_equal(v, f.values, (size_t)f.res.n_params * sizeof(double));
	free(v);
	v = read_ds(file, "/nlsq/uncertainties", &rank, dims);
	assert_true(isnan(v[XF_P_D_OFFSET]));
	assert_true(v[0] == f.unc[0]);
	free(v);
	v = read_ds(file, "/nlsq/covariance", &rank, dims);
	assert_int_equal(rank, 2);
	assert_int_equal(dims[0], f.res.n_params);
	assert_int_equal(dims[1], f.res.n_params);
	assert_true(v[1 * f.res.n_params + 0] == f.cov[1 * f.res.n_params + 0]);
	assert_true(isnan(v[XF_P_D_OFFSET * f.res.n_params + 1]));
	free(v);
	const char *per[4] = { "/nlsq/per_angle_contrast", "/nlsq/per_angle_offset",
			       "/nlsq/per_angle_contrast_uncertainty",
			       "/nlsq/per_angle_offset_uncertainty" };
	const double *want[4] = { f.contrast, f.offset, f.contrast_unc, f.offset_unc };
	for (int k = 0; k < 4; k++) {
		v = read_ds(file, per[k], &rank, dims);
		assert_int_equal(dims[0], N_PHI);
		assert_memory_equal(v, want[k], N_PHI * sizeof(double));
		free(v);
	}
	assert_true(scalar(file, "/nlsq/chi_squared") == f.res.chi_squared);
	assert_true(scalar(file, "/nlsq/reduced_chi_squared") == f.res.reduced_chi_squared);
	assert_true(scalar(file, "/nlsq/n_points") == (double)f.res.n_points);
	assert_true(scalar(file, "/nlsq/n_free_parameters") == f.res.n_free);
	assert_true(scalar(file, "/nlsq/iterations") == 14);
	hid_t g = H5Gopen2(file, "/nlsq", H5P_DEFAULT);
	char *s = attr_string(g, "status");
	assert_string_equal(s, "converged");
	free(s);
	s = attr_string(g, "stop_reason");
	assert_string_equal(s, "xtol");
	free(s);
	H5Gclose(g);

	/* surfaces: float32 (n_phi, N, N), chunked per angle, shuffle + deflate */
	const char *surf[3] = { "/data/c2", "/nlsq/c2_fit", "/nlsq/residuals" };
	double *sv[3];
	for (int k = 0; k < 3; k++) {
		d = H5Dopen2(file, surf[k], H5P_DEFAULT);
		t = H5Dget_type(d);
		assert_int_equal(H5Tget_class(t), H5T_FLOAT);
		assert_int_equal(H5Tget_size(t), 4);
		H5Tclose(t);
		hid_t dcpl = H5Dget_create_plist(d);
		hsize_t chunk[3];
		assert_int_equal(H5Pget_chunk(dcpl, 3, chunk), 3);
		assert_int_equal(chunk[0], 1);
		assert_int_equal(chunk[1], N_FRAMES);
		assert_int_equal(chunk[2], N_FRAMES);
		int nf = H5Pget_nfilters(dcpl);
		int has_shuffle = 0, has_deflate = 0;
		for (int i = 0; i < nf; i++) {
			unsigned flags, cd[8];
			size_t ncd = 8;
			H5Z_filter_t id =
				H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, 0, NULL, NULL);
			has_shuffle |= id == H5Z_FILTER_SHUFFLE;
			if (id == H5Z_FILTER_DEFLATE) {
				has_deflate = 1;
				assert_int_equal(cd[0], 1); /* deflate level 1 (results_h5.c) */
			}
		}
		assert_true(has_shuffle && has_deflate);
		H5Pclose(dcpl);
		H5Dclose(d);
		sv[k] = read_ds(file, surf[k], &rank, dims);
		assert_int_equal(rank, 3);
		assert_int_equal(dims[0], N_PHI);
		assert_int_equal(dims[1], N_FRAMES);
		assert_int_equal(dims[2], N_FRAMES);
	}
	/* data = the packed triangle (both halves); fit = the model; residual = data − fit
	 * with NaN exactly at row 0, column 0 and the diagonal */
	xf_model_grid grid = { XF_MODE_STATIC, XF_SHEAR_HOMODYNE, N_FRAMES, 0.1, 0.01, 2e6 };
	double *model = malloc(N_FRAMES * N_FRAMES * sizeof *model);
	for (int a = 0; a < N_PHI; a++) {
		assert_int_equal(xf_model_c2_full(&grid, f.values, f.phi[a], f.contrast[a],
						  f.offset[a], model),
				 0);
		for (int i = 0; i < N_FRAMES; i++)
			for (int j = 0; j < N_FRAMES; j++) {
				size_t k = ((size_t)a * N_FRAMES + i) * N_FRAMES + j;
				double dat = f.c2_store[a][xf_packed_index(N_FRAMES, i < j ? i : j,
									   i < j ? j : i)];
				assert_true(sv[0][k] == (double)(float)dat);
				assert_true(sv[1][k] == (double)(float)model[i * N_FRAMES + j]);
				if (i == 0 || j == 0 || i == j)
					assert_true(isnan(sv[2][k]));
				else
					assert_true(sv[2][k] ==
						    (double)(float)(dat - model[i * N_FRAMES + j]));
			}
	}
	free(model);
	for (int k = 0; k < 3; k++)
		free(sv[k]);
	H5Fclose(file);
	assert_int_equal(count_tmp_files(dir), 0);
	free_fixture(&f);
}

static void test_h5_laminar_names_and_units(void **state)
{
	(void)state;
	fixture f;
	build_fixture(&f, XF_MODE_LAMINAR);
	char dir[1200], path[1400];
	make_dir("laminar", dir, sizeof dir);
	xf_error err = { 0 };
	assert_int_equal(xf_results_write_nlsq_h5(dir, &f.cfg, &f.ds, &f.res, 1, &err), 0);
	snprintf(path, sizeof path, "%s/results.h5", dir);
	hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(file >= 0);
	hid_t d = H5Dopen2(file, "/data/t", H5P_DEFAULT);
	char *u = attr_string(d, "units");
	assert_string_equal(u, "s");
	free(u);
	H5Dclose(d);
	d = H5Dopen2(file, "/data/phi_deg", H5P_DEFAULT);
	u = attr_string(d, "units");
	assert_string_equal(u, "deg");
	free(u);
	H5Dclose(d);
	d = H5Dopen2(file, "/nlsq/parameter_names", H5P_DEFAULT);
	hid_t s = H5Dget_space(d);
	assert_int_equal(H5Sget_simple_extent_npoints(s), 7 + 2 * N_PHI);
	H5Sclose(s);
	H5Dclose(d);
	hid_t g = H5Gopen2(file, "/nlsq", H5P_DEFAULT);
	u = attr_string(g, "analysis_mode");
	assert_string_equal(u, "laminar_flow");
	free(u);
	H5Gclose(g);
	H5Fclose(file);
	free_fixture(&f);
}

static void test_h5_reproducible(void **state)
{
	(void)state;
	fixture f;
	build_fixture(&f, XF_MODE_LAMINAR);
	char d1[1200], d2[1200], p1[1400], p2[1400];
	make_dir("repro1", d1, sizeof d1);
	make_dir("repro2", d2, sizeof d2);
	xf_error err = { 0 };
	assert_int_equal(xf_results_write_nlsq_h5(d1, &f.cfg, &f.ds, &f.res, 1, &err), 0);
	sleep(2);		 /* object times, were they tracked, would differ now */
	f.res.time_fit_s = 99.0; /* timings never enter results.h5 */
	assert_int_equal(xf_results_write_nlsq_h5(d2, &f.cfg, &f.ds, &f.res, 1, &err), 0);
	snprintf(p1, sizeof p1, "%s/results.h5", d1);
	snprintf(p2, sizeof p2, "%s/results.h5", d2);
	long n1 = file_size(p1), n2 = file_size(p2);
	assert_true(n1 > 1000);
	assert_int_equal(n1, n2);
	char *a = read_text(p1), *b = read_text(p2);
	assert_memory_equal(a, b, (size_t)n1);
	free(a);
	free(b);
	free_fixture(&f);
}

static double json_num(const cJSON *obj, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
	if (!cJSON_IsNumber(it))
		fail_msg("JSON key %s is not a number", key);
	return it->valuedouble;
}

static cJSON *load_json(const char *dir)
{
	char path[1400];
	snprintf(path, sizeof path, "%s/parameters.json", dir);
	char *text = read_text(path);
	cJSON *root = cJSON_Parse(text);
	free(text);
	assert_non_null(root);
	return root;
}

static void test_json(void **state)
{
	(void)state;
	fixture f;
	build_fixture(&f, XF_MODE_LAMINAR);
	char dir[1200];
	make_dir("json", dir, sizeof dir);
	xf_error err = { 0 };
	assert_int_equal(xf_results_write_nlsq_json(dir, &f.cfg, &f.ds, &f.res, &err), 0);
	cJSON *root = load_json(dir);
	assert_string_equal(cJSON_GetObjectItem(root, "method")->valuestring, "nlsq");
	assert_string_equal(cJSON_GetObjectItem(root, "analysis_mode")->valuestring,
			    "laminar_flow");
	assert_string_equal(cJSON_GetObjectItem(root, "status")->valuestring, "converged");
	assert_string_equal(cJSON_GetObjectItem(root, "convergence_status")->valuestring,
			    "converged");
	assert_string_equal(cJSON_GetObjectItem(root, "sigma_rule")->valuestring,
			    "residual_variance");
	assert_string_equal(cJSON_GetObjectItem(root, "stop_reason")->valuestring, "xtol");
	assert_string_equal(cJSON_GetObjectItem(root, "per_angle_mode")->valuestring, "individual");
	/* bitwise equal: the numbers are printed round-trip exact */
	assert_true(json_num(root, "chi_squared") == f.res.chi_squared);
	assert_true(json_num(root, "reduced_chi_squared") == f.res.reduced_chi_squared);
	assert_true(json_num(root, "residual_sd") == f.res.residual_sd);
	assert_true(json_num(root, "n_points") == (double)f.res.n_points);
	assert_true(json_num(root, "n_free_parameters") == f.res.n_free);
	assert_true(json_num(root, "iterations") == 14);
	cJSON *at = cJSON_GetObjectItem(root, "parameters_at_bounds");
	assert_int_equal(cJSON_GetArraySize(at), 1);
	assert_string_equal(cJSON_GetArrayItem(at, 0)->valuestring, "alpha");

	cJSON *params = cJSON_GetObjectItem(root, "parameters");
	assert_int_equal(cJSON_GetArraySize(params), 7 + 2);
	for (int k = 0; k < 7; k++) {
		cJSON *p = cJSON_GetObjectItem(params, xf_param_names[k]);
		assert_non_null(p);
		double v = json_num(p, "value");
		assert_memory_equal(&v, &f.values[k], sizeof v);
		cJSON *u = cJSON_GetObjectItem(p, "uncertainty");
		cJSON *fx = cJSON_GetObjectItem(p, "fixed");
		if (k == XF_P_D_OFFSET) {
			assert_true(cJSON_IsNull(u)); /* NaN -> null */
			assert_true(cJSON_IsTrue(fx));
		} else {
			assert_true(u->valuedouble == f.unc[k]);
			assert_null(fx);
		}
	}
	/* homodyne's scalars: mean over angles, RMS of the per-angle uncertainties */
	double mean = (f.contrast[0] + f.contrast[1] + f.contrast[2]) / 3.0;
	double rms = sqrt((f.contrast_unc[0] * f.contrast_unc[0] +
			   f.contrast_unc[1] * f.contrast_unc[1] +
			   f.contrast_unc[2] * f.contrast_unc[2]) /
			  3.0);
	cJSON *c = cJSON_GetObjectItem(params, "contrast");
	assert_true(fabs(json_num(c, "value") - mean) <= 1e-15);
	assert_true(fabs(json_num(c, "uncertainty") - rms) <= 1e-17);
	assert_non_null(cJSON_GetObjectItem(params, "offset"));

	cJSON *pa = cJSON_GetObjectItem(root, "per_angle");
	const char *keys[5] = { "phi_deg", "contrast", "contrast_uncertainty", "offset",
				"offset_uncertainty" };
	const double *want[5] = { f.phi, f.contrast, f.contrast_unc, f.offset, f.offset_unc };
	for (int k = 0; k < 5; k++) {
		cJSON *arr = cJSON_GetObjectItem(pa, keys[k]);
		assert_int_equal(cJSON_GetArraySize(arr), N_PHI);
		for (int a = 0; a < N_PHI; a++)
			assert_true(cJSON_GetArrayItem(arr, a)->valuedouble == want[k][a]);
	}
	cJSON *cov = cJSON_GetObjectItem(root, "covariance");
	cJSON *cn = cJSON_GetObjectItem(cov, "names");
	cJSON *cm = cJSON_GetObjectItem(cov, "matrix");
	int n = f.res.n_params;
	assert_int_equal(cJSON_GetArraySize(cn), n);
	assert_int_equal(cJSON_GetArraySize(cm), n);
	for (int i = 0; i < n; i++) {
		assert_string_equal(cJSON_GetArrayItem(cn, i)->valuestring, f.names[i]);
		cJSON *row = cJSON_GetArrayItem(cm, i);
		for (int j = 0; j < n; j++) {
			cJSON *x = cJSON_GetArrayItem(row, j);
			if (isnan(f.cov[i * n + j]))
				assert_true(cJSON_IsNull(x));
			else
				assert_true(x->valuedouble == f.cov[i * n + j]);
		}
	}
	cJSON *tm = cJSON_GetObjectItem(root, "timing_s");
	assert_true(json_num(tm, "load") == 0.125);
	assert_true(json_num(tm, "fit") == 2.5);
	assert_true(json_num(tm, "total") == 2.75);
	cJSON *data = cJSON_GetObjectItem(root, "data");
	assert_string_equal(cJSON_GetObjectItem(data, "file")->valuestring, f.ds.path);
	assert_string_equal(cJSON_GetObjectItem(data, "layout")->valuestring, "aps-u");
	assert_true(json_num(data, "q") == 0.01);
	assert_true(json_num(data, "n_phi") == N_PHI);
	assert_true(json_num(data, "n_frames") == N_FRAMES);
	assert_true(json_num(data, "dt_s") == 0.1);
	cJSON_Delete(root);
	free_fixture(&f);
}

static void test_json_sigma_given_and_failed(void **state)
{
	(void)state;
	fixture f;
	build_fixture(&f, XF_MODE_STATIC);
	f.res.sigma_rule = XF_SIGMA_GIVEN;
	f.res.residual_sd = NAN;
	f.res.status = XF_STATUS_FAILED;
	f.res.stop_reason = "non_finite";
	f.res.chi_squared = INFINITY;
	char dir[1200];
	make_dir("json_failed", dir, sizeof dir);
	xf_error err = { 0 };
	assert_int_equal(xf_results_write_nlsq_json(dir, &f.cfg, &f.ds, &f.res, &err), 0);
	cJSON *root = load_json(dir);
	assert_null(cJSON_GetObjectItem(root, "residual_sd")); /* only when sigma not given */
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(root, "chi_squared"))); /* Inf -> null */
	assert_string_equal(cJSON_GetObjectItem(root, "convergence_status")->valuestring, "failed");
	cJSON_Delete(root);
	f.res.status = XF_STATUS_MAX_ITERATIONS;
	assert_int_equal(xf_results_write_nlsq_json(dir, &f.cfg, &f.ds, &f.res, &err), 0);
	root = load_json(dir);
	assert_string_equal(cJSON_GetObjectItem(root, "convergence_status")->valuestring,
			    "max_iter");
	cJSON_Delete(root);
	free_fixture(&f);
}

static void test_format_double_round_trip(void **state)
{
	(void)state;
	char buf[32];
	xf_io_format_double(0.1, buf, sizeof buf);
	assert_string_equal(buf, "0.1"); /* shortest form when it is exact */
	xf_io_format_double(0.1 + 0.2, buf, sizeof buf);
	assert_string_equal(buf, "0.30000000000000004");
	xf_io_format_double(NAN, buf, sizeof buf);
	assert_string_equal(buf, "null");
	xf_io_format_double(-INFINITY, buf, sizeof buf);
	assert_string_equal(buf, "null");
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (int k = 0; k < 100000; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double d;
		memcpy(&d, &x, sizeof d);
		if (!isfinite(d))
			continue;
		xf_io_format_double(d, buf, sizeof buf);
		double back = strtod(buf, NULL);
		if (memcmp(&back, &d, sizeof d) != 0)
			fail_msg("%.17g printed as %s", d, buf);
	}
}

static void test_full_directory_and_failed_status(void **state)
{
	(void)state;
	fixture f;
	build_fixture(&f, XF_MODE_STATIC);
	f.res.status = XF_STATUS_FAILED;
	f.res.stop_reason = "singular";
	char dir[1200], path[1400];
	snprintf(dir, sizeof dir, "%s/full/a/b/nlsq", tmp_root); /* parents are created */
	xf_warn("a warning that must reach run.log");
	write_all(&f, dir, 1, 1);
	const char *files[] = { "results.h5", "parameters.json", "run.log", "plots/overview.png" };
	for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
		snprintf(path, sizeof path, "%s/%s", dir, files[k]);
		if (file_size(path) <= 0)
			fail_msg("missing %s", path);
	}
	for (int a = 0; a < N_PHI; a++) {
		char name[64];
		xf_plot_angle_name(name, sizeof name, a, f.phi[a]);
		snprintf(path, sizeof path, "%s/plots/%s", dir, name);
		assert_png(path);
	}
	snprintf(path, sizeof path, "%s/plots/c2_phi_002_+045.00deg.png", dir);
	assert_png(path);
	snprintf(path, sizeof path, "%s/plots/c2_phi_000_-030.00deg.png", dir);
	assert_png(path);
	snprintf(path, sizeof path, "%s/plots/overview.png", dir);
	assert_png(path);
	snprintf(path, sizeof path, "%s/run.log", dir);
	char *log = read_text(path);
	assert_non_null(strstr(log, "a warning that must reach run.log"));
	assert_non_null(strstr(log, "timing:"));
	free(log);
	cJSON *root = load_json(dir);
	assert_string_equal(cJSON_GetObjectItem(root, "status")->valuestring, "failed");
	cJSON_Delete(root);
	assert_int_equal(count_tmp_files(dir), 0);
	snprintf(path, sizeof path, "%s/plots", dir);
	assert_int_equal(count_tmp_files(path), 0);
	free_fixture(&f);
}

static void test_no_surfaces(void **state)
{
	(void)state;
	fixture f;
	build_fixture(&f, XF_MODE_STATIC);
	char dir[1200], path[1400];
	make_dir("nosurf", dir, sizeof dir);
	write_all(&f, dir, 0, 0);
	snprintf(path, sizeof path, "%s/results.h5", dir);
	hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	assert_true(file >= 0);
	assert_int_equal(H5Lexists(file, "/data/c2", H5P_DEFAULT), 0);
	assert_int_equal(H5Lexists(file, "/nlsq/c2_fit", H5P_DEFAULT), 0);
	assert_int_equal(H5Lexists(file, "/nlsq/residuals", H5P_DEFAULT), 0);
	assert_true(H5Lexists(file, "/nlsq/values", H5P_DEFAULT) > 0);
	H5Fclose(file);
	snprintf(path, sizeof path, "%s/plots", dir);
	assert_int_equal(access(path, F_OK), -1); /* --no-plots */
	xf_error err = { 0 };
	/* no surfaces: the data are read again from their file, which this fixture never
	 * had (adr/0059): the line says how to name it or keep the surfaces */
	assert_int_equal(xf_plot_result_dir(dir, &err), 1);
	assert_non_null(strstr(err.msg, "--data FILE.h5"));
	assert_non_null(strstr(err.msg, "--surfaces"));
	assert_non_null(strstr(err.msg, dir));
	free_fixture(&f);
}

static void test_atomic_errors(void **state)
{
	(void)state;
	char blocker[1200], target[1400];
	snprintf(blocker, sizeof blocker, "%s/blocker", tmp_root);
	xf_error err = { 0 };
	assert_int_equal(xf_write_file_atomic(blocker, "x", 1, &err), 0);
	/* a folder below a regular file cannot exist: even root cannot write there */
	snprintf(target, sizeof target, "%s/sub/parameters.json", blocker);
	assert_int_equal(xf_write_file_atomic(target, "{}", 2, &err), XF_ERR_IO);
	assert_non_null(strstr(err.msg, target));
	xf_error_clear(&err);
	snprintf(target, sizeof target, "%s/sub", blocker);
	assert_int_equal(xf_mkdir_p(target, &err), XF_ERR_IO);
	assert_non_null(strstr(err.msg, target));
	xf_error_clear(&err);
	fixture f;
	build_fixture(&f, XF_MODE_STATIC);
	xf_output_options opt = { 1, 1, 1, NULL, NULL };
	assert_int_equal(write_nlsq(target, &f, &opt, &err), XF_ERR_IO);
	assert_non_null(strstr(err.msg, target));
	xf_error_clear(&err);
	assert_int_equal(xf_results_write_nlsq_h5(target, &f.cfg, &f.ds, &f.res, 1, &err),
			 XF_ERR_IO);
	assert_non_null(strstr(err.msg, "results.h5"));
	free_fixture(&f);
	/* an atomic write replaces the old content completely and leaves no temporary */
	assert_int_equal(xf_write_file_atomic(blocker, "second", 6, &err), 0);
	char *text = read_text(blocker);
	assert_string_equal(text, "second");
	free(text);
	assert_int_equal(count_tmp_files(tmp_root), 0);
}

static void test_redraw_from_h5(void **state)
{
	(void)state;
	fixture f;
	build_fixture(&f, XF_MODE_LAMINAR);
	char dir[1200], path[1400];
	make_dir("redraw", dir, sizeof dir);
	write_all(&f, dir, 1, 0);
	xf_error err = { 0 };
	if (xf_plot_result_dir(dir, &err) != 0)
		fail_msg("redraw failed: %s", err.msg);
	for (int a = 0; a < N_PHI; a++) {
		char name[64];
		xf_plot_angle_name(name, sizeof name, a, f.phi[a]);
		snprintf(path, sizeof path, "%s/plots/%s", dir, name);
		assert_png(path);
	}
	snprintf(path, sizeof path, "%s/plots/overview.png", dir);
	assert_png(path);
	xf_error_clear(&err);
	snprintf(path, sizeof path, "%s/not_there", tmp_root);
	assert_int_equal(xf_plot_result_dir(path, &err), 1);
	assert_non_null(strstr(err.msg, "results.h5"));
	free_fixture(&f);
}

int main(void)
{
	const char *tmp = getenv("XF_TMP");
	snprintf(tmp_root, sizeof tmp_root, "%s", tmp ? tmp : "/tmp/xf_test_results");
	xf_error err = { 0 };
	if (xf_mkdir_p(tmp_root, &err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	xf_log_set_stderr(0, 0);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_h5_contents),
		cmocka_unit_test(test_h5_laminar_names_and_units),
		cmocka_unit_test(test_h5_reproducible),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_sigma_given_and_failed),
		cmocka_unit_test(test_format_double_round_trip),
		cmocka_unit_test(test_full_directory_and_failed_status),
		cmocka_unit_test(test_no_surfaces),
		cmocka_unit_test(test_atomic_errors),
		cmocka_unit_test(test_redraw_from_h5),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
