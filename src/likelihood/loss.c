/* loss.c — the robust losses of SciPy's least_squares, as its documentation defines them:
 * ρ of z = (r/f_scale)², cost f_scale²·Σρ. An xpcsfit fit and a SciPy fit minimise the
 * same cost (tests/test_nlsq_robust.py); the Gauss–Newton weight is plain IRLS. */
#include "likelihood/loss.h"

#include <math.h>

void xf_loss_rho(xf_loss loss, double z, double rho[2])
{
	switch (loss) {
	case XF_LOSS_SOFT_L1: {
		double st = sqrt(1.0 + z);
		rho[0] = 2.0 * (st - 1.0);
		rho[1] = 1.0 / st;
		return;
	}
	case XF_LOSS_HUBER:
		if (z <= 1.0) {
			rho[0] = z;
			rho[1] = 1.0;
		} else {
			double sz = sqrt(z);
			rho[0] = 2.0 * sz - 1.0;
			rho[1] = 1.0 / sz;
		}
		return;
	case XF_LOSS_CAUCHY:
		rho[0] = log1p(z);
		rho[1] = 1.0 / (1.0 + z);
		return;
	case XF_LOSS_ARCTAN:
		rho[0] = atan(z);
		rho[1] = 1.0 / (1.0 + z * z);
		return;
	case XF_LOSS_LINEAR: break;
	}
	rho[0] = z;
	rho[1] = 1.0;
}

xf_loss_point xf_loss_point_of(xf_loss loss, double s, double r)
{
	double rho[2];
	double u = r / s;
	xf_loss_rho(loss, u * u, rho);
	xf_loss_point pt = { s * s * rho[0], rho[1], rho[1] };
	return pt;
}
