/* model_rows_avx2.c — the row evaluator (model_rows_kernel.h) built with -mavx2. */
#if defined(XF_X86_KERNELS)
#define XF_MODEL_ROW xf_model_row_avx2
#include "model/model_rows_kernel.h"
#endif
