/* params.h — names, canonical order, aliases and default bounds of the model parameters
 * (spec/model.md), the per-angle scaling modes, the bound/prior record of a parameter and
 * the robust losses: the basic types the problem request (request.h) is made of.
 * Index order is the canonical order used in every output. */
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

/* How per-angle contrast and offset are parameterised (spec/nlsq.md). */
typedef enum xf_scaling_mode {
	XF_SCALING_AUTO = 0,
	XF_SCALING_INDIVIDUAL,
	XF_SCALING_CONSTANT,
	XF_SCALING_FOURIER,
	XF_SCALING_FOLLOW_NLSQ, /* only for cmc.per_angle_mode: null */
} xf_scaling_mode;

const char *xf_scaling_mode_name(xf_scaling_mode mode);
/* The name of the mode a fit used, for results and the console: "shared" for auto (one
 * contrast and one offset for every angle), else xf_scaling_mode_name. */
const char *xf_scaling_mode_used_name(xf_scaling_mode mode);

/* The bounds and the Gaussian prior of one parameter (or one bound slot). */
typedef struct xf_bound {
	double lower;	    /* inclusive lower bound */
	double upper;	    /* inclusive upper bound */
	double prior_mu;    /* given, or the middle of the bounds */
	double prior_sigma; /* given, or a quarter of the bound width */
} xf_bound;

/* XF_KEY_NLSQ_LOSS: SciPy least_squares' robust losses ρ(z), z = (r/f_scale)²
 * with r the residual over σ (docs/nlsq.md "Robust losses", adr/0033) */
typedef enum xf_loss {
	XF_LOSS_LINEAR = 0, /* ρ = z: least squares (the default) */
	XF_LOSS_SOFT_L1,    /* 2(√(1+z) − 1) */
	XF_LOSS_HUBER,	    /* z for z ≤ 1, 2√z − 1 beyond */
	XF_LOSS_CAUCHY,	    /* ln(1 + z) */
	XF_LOSS_ARCTAN,	    /* arctan(z) */
} xf_loss;

/* "linear", "soft_l1", ... */
const char *xf_loss_name(xf_loss loss);

/* geometry.stator_rotor_gap when the config gives none, Å (spec/config.md) */
#define XF_DEFAULT_GAP_A 2e6

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

/* homodyne's prior for a bounds entry without one (model.md): μ in the middle of the
 * bounds, σ a quarter of their width */
void xf_bound_default_prior(xf_bound *b);
/* Every slot's default bounds (model.md table) with that prior */
void xf_bounds_default(xf_bound b[XF_N_BOUND_SLOTS]);

/* One physical parameter of a model (adr/0122): its name, its unit as result files write
 * it and as a person reads it, its default bounds, and the template's start and prior. */
typedef struct xf_param_def {
	const char *name;
	const char *unit;      /* "angstrom^2/s^(1+alpha)", "1", …: results.h5, posterior.nc */
	const char *unit_text; /* "Å²/s^(1+α)"; "" when dimensionless: plots, report pages */
	double lower, upper;   /* the default bounds */
	double template_value, template_prior_mu, template_prior_sigma;
} xf_param_def;

/* A model's record (model/params.c, adr/0113): what the code asks of a model rather than
 * which one it is. */
struct xf_model_grid; /* model.h */
typedef struct xf_model_record {
	xf_mode mode;
	const char *name; /* the name results carry: "static", "laminar_flow" */
	int n_phys;	  /* 3 (D0, alpha, D_offset), 7 (and the shear terms) */
	/* 1: c2 depends on the angle through the shear terms, and the stator–rotor gap
	 * is read */
	int shear;
	/* 1: each angle has its own contrast and offset unless anti_degeneracy.enable
	 * (homodyne's static; nlsq.md), whatever per_angle_mode says */
	int scaling_individual_by_default;
	/* NUTS's target acceptance when the config gives none, and the floor under a given
	 * one (0: none); adr/0041 */
	double nuts_accept_default, nuts_accept_floor;
	/* A model given by its point function (adr/0116; NULL for static and laminar_flow,
	 * whose kernels are written out): g1 of frames (i, j), i < j, at angle phi_deg for
	 * theta (its n_phys parameters), and ∂g1/∂θ into dg1[n_phys] when dg1 is not NULL.
	 * The likelihood's generic kernel, the model's c2 (model.h) and so simulation,
	 * surfaces and fits evaluate it point by point. */
	double (*g1)(const struct xf_model_grid *grid, const double *theta, double phi_deg, int i,
		     int j, double *dg1);
	/* its physical parameters ([n_phys]); NULL: the first n_phys of the built-in table
	 * above (xf_param_names, units, default bounds, template values; static and
	 * laminar_flow) */
	const xf_param_def *params;
	/* A point model's start estimator (adr/0128), optional: its physical parameters'
	 * start values into theta[n_phys] from what the data show, g1sq[k] the mean over
	 * angles and t1 of the normalised c2, (c2 − offset)/contrast, at lag lag_s[k]
	 * (k < n_lags, lag 1, 2, … frames; NaN where no pair has it). NLSQ clips them into
	 * the bounds and keeps fixed values; NULL: NLSQ starts from the request (adr/0123).
	 * The built-in models' estimator is NLSQ's own (nlsq/start.c). */
	void (*start)(const struct xf_model_grid *grid, int n_lags, const double *lag_s,
		      const double *g1sq, double *theta);
} xf_model_record;

