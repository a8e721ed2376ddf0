/* config_template.c — `xpcsfit config`: a commented YAML template with every key xpcsfit
 * reads, homodyne's template start values and priors (params.h), and the defaults of
 * spec/config.md. It loads back with xf_config_load without a warning (tested). */
#include "config/config_internal.h"
#include "xpcsfit/config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void write_header(xf_mode mode, FILE *out)
{
	fprintf(out,
		"# xpcsfit configuration (homodyne-compatible YAML) for %s mode.\n"
		"# Written by 'xpcsfit config'. Every key xpcsfit reads is listed with its\n"
		"# default; homodyne's other keys are accepted (see docs/config.md).\n"
		"\n"
		"analysis_mode: %s      # static | laminar_flow (aliases static_isotropic, "
		"static_anisotropic)\n"
		"\n"
		"experimental_data:\n"
		"  # homodyne's pair wins over file_path. A relative path is read against the\n"
		"  # current directory if it exists there, else against this file's folder.\n",
		xf_mode_name(mode), xf_mode_name(mode));
	/* the data, frames, geometry and angle filter from the key table (config_table.c,
	 * adr/0132) */
	xf_config defaults;
	xf_config_defaults(&defaults);
	xf_cfg_template_keys(out, "experimental_data", &defaults);
	fputs("\nanalyzer_parameters:\n", out);
	xf_cfg_template_keys(out, "analyzer_parameters", &defaults);
	fputs("\nphi_filtering:\n", out);
	xf_cfg_template_keys(out, "phi_filtering", &defaults);
	fputc('\n', out);
	xf_config_free(&defaults);
}

static void write_parameters(xf_mode mode, FILE *out)
{
	char a[40], b[40], c[40], d[40];
	const xf_model_record *model = xf_model_record_of(mode);
	int n = model->n_phys;
	fprintf(out, "initial_parameters:\n  parameter_names: [");
	for (int k = 0; k < n; k++)
		fprintf(out, "%s%s", k ? ", " : "", xf_model_param_name(model, k));
	fprintf(out, "]\n  values: [");
	for (int k = 0; k < n; k++)
		fprintf(out, "%s%s", k ? ", " : "",
			xf_cfg_yaml_number(a, xf_model_param(model, k).template_value));
	fprintf(out,
		"]   # or null: the middle of the bounds\n"
		"  # fixed_parameters: {D_offset: 0.0}     # held at this value\n"
		"  # per_angle_scaling: {contrast: [0.3], offset: [1.0]}   # 1 or n_phi values\n"
		"\n"
		"parameter_space:\n"
		"  # prior_mu/prior_sigma (CMC): truncated normal on [min, max]; the values below\n"
		"  # are nearly flat on the bounds, so the data decide. A narrower prior is your\n"
		"  # choice: CMC checks every result and names a prior that decides a parameter.\n"
		"  # When missing: the middle of the bounds and a quarter of their width.\n"
		"  bounds:\n");
	for (int k = 0; k < n; k++) {
		xf_param_def p = xf_model_param(model, k);
		fprintf(out,
			"    - {name: %s, min: %s, max: %s, prior_mu: %s, prior_sigma: %s}"
			"   # %s\n",
			p.name, xf_cfg_yaml_number(a, p.lower), xf_cfg_yaml_number(b, p.upper),
			xf_cfg_yaml_number(c, p.template_prior_mu),
			xf_cfg_yaml_number(d, p.template_prior_sigma), p.unit);
	}
	for (int k = XF_P_CONTRAST; k <= XF_P_OFFSET; k++)
		fprintf(out, "    - {name: %s, min: %s, max: %s}   # every angle\n",
			xf_param_names[k], xf_cfg_yaml_number(a, xf_param_default_lower[k]),
			xf_cfg_yaml_number(b, xf_param_default_upper[k]));
	fputc('\n', out);
}

static void write_optimization(FILE *out)
{
	/* the methods' keys from the key table, with the defaults (config_table.c) */
	xf_config defaults;
	xf_config_defaults(&defaults);
	fputs("optimization:\n", out);
	xf_cfg_template_keys(out, "optimization", &defaults);
	/* the console, the result folders and the workers */
	xf_cfg_template_sections(out, &defaults);
}

int xf_config_write_template(xf_mode mode, FILE *out)
{
	write_header(mode, out);
	write_parameters(mode, out);
	write_optimization(out);
	if (fflush(out) != 0 || ferror(out))
		return errno ? errno : EIO;
	return 0;
}
