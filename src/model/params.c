/* params.c — parameter names, aliases, default bounds and priors and template values
 * (model.md), and the names of the per-angle scaling modes and of the robust losses. */
#include "xpcsfit/params.h"

#include <string.h>

const char *const xf_param_names[XF_N_BOUND_SLOTS] = {
	"D0",	"alpha",    "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset",
	"phi0", "contrast", "offset",
};

const char *const xf_param_units[XF_N_BOUND_SLOTS] = {
	"angstrom^2/s^(1+alpha)", "1", "angstrom^2/s", "1/s^(1+beta)", "1", "1/s", "deg", "1", "1",
};

/* the same units for a person (plot axes, report tables): "" when dimensionless */
static const char *const param_units_text[XF_N_BOUND_SLOTS] = {
	"Å²/s^(1+α)", "", "Å²/s", "1/s^(1+β)", "", "1/s", "degrees", "", "",
};

const double xf_param_default_lower[XF_N_BOUND_SLOTS] = {
	1e2, -2.0, -1e5, 1e-6, -2.0, -0.1, -10.0, 0.0, 0.5,
};

const double xf_param_default_upper[XF_N_BOUND_SLOTS] = {
	1e5, 2.0, 1e5, 0.5, 2.0, 0.1, 10.0, 1.0, 1.5,
};

const double xf_param_template_value[XF_N_PHYS] = { 1e3, 0.5, 10.0, 0.01, 0.5, 0.0, 0.0 };
/* The templates' priors are nearly flat on the default bounds: μ in the middle, σ the
 * bound width, so the density at a bound is e^(−1/8) ≈ 0.88 of its peak and the data,
 * not the prior, decide a typical fit (adr/0040; homodyne's 1e3/1e3 on D0 pulled a
 * measured D0 of 26 000 down to 5 700). */
const double xf_param_template_prior_mu[XF_N_PHYS] = { 5e4, 0.0, 0.0, 0.25, 0.0, 0.0, 0.0 };
const double xf_param_template_prior_sigma[XF_N_PHYS] = { 1e5, 4.0, 2e5, 0.5, 4.0, 0.2, 20.0 };

/* The models' records, in mode order. NUTS's target acceptance (adr/0041): the lowest
 * value with no divergence on any measured run, one step of margin above it; laminar
 * flow's curved posteriors need at least 0.90 whatever a config says. */
static const xf_model_record builtin[] = {
	[XF_MODE_STATIC] = { .mode = XF_MODE_STATIC,
			     .name = "static",
			     .n_phys = 3,
			     .shear = 0,
			     .scaling_individual_by_default = 1,
			     .nuts_accept_default = 0.99,
			     .nuts_accept_floor = 0.0 },
	[XF_MODE_LAMINAR] = { .mode = XF_MODE_LAMINAR,
			      .name = "laminar_flow",
			      .n_phys = 7,
			      .shear = 1,
			      .scaling_individual_by_default = 0,
			      .nuts_accept_default = 0.98,
			      .nuts_accept_floor = 0.90 },
};
#define N_BUILTIN ((int)(sizeof builtin / sizeof builtin[0]))

/* Models given by their point function (xf_model_register, adr/0116), modes N_BUILTIN on */
static xf_model_record registered[XF_MODELS_MAX - N_BUILTIN];
static int n_registered;

const char *const xf_mode_names[] = {
	"static", "laminar_flow", "static_isotropic", "static_anisotropic", NULL,
};
const xf_mode xf_mode_named[] = { XF_MODE_STATIC, XF_MODE_LAMINAR, XF_MODE_STATIC, XF_MODE_STATIC };

const xf_model_record *xf_model_at(int k)
{
	if (k >= 0 && k < N_BUILTIN)
		return &builtin[k];
	if (k >= N_BUILTIN && k < N_BUILTIN + n_registered)
		return &registered[k - N_BUILTIN];
	return NULL;
}

const xf_model_record *xf_model_record_of(xf_mode mode)
{
	const xf_model_record *m = xf_model_at((int)mode);
	return m ? m : &builtin[0];
}

const xf_model_record *xf_model_default(void)
{
	return &builtin[XF_MODE_STATIC];
}

int xf_model_count(void)
{
	return N_BUILTIN + n_registered;
}

static const xf_model_record *model_named(const char *name)
{
	for (int k = 0; name && k < xf_model_count(); k++)
		if (!strcmp(xf_model_at(k)->name, name))
			return xf_model_at(k);
	return NULL;
}

/* Every row of a model's own parameter table named, with units and bounds lower < upper */
static int params_whole(const xf_model_record *record)
{
	for (int k = 0; record->params && k < record->n_phys; k++) {
		const xf_param_def *p = &record->params[k];
		if (!p->name || !p->unit || !p->unit_text || !(p->lower < p->upper))
			return 0;
	}
	return 1;
}

xf_mode xf_model_register(const xf_model_record *record)
{
	xf_mode known;
	if (!record || !record->g1 || !record->name || record->n_phys < 1 ||
	    record->n_phys > XF_N_PHYS || !params_whole(record) || model_named(record->name) ||
	    xf_mode_parse(record->name, &known) == 0 || n_registered >= XF_MODELS_MAX - N_BUILTIN)
		return (xf_mode)-1;
	xf_model_record *m = &registered[n_registered];
	*m = *record;
	m->mode = (xf_mode)(N_BUILTIN + n_registered);
	m->shear = 0; /* the shear terms are the laminar kernel's */
	n_registered++;
	return m->mode;
}

