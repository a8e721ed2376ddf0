/* config_table.c — the table of config keys (adr/0119): one row per key with its type,
 * its range or rule, where its value lives in xf_config and the template's comment. The
 * reader reads the rows of a section in table order (the first bad value is the one
 * reported, as before), the section's known keys are the table's, and the template
 * writes the rows with the values of xf_config_defaults, so the template cannot disagree
 * with the defaults. First the posterior's section, optimization.cmc; tests/test_config.c
 * checks every row against docs/config.md and the template's round trip. */
#include "config/config_internal.h"
#include "util/key_names.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* NUTS doubles its trajectory per level: beyond 2^30 leapfrog steps is never meant */
#define XF_MAX_TREE_DEPTH 30

#define AT(field) offsetof(xf_config, field)

/* The own rows' readers: a choice and what it means, a value with its flag */

/* optimization.nlsq.sigma: a constant σ of the data, or null (unknown) */
static int read_sigma(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		      xf_config *cfg)
{
	return xf_cfg_number(r, map, row->section, row->name, row->check, &cfg->nlsq.sigma,
			     &cfg->nlsq.has_sigma);
}

static const char *const loss_names[] = {
	"linear", "soft_l1", "huber", "cauchy", "arctan", NULL,
};

/* optimization.nlsq.loss: SciPy's robust losses, in enum xf_loss order */
static int read_loss(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		     xf_config *cfg)
{
	int loss = 0, given = 0;
	int rc = xf_cfg_choice(r, map, row->section, row->name, row->choices, &loss, &given);
	if (!rc && given)
		cfg->nlsq.loss = (xf_loss)loss;
	return rc;
}

/* optimization.nlsq.tolerance: homodyne's name for ftol; an explicit ftol wins */
static int read_tolerance(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			  xf_config *cfg)
{
	double tolerance = 0.0, ftol = cfg->nlsq.ftol;
	int has_tolerance = 0, has_ftol = 0;
	int rc = xf_cfg_number(r, map, row->section, row->name, row->check, &tolerance,
			       &has_tolerance);
	if (rc || !has_tolerance ||
	    (rc = xf_cfg_number(r, map, row->section, "ftol", XF_CHECK_POSITIVE, &ftol, &has_ftol)))
		return rc;
	if (!has_ftol)
		cfg->nlsq.ftol = tolerance;
	else if (tolerance != cfg->nlsq.ftol)
		xf_warn(XF_KEY_NLSQ_TOLERANCE " (%g) and ftol (%g) both given; using ftol, "
					      "in %s:%d",
			tolerance, cfg->nlsq.ftol, r->file, xf_ynode_key_line(map, "tolerance"));
	return 0;
}

static const char *const nlsq_mode_names[] = { "auto", "individual", "constant", "fourier", NULL };

/* optimization.nlsq.anti_degeneracy.per_angle_mode */
static int read_nlsq_mode(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			  xf_config *cfg)
{
	static const xf_scaling_mode values[] = {
		XF_SCALING_AUTO,
		XF_SCALING_INDIVIDUAL,
		XF_SCALING_CONSTANT,
		XF_SCALING_FOURIER,
	};
	int index = 0, given = 0;
	int rc = xf_cfg_choice(r, map, row->section, row->name, row->choices, &index, &given);
	if (!rc && given)
		cfg->nlsq.per_angle_mode = values[index];
	return rc;
}

static const char *const cmc_mode_names[] = { "auto", "individual", "constant", NULL };

/* optimization.cmc.per_angle_mode: fourier is NLSQ-only (CMC turns it into individual
 * when following NLSQ, cmc.md); absent or null: the mode NLSQ used */
static int read_cmc_mode(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			 xf_config *cfg)
{
	static const xf_scaling_mode values[] = {
		XF_SCALING_AUTO,
		XF_SCALING_INDIVIDUAL,
		XF_SCALING_CONSTANT,
	};
	int index = 0, given = 0;
	int rc = xf_cfg_choice(r, map, row->section, row->name, row->choices, &index, &given);
	if (!rc)
		cfg->cmc.per_angle_mode = given ? values[index] : XF_SCALING_FOLLOW_NLSQ;
	return rc;
}

/* A choice whose value is its index among names, the first when absent or null; *out
 * is set only when the row reads */
static int choice_index(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			const char *const *names, int *out)
{
	int index = 0, given = 0;
	int rc = xf_cfg_choice(r, map, row->section, row->name, names, &index, &given);
	if (!rc)
		*out = given ? index : 0;
	return rc;
}

static const char *const ring_mode_names[] = { "per_ring", "joint", NULL };

/* optimization.rings (xpcsfit's own, adr/0066): several selected q rings each fitted
 * alone, or one joint fit */
static int read_rings(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		      xf_config *cfg)
{
	return choice_index(r, map, row, row->choices, &cfg->rings_joint);
}

/* optimization.cmc.route (xpcsfit's own, adr/0045): how one shard's exact posterior is
 * reached */
static int read_cmc_route(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			  xf_config *cfg)
{
	int index = 0;
	int rc = choice_index(r, map, row, row->choices, &index);
	if (!rc)
		cfg->cmc.route = (xf_cmc_route)index;
	return rc;
}

static const char *const combination_methods[] = {
	"robust_consensus_mc",
	"consensus_mc",
	"gaussian_product",
	"homodyne_marginal",
	"weighted_gaussian",
	"simple_average",
	"auto",
	NULL,
};

