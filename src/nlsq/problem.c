/* problem.c — building the NLSQ problem: the per-angle scaling layout (nlsq.md's four
 * modes as one basis matrix), bounds, starts, blocks and workspaces. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nlsq/problem.h"

static char *dup_name(const char *fmt, int k)
{
	char buf[64];
	snprintf(buf, sizeof buf, fmt, k);
	return strdup(buf);
}

/* Which per-angle mode applies (nlsq.md): static uses individual unless
 * anti_degeneracy.enable; auto is shared above the threshold; fourier needs 2K+1 angles. */
static xf_scaling_mode choose_scaling(const xf_config *cfg, int n_phi)
{
	xf_scaling_mode m = cfg->nlsq.per_angle_mode;
	if (cfg->mode == XF_MODE_STATIC && !cfg->nlsq.anti_degeneracy_enable)
		return XF_SCALING_INDIVIDUAL;
	if (m == XF_SCALING_AUTO)
		return n_phi >= cfg->nlsq.constant_scaling_threshold ? XF_SCALING_AUTO
								     : XF_SCALING_INDIVIDUAL;
	if (m == XF_SCALING_FOURIER && n_phi < 2 * cfg->nlsq.fourier_order + 1) {
		xf_warn("per_angle_mode fourier needs at least %d angles (fourier_order %d), "
			"%d kept: using individual",
			2 * cfg->nlsq.fourier_order + 1, cfg->nlsq.fourier_order, n_phi);
		return XF_SCALING_INDIVIDUAL;
	}
	return m;
}

/* Basis row of angle φ: individual → unit vector, auto → 1, fourier → [1, cos kφ, sin kφ]. */
static void fill_basis(xf_problem *pr, const double *phi_deg)
{
	int nb = pr->n_basis;
	for (int p = 0; p < pr->n_phi; p++) {
		double *row = pr->basis + (size_t)p * nb;
		for (int k = 0; k < nb; k++)
			row[k] = 0.0;
		switch (pr->scaling) {
		case XF_SCALING_INDIVIDUAL: row[p] = 1.0; break;
		case XF_SCALING_FOURIER: {
			double phi = phi_deg[p] * XF_DEG2RAD;
			row[0] = 1.0;
			for (int k = 1; 2 * k < nb; k++) {
				row[2 * k - 1] = cos(k * phi);
				row[2 * k] = sin(k * phi);
			}
			break;
		}
		default:
			if (nb > 0)
				row[0] = 1.0;
		}
	}
}

/* Names, bounds and starts of the scaling coefficients. */
static int scaling_layout(xf_problem *pr, const xf_config *cfg, xf_error *err)
{
	int np = pr->n_phys, nb = pr->n_basis;
	const xf_bound *bnd[2] = { &cfg->bounds[XF_P_CONTRAST], &cfg->bounds[XF_P_OFFSET] };
	const char *qname[2] = { "contrast", "offset" };
	/* per-angle starts: the config's per_angle_scaling or the quantile estimates */
	double *start_q[2] = { malloc(sizeof(double) * pr->n_phi),
			       malloc(sizeof(double) * pr->n_phi) };
	if (!start_q[0] || !start_q[1]) {
		free(start_q[0]);
		free(start_q[1]);
		return xf_fail(err, XF_EXIT_DATA, "out of memory building the scaling layout");
	}
	const int n_given[2] = { cfg->n_contrast_start, cfg->n_offset_start };
	const double *given[2] = { cfg->contrast_start, cfg->offset_start };
	for (int q = 0; q < 2; q++) {
		const double *est = q == 0 ? pr->quantile_contrast : pr->quantile_offset;
		if (n_given[q] != 0 && n_given[q] != 1 && n_given[q] != pr->n_phi) {
			free(start_q[0]);
			free(start_q[1]);
			return xf_fail(err, XF_EXIT_CONFIG,
				       "initial_parameters.per_angle_scaling.%s: %d values given, "
				       "expected 1 or %d (one per angle kept)",
				       qname[q], n_given[q], pr->n_phi);
		}
		for (int p = 0; p < pr->n_phi; p++)
			start_q[q][p] =
				n_given[q] == 0 ? est[p] : given[q][n_given[q] == 1 ? 0 : p];
	}
	for (int q = 0; q < 2; q++) {
		double mean = 0.0;
		for (int p = 0; p < pr->n_phi; p++)
			mean += start_q[q][p] / pr->n_phi;
		double *base = q == 0 ? pr->base_contrast : pr->base_offset;
		for (int p = 0; p < pr->n_phi; p++)
			base[p] = pr->scaling == XF_SCALING_CONSTANT ? start_q[q][p] : 0.0;
		for (int k = 0; k < nb; k++) {
			int idx = np + q * nb + k;
			double lo = bnd[q]->lower, hi = bnd[q]->upper;
			switch (pr->scaling) {
			case XF_SCALING_INDIVIDUAL:
				pr->names[idx] =
					dup_name(q == 0 ? "contrast_%03d" : "offset_%03d", k);
				pr->start[idx] = start_q[q][k];
				break;
			case XF_SCALING_FOURIER:
				if (k == 0) {
					pr->names[idx] =
						dup_name(q == 0 ? "contrast_c%d" : "offset_c%d", 0);
					pr->start[idx] = mean;
				} else {
					int order = (k + 1) / 2;
					const char *fmt = (k % 2) ? (q == 0 ? "contrast_cos%d"
									    : "offset_cos%d")
								  : (q == 0 ? "contrast_sin%d"
									    : "offset_sin%d");
					pr->names[idx] = dup_name(fmt, order);
					pr->start[idx] = 0.0;
					/* harmonics: ± half the bound width */
					hi = 0.5 * (bnd[q]->upper - bnd[q]->lower);
					lo = -hi;
				}
				break;
			default: /* auto: one shared value, started at the mean estimate */
				pr->names[idx] = strdup(qname[q]);
				pr->start[idx] = mean;
			}
			pr->lower[idx] = lo;
			pr->upper[idx] = hi;
			pr->scale[idx] = hi - lo;
			if (!pr->names[idx]) {
				free(start_q[0]);
				free(start_q[1]);
				return xf_fail(err, XF_EXIT_DATA, "out of memory");
			}
			/* the start must lie inside the box */
			if (pr->start[idx] < lo)
				pr->start[idx] = lo;
			if (pr->start[idx] > hi)
				pr->start[idx] = hi;
		}
	}
	free(start_q[0]);
	free(start_q[1]);
	return 0;
}

