/* config_defaults.c — the default of every config key (spec/config.md, model.md bounds;
 * the methods' options and the bounds from their defaults functions, options.h and
 * params.h), freeing a config and start values. */
#include "device/policy.h"
#include "config/config_internal.h"

#include <stdlib.h>
#include <string.h>

void xf_cfg_default_prior(xf_bound *b)
{
	xf_bound_default_prior(b); /* homodyne's rule for a bounds entry without a prior */
}

void xf_config_defaults(xf_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->mode = xf_model_default()->mode;
	cfg->has_dt = 0;
	cfg->dt_s = 0;
	cfg->start_frame = 1;
	cfg->end_frame = -1;
	cfg->has_q = 0;
	cfg->gap_A = XF_DEFAULT_GAP_A;
	cfg->shear_model = XF_SHEAR_HOMODYNE;
	cfg->phi_filter_enabled = 0;
	cfg->fallback_to_all_angles = 0;
	xf_bounds_default(cfg->bounds);
	xf_nlsq_options_defaults(&cfg->nlsq);
	cfg->nlsq.device = XF_DEVICE_CPU; /* --device and XPCSFIT_DEVICE* change them */
	cfg->nlsq.device_threshold = XF_DEVICE_DEFAULT_THRESHOLD;
	xf_cmc_options_defaults(&cfg->cmc);
	cfg->cmc.device = XF_DEVICE_CPU;
	cfg->cmc.device_threshold = XF_DEVICE_DEFAULT_THRESHOLD;
	cfg->virtual_devices = 0;
}

void xf_config_free(xf_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->source_path);
	free(cfg->source_text);
	free(cfg->data_path);
	free(cfg->phi_ranges);
	free(cfg->contrast_start);
	free(cfg->offset_start);
	xf_cfg_free_overrides(cfg);
	free(cfg->base_directory);
	for (size_t k = 0; k < cfg->n_ignored_keys; k++)
		free(cfg->ignored_keys[k]);
	free(cfg->ignored_keys);
	free(cfg->settings);
	xf_config_defaults(cfg);
}

double xf_config_start_value(const xf_config *cfg, int k)
{
	if (k < 0 || k >= XF_N_BOUND_SLOTS)
		return 0.0;
	if (k < XF_N_PHYS && cfg->value_given[k])
		return cfg->values[k];
	return 0.5 * (cfg->bounds[k].lower + cfg->bounds[k].upper);
}