/* optimization.cmc.combination.method; the last three are homodyne's deprecated names
 * (cmc.md), read as robust_consensus_mc with a warning */
static int read_combination_method(const xf_cfg_reader *r, const xf_ynode *map,
				   const xf_cfg_key *row, xf_config *cfg)
{
	enum { N_OWN_METHODS = 4 };
	int index = 0, given = 0;
	int rc = xf_cfg_choice(r, map, row->section, row->name, row->choices, &index, &given);
	if (rc || !given)
		return rc;
	if (index >= N_OWN_METHODS) {
		xf_warn(XF_KEY_CMC_COMBINATION ": '%s' is a deprecated homodyne "
					       "name; using robust_consensus_mc, in %s:%d",
			row->choices[index], r->file, xf_ynode_get(map, "method")->line);
		index = 0;
	}
	return xf_combination_rule_parse(row->choices[index], &cfg->cmc.combination) ? XF_ERR_CONFIG
										     : 0;
}

/* A text key whose value its section's code uses with others (experimental_data's
 * folder and name joined): checked here, in table order */
static int read_text(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
		     xf_config *cfg)
{
	const char *text = NULL;
	(void)cfg;
	return xf_cfg_string(r, map, row->section, row->name, &text);
}

/* output.base_directory: the result folder when --out is not given */
static int read_base_directory(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			       xf_config *cfg)
{
	const char *base = NULL;
	int rc = xf_cfg_string(r, map, row->section, row->name, &base);
	if (rc || !(base && base[0]))
		return rc;
	free(cfg->base_directory);
	if (!(cfg->base_directory = strdup(base)))
		return xf_fail(r->err, XF_ERR_NOMEM, "out of memory reading %s", r->file);
	return 0;
}

/* output.directory: homodyne's current templates' name for it; base_directory wins */
static int read_directory(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			  xf_config *cfg)
{
	const char *dir = NULL;
	int rc = xf_cfg_string(r, map, row->section, row->name, &dir);
	if (rc || cfg->base_directory || !(dir && dir[0]))
		return rc;
	if (!(cfg->base_directory = strdup(dir)))
		return xf_fail(r->err, XF_ERR_NOMEM, "out of memory reading %s", r->file);
	return 0;
}

static const char *const surface_names[] = { "none", "full", NULL };

/* output.surfaces (xpcsfit's own): the index is the value of xf_config.output_surfaces */
static int read_surfaces(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			 xf_config *cfg)
{
	return choice_index(r, map, row, row->choices, &cfg->output_surfaces);
}

static const char *const log_level_names[] = {
	"DEBUG", "INFO",    "WARNING", "ERROR",	   "CRITICAL", "debug",
	"info",	 "warning", "error",   "critical", NULL,
};

/* logging.level: homodyne's Python logging level names; CRITICAL behaves as ERROR */
static int read_log_level(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			  xf_config *cfg)
{
	static const xf_log_level values[] = {
		XF_VERBOSITY_DEBUG, XF_VERBOSITY_INFO,	XF_VERBOSITY_WARNING, XF_VERBOSITY_ERROR,
		XF_VERBOSITY_ERROR, XF_VERBOSITY_DEBUG, XF_VERBOSITY_INFO,    XF_VERBOSITY_WARNING,
		XF_VERBOSITY_ERROR, XF_VERBOSITY_ERROR,
	};
	int index = 0, given = 0;
	int rc = xf_cfg_choice(r, map, row->section, row->name, row->choices, &index, &given);
	if (!rc && given)
		cfg->verbosity = values[index];
	return rc;
}

static const char *const angle_page_names[] = { "auto", "all", NULL };

/* plotting.angle_pages (xpcsfit's own): the index is the value of
 * xf_config.plot_all_angles */
static int read_angle_pages(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
			    xf_config *cfg)
{
	return choice_index(r, map, row, row->choices, &cfg->plot_all_angles);
}

/* parallel.virtual_devices: auto (0: the online cores) or a count, as --threads */
static int read_virtual_devices(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *row,
				xf_config *cfg)
{
	long devices = cfg->virtual_devices;
	int rc = xf_cfg_int_or_auto(r, map, row->section, row->name, row->hi, &devices);
	if (!rc)
		cfg->virtual_devices = (int)devices;
	return rc;
}

/* plotting.dpi: pages from a quarter to six times their nominal (100 dpi) size; a
 * larger one is a ~10000 px PNG per angle, too slow and big to be meant */
#define XF_PLOT_DPI_MIN 25
#define XF_PLOT_DPI_MAX 600

