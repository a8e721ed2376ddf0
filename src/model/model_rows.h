/* model_rows.h — the vectorised row evaluator of model.c (model_rows_kernel.h): c2 of
 * pairs (i, j0..j1−1), values only, built for the baseline, AVX2 and AVX-512 instruction
 * sets with the same bits. */
#ifndef XPCSFIT_MODEL_ROWS_H
#define XPCSFIT_MODEL_ROWS_H

/* What a row needs: the frames' cumulative integrals, padded to n + 8 with their last
 * value, and the angle's constants. */
#define XF_MODEL_ROW_PAD 8 /* the lane count: values of padding after C^D and C^γ */

typedef struct xf_model_row_ctx {
	const double *cd, *cg; /* C^D_k, C^γ_k (cg: NULL without shear) */
	double w;	       /* ½ q² dt */
	double s_cos;	       /* s · cos((φ0 − φ)·π/180) */
	double contrast, offset;
	int shear, pnas; /* laminar mode; pnas2024 shear model */
} xf_model_row_ctx;

typedef void (*xf_model_row_fn)(const xf_model_row_ctx *x, int i, int j0, int j1, double *out);

void xf_model_row_generic(const xf_model_row_ctx *x, int i, int j0, int j1, double *out);
void xf_model_row_avx2(const xf_model_row_ctx *x, int i, int j0, int j1, double *out);
void xf_model_row_avx512(const xf_model_row_ctx *x, int i, int j0, int j1, double *out);

/* The widest build this CPU runs (XPCSFIT_KERNEL=generic|avx2 forces one). */
xf_model_row_fn xf_model_row_select(void);

#endif
