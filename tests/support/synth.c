/* synth.c — synthetic datasets built straight from the model (synth.h). */
#include "synth.h"

#include <stdlib.h>
#include <string.h>

#include "xpcsfit/rng.h"

int xf_synth_dataset(const xf_model_grid *grid, const double *theta, int n_phi,
		     const double *phi_deg, const double *contrast, const double *offset,
		     double noise, uint64_t seed, xf_dataset *ds)
{
	size_t n = (size_t)grid->n_frames;
	memset(ds, 0, sizeof *ds);
	ds->path = strdup("synthetic");
	ds->layout = XF_LAYOUT_APS_U;
	ds->q = grid->q;
	ds->n_q_rings = 1;
	ds->n_phi = n_phi;
	ds->n_phi_in_ring = n_phi;
	ds->n_frames_stored = (long)n;
	ds->first_frame = 1;
	ds->n_frames = (int)n;
	ds->dt_s = grid->dt_s;
	strcpy(ds->dt_source, "synthetic");
	ds->phi_deg = malloc(sizeof(double) * n_phi);
	ds->map_number = malloc(sizeof(int) * n_phi);
	ds->c2 = calloc((size_t)n_phi, sizeof(double *));
	double *full = malloc(sizeof(double) * n * n);
	if (!ds->phi_deg || !ds->map_number || !ds->c2 || !full)
		return -1;
	for (int a = 0; a < n_phi; a++) {
		ds->phi_deg[a] = phi_deg[a];
		ds->map_number[a] = a + 1;
		ds->c2[a] = malloc(sizeof(double) * xf_packed_size(n));
		if (!ds->c2[a] ||
		    xf_model_c2_full(grid, theta, phi_deg[a], contrast[a], offset[a], full))
			return -1;
		for (size_t i = 0; i < n; i++)
			for (size_t j = i; j < n; j++) {
				double e = noise > 0 ? noise * xf_rng_normal(seed,
									     XF_RNG_SIMULATE_NOISE,
									     (uint64_t)a, i, j)
						     : 0.0;
				ds->c2[a][xf_packed_index(n, i, j)] = full[i * n + j] + e;
			}
	}
	free(full);
	ds->n_points = (size_t)n_phi * xf_fitted_pairs(n);
	return 0;
}

void xf_synth_free(xf_dataset *ds)
{
	xf_dataset_free(ds);
}

int xf_synth_benchmark(int n_frames, int n_phi, xf_dataset *ds)
{
	xf_model_grid g = { XF_MODE_LAMINAR, XF_SHEAR_HOMODYNE, n_frames, 0.001, 0.0054, 2e6 };
	const double truth[7] = XF_BENCH_TRUTH;
	double *phi = malloc(sizeof(double) * (size_t)n_phi);
	double *con = malloc(sizeof(double) * (size_t)n_phi);
	double *off = malloc(sizeof(double) * (size_t)n_phi);
	int rc = -1;
	if (phi && con && off) {
		for (int a = 0; a < n_phi; a++) {
			phi[a] = -90.0 + 180.0 * a / n_phi;
			con[a] = 0.3;
			off[a] = 1.0;
		}
		rc = xf_synth_dataset(&g, truth, n_phi, phi, con, off, 1e-3, 1, ds);
	}
	free(phi);
	free(con);
	free(off);
	return rc;
}

int xf_synth_join(int n_rings, const xf_dataset *rings, xf_dataset *joint, double *slot_q)
{
	const xf_dataset *r0 = &rings[0];
	size_t packed = xf_packed_size((size_t)r0->n_frames);
	int n = 0;
	for (int k = 0; k < n_rings; k++)
		n += rings[k].n_phi;
	memset(joint, 0, sizeof *joint);
	joint->path = strdup("synthetic rings");
	joint->layout = r0->layout;
	joint->q = r0->q;
	joint->n_q_rings = n_rings;
	joint->n_phi = joint->n_phi_in_ring = n;
	joint->n_frames_stored = r0->n_frames_stored;
	joint->first_frame = r0->first_frame;
	joint->n_frames = r0->n_frames;
	joint->dt_s = r0->dt_s;
	strcpy(joint->dt_source, "synthetic");
	joint->phi_deg = malloc(sizeof(double) * (size_t)n);
	joint->map_number = malloc(sizeof(int) * (size_t)n);
	joint->c2 = calloc((size_t)n, sizeof(double *));
	if (!joint->path || !joint->phi_deg || !joint->map_number || !joint->c2)
		return -1;
	int s = 0;
	for (int k = 0; k < n_rings; k++)
		for (int a = 0; a < rings[k].n_phi; a++, s++) {
			if (rings[k].n_frames != r0->n_frames)
				return -1;
			joint->phi_deg[s] = rings[k].phi_deg[a];
			joint->map_number[s] = s + 1;
			joint->c2[s] = malloc(sizeof(double) * packed);
			if (!joint->c2[s])
				return -1;
			memcpy(joint->c2[s], rings[k].c2[a], sizeof(double) * packed);
			slot_q[s] = rings[k].q;
		}
	joint->n_points = (size_t)n * xf_fitted_pairs((size_t)r0->n_frames);
	return 0;
}
