/* cmc_posterior_out.h — the published posterior's R-hat, ESS and MCSE in parameters.json
 * and results.h5 (cmc_posterior_out.c, adr/0061). */
#ifndef XPCSFIT_IO_CMC_POSTERIOR_OUT_H
#define XPCSFIT_IO_CMC_POSTERIOR_OUT_H

#include "io/h5write.h"
#include "xpcsfit/cmc_appendix.h"
#include "xpcsfit/estimate.h"

typedef struct cJSON cJSON;
/* "posterior_diagnostics": layout, note, chains, draws_per_chain, file, and per sampled
 * parameter r_hat, ess_bulk, ess_tail, mcse_mean, mcse_sd */
cJSON *xf_cmc_posterior_diag_json(const xf_estimate *est, const xf_cmc_appendix *app);
/* /cmc/posterior_diagnostics: the same per parameter of /cmc/parameter_names */
void xf_cmc_posterior_diag_h5(h5w *w, hid_t g, const xf_estimate *est, const xf_cmc_appendix *app);

#endif
