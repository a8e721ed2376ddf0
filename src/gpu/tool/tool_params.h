/* tool_params.h — the backend's per-pass inputs at a case's x (params.c). */
#ifndef XPCSFIT_GPU_TOOL_PARAMS_H
#define XPCSFIT_GPU_TOOL_PARAMS_H

#include "gpu/tool/tool.h"

typedef struct tool_params {
	xf_frames frames;
	double *store; /* contrast, offset, cos, sin [n_phi] each */
	xf_gpu_params prm;
} tool_params;

int tool_params_init(const tool_case *c, tool_params *t);
void tool_params_free(tool_params *t);

#endif
