/* pass_laminar_avx512.c — the laminar block kernel (pass_laminar_kernel.h) built with
 * -mavx512f (CMakeLists.txt); pass_laminar.c runs it where the CPU has it. */
#if defined(XF_X86_KERNELS)
#define XF_LAMINAR_KERNEL xf_pass_laminar_avx512
#include "likelihood/pass_laminar_kernel.h"
#endif
