/* simulate.c — xf_simulate_write: a synthetic two-time file written exactly as the APS
 * correlator lays it out (data.md "Simulated files"), so that the reader is tested on
 * what beamline files look like. Noise comes from a counter-based generator keyed by
 * (seed, angle, i, j) and object time stamps are off: same inputs, same bytes. The model
 * comes from a problem request, q and dt from a selection (both built by src/cli/). */
#include "xpcsfit/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include "data/h5util.h"
#include "data/raw.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/size.h"
#include "xpcsfit/model.h"
#include "xpcsfit/rng.h"
#include "util/key_names.h"

/* LZF chunks of about this many elements (rows of a map): big enough for good
 * compression, small enough to read a window cheaply. */
#define XF_SIM_CHUNK_ELEMENTS 65536
#define XF_SIM_MIN_FRAMES     3

typedef struct sim_file {
	hid_t file;
	hid_t gcpl; /* groups: no time stamps */
	hid_t dcpl; /* small datasets: no time stamps */
	int failed; /* any HDF5 call failed */
} sim_file;

static hid_t group(sim_file *f, const char *path)
{
	hid_t g = H5Gcreate2(f->file, path, H5P_DEFAULT, f->gcpl, H5P_DEFAULT);
	if (g < 0)
		f->failed = 1;
	else
		H5Gclose(g);
	return g;
}

static void write_data(sim_file *f, const char *path, hid_t file_type, hid_t mem_type, int rank,
		       const hsize_t *dims, const void *v)
{
	hid_t s = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
	hid_t d = H5Dcreate2(f->file, path, file_type, s, H5P_DEFAULT, f->dcpl, H5P_DEFAULT);
	if (s < 0 || d < 0 || H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0)
		f->failed = 1;
	if (d >= 0)
		H5Dclose(d);
	if (s >= 0)
		H5Sclose(s);
}

static void write_f64(sim_file *f, const char *path, int rank, const hsize_t *dims, const double *v)
{
	write_data(f, path, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, rank, dims, v);
}

static void write_i64(sim_file *f, const char *path, int rank, const hsize_t *dims,
		      const long long *v)
{
	write_data(f, path, H5T_STD_I64LE, H5T_NATIVE_LLONG, rank, dims, v);
}

static void write_string(sim_file *f, const char *path, const char *text)
{
	hid_t t = H5Tcopy(H5T_C_S1);
	H5Tset_size(t, strlen(text) + 1);
	write_data(f, path, t, t, 0, NULL, text);
	H5Tclose(t);
}

static void string_attribute(sim_file *f, const char *obj, const char *name, const char *text)
{
	hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
	H5Tset_size(t, strlen(text) + 1);
	hid_t a =
		H5Acreate_by_name(f->file, obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (a < 0 || H5Awrite(a, t, text) < 0)
		f->failed = 1;
	if (a >= 0)
		H5Aclose(a);
	H5Sclose(s);
	H5Tclose(t);
}

/* Model (upper triangle, diagonal included) plus noise; strict lower triangle 0. */
static int simulate_map(const xf_model_grid *grid, const double *theta, const xf_sim_options *opt,
			int a, uint64_t stream, double *m)
{
	size_t n = (size_t)grid->n_frames;
	if (xf_model_c2_full(grid, theta, opt->phi_deg[a], opt->contrast, opt->offset, m))
		return -1;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			if (j < i) {
				m[i * n + j] = 0.0;
			} else if (opt->noise_sd != 0.0) {
				m[i * n + j] += opt->noise_sd * xf_rng_normal(opt->seed,
									      XF_RNG_SIMULATE_NOISE,
									      stream, i, j);
			}
		}
	return 0;
}

static void write_map(sim_file *f, const xf_sim_options *opt, const char *path, size_t n,
		      const double *m)
{
	hsize_t dims[2] = { n, n };
	hid_t dcpl = H5Pcopy(f->dcpl);
	if (opt->lzf) {
		hsize_t rows = XF_SIM_CHUNK_ELEMENTS / n;
		hsize_t chunk[2] = { rows < 1 ? 1 : rows > n ? n : rows, n };
		H5Pset_chunk(dcpl, 2, chunk);
		if (H5Pset_filter(dcpl, XF_H5_FILTER_LZF, H5Z_FLAG_OPTIONAL, 0, NULL) < 0)
			f->failed = 1;
	}
	hid_t s = H5Screate_simple(2, dims, NULL);
	hid_t d = H5Dcreate2(f->file, path, H5T_IEEE_F64LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (d < 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, m) < 0)
		f->failed = 1;
	if (d >= 0)
		H5Dclose(d);
	H5Sclose(s);
	H5Pclose(dcpl);
}

