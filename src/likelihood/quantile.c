/* quantile.c — per-angle contrast/offset starting estimates from the data (nlsq.md):
 * offset = 10th percentile of c2 at long lags, ceiling = 90th percentile at short lags
 * (xf_map_quantiles, src/data/stats.c), clipped to the bounds. A band (an MPI rank,
 * adr/0027) takes the raw estimates its loader computed from each whole map. */
#include <math.h>
#include <stdlib.h>

#include "xpcsfit/likelihood.h"

static double clip(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void xf_quantile_scaling(const xf_dataset *ds, const xf_bound *cb, const xf_bound *ob,
			 double *contrast, double *offset)
{
	size_t n = (size_t)ds->n_frames, n_pairs = xf_fitted_pairs(n);
	double *buf = NULL;
	if (!ds->stats && n_pairs >= XF_QUANTILE_MIN_POINTS) {
		buf = malloc(sizeof(double) * n_pairs);
		if (!buf)
			xf_note_no_memory();
	}
	for (int a = 0; a < ds->n_phi; a++) {
		double off = NAN, ceiling = NAN;
		if (ds->stats) {
			off = ds->stats[a].q_offset;
			ceiling = ds->stats[a].q_ceiling;
		} else if (buf) {
			xf_map_quantiles(ds->c2[a], n, buf, &off, &ceiling);
		}
		if (isnan(off) || isnan(ceiling)) {
			offset[a] = 0.5 * (ob->lower + ob->upper);
			contrast[a] = 0.5 * (cb->lower + cb->upper);
			continue;
		}
		off = clip(off, ob->lower, ob->upper);
		offset[a] = off;
		contrast[a] = clip(ceiling - off, cb->lower, cb->upper);
	}
	free(buf);
}
