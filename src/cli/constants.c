/* constants.c — the constants a fit uses and their sources (constants.h). */
#include "cli/constants.h"
#include "util/verbosity.h"
#include "util/key_names.h"

#include <stdio.h>
#include <string.h>

/* "config", or the override that set key ("--set q=0.0054"). */
static const char *origin_of(const xf_config *cfg, const char *key, char *buf, size_t size)
{
	snprintf(buf, size, "config");
	for (size_t k = 0; k < cfg->n_overrides; k++)
		if (!strcmp(cfg->overrides[k].key, key))
			snprintf(buf, size, "override %s %.200s", cfg->overrides[k].option,
				 cfg->overrides[k].value);
	return buf;
}

void xf_cli_constant_sources(const xf_config *cfg, const xf_dataset *ds, xf_constant_sources *out)
{
	char o[256];
	if (cfg->has_q)
		snprintf(out->q, sizeof out->q, "file: the ring nearest " XF_KEY_Q " %.6g (%s)",
			 cfg->wavevector_q, origin_of(cfg, XF_KEY_Q, o, sizeof o));
	else if (cfg->q_rings.pick != XF_Q_PICK_ONE) /* a list or range of one ring (adr/0063) */
		snprintf(out->q, sizeof out->q,
			 "file: the one ring that " XF_KEY_Q " (%s) selects (%s)",
			 cfg->q_rings.pick == XF_Q_PICK_ALL    ? "all"
			 : cfg->q_rings.pick == XF_Q_PICK_LIST ? "a list"
							       : "a range",
			 origin_of(cfg, XF_KEY_Q, o, sizeof o));
	else
		snprintf(out->q, sizeof out->q, "file: its only q ring (wavevector_q not set)");
	if (cfg->has_dt)
		snprintf(out->dt, sizeof out->dt, "%s: " XF_KEY_DT,
			 origin_of(cfg, XF_KEY_DT, o, sizeof o));
	else
		snprintf(out->dt, sizeof out->dt, "%s", ds->dt_source);
	if (!xf_model_record_of(cfg->mode)->shear)
		snprintf(out->gap, sizeof out->gap, "not used in static mode");
	else if (cfg->has_gap)
		snprintf(out->gap, sizeof out->gap, "%s: " XF_KEY_GAP,
			 origin_of(cfg, XF_KEY_GAP, o, sizeof o));
	else
		snprintf(out->gap, sizeof out->gap, "default (" XF_KEY_GAP " not set)");
	if (cfg->phi_filter_enabled && cfg->n_phi_ranges > 0)
		snprintf(out->angles, sizeof out->angles,
			 "file: %d of the ring's %d, selected by " XF_KEY_TARGET_RANGES " (%s)",
			 ds->n_phi, ds->n_phi_in_ring,
			 origin_of(cfg, XF_KEY_TARGET_RANGES, o, sizeof o));
	else
		snprintf(out->angles, sizeof out->angles, "file: all %d of the ring",
			 ds->n_phi_in_ring);
}

void xf_cli_print_constants(const xf_config *cfg, const xf_dataset *ds)
{
	xf_constant_sources s;
	xf_cli_constant_sources(cfg, ds, &s);
	char list[512] = "";
	size_t len = 0;
	for (int a = 0; a < ds->n_phi && len < sizeof list - 32; a++)
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%.4g", a ? ", " : "",
					ds->phi_deg[a]);
	xf_say(XF_VERB_NORMAL, "q = %.6g 1/A (%s)", ds->q, s.q);
	xf_say(XF_VERB_NORMAL, "dt = %.6g s (%s)", ds->dt_s, s.dt);
	if (xf_model_record_of(cfg->mode)->shear)
		xf_say(XF_VERB_NORMAL, "gap = %.6g A (%s)", cfg->gap_A, s.gap);
	xf_say(XF_VERB_NORMAL, "angles = %s deg (%s)", list, s.angles);
	xf_info("constants: q = %.6g 1/A (%s); dt = %.6g s (%s); gap = %.6g A (%s); angles = "
		"%s deg (%s)",
		ds->q, s.q, ds->dt_s, s.dt, cfg->gap_A, s.gap, list, s.angles);
}
