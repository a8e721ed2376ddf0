/* model.c — c2 evaluation for simulation, the surfaces, plots and tests (model.h): whole
 * rows over 8-lane vectors (model_rows_kernel.h), single points with their gradient in
 * scalar code. Fits use the likelihood passes, built from the same kernel.h pieces. */
#include "xpcsfit/model.h"
#include "model/kernel.h"
#include "model/model_rows.h"

#include <stdlib.h>

/* cos and sin of (φ0 − φ) in radians: one angle, computed once per evaluation */
typedef struct angle_terms {
	double cos_a, sin_a;
} angle_terms;

static angle_terms angle_of(const double *theta, double phi_deg)
{
	double angle = (theta[XF_P_PHI0] - phi_deg) * XF_DEG2RAD;
	return (angle_terms){ cos(angle), sin(angle) };
}

/* g1 of pair (i, j) and its gradient: the shared kernel (kernel.h) */
static double pair_g1(const xf_frames *f, const xf_model_grid *grid, angle_terms at, int i, int j,
		      double dg1[XF_N_PHYS])
{
	return xf_pair_g1(f, grid->mode, grid->shear_model, at.cos_a, at.sin_a, i, j, dg1);
}

/* A model given by its point function (adr/0116): c2 of rows [row0, row1), columns
 * [col0, n), of angle phi_deg, pair by pair (g1 is symmetric in its frames). */
static void point_rows(const xf_model_record *m, const xf_model_grid *grid, const double *theta,
		       double phi_deg, double contrast, double offset, int row0, int row1,
		       int diagonal_on, double *out)
{
	int n = grid->n_frames;
	for (int i = row0; i < row1; i++) {
		int col0 = diagonal_on ? i : 0;
		for (int j = col0; j < n; j++) {
			double g1 = i <= j ? m->g1(grid, theta, phi_deg, i, j, NULL)
					   : m->g1(grid, theta, phi_deg, j, i, NULL);
			out[(size_t)(i - row0) * n + j] = offset + contrast * g1 * g1;
		}
	}
}

/* The row evaluator's inputs for theta at one angle: frames computed, C^D and C^γ copied
 * with XF_MODEL_ROW_PAD values of padding (model_rows.h). */
typedef struct row_setup {
	xf_model_row_ctx ctx;
	xf_model_row_fn row;
	double *pad;
} row_setup;

static int row_setup_init(row_setup *r, const xf_model_grid *grid, const double *theta,
			  double phi_deg, double contrast, double offset)
{
	xf_frames f;
	int n = grid->n_frames, shear = xf_model_record_of(grid->mode)->shear;
	size_t len = (size_t)n + XF_MODEL_ROW_PAD;
	if (xf_frames_alloc(&f, n, shear))
		return -1;
	r->pad = malloc(sizeof(double) * len * 2);
	if (!r->pad) {
		xf_frames_free(&f);
		return -1;
	}
	xf_frames_compute(&f, grid, theta);
	double *cd = r->pad, *cg = r->pad + len;
	for (size_t k = 0; k < len; k++) {
		size_t src = k < (size_t)n ? k : (size_t)n - 1;
		cd[k] = n > 0 ? f.cd[src] : 0.0;
		cg[k] = shear && n > 0 ? f.cg[src] : 0.0;
	}
	angle_terms at = angle_of(theta, phi_deg);
	r->ctx = (xf_model_row_ctx){
		.cd = cd,
		.cg = cg,
		.w = f.w,
		.s_cos = f.s * at.cos_a,
		.contrast = contrast,
		.offset = offset,
		.shear = shear,
		.pnas = grid->shear_model == XF_SHEAR_PNAS2024,
	};
	r->row = xf_model_row_select();
	xf_frames_free(&f);
	return 0;
}

int xf_model_c2_rows(const xf_model_grid *grid, const double *theta, double phi_deg,
		     double contrast, double offset, int row0, int row1, double *c2_out)
{
	row_setup r;
	int n = grid->n_frames;
	const xf_model_record *m = xf_model_record_of(grid->mode);
	if (m->g1) {
		point_rows(m, grid, theta, phi_deg, contrast, offset, row0, row1, 0, c2_out);
		return 0;
	}
	if (row_setup_init(&r, grid, theta, phi_deg, contrast, offset))
		return -1;
	for (int i = row0; i < row1; i++)
		r.row(&r.ctx, i, 0, n, c2_out + (size_t)(i - row0) * n);
	free(r.pad);
	return 0;
}

#define MIRROR_TILE 64 /* the lower triangle is copied in tiles that stay in cache */

int xf_model_c2_full(const xf_model_grid *grid, const double *theta, double phi_deg,
		     double contrast, double offset, double *c2_out)
{
	row_setup r;
	size_t n = (size_t)grid->n_frames;
	const xf_model_record *m = xf_model_record_of(grid->mode);
	if (m->g1)
		point_rows(m, grid, theta, phi_deg, contrast, offset, 0, (int)n, 1, c2_out);
	else if (row_setup_init(&r, grid, theta, phi_deg, contrast, offset))
		return -1;
	for (size_t i = 0; !m->g1 && i < n; i++)
		r.row(&r.ctx, (int)i, (int)i, (int)n, c2_out + i * n + i);
	for (size_t i0 = 0; i0 < n; i0 += MIRROR_TILE)
		for (size_t j0 = 0; j0 <= i0; j0 += MIRROR_TILE)
			for (size_t i = i0; i < i0 + MIRROR_TILE && i < n; i++)
				for (size_t j = j0; j < j0 + MIRROR_TILE && j < i; j++)
					c2_out[i * n + j] = c2_out[j * n + i];
	if (!m->g1)
		free(r.pad);
	return 0;
}

int xf_model_c2_point(const xf_model_grid *grid, const double *theta, double phi_deg,
		      double contrast, double offset, int i, int j, double *c2_out, double *grad)
{
	xf_frames f;
	const xf_model_record *m = xf_model_record_of(grid->mode);
	double dg1[XF_N_PHYS] = { 0 }, g1;
	if (m->g1) { /* adr/0116: its own parameters first, zeros past them */
		g1 = i <= j ? m->g1(grid, theta, phi_deg, i, j, grad ? dg1 : NULL)
			    : m->g1(grid, theta, phi_deg, j, i, grad ? dg1 : NULL);
		f = (xf_frames){ 0 };
	} else {
		if (xf_frames_alloc(&f, grid->n_frames, m->shear))
			return -1;
		xf_frames_compute(&f, grid, theta);
		g1 = pair_g1(&f, grid, angle_of(theta, phi_deg), i, j, grad ? dg1 : NULL);
	}
	*c2_out = offset + contrast * g1 * g1;
	if (grad) {
		for (int m = 0; m < XF_N_PHYS; m++)
			grad[m] = 2.0 * contrast * g1 * dg1[m];
		grad[XF_P_CONTRAST] = g1 * g1;
		grad[XF_P_OFFSET] = 1.0;
	}
	xf_frames_free(&f);
	return 0;
}