static const xf_cfg_key keys[] = {
	/* the data file: the pair, else file_path (config_read.c joins them) */
	{ "experimental_data", "data_folder_path", XF_KEY_OWN, 0, 0, 0, 0,
	  "the folder of data_file_name", "./data/", XF_SHOWN_EXAMPLE, read_text, NULL,
	  "a text (a folder)" },
	{ "experimental_data", "data_file_name", XF_KEY_OWN, 0, 0, 0, 0,
	  "with data_folder_path: the data file", "sample.h5", XF_SHOWN_EXAMPLE, read_text, NULL,
	  "a text (a file name or path)" },
	{ "experimental_data", "file_path", XF_KEY_OWN, 0, 0, 0, 0,
	  "data/sample.h5: the data file when data_file_name is absent", NULL, XF_SHOWN_ABSENT,
	  read_text, NULL, "a text (a file path)" },
	/* the parameters (config_params.c): named by the model's table, which the template's
	 * lines come from; the bounds before the start values, which are checked against
	 * them (config_read.c reads parameter_space first) */
	{ "parameter_space", "model", XF_KEY_OWN, 0, 0, 0, 0,
	  "homodyne's mode label: read when analysis_mode is absent", "absent", XF_SHOWN_BY_MODEL,
	  xf_cfg_read_elsewhere, xf_mode_names, NULL },
	{ "parameter_space", "bounds", XF_KEY_OWN, 0, 0, 0, 0,
	  "each parameter's bounds and truncated-normal prior", "the model's", XF_SHOWN_BY_MODEL,
	  xf_cfg_read_bounds, NULL, "a list of {name, min, max, prior_mu, prior_sigma}" },
	{ "initial_parameters", "parameter_names", XF_KEY_OWN, 0, 0, 0, 0,
	  "the names of values (the model's, or homodyne's aliases)", "the model's",
	  XF_SHOWN_BY_MODEL, xf_cfg_read_start_values, NULL, "a list of parameter names" },
	{ "initial_parameters", "values", XF_KEY_OWN, 0, 0, 0, 0,
	  "a start value per name, or null: estimated from the data", "null", XF_SHOWN_BY_MODEL,
	  xf_cfg_read_elsewhere, NULL, "null, or a number or null per name" },
	/* after the start values: a fixed value wins over a start value */
	{ "initial_parameters", "fixed_parameters", XF_KEY_OWN, 0, 0, 0, 0,
	  "{name: value}: held at the value", "none", XF_SHOWN_BY_MODEL, xf_cfg_read_fixed, NULL,
	  "a mapping {name: number}" },
	{ "initial_parameters", "active_parameters", XF_KEY_OWN, 0, 0, 0, 0,
	  "a list of the names fitted (the others held at their start values)", "all",
	  XF_SHOWN_BY_MODEL, xf_cfg_read_active, NULL, "null, or a list of parameter names" },
	{ "initial_parameters", "per_angle_scaling", XF_KEY_OWN, 0, 0, 0, 0,
	  "{contrast, offset}: each 1 or n_phi start values", "estimated", XF_SHOWN_BY_MODEL,
	  xf_cfg_read_per_angle_scaling, NULL,
	  "{contrast, offset}: each a number or a list of 1 or n_phi numbers" },
	/* the data's frames and geometry (config_analyzer.c reads them; docs/config.md) */
	{ "analyzer_parameters", "dt", XF_KEY_OWN, 0, 0, 0, XF_CHECK_FRAME_TIME,
	  "s between stored frames; absent: the data file's", "0.001", XF_SHOWN_EXAMPLE,
	  xf_cfg_read_dt, NULL, NULL },
	/* below 1: 1, with a warning (the reader's clamp, docs/input-formats.md) */
	{ "analyzer_parameters", "start_frame", XF_KEY_LONG, AT(start_frame), -1000000000L,
	  1000000000L, 0, "1-based, inclusive", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "analyzer_parameters", "end_frame", XF_KEY_OWN, 0, 0, 0, 0,
	  "1-based, inclusive; -1 = the last frame", "-1", XF_SHOWN, xf_cfg_read_end_frame, NULL,
	  "-1 (the last frame) or an integer from 1 to 1000000000" },
	{ "analyzer_parameters", "shear_model", XF_KEY_OWN, 0, 0, 0, 0, "homodyne | pnas2024",
	  "homodyne", XF_SHOWN, xf_cfg_read_shear_model, xf_cfg_shear_model_names, NULL },
	/* after the flat keys, which win */
	{ "analyzer_parameters", "temporal", XF_KEY_OWN, 0, 0, 0, 0, "", NULL, XF_SHOWN_NOT,
	  xf_cfg_read_temporal, NULL, "{dt, start_frame, end_frame, frame_interval}" },
	{ "analyzer_parameters.scattering", "wavevector_q", XF_KEY_OWN, 0, 0, 0, 0,
	  "1/angstrom; or all | [q1, q2] | {min: q1, max: q2} (several q rings)", "0.0054",
	  XF_SHOWN_EXAMPLE, xf_cfg_read_wavevector_q, NULL,
	  "a number > 0, all, a list of numbers > 0 or {min: Q1, max: Q2}" },
	{ "analyzer_parameters.geometry", "stator_rotor_gap", XF_KEY_OWN, 0, 0, 0,
	  XF_CHECK_POSITIVE, "angstrom (200 um); laminar_flow's cell", "2000000", XF_SHOWN,
	  xf_cfg_read_gap, NULL, NULL },
	/* the angle filter (config_phi.c; also read from homodyne's older
	 * optimization_config.angle_filtering) */
	{ "phi_filtering", "enabled", XF_KEY_BOOL, AT(phi_filter_enabled), 0, 0, 0, "", NULL,
	  XF_SHOWN, NULL, NULL, NULL },
	{ "phi_filtering", "fallback_to_all_angles", XF_KEY_BOOL, AT(fallback_to_all_angles), 0, 0,
	  0, "true: keep all angles when none match", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "phi_filtering", "target_ranges", XF_KEY_OWN, 0, 0, 0, 0,
	  "degrees; min > max is a range across 180",
	  "[{min_angle: -10.0, max_angle: 10.0}, {min_angle: 85.0, max_angle: 95.0}]",
	  XF_SHOWN_EXAMPLE, xf_cfg_read_target_ranges, NULL,
	  "a list of {min_angle, max_angle} (degrees)" },
	/* several q rings (before the methods' parts, as before) */
	{ "optimization", "rings", XF_KEY_OWN, 0, 0, 0, 0,
	  "per_ring: each selected q ring alone | joint: one fit of them all", "per_ring", XF_SHOWN,
	  read_rings, ring_mode_names, NULL },
	/* NLSQ (docs/nlsq.md) */
	{ "optimization.nlsq", "max_iterations", XF_KEY_INT, AT(nlsq.max_iterations), 1, INT_MAX, 0,
	  "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq", "xtol", XF_KEY_NUMBER, AT(nlsq.xtol), 0, 0, XF_CHECK_POSITIVE, "",
	  NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq", "gtol", XF_KEY_NUMBER, AT(nlsq.gtol), 0, 0, XF_CHECK_POSITIVE, "",
	  NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq", "ftol", XF_KEY_NUMBER, AT(nlsq.ftol), 0, 0, XF_CHECK_POSITIVE,
	  "homodyne's name: tolerance", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq", "sigma", XF_KEY_OWN, 0, 0, 0, XF_CHECK_POSITIVE,
	  "constant sigma of the data; null = unknown", "null", XF_SHOWN, read_sigma, NULL,
	  "a number > 0, or null" },
	{ "optimization.nlsq", "loss", XF_KEY_OWN, 0, 0, 0, 0,
	  "linear | soft_l1 | huber | cauchy | arctan (docs/nlsq.md)", "linear", XF_SHOWN,
	  read_loss, loss_names, NULL },
	{ "optimization.nlsq", "f_scale", XF_KEY_NUMBER, AT(nlsq.f_scale), 0, 0, XF_CHECK_POSITIVE,
	  "a robust loss's soft margin, in units of sigma", NULL, XF_SHOWN, NULL, NULL, NULL },
	/* after ftol and the rest: an explicit ftol wins, a differing one is named */
	{ "optimization.nlsq", "tolerance", XF_KEY_OWN, 0, 0, 0, XF_CHECK_POSITIVE, "", NULL,
	  XF_SHOWN_NOT, read_tolerance, NULL, NULL },
	{ "optimization.nlsq.anti_degeneracy", "enable", XF_KEY_BOOL,
	  AT(nlsq.anti_degeneracy_enable), 0, 0, 0, "static: use per_angle_mode only when true",
	  NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq.anti_degeneracy", "per_angle_mode", XF_KEY_OWN, 0, 0, 0, 0,
	  "auto | constant | individual | fourier", "auto", XF_SHOWN, read_nlsq_mode,
	  nlsq_mode_names, NULL },
	{ "optimization.nlsq.anti_degeneracy", "constant_scaling_threshold", XF_KEY_INT,
	  AT(nlsq.constant_scaling_threshold), 1, INT_MAX, 0, "", NULL, XF_SHOWN, NULL, NULL,
	  NULL },
	{ "optimization.nlsq.anti_degeneracy", "fourier_order", XF_KEY_INT, AT(nlsq.fourier_order),
	  1, XF_FOURIER_ORDER_MAX, 0, "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq.anti_degeneracy.hierarchical", "enable", XF_KEY_BOOL,
	  AT(nlsq.hierarchical), 0, 0, 0, "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq.multi_start", "enable", XF_KEY_BOOL, AT(nlsq.multi_start), 0, 0, 0, "",
	  NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq.multi_start", "n_starts", XF_KEY_INT, AT(nlsq.n_starts), 1,
	  XF_N_STARTS_MAX, 0, "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq.multi_start", "seed", XF_KEY_U64, AT(nlsq.multi_start_seed), 0, 0, 0,
	  "", NULL, XF_SHOWN, NULL, NULL, NULL },
	/* xpcsfit's own search for the optimum (docs/nlsq.md "Finding the optimum") */
	{ "optimization.nlsq.start_search", "enable", XF_KEY_BOOL, AT(nlsq.start_search), 0, 0, 0,
	  "xpcsfit: screened starts, best refined on all data", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq.start_search", "spread_decades", XF_KEY_INT, AT(nlsq.search_spread), 0,
	  6, 0, "starts from 1e-2 to 1e2 x the estimated D0, gamma_dot_t0", NULL, XF_SHOWN, NULL,
	  NULL, NULL },
	{ "optimization.nlsq.start_search", "subsample_points", XF_KEY_LONG, AT(nlsq.screen_points),
	  1000, LONG_MAX, 0, "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.nlsq.start_search", "phi0_profile", XF_KEY_BOOL, AT(nlsq.phi0_profile), 0,
	  0, 0, "laminar: refit other flow-angle basins of phi0", NULL, XF_SHOWN, NULL, NULL,
	  NULL },
	/* the posterior (docs/cmc.md) */
	{ "optimization.cmc", "seed", XF_KEY_U64, AT(cmc.seed), 0, 0, 0, "", NULL, XF_SHOWN, NULL,
	  NULL, NULL },
	{ "optimization.cmc", "per_angle_mode", XF_KEY_OWN, 0, 0, 0, 0,
	  "null = the mode NLSQ used; auto | constant | individual", "null", XF_SHOWN,
	  read_cmc_mode, cmc_mode_names, NULL },
	{ "optimization.cmc", "route", XF_KEY_OWN, 0, 0, 0, 0,
	  "auto: importance sampling from NLSQ, checked against the exact posterior, NUTS if "
	  "it fails | nuts",
	  "auto", XF_SHOWN, read_cmc_route, xf_cmc_route_names, NULL },
	{ "optimization.cmc.sharding", "num_shards", XF_KEY_INT_OR_AUTO, AT(cmc.num_shards), 1,
	  INT_MAX, 0, "1: the exact posterior; an integer K: consensus of K shards", NULL, XF_SHOWN,
	  NULL, NULL, NULL },
	{ "optimization.cmc.sharding", "max_points_per_shard", XF_KEY_INT_OR_AUTO,
	  AT(cmc.max_points_per_shard), 1, INT_MAX, 0, "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.cmc.per_shard_mcmc", "num_warmup", XF_KEY_INT, AT(cmc.num_warmup), 1,
	  XF_NUM_DRAWS_MAX, 0, "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.cmc.per_shard_mcmc", "num_samples", XF_KEY_INT, AT(cmc.num_samples), 1,
	  XF_NUM_DRAWS_MAX, 0, "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.cmc.per_shard_mcmc", "num_chains", XF_KEY_INT, AT(cmc.num_chains), 1,
	  XF_NUM_CHAINS_MAX, 0, "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.cmc.per_shard_mcmc", "target_accept_prob", XF_KEY_NUMBER,
	  AT(cmc.target_accept_prob), 0, 0, XF_CHECK_OPEN_UNIT,
	  "absent = 0.99 static, 0.98 laminar_flow (no divergences)", NULL, XF_SHOWN_ABSENT, NULL,
	  NULL, NULL },
	{ "optimization.cmc.per_shard_mcmc", "max_tree_depth", XF_KEY_INT, AT(cmc.max_tree_depth),
	  1, XF_MAX_TREE_DEPTH, 0, "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.cmc.per_shard_mcmc", "dense_mass", XF_KEY_BOOL, AT(cmc.dense_mass), 0, 0, 0,
	  "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.cmc.validation", "max_divergence_rate", XF_KEY_NUMBER,
	  AT(cmc.max_divergence_rate), 0, 0, XF_CHECK_FRACTION, "", NULL, XF_SHOWN, NULL, NULL,
	  NULL },
	{ "optimization.cmc.validation", "max_per_shard_rhat", XF_KEY_NUMBER,
	  AT(cmc.max_per_shard_rhat), 0, 0, XF_CHECK_AT_LEAST_ONE, "", NULL, XF_SHOWN, NULL, NULL,
	  NULL },
	{ "optimization.cmc.validation", "use_nlsq_informed_priors", XF_KEY_BOOL,
	  AT(cmc.use_nlsq_informed_priors), 0, 0, 0, "", NULL, XF_SHOWN, NULL, NULL, NULL },
	{ "optimization.cmc.validation", "nlsq_prior_width_factor", XF_KEY_NUMBER,
	  AT(cmc.nlsq_prior_width_factor), 0, 0, XF_CHECK_POSITIVE, "", NULL, XF_SHOWN, NULL, NULL,
	  NULL },
	{ "optimization.cmc.combination", "method", XF_KEY_OWN, 0, 0, 0, 0,
	  "consensus_mc | gaussian_product | homodyne_marginal", "robust_consensus_mc", XF_SHOWN,
	  read_combination_method, combination_methods, NULL },
	{ "optimization.cmc.combination", "min_success_rate", XF_KEY_NUMBER,
	  AT(cmc.min_success_rate), 0, 0, XF_CHECK_HALF_OPEN_UNIT, "", NULL, XF_SHOWN, NULL, NULL,
	  NULL },
	{ "optimization.cmc.combination", "check_draws", XF_KEY_INT, AT(cmc.check_draws), 0,
	  1000000, 0, "self-check against the full-data posterior (0: off)", NULL, XF_SHOWN, NULL,
	  NULL, NULL },
	/* what the console and the result folders look like (homodyne's sections, honoured in
	 * part: their other keys are left to the key accounting, config_keys.c) */
	{ "output", "base_directory", XF_KEY_OWN, 0, 0, 0, 0,
	  "the result folder without --out; null = ./xpcsfit_results", "null", XF_SHOWN,
	  read_base_directory, NULL, "a text (a folder), or null" },
	{ "output", "directory", XF_KEY_OWN, 0, 0, 0, 0, "", NULL, XF_SHOWN_NOT, read_directory,
	  NULL, "a text (a folder), or null" },
	{ "output", "surfaces", XF_KEY_OWN, 0, 0, 0, 0,
	  "none | full: the (n_phi, N, N) maps in results.h5", "none", XF_SHOWN, read_surfaces,
	  surface_names, NULL },
	{ "logging", "level", XF_KEY_OWN, 0, 0, 0, 0, "DEBUG | INFO | WARNING | ERROR", "INFO",
	  XF_SHOWN, read_log_level, log_level_names, NULL },
	{ "plotting", "dpi", XF_KEY_INT, AT(plot_dpi), XF_PLOT_DPI_MIN, XF_PLOT_DPI_MAX, 0,
	  "absent = 100, the pages' nominal sizes; 25 to 600", NULL, XF_SHOWN_ABSENT, NULL, NULL,
	  NULL },
	{ "plotting", "angle_pages", XF_KEY_OWN, 0, 0, 0, 0, "auto: up to 10 angle pages | all",
	  "auto", XF_SHOWN, read_angle_pages, angle_page_names, NULL },
	{ "parallel", "virtual_devices", XF_KEY_OWN, 0, 0, XF_VIRTUAL_DEVICES_MAX, 0,
	  "worker threads; auto = online cores", "auto", XF_SHOWN, read_virtual_devices, NULL,
	  NULL },
};

