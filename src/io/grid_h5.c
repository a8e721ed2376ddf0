/* grid_h5.c — the model geometry and data window of a result in results.h5 (grid_h5.h):
 * with /data (source file, angles, q, dt, frames) and the method's parameters they are all
 * `xpcsfit plot DIR` needs to redraw the fit without stored surfaces (adr/0059); a joint
 * fit's per-slot q (adr/0068). */
#include "io/grid_h5.h"
#include "util/key_names.h"

int xf_h5_model_grid(h5w *w, hid_t g, const xf_estimate *est, const xf_dataset *ds)
{
	const xf_model_grid *grid = &est->grid;
	if (w->failed)
		return -1;
	xf_h5_attr_str(w, g, "shear_model",
		       grid->shear_model == XF_SHEAR_PNAS2024 ? "pnas2024" : "homodyne");
	xf_h5_put_f64(w, g, "stator_rotor_gap", grid->gap_A, "angstrom",
		      "stator-rotor gap L of the model (laminar_flow; the config's " XF_KEY_GAP
		      ")");
	hid_t d = H5Gopen2(w->file, "/data", H5P_DEFAULT);
	if (d < 0)
		return xf_h5_fail(w, "/data");
	xf_h5_put_i64(w, d, "first_frame", ds->first_frame,
		      "1-based stored frame row of t = 0: the data window starts there and holds "
		      "the length of /data/t rows");
	if (est->slot_q) { /* a joint fit: /data/q is the first ring's */
		xf_h5_put_vec(w, d, "slot_q", (size_t)ds->n_phi, est->slot_q, "1/angstrom",
			      "wavevector q of the ring of each angle slot (a joint fit over q "
			      "rings: the rings' slots in ring order, indexing every per-angle "
			      "array with phi_deg); the model of each slot is drawn at it");
		xf_h5_dims(w, d, "slot_q", "/phi_deg", NULL);
	}
	H5Gclose(d);
	return w->failed ? -1 : 0;
}
