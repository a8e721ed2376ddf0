/* pass_laminar.c — the laminar block kernel (pass_laminar_kernel.h) built for the
 * baseline instruction set, and the choice among it and the AVX2 and AVX-512 builds
 * (pass_laminar_avx2.c, pass_laminar_avx512.c) on this CPU. Every build gives the same
 * bits (adr/0035): the choice is about speed only. */
#include <stdlib.h>
#include <string.h>

#define XF_LAMINAR_KERNEL xf_pass_laminar_generic
#include "likelihood/pass_laminar_kernel.h"

/* XPCSFIT_KERNEL=generic|avx2|avx512 forces a build (tests compare their bits); unset or
 * unknown: the widest this CPU runs. */
xf_pass_block_fn xf_pass_laminar_select(void)
{
	const char *want = getenv("XPCSFIT_KERNEL");
	if (want && !strcmp(want, "generic"))
		return xf_pass_laminar_generic;
#if defined(XF_X86_KERNELS)
	__builtin_cpu_init();
	int avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2");
	if (avx512 && !(want && !strcmp(want, "avx2")))
		return xf_pass_laminar_avx512;
	if (avx2)
		return xf_pass_laminar_avx2;
#endif
	return xf_pass_laminar_generic;
}