/* The top-level sections whose keys are rows alone, in the template's order. checked:
 * an unknown key there is warned; else it is left to the key accounting (homodyne's
 * output, logging and plotting have many keys xpcsfit does not use: config_keys.c). */
static const struct {
	const char *name;
	int checked;
} sections[] = {
	{ "output", 0 },
	{ "logging", 0 },
	{ "plotting", 0 },
	{ "parallel", 1 },
};
#define N_SECTIONS (sizeof sections / sizeof sections[0])

size_t xf_cfg_table_sections(const char **names, size_t cap)
{
	size_t n = 0;
	for (size_t k = 0; k < N_SECTIONS && n + 1 < cap; k++)
		names[n++] = sections[k].name;
	names[n] = NULL;
	return n;
}

size_t xf_cfg_table_top_keys(const char **names, size_t cap)
{
	static char tops[XF_CFG_TOP_SECTIONS_MAX][XF_CFG_PATH_MAX];
	size_t n = 0;
	for (size_t k = 0; k < sizeof keys / sizeof keys[0] && n + 1 < cap; k++) {
		const char *section = keys[k].section, *dot = strchr(section, '.');
		size_t len = dot ? (size_t)(dot - section) : strlen(section);
		size_t seen = 0;
		while (seen < n && (strlen(tops[seen]) != len || strncmp(tops[seen], section, len)))
			seen++;
		if (seen < n || n >= XF_CFG_TOP_SECTIONS_MAX || len + 1 > XF_CFG_PATH_MAX)
			continue;
		memcpy(tops[n], section, len);
		tops[n][len] = '\0';
		names[n] = tops[n];
		n++;
	}
	names[n] = NULL;
	return n;
}

