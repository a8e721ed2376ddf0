/* slot.h — the partial sums of one (pass block, angle) slot and the per-point update that
 * fills them, shared by the CUDA kernels (gpu_cuda.cu) and their CPU reference
 * (gpu_ref.c): the same arithmetic in the same order on both sides (XF_HD, kernel.h).
 *
 * A slot holds the sums pass_internal.h's xf_accum keeps, for the points of one block at
 * one angle; the total (xf_gpu_total_doubles) has xf_accum's layout, so pass.c assembles
 * JᵀJ and Jᵀr from it as from the CPU's own sums. */
#ifndef XPCSFIT_GPU_SLOT_H
#define XPCSFIT_GPU_SLOT_H

#include "model/kernel.h"

/* slot layout */
#define XF_SLOT_CHI2	0				      /* Σ res² */
#define XF_SLOT_G1SQ	1				      /* Σ g1² */
#define XF_SLOT_HPP	2				      /* [7×7] Σ j jᵀ */
#define XF_SLOT_BP	(XF_SLOT_HPP + XF_N_PHYS * XF_N_PHYS) /* [7] Σ j res */
#define XF_SLOT_PC	(XF_SLOT_BP + XF_N_PHYS)	      /* [7] Σ j g1² */
#define XF_SLOT_PO	(XF_SLOT_PC + XF_N_PHYS)	      /* [7] Σ j */
#define XF_SLOT_SCC	(XF_SLOT_PO + XF_N_PHYS) /* Σ g1⁴, then Σ g1², Σ 1, Σ g1² res, Σ res */
#define XF_SLOT_DOUBLES (XF_SLOT_SCC + 5)
/* the first XF_SLOT_GLOBAL doubles add over angles; the rest stay per angle */
#define XF_SLOT_GLOBAL XF_SLOT_PC
#define XF_SLOT_ANGLE  (XF_SLOT_DOUBLES - XF_SLOT_GLOBAL)

/* Threads per block of the accumulation, on the GPU and in the reference: the partial of
 * thread t holds points t, t + XF_GPU_THREADS, ... of its block; a fixed tree adds them. */
#define XF_GPU_THREADS 128

/* What one pass computes (the kernels are specialised on it). */
#define XF_GPU_VALUE	0 /* χ², Σ g1² */
#define XF_GPU_GRADIENT 1 /* and Jᵀr: the log density and gradient of a shard (NUTS) */
#define XF_GPU_HESSIAN	2 /* and JᵀJ */

/* Add one point (res, its physical Jacobian row j, g1²) to slot s at a level. */
XF_HD static inline void xf_slot_add(double *s, int level, double res, const double *j, double g1sq)
{
	s[XF_SLOT_CHI2] += res * res;
	s[XF_SLOT_G1SQ] += g1sq;
	s[XF_SLOT_SCC + 1] += g1sq;
	s[XF_SLOT_SCC + 3] += g1sq * res;
	s[XF_SLOT_SCC + 4] += res;
	if (level == XF_GPU_VALUE)
		return;
	for (int m = 0; m < XF_N_PHYS; m++)
		s[XF_SLOT_BP + m] += j[m] * res;
	if (level != XF_GPU_HESSIAN)
		return;
	s[XF_SLOT_SCC] += g1sq * g1sq;
	s[XF_SLOT_SCC + 2] += 1.0;
	for (int m = 0; m < XF_N_PHYS; m++) {
		s[XF_SLOT_PC + m] += j[m] * g1sq;
		s[XF_SLOT_PO + m] += j[m];
		for (int l = 0; l < XF_N_PHYS; l++)
			s[XF_SLOT_HPP + m * XF_N_PHYS + l] += j[m] * j[l];
	}
}

/* Doubles of the total: the global sums, then per angle pc [n_phi][7], po [n_phi][7],
 * scc, sco, soo, bc, bo [n_phi] each (xf_accum's order). */
XF_HD static inline int xf_gpu_total_doubles(int n_phi)
{
	return XF_SLOT_GLOBAL + n_phi * XF_SLOT_ANGLE;
}

/* Where component c (≥ XF_SLOT_GLOBAL) of the slot of angle p lands in the total. */
XF_HD static inline int xf_gpu_total_index(int n_phi, int p, int c)
{
	int a = c - XF_SLOT_GLOBAL; /* 0..6 pc, 7..13 po, 14.. the five scalars */
	if (a < XF_N_PHYS)
		return XF_SLOT_GLOBAL + p * XF_N_PHYS + a;
	if (a < 2 * XF_N_PHYS)
		return XF_SLOT_GLOBAL + n_phi * XF_N_PHYS + p * XF_N_PHYS + (a - XF_N_PHYS);
	return XF_SLOT_GLOBAL + 2 * n_phi * XF_N_PHYS + (a - 2 * XF_N_PHYS) * n_phi + p;
}

#endif