xf_param_def xf_model_param(const xf_model_record *model, int k)
{
	if (model->params)
		return model->params[k];
	return (xf_param_def){ .name = xf_param_names[k],
			       .unit = xf_param_units[k],
			       .unit_text = param_units_text[k],
			       .lower = xf_param_default_lower[k],
			       .upper = xf_param_default_upper[k],
			       .template_value = xf_param_template_value[k],
			       .template_prior_mu = xf_param_template_prior_mu[k],
			       .template_prior_sigma = xf_param_template_prior_sigma[k] };
}

const char *xf_model_param_name(const xf_model_record *model, int k)
{
	return xf_model_param(model, k).name;
}

int xf_model_param_index(const xf_model_record *model, const char *name)
{
	if (!name)
		return -1;
	if (!model->params)
		return xf_param_index(name);
	for (int k = 0; k < model->n_phys; k++)
		if (!strcmp(name, model->params[k].name))
			return k;
	int k = xf_param_index(name);
	return k >= XF_N_PHYS ? k : -1; /* contrast, offset: the scaling's slots */
}

const char *xf_model_slot_name(const xf_model_record *model, int k)
{
	return k >= 0 && k < model->n_phys ? xf_model_param_name(model, k) : xf_param_names[k];
}

const char *xf_model_param_unit(const xf_model_record *model, int k)
{
	return k >= 0 && k < model->n_phys ? xf_model_param(model, k).unit : "";
}

void xf_model_bounds_default(const xf_model_record *model, xf_bound b[XF_N_BOUND_SLOTS])
{
	xf_bounds_default(b);
	for (int k = 0; k < model->n_phys; k++) {
		xf_param_def p = xf_model_param(model, k);
		b[k].lower = p.lower;
		b[k].upper = p.upper;
		xf_bound_default_prior(&b[k]);
	}
}

int xf_mode_n_phys(xf_mode mode)
{
	return xf_model_record_of(mode)->n_phys;
}

const char *xf_mode_name(xf_mode mode)
{
	return xf_model_record_of(mode)->name;
}

int xf_mode_parse(const char *name, xf_mode *mode)
{
	for (size_t k = 0; name && xf_mode_names[k]; k++)
		if (!strcmp(name, xf_mode_names[k])) {
			*mode = xf_mode_named[k];
			return 0;
		}
	/* a registered model by its own name (not a config's choice: adr/0116) */
	for (int k = N_BUILTIN; name && k < xf_model_count(); k++)
		if (!strcmp(name, xf_model_at(k)->name)) {
			*mode = xf_model_at(k)->mode;
			return 0;
		}
	return -1;
}

int xf_param_index(const char *name)
{
	static const struct {
		const char *alias;
		int index;
	} aliases[] = {
		{ "gamma_dot_0", XF_P_GAMMA_DOT_T0 },
		{ "gamma_dot_t_0", XF_P_GAMMA_DOT_T0 },
		{ "gamma_dot_offset", XF_P_GAMMA_DOT_T_OFFSET },
		{ "phi_0", XF_P_PHI0 },
	};
	for (int k = 0; k < XF_N_BOUND_SLOTS; k++)
		if (strcmp(name, xf_param_names[k]) == 0)
			return k;
	for (size_t k = 0; k < sizeof aliases / sizeof aliases[0]; k++)
		if (strcmp(name, aliases[k].alias) == 0)
			return aliases[k].index;
	return -1;
}

/* A registered model's own parameter named name, or NULL */
static const xf_param_def *registered_param(const char *name)
{
	for (int m = 0; name && m < n_registered; m++)
		for (int k = 0; registered[m].params && k < registered[m].n_phys; k++)
			if (!strcmp(registered[m].params[k].name, name))
				return &registered[m].params[k];
	return NULL;
}

const char *xf_param_unit(const char *name)
{
	int k = name ? xf_param_index(name) : -1;
	if (k >= 0)
		return xf_param_units[k];
	if (name && (!strncmp(name, "contrast_", 9) || !strncmp(name, "offset_", 7)))
		return "1"; /* a scaling coefficient: contrast and offset are dimensionless */
	const xf_param_def *p = registered_param(name);
	return p ? p->unit : "";
}

const char *xf_param_unit_text(const char *name)
{
	int k = name ? xf_param_index(name) : -1;
	if (k >= 0)
		return param_units_text[k];
	const xf_param_def *p = registered_param(name);
	return p ? p->unit_text : "";
}

const char *xf_scaling_mode_used_name(xf_scaling_mode mode)
{
	return mode == XF_SCALING_AUTO ? "shared" : xf_scaling_mode_name(mode);
}

const char *xf_scaling_mode_name(xf_scaling_mode mode)
{
	switch (mode) {
	case XF_SCALING_AUTO: return "auto";
	case XF_SCALING_INDIVIDUAL: return "individual";
	case XF_SCALING_CONSTANT: return "constant";
	case XF_SCALING_FOURIER: return "fourier";
	case XF_SCALING_FOLLOW_NLSQ: return "follow_nlsq";
	}
	return "unknown";
}

const char *xf_loss_name(xf_loss loss)
{
	switch (loss) {
	case XF_LOSS_LINEAR: return "linear";
	case XF_LOSS_SOFT_L1: return "soft_l1";
	case XF_LOSS_HUBER: return "huber";
	case XF_LOSS_CAUCHY: return "cauchy";
	case XF_LOSS_ARCTAN: return "arctan";
	}
	return "unknown";
}

void xf_bound_default_prior(xf_bound *b)
{
	b->prior_mu = 0.5 * (b->lower + b->upper);
	b->prior_sigma = 0.25 * (b->upper - b->lower);
}

void xf_bounds_default(xf_bound b[XF_N_BOUND_SLOTS])
{
	for (int k = 0; k < XF_N_BOUND_SLOTS; k++) {
		b[k].lower = xf_param_default_lower[k];
		b[k].upper = xf_param_default_upper[k];
		xf_bound_default_prior(&b[k]);
	}
}