int xf_cfg_read_sections(const xf_cfg_reader *r, const xf_ynode *root, int checked, xf_config *cfg)
{
	for (size_t k = 0; k < N_SECTIONS; k++) {
		if (sections[k].checked != checked)
			continue;
		const char *name = sections[k].name, *known[XF_CFG_SECTION_KEYS_MAX];
		const xf_ynode *map = NULL;
		int rc = xf_cfg_section(r, root, "", name, &map);
		if (!rc && map && checked) {
			xf_cfg_known_keys(name, known, XF_CFG_SECTION_KEYS_MAX);
			xf_cfg_check_keys(r, map, name, known, NULL);
		}
		if (!rc && map)
			rc = xf_cfg_read_keys(r, map, name, cfg);
		if (rc)
			return rc;
	}
	return 0;
}

void xf_cfg_template_sections(FILE *out, const xf_config *defaults)
{
	for (size_t k = 0; k < N_SECTIONS; k++) {
		fprintf(out, "\n%s:\n", sections[k].name);
		xf_cfg_template_keys(out, sections[k].name, defaults);
	}
}

const xf_cfg_key *xf_cfg_key_table(size_t *n)
{
	*n = sizeof keys / sizeof keys[0];
	return keys;
}

static void *slot(xf_config *cfg, const xf_cfg_key *k)
{
	return (char *)cfg + k->offset;
}

