/* pass_kernels.c — the models' block kernels at the likelihood's floor (adr/0115): for
 * each model, the kernel of every linear-loss level chosen for this CPU. The model record
 * (model/params.c) sits below this floor and cannot point up to its kernels, so the
 * written-out ones are registered here, one row per model; a model given by its point
 * function (adr/0116) runs the point kernel (pass_point.c) with no row here. pass.c runs
 * the one chosen at set-up and asks no model which it is. */
#include "likelihood/pass_internal.h"

/* Static: one kernel per level (pass_hessian.c, pass_gradient.c); its builds are the
 * compiler's, so the choice does not depend on the CPU. */
static void static_block(xf_lik *lik, int block)
{
	switch (lik->level) {
	case XF_PASS_HESSIAN: xf_pass_block_hessian(lik, block); break;
	case XF_PASS_GRADIENT: xf_pass_block_gradient(lik, block); break;
	case XF_PASS_SCALING: xf_pass_block_scaling(lik, block); break;
	case XF_PASS_COLLAPSE: xf_pass_block_collapse(lik, block); break;
	default: xf_pass_block_value(lik, block);
	}
}

static xf_pass_block_fn static_select(void)
{
	return static_block;
}

/* Laminar flow: one kernel for every level, built per instruction set (pass_laminar.c). */
static const struct {
	xf_mode mode;
	xf_pass_block_fn (*select)(void);
} kernels[] = {
	{ XF_MODE_STATIC, static_select },
	{ XF_MODE_LAMINAR, xf_pass_laminar_select },
};

xf_pass_block_fn xf_pass_kernel_of(xf_mode mode)
{
	for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
		if (kernels[k].mode == mode)
			return kernels[k].select();
	const xf_model_record *model = xf_model_at((int)mode);
	return model && model->g1 ? xf_pass_block_point : NULL;
}
