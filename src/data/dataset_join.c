/* dataset_join.c — the rings of a file side by side as one dataset (adr/0064, adr/0066):
 * the angle slots of ring 0, then ring 1, ..., each slot's q in slot_q, for a joint fit.
 * The maps are borrowed, not copied: the rings keep them, and a joined dataset is freed
 * with xf_dataset_free_joined (its arrays, not the maps). */
#include <stdlib.h>
#include <string.h>

#include "xpcsfit/dataset.h"

int xf_dataset_join_rings(const xf_dataset *rings, int n_rings, xf_dataset *joint, double **slot_q,
			  xf_error *err)
{
	const xf_dataset *r0 = &rings[0];
	int n = 0;
	memset(joint, 0, sizeof *joint);
	*slot_q = NULL;
	for (int k = 0; k < n_rings; k++) {
		/* one file has one frame grid (adr/0063); a band is not joined (adr/0066) */
		if (rings[k].n_frames != r0->n_frames || rings[k].dt_s != r0->dt_s ||
		    rings[k].band) {
			return xf_fail(
				err, XF_ERR_DATA,
				"ring q %.6g 1/A has %d frames at dt %.6g s, ring q %.6g "
				"1/A %d at %.6g s: rings fitted jointly need one frame grid, "
				"%s",
				r0->q, r0->n_frames, r0->dt_s, rings[k].q, rings[k].n_frames,
				rings[k].dt_s, r0->path);
		}
		n += rings[k].n_phi;
	}
	joint->path = strdup(r0->path);
	joint->phi_deg = malloc(sizeof(double) * (size_t)n);
	joint->map_number = malloc(sizeof(int) * (size_t)n);
	joint->c2 = calloc((size_t)n, sizeof(double *));
	*slot_q = malloc(sizeof(double) * (size_t)n);
	if (!joint->path || !joint->phi_deg || !joint->map_number || !joint->c2 || !*slot_q) {
		xf_dataset_free_joined(joint);
		free(*slot_q);
		*slot_q = NULL;
		return xf_fail(err, XF_ERR_DATA, "out of memory joining %d rings", n_rings);
	}
	joint->layout = r0->layout;
	joint->q = r0->q;
	joint->n_q_rings = r0->n_q_rings;
	joint->n_phi = joint->n_phi_in_ring = n;
	joint->n_frames_stored = r0->n_frames_stored;
	joint->first_frame = r0->first_frame;
	joint->n_frames = r0->n_frames;
	joint->dt_s = r0->dt_s;
	memcpy(joint->dt_source, r0->dt_source, sizeof joint->dt_source);
	joint->c2_base = 0;
	joint->c2_len = xf_packed_size((size_t)r0->n_frames);
	int s = 0;
	for (int k = 0; k < n_rings; k++) {
		for (int a = 0; a < rings[k].n_phi; a++, s++) {
			joint->phi_deg[s] = rings[k].phi_deg[a];
			joint->map_number[s] = rings[k].map_number[a];
			joint->c2[s] = rings[k].c2[a];
			(*slot_q)[s] = rings[k].q;
		}
		/* ring order: the same sum whatever the thread count */
		joint->abs_sum += rings[k].abs_sum;
		joint->abs_count += rings[k].abs_count;
		joint->n_points += rings[k].n_points;
	}
	return 0;
}

void xf_dataset_free_joined(xf_dataset *joint)
{
	free(joint->c2);
	free(joint->phi_deg);
	free(joint->map_number);
	free(joint->path);
	memset(joint, 0, sizeof *joint);
}
