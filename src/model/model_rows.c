/* model_rows.c — the row evaluator (model_rows_kernel.h) for the baseline instruction
 * set, and the choice among it and the AVX2 and AVX-512 builds. Every build gives the same
 * bits: the choice is about speed only. */
#include <stdlib.h>
#include <string.h>

#define XF_MODEL_ROW xf_model_row_generic
#include "model/model_rows_kernel.h"

xf_model_row_fn xf_model_row_select(void)
{
	const char *want = getenv("XPCSFIT_KERNEL");
	if (want && !strcmp(want, "generic"))
		return xf_model_row_generic;
#if defined(XF_X86_KERNELS)
	__builtin_cpu_init();
	int avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2");
	if (avx512 && !(want && !strcmp(want, "avx2")))
		return xf_model_row_avx512;
	if (avx2)
		return xf_model_row_avx2;
#endif
	return xf_model_row_generic;
}