/* The rings written (adr/0063): --q's list, else the config's one q. */
static int n_rings(const xf_sim_options *opt)
{
	return opt->n_q > 0 ? opt->n_q : 1;
}
static const double *ring_q(const xf_selection *sel, const xf_sim_options *opt)
{
	return opt->n_q > 0 ? opt->q_per_A : &sel->q_target_per_A;
}

/* bins are ring-major: bin b (1-based) is ring (b − 1) / n_phi, angle (b − 1) % n_phi */
static void write_aps_u_meta(sim_file *f, const xf_selection *sel, const xf_sim_options *opt)
{
	size_t n = (size_t)opt->n_phi * (size_t)n_rings(opt);
	long long *seq = xf_malloc_array(n, sizeof *seq);
	if (!seq) {
		f->failed = 1;
		return;
	}
	const char *groups[] = { "/xpcs",
				 "/xpcs/qmap",
				 "/xpcs/twotime",
				 "/xpcs/twotime/correlation_map",
				 "/xpcs/twotime/config",
				 "/entry",
				 "/entry/instrument",
				 "/entry/instrument/detector_1",
				 "/entry/instrument/bluesky",
				 "/entry/instrument/bluesky/metadata",
				 NULL };
	for (int k = 0; groups[k]; k++)
		group(f, groups[k]);
	hsize_t nq = (hsize_t)n_rings(opt), dphi = (hsize_t)opt->n_phi, dn = n, two = 2;
	long long num_pts[2] = { (long long)nq, (long long)opt->n_phi }, unit = 1;
	write_f64(f, "/xpcs/qmap/dynamic_v_list_dim0", 1, &nq, ring_q(sel, opt));
	write_f64(f, "/xpcs/qmap/dynamic_v_list_dim1", 1, &dphi, opt->phi_deg);
	write_i64(f, "/xpcs/qmap/dynamic_num_pts", 1, &two, num_pts);
	for (size_t k = 0; k < n; k++)
		seq[k] = (long long)k; /* identity: bin b is flat cell b − 1 */
	write_i64(f, "/xpcs/qmap/dynamic_index_mapping", 1, &dn, seq);
	for (size_t k = 0; k < n; k++)
		seq[k] = (long long)k + 1;
	write_i64(f, "/xpcs/twotime/processed_bins", 1, &dn, seq);
	write_i64(f, "/xpcs/twotime/config/stride_frame", 0, NULL, &unit);
	write_i64(f, "/xpcs/twotime/config/avg_frame", 0, NULL, &unit);
	write_f64(f, "/entry/instrument/detector_1/frame_time", 0, NULL, &sel->dt_s);
	string_attribute(f, "/entry/instrument/bluesky/metadata", "generator", "xpcsfit simulate");
	free(seq);
}

static void write_aps_old_meta(sim_file *f, const xf_selection *sel, const xf_sim_options *opt)
{
	size_t n = (size_t)opt->n_phi * (size_t)n_rings(opt);
	double *q = xf_malloc_array(n, sizeof *q);
	double *phi = xf_malloc_array(n, sizeof *phi);
	if (!q || !phi) {
		free(q);
		free(phi);
		f->failed = 1;
		return;
	}
	const char *groups[] = { "/xpcs",
				 "/exchange",
				 "/exchange/C2T_all",
				 "/measurement",
				 "/measurement/instrument",
				 "/measurement/instrument/detector",
				 NULL };
	for (int k = 0; groups[k]; k++)
		group(f, groups[k]);
	hsize_t row[2] = { 1, n }, one[2] = { 1, 1 };
	for (size_t k = 0; k < n; k++) {
		q[k] = ring_q(sel, opt)[k / (size_t)opt->n_phi];
		phi[k] = opt->phi_deg[k % (size_t)opt->n_phi];
	}
	long long unit = 1;
	write_string(f, "/xpcs/Version", "1.0");
	write_f64(f, "/xpcs/dqlist", 2, row, q);
	write_f64(f, "/xpcs/dphilist", 2, row, phi);
	write_i64(f, "/xpcs/stride_frames", 2, one, &unit);
	write_i64(f, "/xpcs/avg_frames", 2, one, &unit);
	write_f64(f, "/measurement/instrument/detector/exposure_period", 2, one, &sel->dt_s);
	free(q);
	free(phi);
}

/* The angles must make a file that the reader accepts (data.md): each within
 * |φ| <= XF_PHI_ABS_MAX and no two the same after normalising to (-180, 180] — 0 and 360
 * are one angle, and a file holding both is refused by validate. */
