/* model_rows_kernel.h — c2 of one row of frame pairs, values only, over the native
 * vectors of the build (simd/v8.h's xf_vn: the same operations in the same order as model.c's scalar
 * pair_g1, with SLEEF's cinz u10 sincos and exp instead of libm's). The surfaces of
 * results.h5 and the plots are computed with it (model.c: xf_model_c2_rows and
 * xf_model_c2_full).
 *
 * A template like pass_laminar_kernel.h: model_rows*.c include it, each compiled for one
 * instruction set, after defining XF_MODEL_ROW (the name of the function it makes). Every
 * value is computed lane by lane with no sum across lanes, and the operations and SLEEF's
 * cinz variants are the same in every build, so every build gives the same bits whatever
 * its register width (adr/0035); a value does not depend on which lane or
 * row chunk computed it. Pair (i, j) and (j, i) give the same bits: only the square of
 * C_i − C_j enters. */
#include <math.h>

#include "model/kernel_v8.h"
#include "model/model_rows.h"

void XF_MODEL_ROW(const xf_model_row_ctx *x, int i, int j0, int j1, double *out)
{
	const double w = x->w, s_cos = x->s_cos, con = x->contrast, off = x->offset;
	const double cdi = x->cd[i], cgi = x->shear ? x->cg[i] : 0.0;
	const xf_vn floor_v = (xf_vn){ 0 } + XF_G1_FLOOR;
	for (int j = j0; j < j1; j += XF_VW) {
		/* cd and cg are padded to n + XF_MODEL_ROW_PAD (≥ XF_VW): the last lanes of a row
		 * are computed and not stored */
		xf_vn dd = cdi - vn_load(x->cd + j);
		xf_vn integral = vn_sqrt(dd * dd + XF_INTEGRAL_EPS2);
		xf_vn log_g1d = -w * integral;
		xf_vn g1 = vn_exp(
			vn_select(log_g1d < XF_LOG_G1_MIN, (xf_vn){ 0 } + XF_LOG_G1_MIN, log_g1d));
		if (x->shear) {
			xf_vn dg = cgi - vn_load(x->cg + j);
			xf_vn ig = vn_sqrt(dg * dg + XF_INTEGRAL_EPS2);
			xf_vn arg = s_cos * ig;
			if (x->pnas)
				arg = M_PI * arg;
			xf_vn sn, cs;
			xf_vn_sincos(arg, &sn, &cs);
			xf_vn inv = 1.0 / arg, sc = sn * inv;
			xf_vn ax = vn_abs(arg);
			xf_mn small = ax < XF_SINC_TAYLOR_X;
			if (vn_any(small)) {
				xf_vn x2 = arg * arg;
				sc = vn_select(small, 1.0 - x2 / 6.0 + x2 * x2 / 120.0, sc);
			}
			xf_vn factor;
			if (x->pnas) {
				xf_vn one = (xf_vn){ 0 } + 1.0;
				factor = vn_select(sc < 0.0, -one, one) * sc;
			} else {
				factor = sc * sc;
			}
			g1 = g1 * factor;
		}
		g1 = vn_select(g1 < XF_G1_FLOOR, floor_v, g1);
		xf_vn c2 = off + con * g1 * g1;
		int m = j1 - j < XF_VW ? j1 - j : XF_VW;
		if (m == XF_VW)
			vn_store(out + (j - j0), c2);
		else
			for (int q = 0; q < m; q++)
				out[j - j0 + q] = c2[q];
	}
}
