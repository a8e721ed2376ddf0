/* grid_h5.h — what results.h5 records so that `xpcsfit plot DIR` can recompute the model
 * and reload the fitted data when the file holds no surfaces (adr/0059): the model's
 * geometry beside the parameters, and the first frame of the data window. */
#ifndef XPCSFIT_IO_GRID_H5_H
#define XPCSFIT_IO_GRID_H5_H

#include "io/h5write.h"
#include "xpcsfit/dataset.h"
#include "xpcsfit/estimate.h"
#include "xpcsfit/model.h"

/* In method group g: attribute shear_model ("homodyne" | "pnas2024") and the scalar
 * stator_rotor_gap (Å) of est's grid; in /data: first_frame (1-based stored row of t = 0)
 * and, for a joint fit over q rings, slot_q (each angle slot's ring q, adr/0068). */
int xf_h5_model_grid(h5w *w, hid_t g, const xf_estimate *est, const xf_dataset *ds);

#endif