const xf_model_record *xf_model_record_of(xf_mode mode);
/* The model a config or a result file that names none is (static, spec/config.md). */
const xf_model_record *xf_model_default(void);
/* The registered models, in mode order: xf_model_at(k) for k < xf_model_count(). */
int xf_model_count(void);
const xf_model_record *xf_model_at(int k);
/* Register a model given by its point function (record->g1 set, 1 ≤ n_phys ≤ 7, a name
 * no model has, its own parameter rows, if any, each named with units and lower < upper;
 * the rows must outlive the runs): a copy of the record is kept and its mode, the next
 * free one, returned; −1 when the record is not such a model or XF_MODELS_MAX are
 * registered. Registration is done once,
 * before any run starts (not thread-safe). */
#define XF_MODELS_MAX 8
xf_mode xf_model_register(const xf_model_record *record);
/* Parameter k (< n_phys) of a model: its own table's row, else the built-in table's. */
xf_param_def xf_model_param(const xf_model_record *model, int k);
/* Its name (xf_model_param(model, k).name) */
const char *xf_model_param_name(const xf_model_record *model, int k);
/* The bounds slot a config's name gives in model's parameter table: its own parameters'
 * names (a built-in model's aliases too), then contrast and offset; −1 for a name the
 * model has not (a registered model's table replaces the built-in names). */
int xf_model_param_index(const xf_model_record *model, const char *name);
/* The name of bounds slot k of model: its parameter's, else "contrast" or "offset" */
const char *xf_model_slot_name(const xf_model_record *model, int k);
/* Its unit as result files write it; "" for k ≥ n_phys (the scaling coefficients) */
const char *xf_model_param_unit(const xf_model_record *model, int k);
/* Every slot's default bounds for the model, each with homodyne's default prior
 * (xf_bound_default_prior): its parameters' rows, then contrast and offset */
void xf_model_bounds_default(const xf_model_record *model, xf_bound b[XF_N_BOUND_SLOTS]);
/* Every name a config, an option or a result file may give a model, NULL-terminated
 * (homodyne's "static_isotropic" and "static_anisotropic" are static here, model.md),
 * and the mode each names: the config reader's choices and xf_mode_parse read these. */
extern const char *const xf_mode_names[];
extern const xf_mode xf_mode_named[];

/* Number of physical parameters of a mode: 3 static, 7 laminar_flow. */
int xf_mode_n_phys(xf_mode mode);
const char *xf_mode_name(xf_mode mode);
/* The mode a config, an option or a result file names: "static", "laminar_flow", and
 * homodyne's "static_isotropic" and "static_anisotropic" (static here, model.md); 0, or
 * -1 (mode untouched) for a name that is none. */
int xf_mode_parse(const char *name, xf_mode *mode);
/* Canonical name or alias (gamma_dot_0, gamma_dot_t_0, gamma_dot_offset, phi_0,
 * contrast, offset) → index, or -1 when unknown. */
int xf_param_index(const char *name);
/* The unit of a parameter of a result by its name (xf_param_units; "1" for the per-angle
 * scaling coefficients "contrast_003", "offset_cos1", ...; "" for an unknown name): the
 * one rule behind every parameter_units and the units column of report.html. */
const char *xf_param_unit(const char *name);
/* The same unit written for a person, UTF-8 ("Å²/s^(1+α)", "1/s", "degrees"; "" when
 * dimensionless or unknown): the axis labels of params_vs_q.png and the heads of the
 * rings' tables in report.html. */
const char *xf_param_unit_text(const char *name);

#endif