static const void *cslot(const xf_config *cfg, const xf_cfg_key *k)
{
	return (const char *)cfg + k->offset;
}

static int read_one(const xf_cfg_reader *r, const xf_ynode *map, const xf_cfg_key *k,
		    xf_config *cfg)
{
	switch (k->kind) {
	case XF_KEY_INT: {
		int *out = slot(cfg, k);
		long v = *out;
		int rc = xf_cfg_int(r, map, k->section, k->name, k->lo, k->hi, &v, NULL);
		if (!rc)
			*out = (int)v;
		return rc;
	}
	case XF_KEY_LONG:
		return xf_cfg_int(r, map, k->section, k->name, k->lo, k->hi, slot(cfg, k), NULL);
	case XF_KEY_NUMBER:
		return xf_cfg_number(r, map, k->section, k->name, k->check, slot(cfg, k), NULL);
	case XF_KEY_BOOL: return xf_cfg_bool(r, map, k->section, k->name, slot(cfg, k));
	case XF_KEY_U64: return xf_cfg_u64(r, map, k->section, k->name, slot(cfg, k));
	case XF_KEY_INT_OR_AUTO:
		return xf_cfg_int_or_auto(r, map, k->section, k->name, k->hi, slot(cfg, k));
	default: return 0; /* XF_KEY_OWN: its section's code reads it */
	}
}

