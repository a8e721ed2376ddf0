/* layout.c — which of the two APS 8-ID-I layouts a file uses, decided by its keys (never
 * by its name, data.md), plus the checks shared by both readers. */
#include "data/raw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "data/h5util.h"

static const char *const aps_u_keys[] = { "/xpcs/qmap/dynamic_v_list_dim0",
					  "/xpcs/twotime/correlation_map", NULL };
static const char *const aps_old_keys[] = { "/xpcs/dqlist", "/xpcs/dphilist", "/exchange/C2T_all",
					    NULL };

const char *xf_layout_name(xf_layout layout)
{
	return layout == XF_LAYOUT_APS_OLD ? "aps-old" : "aps-u";
}

static int has_all(hid_t file, const char *const *keys)
{
	for (int k = 0; keys[k]; k++)
		if (!xf_h5_present(file, keys[k]))
			return 0;
	return 1;
}

struct top_keys {
	char buf[512];
	size_t len;
};

static herr_t add_key(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
	struct top_keys *t = data;
	(void)g;
	(void)info;
	if (t->len + strlen(name) + 4 < sizeof t->buf)
		t->len += (size_t)snprintf(t->buf + t->len, sizeof t->buf - t->len, "%s/%s",
					   t->len ? ", " : "", name);
	return 0;
}

/* A multi-tau result shares the qmap (APS-U) or dqlist/dphilist (legacy) of a two-time
 * one but holds no map: say so instead of "unknown layout", which sends users looking
 * for a format problem when they picked the wrong analysis's file. */
static int no_two_time(hid_t file, const char *file_name, xf_error *err)
{
	char type[64] = "";
	if (xf_h5_present(file, "/xpcs/qmap/dynamic_v_list_dim0"))
		return xf_fail(err, XF_ERR_DATA,
			       "no two-time correlation maps: an APS-U %sresult without "
			       "/xpcs/twotime/correlation_map (xpcsfit fits two-time maps: "
			       "correlate the data with the two-time analysis), in %s",
			       xf_h5_present(file, "/xpcs/multitau") ? "multi-tau " : "",
			       file_name);
	if (xf_h5_present(file, "/xpcs/analysis_type"))
		xf_h5_read_string(file, file_name, "/xpcs/analysis_type", type, sizeof type, NULL);
	return xf_fail(err, XF_ERR_DATA,
		       "no two-time correlation maps: a legacy APS result%s%s without "
		       "/exchange/C2T_all (xpcsfit fits two-time maps: correlate the data with "
		       "the two-time analysis), in %s",
		       type[0] ? " with /xpcs/analysis_type " : "", type, file_name);
}

int xf_detect_layout(hid_t file, const char *file_name, xf_layout *layout, xf_error *err)
{
	if (has_all(file, aps_u_keys)) {
		*layout = XF_LAYOUT_APS_U;
		return 0;
	}
	if (has_all(file, aps_old_keys)) {
		*layout = XF_LAYOUT_APS_OLD;
		return 0;
	}
	if (xf_h5_present(file, "/xpcs/qmap/dynamic_v_list_dim0") ||
	    (xf_h5_present(file, "/xpcs/dqlist") && xf_h5_present(file, "/xpcs/dphilist")))
		return no_two_time(file, file_name, err);
	struct top_keys t = { "", 0 };
	H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, NULL, add_key, &t);
	H5Eclear2(H5E_DEFAULT);
	return xf_fail(err, XF_ERR_DATA,
		       "unknown file layout: neither APS-U (/xpcs/qmap/dynamic_v_list_dim0 and "
		       "/xpcs/twotime/correlation_map) nor APS old (/xpcs/dqlist, "
		       "/xpcs/dphilist and /exchange/C2T_all) keys found; top-level keys: %s, "
		       "in %s",
		       t.len ? t.buf : "(none)", file_name);
}

int xf_raw_check_shapes(xf_raw_file *raw, xf_error *err)
{
	size_t rows0 = 0, cols0 = 0;
	for (int m = 0; m < raw->n_maps; m++) {
		size_t rows, cols;
		const char *p = raw->maps[m].path;
		int rc = xf_h5_matrix_shape(raw->file, raw->file_name, p, &rows, &cols, err);
		if (rc)
			return rc;
		if (rows != cols)
			return xf_fail(err, XF_ERR_DATA, "map %s in %s is not square (%zu × %zu)",
				       p, raw->file_name, rows, cols);
		if (rows > (size_t)XF_MAP_ROWS_MAX)
			return xf_fail(err, XF_ERR_DATA,
				       "map %s in %s declares %zu rows, above the limit of %ld", p,
				       raw->file_name, rows, XF_MAP_ROWS_MAX);
		if (rows < 3)
			return xf_fail(err, XF_ERR_DATA,
				       "map %s in %s is %zu × %zu, smaller than the 3 × 3 needed",
				       p, raw->file_name, rows, cols);
		if (m == 0) {
			rows0 = rows;
			cols0 = cols;
		} else if ((rows != rows0 || cols != cols0) &&
			   fabs(raw->maps[m].q - raw->maps[0].q) > 1e-6 * raw->maps[0].q) {
			/* two rings: the rule of adr/0063, said as such */
			return xf_fail(
				err, XF_ERR_DATA,
				"q rings with different frame counts: ring q %.6g 1/A (map "
				"%s) has %zu frames, ring q %.6g 1/A (map %s) %zu; the rings "
				"of one file share one frame grid (docs/input-formats.md), "
				"in %s",
				raw->maps[m].q, p, rows, raw->maps[0].q, raw->maps[0].path, rows0,
				raw->file_name);
		} else if (rows != rows0 || cols != cols0) {
			return xf_fail(
				err, XF_ERR_DATA,
				"maps of unequal shape: %s is %zu × %zu but %s is %zu × %zu, "
				"in %s",
				p, rows, cols, raw->maps[0].path, rows0, cols0, raw->file_name);
		}
	}
	raw->n_rows = rows0;
	return 0;
}