static int check_angles(const xf_sim_options *opt, xf_error *err)
{
	for (int a = 0; a < opt->n_phi; a++) {
		if (!(fabs(opt->phi_deg[a]) <= XF_PHI_ABS_MAX))
			return xf_fail(err, XF_ERR_CONFIG,
				       "--phi: %g is not an angle (want |φ| <= %g degrees)",
				       opt->phi_deg[a], XF_PHI_ABS_MAX);
		for (int b = 0; b < a; b++)
			if (xf_phi_normalise(opt->phi_deg[a]) == xf_phi_normalise(opt->phi_deg[b]))
				return xf_fail(err, XF_ERR_CONFIG,
					       "--phi: %g and %g are the same angle (φ = %g in "
					       "(-180, 180]): give each angle once",
					       opt->phi_deg[b], opt->phi_deg[a],
					       xf_phi_normalise(opt->phi_deg[a]));
	}
	return 0;
}

/* --q's rings: each a wavevector, no two the same ring (the reader would merge them) */
static int check_rings(const xf_sim_options *opt, xf_error *err)
{
	for (int r = 0; r < opt->n_q; r++) {
		double q = opt->q_per_A[r];
		if (!(q > 0 && q <= XF_Q_MAX))
			return xf_fail(err, XF_ERR_CONFIG,
				       "--q: %g is not a wavevector (want 0 < q <= %g 1/A)", q,
				       XF_Q_MAX);
		for (int k = 0; k < r; k++)
			if (fabs(opt->q_per_A[k] - q) <= 1e-6 * q)
				return xf_fail(
					err, XF_ERR_CONFIG,
					"--q: %g and %g are the same q ring: give each ring once",
					opt->q_per_A[k], q);
	}
	return 0;
}

static int check_inputs(const xf_selection *sel, const xf_sim_options *opt, xf_error *err)
{
	if (opt->n_q > 0 && check_rings(opt, err))
		return XF_ERR_CONFIG;
	if (opt->n_q == 0 && sel->q.pick != XF_Q_PICK_ONE)
		return xf_fail(
			err, XF_ERR_CONFIG,
			"simulate writes the rings of a wavevector_q value or list (or --q), "
			"not all or a range");
	if (opt->n_q == 0 &&
	    (!sel->has_q || !(sel->q_target_per_A > 0 && sel->q_target_per_A <= XF_Q_MAX)))
		return xf_fail(err, XF_ERR_CONFIG,
			       "simulate needs " XF_KEY_Q " from 0 (excluded) to %g Å⁻¹", XF_Q_MAX);
	if (!sel->has_dt || !(sel->dt_s >= XF_DT_MIN_S && sel->dt_s <= XF_DT_MAX_S))
		return xf_fail(err, XF_ERR_CONFIG, "simulate needs " XF_KEY_DT " from %g to %g s",
			       XF_DT_MIN_S, XF_DT_MAX_S);
	if (opt->n_frames > XF_WINDOW_FRAMES_MAX)
		return xf_fail(
			err, XF_ERR_CONFIG,
			"simulate writes at most %ld frames (a map is built whole in memory), "
			"got %d",
			XF_WINDOW_FRAMES_MAX, opt->n_frames);
	if (opt->n_frames < XF_SIM_MIN_FRAMES)
		return xf_fail(err, XF_ERR_CONFIG,
			       "simulate needs at least %d frames (end_frame or --frames), got %d",
			       XF_SIM_MIN_FRAMES, opt->n_frames);
	if (opt->n_phi < 1)
		return xf_fail(err, XF_ERR_CONFIG, "simulate needs at least one angle (--phi)");
	if (check_angles(opt, err))
		return XF_ERR_CONFIG;
	if (opt->lzf && !xf_h5_lzf_available())
		return xf_fail(err, XF_ERR_DATA, XF_H5_LZF_MESSAGE);
	return 0;
}

/* Truth: the request's starts (XF_KEY_VALUES; missing ones are the middle of
 * the bounds). */
static void truth(const xf_request *req, double theta[XF_N_PHYS])
{
	char missing[256] = "";
	size_t used = 0;
	int n_phys = xf_mode_n_phys(req->mode);
	for (int k = 0; k < XF_N_PHYS; k++) {
		theta[k] = k < n_phys ? req->start[k] : 0.0;
		if (k < n_phys && !req->value_given[k] && !req->fixed[k])
			used += (size_t)snprintf(missing + used, sizeof missing - used, "%s%s = %g",
						 used ? ", " : "", xf_param_names[k], theta[k]);
	}
	if (used)
		xf_warn(XF_KEY_VALUES " gives no value for some parameters: "
				      "simulating with the middle of their bounds (%s)",
			missing);
}

