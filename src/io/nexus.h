/* nexus.h — the NeXus frame of results.h5 (nexus.c, adr/0060): NXroot, /entry
 * (NXentry) with the default plot /entry/g2 (NXdata), the fit group an NXprocess. */
#ifndef XPCSFIT_IO_NEXUS_H
#define XPCSFIT_IO_NEXUS_H

#include "io/h5write.h"
#include "xpcsfit/estimate.h"

/* est: the reported estimate whose fit is plotted (NULL: the fit curve is NaN);
 * process: the open fit group (/nlsq or /cmc) */
int xf_h5_nexus(h5w *w, const xf_dataset *ds, const xf_estimate *est, hid_t process);

#endif
