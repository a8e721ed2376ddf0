/* joint_rings.h — the service behind `xpcsfit nlsq --joint` (adr/0066, adr/0074,
 * adr/0111): after the joint fit, each ring fitted alone, the leave-one-out check of the
 * rings against each other, each ring's χ² and Fisher information at the joint estimate,
 * and the joint fit's quality marked from them. It takes the request and NLSQ's options,
 * never the config; the command line prints what it returns and writes the folder. */
#ifndef XPCSFIT_SERVICES_JOINT_RINGS_H
#define XPCSFIT_SERVICES_JOINT_RINGS_H

#include <stddef.h>

#include "nlsq/ring_consistency.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/error.h"
#include "xpcsfit/nlsq.h"
#include "xpcsfit/request.h"

/* |Δ| / sqrt(sd_ring² + sd_others²) above which a ring disagrees with the others */
#define XF_JOINT_FLAG_Z 3.0
/* A ring whose largest information share over the free physical parameters is below
 * this, and below a tenth of an equal share (1/n_rings), informs none of them (issue 26:
 * a ring whose correlation hardly changes over the frame window, measured 1e-5) */
#define XF_JOINT_UNINFORMED_SHARE 0.01
/* |correlation| of a ring's contrast and offset beyond which the data do not tell them
 * apart (c2 ≈ offset + contrast when g1 barely decays) */
#define XF_JOINT_PAIR_CORR 0.99

/* One ring beside the joint fit */
typedef struct xf_joint_ring_check {
	xf_ring_test t; /* the consistency check (adr/0074) */
	int usable;	/* its own fit is a measurement (not failed, not a ridge) */
	/* its largest information share over the free physical parameters, which one, and
	 * whether that says it informs none of them */
	double top_share;
	int top_param;
	int uninformed;
	double pair_corr; /* largest |corr(contrast, offset)| of its slots at the joint fit */
} xf_joint_ring_check;

/* What the rings say of the joint fit: arrays of n_rings (info: n_rings × n_phys, the
 * diagonal of each ring's JᵀJ over the physical parameters) */
typedef struct xf_joint_rings {
	int n_rings, n_phys;
	xf_nlsq_result *own; /* each ring's own fit */
	xf_joint_ring_check *chk;
	double *chi2; /* each ring's χ² at the joint estimate */
	double *info;
	/* two usable rings: their largest sd distance and its parameter (NaN, −1: more) */
	double pair_z;
	int pair_param;
} xf_joint_rings;

/* The rings' record of the joint fit res of rings[0..n_rings) (joined side by side as
 * joint, each slot at slot_q): base is the request of one ring (no slot_q), o NLSQ's
 * options. The fits are collective over MPI ranks (xpcsfit/dist.h). res's quality is
 * marked (marginal, with a reason) where a ring is flagged or informs no physical
 * parameter, or two rings disagree. Returns 0 or the error's code; xf_joint_rings_free
 * either way. */
int xf_joint_rings_judge(const xf_request *base, const xf_nlsq_options *o, const xf_dataset *rings,
			 int n_rings, const xf_dataset *joint, const double *slot_q, int threads,
			 xf_nlsq_result *res, xf_joint_rings *jr, xf_error *err);
void xf_joint_rings_free(xf_joint_rings *jr);

/* The one line that names ring k informing no physical parameter, and what to do */
void xf_joint_uninformed_text(const xf_joint_rings *jr, const xf_dataset *rings, int k, char *buf,
			      size_t size);

#endif
