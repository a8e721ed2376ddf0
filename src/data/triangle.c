/* triangle.c — the full matrix from a stored triangle and the diagonal correction
 * (data.md). The correlator stores one triangle of each symmetric two-time map; which
 * one is told only by where the zeros are. */
#include <math.h>
#include <stddef.h>
#include "xpcsfit/dataset.h"

/* Relative asymmetry above which a full map is reported as not symmetric. */
#define XF_SYMMETRY_TOLERANCE 1e-6

int xf_triangle_to_full(double *m, size_t n, const char *map_name)
{
	int has_upper = 0, has_lower = 0, not_symmetric = 0;
	for (size_t i = 0; i < n && !(has_upper && has_lower); i++)
		for (size_t j = i + 1; j < n; j++) {
			/* NaN != 0 counts as stored, as it should */
			has_upper |= m[i * n + j] != 0.0;
			has_lower |= m[j * n + i] != 0.0;
		}
	if (has_upper && has_lower) {
		double max_abs = 0.0, max_diff = 0.0;
		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < n; j++) {
				double a = m[i * n + j], d = fabs(a - m[j * n + i]);
				if (fabs(a) > max_abs)
					max_abs = fabs(a);
				if (d > max_diff)
					max_diff = d;
			}
		if (!(max_diff > XF_SYMMETRY_TOLERANCE * max_abs))
			return 0; /* full symmetric map: used as it is, never doubled */
		xf_warn("map %s is a full matrix that is not symmetric (max |C - C^T| = %.3g, "
			"max |C| = %.3g): its upper triangle is used",
			map_name ? map_name : "?", max_diff, max_abs);
		has_lower = 0;
		not_symmetric = 1;
	}
	/* C = H + H^T with C[i,i] /= 2: the stored triangle mirrored, diagonal kept */
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			if (has_lower)
				m[i * n + j] = m[j * n + i];
			else
				m[j * n + i] = m[i * n + j];
		}
	return not_symmetric;
}

void xf_diagonal_correct(double *m, size_t n)
{
	if (n < 2)
		return;
	/* b_k is the mean of the two neighbours of the diagonal at (k, k+1) */
	double b_prev = 0.5 * (m[0 * n + 1] + m[1 * n + 0]);
	m[0] = b_prev;
	for (size_t k = 1; k + 1 < n; k++) {
		double b = 0.5 * (m[k * n + k + 1] + m[(k + 1) * n + k]);
		m[k * n + k] = 0.5 * (b_prev + b);
		b_prev = b;
	}
	m[(n - 1) * n + (n - 1)] = b_prev;
}

double xf_phi_normalise(double phi_deg)
{
	double p = fmod(phi_deg, 360.0);
	if (p < 0)
		p += 360.0;
	if (p > 180.0)
		p -= 360.0;
	/* (−180, 180]: 180 stays, and -180 became 180 through the shift above */
	return p + 0.0; /* no -0 */
}
