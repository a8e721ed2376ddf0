/* pass_laminar_avx2.c — the laminar block kernel (pass_laminar_kernel.h) built with
 * -mavx2 (CMakeLists.txt); pass_laminar.c runs it where the CPU has it. */
#if defined(XF_X86_KERNELS)
#define XF_LAMINAR_KERNEL xf_pass_laminar_avx2
#include "likelihood/pass_laminar_kernel.h"
#endif
