/* params.c — the per-pass inputs of the backend at the case's x (gpu.h), as the CPU pass
 * computes them (pass.c). */
#include <math.h>
#include <stdlib.h>

#include "gpu/tool/tool.h"
#include "gpu/tool/tool_params.h"

int tool_params_init(const tool_case *c, tool_params *t)
{
	int na = c->pr.n_phi;
	const int shear = xf_model_record_of(c->pr.mode)->shear;
	t->store = malloc(sizeof(double) * 4 * (size_t)na);
	if (!t->store || xf_frames_alloc(&t->frames, c->ds.n_frames, shear)) {
		free(t->store);
		return -1;
	}
	xf_frames_compute(&t->frames, &c->pr.grid, c->x);
	double *con = t->store, *off = con + na, *cs = off + na, *sn = cs + na;
	xf_problem_scaling(&c->pr, c->x, con, off);
	for (int p = 0; p < na; p++) {
		double a = shear ? (c->x[XF_P_PHI0] - c->ds.phi_deg[p]) * XF_DEG2RAD : 0.0;
		cs[p] = cos(a);
		sn[p] = sin(a);
	}
	t->prm = (xf_gpu_params){ &t->frames, con, off, cs, sn };
	return 0;
}

void tool_params_free(tool_params *t)
{
	xf_frames_free(&t->frames);
	free(t->store);
}
