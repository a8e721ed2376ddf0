/* loss.h — SciPy least_squares' robust losses (docs/nlsq.md "Robust losses", adr/0033):
 * ρ(z) and ρ'(z) at z = (r/s)², s = σ·f_scale. Internal to src/likelihood/. */
#ifndef XPCSFIT_LIKELIHOOD_LOSS_H
#define XPCSFIT_LIKELIHOOD_LOSS_H

#include "xpcsfit/params.h"

/* One point's share of the robust pass: its cost s²ρ(z) (r² for linear), the weight of
 * its Jᵀr term ρ'(z) (the exact gradient of the cost) and of its JᵀJ term, ρ'(z) too:
 * plain IRLS, not SciPy's ρ' + 2ρ''z (adr/0033 says why). */
typedef struct xf_loss_point {
	double cost, w_grad, w_hess;
} xf_loss_point;

/* ρ and ρ' of loss at z >= 0 into rho[2]. */
void xf_loss_rho(xf_loss loss, double z, double rho[2]);

/* The share of residual r (data − model, not divided by σ) with s = σ·f_scale > 0. */
xf_loss_point xf_loss_point_of(xf_loss loss, double s, double r);

#endif
