/* model_rows_avx512.c — the row evaluator (model_rows_kernel.h) built with -mavx512f. */
#if defined(XF_X86_KERNELS)
#define XF_MODEL_ROW xf_model_row_avx512
#include "model/model_rows_kernel.h"
#endif
