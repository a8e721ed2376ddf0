/* nexus.c — the NeXus frame of results.h5 (adr/0060): the root is an NXroot whose
 * "default" names /entry (NXentry), whose "default" names /entry/g2 (NXdata), so that
 * silx and other NeXus viewers open the file on a plot: one angle's time-averaged
 * correlation of the data and of the fit against the lag,
 *   g2(lag) = mean over i >= 1 of c2(t_i, t_i + lag),   lag = 1 .. N-2 frames,
 * over the points a fit sees (t1, t2 > 0, off the diagonal); a joint fit over q rings
 * records the angle's ring q (adr/0068). The fit group is an
 * NXprocess; nothing is moved, the plot's arrays are small (N - 2 values each). */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/h5write.h"
#include "io/utf8.h"
#include "io/nexus.h"
#include "surface/surfaces.h"

/* the lag-averaged data of angle a; NaN where the dataset does not hold the points (an
 * MPI band) */
static void g2_data(const xf_dataset *ds, int a, double *g2)
{
	size_t n = (size_t)ds->n_frames;
	for (size_t lag = 1; lag + 1 < n; lag++) {
		double sum = 0.0;
		size_t count = 0;
		for (size_t i = 1; i + lag < n; i++) {
			size_t idx = xf_packed_index(n, i, i + lag);
			if (!xf_dataset_holds(ds, idx))
				continue;
			sum += xf_dataset_c2(ds, a, idx);
			count++;
		}
		g2[lag - 1] = count ? sum / (double)count : NAN;
	}
}

/* the same average of the fitted surface (NaN without an estimate) */
static void g2_fit(const xf_estimate *est, const xf_dataset *ds, int a, double *g2)
{
	size_t n = (size_t)ds->n_frames;
	double *fit = est ? malloc(n * n * sizeof *fit) : NULL;
	int ok = fit && xf_surface_fit(est, ds, a, fit) == 0;
	for (size_t lag = 1; lag + 1 < n; lag++) {
		double sum = 0.0;
		for (size_t i = 1; ok && i + lag < n; i++)
			sum += fit[i * n + i + lag];
		g2[lag - 1] = ok ? sum / (double)(n - 1 - lag) : NAN;
	}
	free(fit);
}

static int attr_strings(h5w *w, hid_t obj, const char *name, int n, const char *const *v)
{
	if (w->failed)
		return -1;
	hid_t t = H5Tcopy(H5T_C_S1);
	H5Tset_size(t, H5T_VARIABLE);
	H5Tset_cset(t, H5T_CSET_UTF8);
	hsize_t dims[1] = { (hsize_t)n };
	/* UTF-8 by type: invalid bytes become U+FFFD (adr/0075) */
	char **clean = calloc((size_t)(n > 0 ? n : 1), sizeof *clean);
	int ok = clean != NULL;
	for (int k = 0; ok && k < n; k++)
		ok = (clean[k] = xf_utf8_clean(v[k])) != NULL;
	hid_t s = H5Screate_simple(1, dims, NULL);
	hid_t a = ok ? H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT) : -1;
	herr_t st = a < 0 ? -1 : H5Awrite(a, t, clean);
	if (a >= 0)
		H5Aclose(a);
	H5Sclose(s);
	H5Tclose(t);
	for (int k = 0; clean && k < n; k++)
		free(clean[k]);
	free(clean);
	return st < 0 ? xf_h5_fail(w, name) : 0;
}

static int plot_group(h5w *w, hid_t entry, const xf_dataset *ds, const xf_estimate *est)
{
	size_t n = (size_t)ds->n_frames, m = n > 2 ? n - 2 : 0;
	hid_t g = H5Gcreate2(entry, "g2", H5P_DEFAULT, w->gcpl, H5P_DEFAULT);
	double *lag = malloc((m ? m : 1) * sizeof *lag), *data = malloc((m ? m : 1) * sizeof *data),
	       *fit = malloc((m ? m : 1) * sizeof *fit);
	if (g < 0 || !lag || !data || !fit) {
		xf_h5_fail(w, "/entry/g2");
	} else {
		int a = 0; /* the first angle (ascending phi) */
		for (size_t k = 0; k < m; k++)
			lag[k] = (double)(k + 1) * ds->dt_s;
		g2_data(ds, a, data);
		g2_fit(est, ds, a, fit);
		xf_h5_nx_class(w, g, "NXdata");
		xf_h5_attr_str(w, g, "signal", "g2_data");
		xf_h5_attr_str(w, g, "axes", "lag");
		const char *aux[1] = { "g2_fit" };
		attr_strings(w, g, "auxiliary_signals", 1, aux);
		char title[96];
		snprintf(title, sizeof title, "g2 at phi = %.4g deg: data and fit",
			 ds->n_phi ? ds->phi_deg[a] : NAN);
		xf_h5_attr_str(w, g, "title", title);
		xf_h5_put_vec(w, g, "lag", m, lag, "s",
			      "lag t2 - t1 (1 .. N-2 frames): the plot's axis");
		xf_h5_put_vec(w, g, "g2_data", m, data, "1",
			      "mean of the measured c2(t1, t1 + lag) over t1 > 0, first angle");
		xf_h5_put_vec(w, g, "g2_fit", m, fit, "1",
			      "the same mean of the fitted c2 at the reported estimate");
		xf_h5_put_f64(w, g, "phi_deg", ds->n_phi ? ds->phi_deg[0] : NAN, "deg",
			      "the angle plotted (the first of /data/phi_deg)");
		if (est && est->slot_q && ds->n_phi) /* a joint fit: the angle's ring */
			xf_h5_put_f64(w, g, "q", est->slot_q[a], "1/angstrom",
				      "wavevector q of the ring of the angle plotted (the first "
				      "of /data/slot_q): g2_fit is the model at it");
		xf_h5_scale(w, g, "lag");
		xf_h5_dims(w, g, "g2_data", "lag", NULL);
		xf_h5_dims(w, g, "g2_fit", "lag", NULL);
	}
	free(lag);
	free(data);
	free(fit);
	if (g >= 0)
		H5Gclose(g);
	return w->failed ? -1 : 0;
}

int xf_h5_nexus(h5w *w, const xf_dataset *ds, const xf_estimate *est, hid_t process)
{
	xf_h5_nx_class(w, w->file, "NXroot");
	xf_h5_attr_str(w, w->file, "default", "entry");
	xf_h5_nx_class(w, process, "NXprocess");
	hid_t entry = xf_h5_group(w, "/entry");
	if (entry < 0)
		return -1;
	xf_h5_nx_class(w, entry, "NXentry");
	xf_h5_attr_str(w, entry, "default", "g2");
	plot_group(w, entry, ds, est);
	H5Gclose(entry);
	return w->failed ? -1 : 0;
}
