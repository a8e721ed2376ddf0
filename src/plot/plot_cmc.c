/* plot_cmc.c — the plots of a CMC result (plot.h). */
#include "plot/plot_internal.h"
#include "util/files.h"
#include "xpcsfit/plot.h"

int xf_plot_cmc(const char *plots_dir, const xf_config *cfg, const xf_dataset *ds,
		const xf_cmc_result *res, xf_error *err)
{
	(void)cfg;
	(void)ds;
	(void)res;
	return xf_mkdir_p(plots_dir, err);
}
