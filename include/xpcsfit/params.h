/* params.h — names, canonical order, aliases and default bounds of the model parameters
 * (spec/model.md). Index order is the canonical order used in every output. */
#ifndef XPCSFIT_PARAMS_H
#define XPCSFIT_PARAMS_H

enum xf_param {
	XF_P_D0 = 0,
	XF_P_ALPHA,
	XF_P_D_OFFSET,
	XF_P_GAMMA_DOT_T0,
	XF_P_BETA,
	XF_P_GAMMA_DOT_T_OFFSET,
	XF_P_PHI0,
	XF_N_PHYS, /* 7 physical parameters (laminar_flow); static uses the first 3 */
	XF_P_CONTRAST = XF_N_PHYS, /* bound slots for the per-angle scaling */
	XF_P_OFFSET,
	XF_N_BOUND_SLOTS /* 9 */
};

typedef enum xf_mode {
	XF_MODE_STATIC = 0,
	XF_MODE_LAMINAR = 1,
} xf_mode;

typedef enum xf_shear_model {
	XF_SHEAR_HOMODYNE = 0, /* sinc(Φ)^4 in c2, homodyne's code (default) */
	XF_SHEAR_PNAS2024 = 1, /* [sin(x)/x]^2, x = Φ·π (paper form) */
} xf_shear_model;

/* canonical names, index = enum xf_param (contrast, offset at 7, 8) */
extern const char *const xf_param_names[XF_N_BOUND_SLOTS];
extern const char *const xf_param_units[XF_N_BOUND_SLOTS];
/* default lower/upper bounds (model.md table) */
extern const double xf_param_default_lower[XF_N_BOUND_SLOTS];
extern const double xf_param_default_upper[XF_N_BOUND_SLOTS];
/* the template's starting values (homodyne's) and priors (xpcsfit config): priors
 * nearly flat on the default bounds, so that they do not decide typical data (adr/0040) */
extern const double xf_param_template_value[XF_N_PHYS];
extern const double xf_param_template_prior_mu[XF_N_PHYS];
extern const double xf_param_template_prior_sigma[XF_N_PHYS];

/* Number of physical parameters of a mode: 3 static, 7 laminar_flow. */
int xf_mode_n_phys(xf_mode mode);
const char *xf_mode_name(xf_mode mode);
/* Canonical name or alias (gamma_dot_0, gamma_dot_t_0, gamma_dot_offset, phi_0,
 * contrast, offset) → index, or -1 when unknown. */
int xf_param_index(const char *name);

#endif