int xf_cfg_read_part(const xf_cfg_reader *r, const xf_ynode *parent_map, const char *parent,
		     const char *key, const char *const *ignored, const xf_ynode **map,
		     xf_config *cfg)
{
	char sect[XF_CFG_PATH_MAX];
	const char *known[XF_CFG_SECTION_KEYS_MAX];
	const xf_ynode *part = NULL;
	int rc = xf_cfg_section(r, parent_map, parent, key, &part);
	if (map)
		*map = part;
	if (rc || !part)
		return rc;
	xf_cfg_path(sect, parent, key);
	xf_cfg_known_keys(sect, known, XF_CFG_SECTION_KEYS_MAX);
	xf_cfg_check_keys(r, part, sect, known, ignored);
	return xf_cfg_read_keys(r, part, sect, cfg);
}

int xf_cfg_read_keys(const xf_cfg_reader *r, const xf_ynode *map, const char *section,
		     xf_config *cfg)
{
	return xf_cfg_read_keys_as(r, map, section, section, cfg);
}

int xf_cfg_read_keys_as(const xf_cfg_reader *r, const xf_ynode *map, const char *section,
			const char *named, xf_config *cfg)
{
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		if (strcmp(keys[k].section, section))
			continue;
		xf_cfg_key row = keys[k]; /* its messages name the section it was read from */
		row.section = named;
		int rc = row.kind == XF_KEY_OWN ? row.own(r, map, &row, cfg)
						: read_one(r, map, &row, cfg);
		if (rc)
			return rc;
	}
	return 0;
}

/* The child of section that path is, or lies below ("optimization.cmc.sharding" →
 * "sharding" for "optimization.cmc"), into buf; 0 when path is not below section. */
static int child_of(const char *path, const char *section, char *buf, size_t size)
{
	size_t n = strlen(section);
	if (strncmp(path, section, n) || path[n] != '.')
		return 0;
	const char *start = path + n + 1, *end = strchr(start, '.');
	size_t len = end ? (size_t)(end - start) : strlen(start);
	if (len + 1 > size)
		return 0;
	memcpy(buf, start, len);
	buf[len] = '\0';
	return 1;
}

size_t xf_cfg_known_keys(const char *section, const char **known, size_t cap)
{
	static char children[16][XF_CFG_PATH_MAX];
	size_t n = 0, n_children = 0;
	for (size_t k = 0; k < sizeof keys / sizeof keys[0] && n + 1 < cap; k++) {
		char child[XF_CFG_PATH_MAX];
		if (!strcmp(keys[k].section, section)) {
			known[n++] = keys[k].name;
			continue;
		}
		if (!child_of(keys[k].section, section, child, sizeof child))
			continue;
		int seen = 0;
		for (size_t c = 0; c < n_children && !seen; c++)
			seen = !strcmp(children[c], child);
		if (seen || n_children == sizeof children / sizeof children[0])
			continue;
		strcpy(children[n_children], child);
		known[n++] = children[n_children++];
	}
	known[n] = NULL;
	return n;
}

const char *xf_cfg_yaml_number(char buf[40], double v)
{
	char tmp[32];
	snprintf(tmp, sizeof tmp, "%.10g", v);
	char *e = strchr(tmp, 'e');
	if (e && !memchr(tmp, '.', (size_t)(e - tmp)))
		snprintf(buf, 40, "%.*s.0%s", (int)(e - tmp), tmp, e);
	else
		snprintf(buf, 40, "%s", tmp);
	return buf;
}

/* A number key's value: xf_cfg_yaml_number, a whole number with ".0" (2.0, not 2) so
 * that it reads as the number it is */
static void number_text(double v, char *buf, size_t size)
{
	char text[40];
	xf_cfg_yaml_number(text, v);
	snprintf(buf, size, "%s%s", text, strpbrk(text, ".en") ? "" : ".0");
}

/* value of row k of cfg as the template writes it */
static void value_text(const xf_config *cfg, const xf_cfg_key *k, char *buf, size_t size)
{
	switch (k->kind) {
	case XF_KEY_INT: snprintf(buf, size, "%d", *(const int *)cslot(cfg, k)); break;
	case XF_KEY_BOOL:
		snprintf(buf, size, "%s", *(const int *)cslot(cfg, k) ? "true" : "false");
		break;
	case XF_KEY_U64: snprintf(buf, size, "%" PRIu64, *(const uint64_t *)cslot(cfg, k)); break;
	case XF_KEY_INT_OR_AUTO: {
		long v = *(const long *)cslot(cfg, k);
		if (v == 0)
			snprintf(buf, size, "auto");
		else
			snprintf(buf, size, "%ld", v);
		break;
	}
	case XF_KEY_LONG: snprintf(buf, size, "%ld", *(const long *)cslot(cfg, k)); break;
	case XF_KEY_NUMBER: number_text(*(const double *)cslot(cfg, k), buf, size); break;
	default: snprintf(buf, size, "%s", k->own_default ? k->own_default : "null");
	}
}

/* An own row's type and what it allows: its choices, its text, an integer or auto up to
 * hi, a number by its check */
static void own_text(const xf_cfg_key *k, const char **type, char *allowed, size_t size)
{
	size_t len = 0;
	allowed[0] = '\0';
	if (k->choices) {
		*type = "choice";
		for (int c = 0; k->choices[c] && len < size; c++)
			len += (size_t)snprintf(allowed + len, size - len, "%s%s", c ? ", " : "",
						k->choices[c]);
	} else if (k->allowed) {
		snprintf(allowed, size, "%s", k->allowed);
	} else if (k->hi > 0) {
		*type = "integer or auto";
		snprintf(allowed, size, "auto, or from 1 to %ld", k->hi);
	} else if (k->check != XF_CHECK_FINITE) {
		*type = "number";
		snprintf(allowed, size, "%s", xf_cfg_check_allowed(k->check));
	} else {
		snprintf(allowed, size, "see docs/config.md");
	}
}