static int make_blocks(xf_problem *pr)
{
	size_t n = (size_t)pr->ds->n_frames;
	pr->n_pairs = xf_fitted_pairs(n);
	pr->n_blocks = (int)((pr->n_pairs + XF_PAIRS_PER_BLOCK - 1) / XF_PAIRS_PER_BLOCK);
	pr->block_i = malloc(sizeof(int) * (size_t)(pr->n_blocks + 1));
	pr->block_j = malloc(sizeof(int) * (size_t)(pr->n_blocks + 1));
	if (!pr->block_i || !pr->block_j)
		return -1;
	size_t pair = 0;
	int blk = 0;
	for (size_t i = 1; i + 1 < n && blk < pr->n_blocks; i++) {
		size_t row = n - 1 - i; /* pairs (i, i+1..n−1) */
		while (blk < pr->n_blocks && (size_t)blk * XF_PAIRS_PER_BLOCK < pair + row) {
			size_t offset = (size_t)blk * XF_PAIRS_PER_BLOCK - pair;
			pr->block_i[blk] = (int)i;
			pr->block_j[blk] = (int)(i + 1 + offset);
			blk++;
		}
		pair += row;
	}
	return 0;
}

static int alloc_slots(xf_problem *pr)
{
	size_t per_slot = (size_t)pr->n_phi * (2 * XF_N_PHYS + 5);
	size_t n_slots = (size_t)pr->n_blocks + 1; /* + the total */
	pr->slots = calloc(n_slots, sizeof(xf_accum));
	pr->slot_store = malloc(sizeof(double) * per_slot * n_slots);
	if (!pr->slots || !pr->slot_store)
		return -1;
	for (size_t s = 0; s < n_slots; s++) {
		double *p = pr->slot_store + s * per_slot;
		xf_accum *a = &pr->slots[s];
		a->pc = p;
		a->po = p + (size_t)pr->n_phi * XF_N_PHYS;
		a->scc = p + (size_t)pr->n_phi * 2 * XF_N_PHYS; /* scc, sco, soo, bc, bo follow */
		a->sco = a->scc + pr->n_phi;
		a->soo = a->sco + pr->n_phi;
		a->bc = a->soo + pr->n_phi;
		a->bo = a->bc + pr->n_phi;
	}
	return 0;
}