/* the HDF5 file under the temporary name tmp; messages name the final one */
static int write_file(const xf_request *req, const xf_selection *sel, const xf_sim_options *opt,
		      const char *tmp, xf_error *err)
{
	const char *shown = opt->out_path;
	sim_file f = { -1, -1, -1, 0 };
	double theta[XF_N_PHYS];
	size_t n = (size_t)opt->n_frames;
	xf_model_grid grid = { req->mode, req->shear_model,    opt->n_frames,
			       sel->dt_s, sel->q_target_per_A, req->gap_A };
	size_t n_values;
	double *m = xf_size_mul(n, n, &n_values) == 0 ? xf_malloc_array(n_values, sizeof *m) : NULL;
	if (!m)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory simulating %zu frames", n);
	truth(req, theta);
	hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
	f.gcpl = H5Pcreate(H5P_GROUP_CREATE);
	f.dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_obj_track_times(fcpl, 0); /* the root group too */
	H5Pset_obj_track_times(f.gcpl, 0);
	H5Pset_obj_track_times(f.dcpl, 0);
	f.file = xf_h5_fcreate(tmp, fcpl);
	int rc = 0;
	if (f.file < 0) {
		char why[256];
		xf_h5_last_error(why, sizeof why);
		rc = xf_fail(err, XF_ERR_DATA, "cannot create the file (%s), %s", why, shown);
		goto out;
	}
	if (opt->layout == XF_LAYOUT_APS_OLD)
		write_aps_old_meta(&f, sel, opt);
	else
		write_aps_u_meta(&f, sel, opt);
	/* ring by ring, the same truth at each ring's q; map k = r·n_phi + a draws noise
	 * stream k (one ring: the streams of before, adr/0063) */
	for (int k = 0; k < n_rings(opt) * opt->n_phi && !f.failed; k++) {
		char path[128];
		grid.q = ring_q(sel, opt)[k / opt->n_phi];
		if (simulate_map(&grid, theta, opt, k % opt->n_phi, (uint64_t)k, m)) {
			rc = xf_fail(err, XF_ERR_NOMEM, "out of memory evaluating the model");
			goto out;
		}
		if (opt->layout == XF_LAYOUT_APS_OLD)
			snprintf(path, sizeof path, "/exchange/C2T_all/C2T_%05d", k + 1);
		else
			snprintf(path, sizeof path, "/xpcs/twotime/correlation_map/c2_%05d", k + 1);
		write_map(&f, opt, path, n, m);
	}
	if (f.failed) {
		char why[256];
		xf_h5_last_error(why, sizeof why);
		rc = xf_fail(err, XF_ERR_DATA, "cannot write the file (%s; disk full?), %s",
			     why[0] ? why : "HDF5 write failed", shown);
	}
out:
	if (f.file >= 0 && H5Fclose(f.file) < 0)
		rc = xf_fail(err, XF_ERR_DATA, "cannot finish the file (disk full?), %s", shown);
	H5Pclose(fcpl);
	H5Pclose(f.gcpl);
	H5Pclose(f.dcpl);
	free(m);
	return rc;
}

int xf_simulate_write(const xf_request *req, const xf_selection *sel, const xf_sim_options *opt,
		      xf_error *err)
{
	xf_h5_quiet();
	int rc = check_inputs(sel, opt, err);
	if (rc)
		return rc;
	if (!opt->out_path[0])
		return xf_fail(err, XF_ERR_CONFIG, "--out is empty: give a file name");
	/* never a folder, device, FIFO or link in place of the file; whether an existing file
	 * may be replaced is the caller's (the CLI's --force) */
	if (xf_check_out_file(opt->out_path, "--out", 1, "--force", err))
		return err->code;
	size_t len = strlen(opt->out_path) + 32;
	char *tmp = malloc(len);
	if (!tmp)
		return xf_fail(err, XF_ERR_NOMEM, "out of memory");
	if (xf_tmp_name(opt->out_path, tmp, len) != 0) {
		free(tmp);
		return xf_fail(err, XF_ERR_DATA, "path too long, %s", opt->out_path);
	}
	xf_remove_stale_tmp_of(opt->out_path);
	(void)unlink(tmp); /* this process's own name: a FIFO or link there is no target */
	xf_phase("write", 0);
	rc = write_file(req, sel, opt, tmp, err);
	if (!rc)
		rc = xf_commit_tmp(tmp, opt->out_path, err); /* fsync, rename, fsync the folder */
	else
		unlink(tmp);
	free(tmp);
	return rc;
}