/* A row's type and what it allows, as the key reference says them */
static void kind_text(const xf_cfg_key *k, char *type, char *allowed, size_t size)
{
	const char *t = "own rule";
	switch (k->kind) {
	case XF_KEY_INT:
	case XF_KEY_LONG:
		t = "integer";
		snprintf(allowed, size, "from %ld to %ld", k->lo, k->hi);
		break;
	case XF_KEY_NUMBER:
		t = "number";
		snprintf(allowed, size, "%s", xf_cfg_check_allowed(k->check));
		break;
	case XF_KEY_BOOL:
		t = "boolean";
		snprintf(allowed, size, "true, false");
		break;
	case XF_KEY_U64:
		t = "integer";
		snprintf(allowed, size, "from 0 to 18446744073709551615");
		break;
	case XF_KEY_INT_OR_AUTO:
		t = "integer or auto";
		snprintf(allowed, size, "auto, or from 1 to %ld", k->hi);
		break;
	default: own_text(k, &t, allowed, size); break;
	}
	snprintf(type, size, "%s", t);
}

void xf_config_write_key_reference(FILE *out)
{
	xf_config defaults;
	xf_config_defaults(&defaults);
	fputs("# Config keys: the reference\n\n"
	      "Produced from the config reader's key table (src/config/config_table.c) by\n"
	      "`xpcsfit config --keys`; not edited by hand: `make config-keys` writes it again,\n"
	      "and test_config compares the two. What every key means is in docs/config.md;\n"
	      "the parameters' names, bounds and template values are the model's\n"
	      "(docs/model.md).\n\n"
	      "| key | type | allowed | default | note |\n|---|---|---|---|---|\n",
	      out);
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const xf_cfg_key *k = &keys[i];
		char type[64], allowed[256], value[160];
		kind_text(k, type, allowed, sizeof allowed);
		value_text(&defaults, k, value, sizeof value);
		const char *note =
			k->shown == XF_SHOWN_NOT ? "homodyne's key, read as ours" : k->note;
		if (k->shown == XF_SHOWN_ABSENT)
			snprintf(value, sizeof value, "absent");
		else if (k->shown == XF_SHOWN_EXAMPLE) /* the template's is an example */
			snprintf(value, sizeof value, "absent (template: %s)", k->own_default);
		fprintf(out, "| `%s.%s` | %s | %s | %s | ", k->section, k->name, type, allowed,
			value);
		for (const char *c = note; *c; c++) /* a table cell: its bars escaped */
			if (*c == '|')
				fputs("\\|", out);
			else
				fputc(*c, out);
		fputs(" |\n", out);
	}
	xf_config_free(&defaults);
}

#define XF_TEMPLATE_COMMENT_COLUMN 29 /* the template's other comments start there */
#define XF_TEMPLATE_DEPTH_MAX	   8

void xf_cfg_template_keys(FILE *out, const char *section, const xf_config *defaults)
{
	char open[XF_TEMPLATE_DEPTH_MAX][64]; /* the subsections whose headers are written */
	int n_open = 0, depth = 1;
	size_t len_section = strlen(section);
	for (const char *c = section; *c; c++)
		depth += *c == '.';
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		const xf_cfg_key *row = &keys[k];
		if (strncmp(row->section, section, len_section) ||
		    (row->section[len_section] && row->section[len_section] != '.') ||
		    row->shown == XF_SHOWN_NOT || row->shown == XF_SHOWN_BY_MODEL)
			continue;
		/* the row's path below section, part by part; headers for the parts not open */
		char rel[XF_CFG_PATH_MAX], *parts[XF_TEMPLATE_DEPTH_MAX];
		int n_parts = 0;
		snprintf(rel, sizeof rel, "%s", row->section + len_section);
		for (char *p = strtok(rel, "."); p && n_parts < XF_TEMPLATE_DEPTH_MAX;
		     p = strtok(NULL, "."))
			parts[n_parts++] = p;
		int same = 0;
		while (same < n_open && same < n_parts && !strcmp(open[same], parts[same]))
			same++;
		for (int p = same; p < n_parts; p++) {
			fprintf(out, "%*s%s:\n", 2 * (depth + p), "", parts[p]);
			snprintf(open[p], sizeof open[p], "%s", parts[p]);
		}
		n_open = n_parts;
		int indent = 2 * (depth + n_parts);
		char value[128], line[512];
		value_text(defaults, row, value, sizeof value);
		if (row->shown == XF_SHOWN_ABSENT) { /* absent by default: a comment */
			fprintf(out, "%*s# %s: %s\n", indent, "", row->name, row->note);
			continue;
		}
		int len = snprintf(line, sizeof line, "%*s%s: %s", indent, "", row->name, value);
		if (!row->note[0])
			fprintf(out, "%s\n", line);
		else
			fprintf(out, "%s%*s# %s\n", line,
				len < XF_TEMPLATE_COMMENT_COLUMN ? XF_TEMPLATE_COMMENT_COLUMN - len
								 : 3,
				"", row->note);
	}
}
