/* request.h — the problem request: everything a fit needs besides the data, as one typed
 * record built once by the command line from the config (src/cli/request_build.c) and
 * passed down to xf_problem_build and the methods; nothing below src/cli/ reads the raw
 * config (adr/0043). On the model floor beside params.h, so that data/ (the simulate
 * writer) can take it too; the rule that derives the posterior's request is
 * xf_request_for_posterior in likelihood.h. This header must not include config.h.
 *
 * The per-angle rule is kept as its inputs: which mode applies also depends on the
 * angles the data keep, so xf_problem_build resolves it against the dataset. */
#ifndef XPCSFIT_REQUEST_H
#define XPCSFIT_REQUEST_H

#include "xpcsfit/model.h"
#include "xpcsfit/params.h"

typedef struct xf_request {
	xf_mode mode; /* static (3 physical parameters) or laminar_flow (7) */
	/* the model grid's geometry; the dataset supplies n_frames, dt and q */
	xf_shear_model shear_model;
	double gap_A; /* stator–rotor gap, Å */

	/* the per-angle rule's inputs (spec/nlsq.md) */
	xf_scaling_mode per_angle_mode; /* asked for: auto, individual, constant, fourier */
	int anti_degeneracy;		/* 0: static fits individual whatever is asked */
	int constant_scaling_threshold; /* auto shares one contrast/offset from this many angles */
	int fourier_order;		/* K: 2K+1 coefficients per quantity */

	/* σ policy: a known constant σ of the data, or 1 in the pass (NLSQ estimates it
	 * from the residuals, CMC samples it) */
	int has_sigma;
	double sigma;

	/* per parameter, index = enum xf_param (contrast, offset in their slots) */
	xf_bound bounds[XF_N_BOUND_SLOTS];
	double start[XF_N_PHYS];    /* the start: the given value, else the middle of the bounds */
	int value_given[XF_N_PHYS]; /* 1 where the start was given */
	int fixed[XF_N_PHYS];	    /* 1: held at start */

	/* per-angle starts of contrast and offset: 0 (the quantile estimates), 1 (every
	 * angle) or one per kept angle. Borrowed: the arrays outlive the request. */
	int n_contrast_start;
	const double *contrast_start;
	int n_offset_start;
	const double *offset_start;

	/* q per kept angle slot (adr/0064): 0 (every slot at the dataset's q, one ring) or
	 * one per slot, the slots of a ring side by side (a ring is a run of equal q).
	 * Borrowed, like the starts above. */
	int n_slot_q;
	const double *slot_q;
} xf_request;

/* The request of a config that sets nothing but the mode (docs/config.md): the homodyne
 * shear model, the default gap, the per-angle rule of xf_nlsq_options_defaults, no σ, the
 * default bounds and priors (xf_bounds_default), every start in the middle of its bounds,
 * nothing fixed (model/request.c). */
void xf_request_defaults(xf_request *req, xf_mode mode);

/* The model grid of the request on a dataset's frames (n_frames, dt_s) at q: its mode,
 * shear model and gap (the grid a result's surfaces and plots are drawn on). */
xf_model_grid xf_request_grid(const xf_request *req, int n_frames, double dt_s, double q);

#endif
