/* request_build.c — the config read once for a fit (adr/0043): the problem request and
 * the data selection built from it, and the config-level calls that pass them down. */
#include "cli/request_build.h"
#include "xpcsfit/results_config.h"

#include <string.h>
#include "services/nlsq.h"

void xf_request_from_config(const xf_config *cfg, xf_request *req)
{
	memset(req, 0, sizeof *req);
	req->mode = cfg->mode;
	req->shear_model = cfg->shear_model;
	req->gap_A = cfg->gap_A;
	req->per_angle_mode = cfg->nlsq.per_angle_mode;
	req->anti_degeneracy = cfg->nlsq.anti_degeneracy_enable;
	req->constant_scaling_threshold = cfg->nlsq.constant_scaling_threshold;
	req->fourier_order = cfg->nlsq.fourier_order;
	req->has_sigma = cfg->nlsq.has_sigma;
	req->sigma = cfg->nlsq.sigma;
	memcpy(req->bounds, cfg->bounds, sizeof req->bounds);
	for (int k = 0; k < XF_N_PHYS; k++) {
		req->start[k] = xf_config_start_value(cfg, k);
		req->value_given[k] = cfg->value_given[k];
		req->fixed[k] = cfg->is_fixed[k];
	}
	req->n_contrast_start = cfg->n_contrast_start;
	req->contrast_start = cfg->contrast_start;
	req->n_offset_start = cfg->n_offset_start;
	req->offset_start = cfg->offset_start;
}

void xf_selection_from_config(const xf_config *cfg, xf_selection *sel)
{
	memset(sel, 0, sizeof *sel);
	sel->config_path = cfg->source_path;
	sel->data_path = cfg->data_path;
	sel->has_q = cfg->has_q;
	sel->q_target_per_A = cfg->wavevector_q;
	sel->q = cfg->q_rings;
	sel->phi_filter_enabled = cfg->phi_filter_enabled;
	sel->n_phi_ranges = cfg->n_phi_ranges;
	sel->phi_ranges = cfg->phi_ranges;
	sel->fallback_to_all_angles = cfg->fallback_to_all_angles;
	sel->start_frame = cfg->start_frame;
	sel->end_frame = cfg->end_frame;
	sel->has_dt = cfg->has_dt;
	sel->dt_s = cfg->dt_s;
}

int xf_cli_problem_build(xf_problem *pr, const xf_config *cfg, const xf_dataset *ds, xf_error *err)
{
	xf_request req;
	xf_request_from_config(cfg, &req);
	return xf_problem_build(pr, &req, ds, err);
}

int xf_cli_dataset_load(const xf_config *cfg, const char *path, xf_dataset *ds, xf_error *err)
{
	xf_selection sel;
	xf_selection_from_config(cfg, &sel);
	return xf_dataset_load(&sel, path, ds, err);
}

int xf_cli_simulate_write(const xf_config *cfg, const xf_sim_options *opt, xf_error *err)
{
	xf_request req;
	xf_selection sel;
	xf_request_from_config(cfg, &req);
	xf_selection_from_config(cfg, &sel);
	return xf_simulate_write(&req, &sel, opt, err);
}