int xf_problem_init(xf_problem *pr, const xf_config *cfg, const xf_dataset *ds, int n_threads,
		    xf_error *err)
{
	memset(pr, 0, sizeof *pr);
	pr->ds = ds;
	pr->grid = (xf_model_grid){ cfg->mode, cfg->shear_model, ds->n_frames, ds->dt_s,
				    ds->q,     cfg->gap_A };
	pr->n_phys = xf_mode_n_phys(cfg->mode);
	pr->n_phi = ds->n_phi;
	pr->has_sigma = cfg->nlsq.has_sigma;
	pr->sigma = cfg->nlsq.has_sigma ? cfg->nlsq.sigma : 1.0;
	if (ds->n_frames < 3 || ds->n_phi < 1)
		return xf_fail(err, XF_EXIT_DATA, "nothing to fit: %d angles, %d frames", ds->n_phi,
			       ds->n_frames);
	pr->scaling = choose_scaling(cfg, ds->n_phi);
	switch (pr->scaling) {
	case XF_SCALING_INDIVIDUAL: pr->n_basis = ds->n_phi; break;
	case XF_SCALING_CONSTANT: pr->n_basis = 0; break;
	case XF_SCALING_FOURIER: pr->n_basis = 2 * cfg->nlsq.fourier_order + 1; break;
	default: pr->n_basis = 1;
	}
	pr->n_full = pr->n_phys + 2 * pr->n_basis;
	size_t nf = (size_t)pr->n_full, na = (size_t)pr->n_phi;
	pr->names = calloc(nf, sizeof(char *));
	pr->lower = malloc(sizeof(double) * nf);
	pr->upper = malloc(sizeof(double) * nf);
	pr->scale = malloc(sizeof(double) * nf);
	pr->start = malloc(sizeof(double) * nf);
	pr->fixed = calloc(nf, sizeof(int));
	pr->basis = calloc(na * (pr->n_basis ? (size_t)pr->n_basis : 1), sizeof(double));
	pr->base_contrast = malloc(sizeof(double) * na);
	pr->base_offset = malloc(sizeof(double) * na);
	pr->quantile_contrast = malloc(sizeof(double) * na);
	pr->quantile_offset = malloc(sizeof(double) * na);
	pr->contrast = malloc(sizeof(double) * na);
	pr->offset = malloc(sizeof(double) * na);
	pr->cos_a = malloc(sizeof(double) * na);
	pr->sin_a = malloc(sizeof(double) * na);
	if (!pr->names || !pr->lower || !pr->upper || !pr->scale || !pr->start || !pr->fixed ||
	    !pr->basis || !pr->base_contrast || !pr->base_offset || !pr->quantile_contrast ||
	    !pr->quantile_offset || !pr->contrast || !pr->offset || !pr->cos_a || !pr->sin_a ||
	    make_blocks(pr) || alloc_slots(pr) ||
	    xf_frames_alloc(&pr->frames, ds->n_frames, cfg->mode == XF_MODE_LAMINAR)) {
		xf_problem_free(pr);
		return xf_fail(err, XF_EXIT_DATA,
			       "out of memory setting up the fit (%d angles, %d frames)", ds->n_phi,
			       ds->n_frames);
	}
	for (int k = 0; k < pr->n_phys; k++) {
		pr->names[k] = strdup(xf_param_names[k]);
		pr->lower[k] = cfg->bounds[k].lower;
		pr->upper[k] = cfg->bounds[k].upper;
		pr->scale[k] = cfg->bounds[k].upper - cfg->bounds[k].lower;
		pr->start[k] = xf_config_start_value(cfg, k);
		pr->fixed[k] = cfg->is_fixed[k];
	}
	xf_quantile_scaling(ds, &cfg->bounds[XF_P_CONTRAST], &cfg->bounds[XF_P_OFFSET],
			    pr->quantile_contrast, pr->quantile_offset);
	fill_basis(pr, ds->phi_deg);
	int rc = scaling_layout(pr, cfg, err);
	if (rc) {
		xf_problem_free(pr);
		return rc;
	}
	xf_blas_single_thread();
	pr->pool = xf_pool_create(n_threads);
	if (!pr->pool) {
		xf_problem_free(pr);
		return xf_fail(err, XF_EXIT_DATA, "cannot start %d worker threads", n_threads);
	}
	return 0;
}

void xf_problem_free(xf_problem *pr)
{
	if (pr->names)
		for (int k = 0; k < pr->n_full; k++)
			free(pr->names[k]);
	free(pr->names);
	free(pr->lower);
	free(pr->upper);
	free(pr->scale);
	free(pr->start);
	free(pr->fixed);
	free(pr->basis);
	free(pr->base_contrast);
	free(pr->base_offset);
	free(pr->quantile_contrast);
	free(pr->quantile_offset);
	free(pr->contrast);
	free(pr->offset);
	free(pr->cos_a);
	free(pr->sin_a);
	free(pr->block_i);
	free(pr->block_j);
	free(pr->slots);
	free(pr->slot_store);
	xf_frames_free(&pr->frames);
	xf_pool_destroy(pr->pool);
	memset(pr, 0, sizeof *pr);
}