int xf_raw_check_values(const xf_raw_file *raw, xf_error *err)
{
	for (int m = 0; m < raw->n_maps; m++) {
		const xf_raw_map *rm = &raw->maps[m];
		if (!(rm->q > 0 && rm->q <= XF_Q_MAX))
			return xf_fail(err, XF_ERR_DATA,
				       "q = %g of map %s is not a wavevector (want 0 < q <= %g "
				       "Å⁻¹), in %s",
				       rm->q, rm->path, XF_Q_MAX, raw->file_name);
		if (!(fabs(rm->phi_deg) <= XF_PHI_ABS_MAX))
			return xf_fail(err, XF_ERR_DATA,
				       "φ = %g of map %s is not an angle (want |φ| <= %g degrees), "
				       "in %s",
				       rm->phi_deg, rm->path, XF_PHI_ABS_MAX, raw->file_name);
	}
	return 0;
}

static int by_q(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorted, a ring starts where q leaves the tolerance of the one before: m log m (adr/0073;
 * the pairwise scan was m², and ran once per ring loaded: 239 s for 3 000 rings). -1
 * when memory is short. */
int xf_raw_count_q_rings(const xf_raw_file *raw)
{
	if (raw->n_maps <= 0)
		return 0;
	double *q = malloc(sizeof *q * (size_t)raw->n_maps);
	if (!q)
		return -1;
	for (int m = 0; m < raw->n_maps; m++)
		q[m] = raw->maps[m].q;
	qsort(q, (size_t)raw->n_maps, sizeof *q, by_q);
	int n = 1;
	for (int m = 1; m < raw->n_maps; m++)
		n += !(fabs(q[m] - q[m - 1]) <= 1e-6 * fabs(q[m]));
	free(q);
	return n;
}

void xf_raw_free(xf_raw_file *raw)
{
	xf_raw_index_free(raw);
	free(raw->maps);
	raw->maps = NULL;
	free(raw->q_declared);
	raw->q_declared = NULL;
	raw->n_q_declared = 0;
	raw->n_maps = 0;
	if (raw->file >= 0)
		H5Fclose(raw->file);
	raw->file = -1;
}

static int optional_number(xf_raw_file *raw, const char *path, double fallback, double *v,
			   xf_error *err)
{
	*v = fallback;
	if (!xf_h5_present(raw->file, path))
		return 0;
	return xf_h5_read_scalar(raw->file, raw->file_name, path, v, err);
}

int xf_raw_read_dt(xf_raw_file *raw, const char *period_path, const char *period_name,
		   const char *stride_path, const char *avg_path, xf_error *err)
{
	double period, stride, avg;
	raw->has_file_dt = 0;
	if (!xf_h5_present(raw->file, period_path))
		return 0;
	int rc = xf_h5_read_scalar(raw->file, raw->file_name, period_path, &period, err);
	if (!rc)
		rc = optional_number(raw, stride_path, 1.0, &stride, err);
	if (!rc)
		rc = optional_number(raw, avg_path, 1.0, &avg, err);
	if (rc)
		return rc;
	const char *bad = NULL, *want = NULL;
	if (!isfinite(period)) {
		bad = period_path;
		want = "a finite number";
	} else if (!(stride >= 1 && stride <= XF_FRAME_FACTOR_MAX && stride == floor(stride))) {
		bad = stride_path;
		want = "a whole number from 1 to 10^6";
	} else if (!(avg >= 1 && avg <= XF_FRAME_FACTOR_MAX && avg == floor(avg))) {
		bad = avg_path;
		want = "a whole number from 1 to 10^6";
	}
	if (bad)
		return xf_fail(err, XF_ERR_DATA,
			       "frame timing %s × stride × avg = %g × %g × %g is not usable: %s "
			       "must be %s, in %s",
			       period_name, period, stride, avg, bad, want, raw->file_name);
	raw->has_file_dt = 1;
	raw->file_dt_s = period * stride * avg;
	snprintf(raw->file_dt_desc, sizeof raw->file_dt_desc,
		 "%s × stride × avg = %.9g × %.9g × %.9g", period_name, period, stride, avg);
	return 0;
}
