/* frames.c — per-frame cumulative rate integrals and their derivatives (kernel.h). */
#include "model/kernel.h"

#include <stdlib.h>

int xf_frames_alloc(xf_frames *f, int n_frames, int with_shear)
{
	int n_arrays = with_shear ? 9 : 5;
	f->n = n_frames;
	f->with_shear = with_shear;
	f->store = malloc(sizeof(double) * (size_t)n_arrays * (size_t)n_frames);
	if (!f->store)
		return -1;
	double *p = f->store;
	f->cd = p;
	for (int m = 0; m < 3; m++)
		f->dcd[m] = p + (size_t)(m + 1) * n_frames;
	f->cg = with_shear ? p + 4 * (size_t)n_frames : NULL;
	for (int m = 0; m < 3; m++)
		f->dcg[m] = with_shear ? p + (size_t)(5 + m) * n_frames : NULL;
	f->log_t = p + (size_t)(n_arrays - 1) * n_frames;
	f->log_t_dt = -1.0; /* no grid yet */
	return 0;
}

void xf_frames_free(xf_frames *f)
{
	free(f->store);
	f->store = NULL;
}

/* log t̃_k, t̃_k = max(k·dt, floor): fixed by the grid, so computed once per grid (a
 * pass over a small shard evaluates the frames of the whole window every time, and pow +
 * log per frame was 13 % of it). */
static void cache_log_t(xf_frames *f, const xf_model_grid *grid)
{
	if (f->log_t_dt == grid->dt_s)
		return;
	int n = grid->n_frames;
	double eps = n > 1 ? fmax(grid->dt_s / 2.0, XF_T_FLOOR_MIN) : XF_T_FLOOR_MIN;
	for (int k = 0; k < n; k++) {
		double t = (double)k * grid->dt_s;
		f->log_t[k] = log(t > eps ? t : eps);
	}
	f->log_t_dt = grid->dt_s;
}

/* Cumulative trapezoid (grid steps) of rate_k = max(a·t̃_k^e + b, floor) and of its
 * derivatives with respect to (a, e, b); the floor is hard (derivative 0 under it). */
static void cumulate_rate(const xf_model_grid *grid, const double *log_t, double a, double e,
			  double b, double *c, double *const dc[3])
{
	int n = grid->n_frames;
	double prev = 0.0, prev_d[3] = { 0.0, 0.0, 0.0 };
	for (int k = 0; k < n; k++) {
		double pw = exp(e * log_t[k]);
		double rate = a * pw + b;
		double d[3];
		if (rate <= XF_RATE_FLOOR) {
			rate = XF_RATE_FLOOR;
			d[0] = d[1] = d[2] = 0.0;
		} else {
			d[0] = pw;
			d[1] = a * pw * log_t[k];
			d[2] = 1.0;
		}
		if (k == 0) {
			c[0] = 0.0;
			for (int m = 0; m < 3; m++)
				dc[m][0] = 0.0;
		} else {
			c[k] = c[k - 1] + 0.5 * (prev + rate);
			for (int m = 0; m < 3; m++)
				dc[m][k] = dc[m][k - 1] + 0.5 * (prev_d[m] + d[m]);
		}
		prev = rate;
		for (int m = 0; m < 3; m++)
			prev_d[m] = d[m];
	}
}

void xf_frames_set_q(xf_frames *f, const xf_model_grid *grid, double q)
{
	f->w = 0.5 * q * q * grid->dt_s;
	f->s = q * grid->gap_A * grid->dt_s / (2.0 * M_PI);
}

void xf_frames_compute(xf_frames *f, const xf_model_grid *grid, const double *theta)
{
	xf_frames_set_q(f, grid, grid->q);
	cache_log_t(f, grid);
	cumulate_rate(grid, f->log_t, theta[XF_P_D0], theta[XF_P_ALPHA], theta[XF_P_D_OFFSET],
		      f->cd, f->dcd);
	if (f->with_shear)
		cumulate_rate(grid, f->log_t, theta[XF_P_GAMMA_DOT_T0], theta[XF_P_BETA],
			      theta[XF_P_GAMMA_DOT_T_OFFSET], f->cg, f->dcg);
}
