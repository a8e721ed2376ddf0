/* cmc_sensitivity_out.h — the prior check of a CMC result (xf_cmc_sensitivity, adr/0040)
 * in each output: parameters.json "prior_sensitivity", results.h5 /cmc/prior_sensitivity
 * and report.html rows. One place for all three, so the writers only call in. */
#ifndef XPCSFIT_IO_CMC_SENSITIVITY_OUT_H
#define XPCSFIT_IO_CMC_SENSITIVITY_OUT_H

#include "io/h5write.h"
#include "io/report_html.h"
#include "xpcsfit/cmc_appendix.h"
#include "xpcsfit/estimate.h"

typedef struct cJSON cJSON;
/* the "prior_sensitivity" object (null when it was not computed) */
cJSON *xf_cmc_sensitivity_json(const xf_estimate *est, const xf_cmc_appendix *app);
/* the group prior_sensitivity under g (nothing when it was not computed) */
void xf_cmc_sensitivity_h5(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app);
/* each prior against NLSQ before sampling (xf_cmc_prior_vs_nlsq, adr/0080):
 * parameters.json "prior_vs_nlsq" (null when not computed), results.h5
 * /cmc/prior_vs_nlsq */
cJSON *xf_cmc_prior_vs_nlsq_json(const xf_estimate *est, const xf_cmc_appendix *app);
void xf_cmc_prior_vs_nlsq_h5(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app);
/* the posterior's mass beyond its draws (xf_cmc_beyond, adr/0087): parameters.json
 * "beyond_draws" (null when not probed), results.h5 /cmc/beyond_draws */
cJSON *xf_cmc_beyond_json(const xf_estimate *est, const xf_cmc_appendix *app);
void xf_cmc_beyond_h5(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app);
/* two rows of the report's Fit section: the sensitivities, and posterior against NLSQ */
void xf_cmc_sensitivity_report(xf_report *r, const xf_estimate *est, const xf_cmc_appendix *app);

#endif
