/* pass_laminar_kernel.h — the laminar block kernel of every pass level (χ² alone; χ² and
 * Jᵀr; χ², JᵀJ and Jᵀr; the scaling and collapse sums) in every scaling mode, vectorised over frame pairs (adr/0035).
 *
 * This file is a template: pass_laminar*.c include it, each compiled for one instruction
 * set, after defining XF_LAMINAR_KERNEL (the name of the block function it makes); the
 * vectors and their functions (SLEEF's cinz sincos and exp, u10) are simd/v8.h's.
 *
 * Shape: a block's pairs are taken in chunks of XF_CHUNK. For each chunk the pair-level
 * factors (g1_D with ∂log g1_D, I^γ with ∂I^γ, the data index) are computed once, the
 * differences of the frame integrals gathered pair by pair and the factors (two sqrt,
 * two divisions, one exp a pair) XF_LANES pairs at a time; then,
 * angle by angle, the points of the chunk are evaluated XF_LANES pairs at a time: one
 * vector sincos per lane group, the per-point Jacobian scalars (u, v, z, g1², res) and
 * their sums. Sums over the angles of a pair (for JᵀJ's physical block and Jᵀr) go to
 * small per-pair arrays; sums over pairs (χ², the per-angle scaling sums) stay in lane
 * registers and are added into the block's slot at the end of each chunk and angle.
 * Last, the per-pair sums are turned into JᵀJ's physical block, again over lanes.
 *
 * Determinism: the logical lane count is XF_LANES = 8 on every instruction set (AVX-512
 * holds it in one register, AVX2 in two, SSE2 in four: the point and pair-term loops run
 * once per native part, pairs k + h·XF_VW of each group of 8, with that part's sums in
 * native registers), the chunks and lanes are fixed by the block, and lanes are summed
 * in one fixed order, so a block's sums
 * do not depend on the thread count or the instruction set. cinz sincos and exp are
 * SLEEF's "deterministic, no FMA" variants: the same bits on sse2, avx and avx512f
 * (checked by test_likelihood). Contraction stays off (-ffp-contract=off). */
#include <math.h>
#include <string.h>

#include "likelihood/pass_internal.h"
#include "model/kernel_v8.h"

/* The argument of sinc in F(Φ): Φ (homodyne) or πΦ (pnas2024). */
static inline __attribute__((always_inline)) xf_vn vn_sinc_arg(xf_vn phase, int pnas)
{
	return pnas ? M_PI * phase : phase;
}

/* The shear factor F(Φ) and dF/dΦ of kernel.h's xf_shear_factor, lane by lane, from
 * x = vn_sinc_arg(Φ) and its sin and cos (from the phase tables, adr/0089). Below
 * XF_SINC_SERIES_X sinc and its slope come from their series instead: there sin x from
 * the difference formulas carries an absolute error of a few 1e-16, which the division
 * by x (and by x² in the slope) would raise; the series to x¹² is exact to rounding. */
#define XF_SINC_SERIES_X 0.25
static inline __attribute__((always_inline)) xf_vn vn_shear_factor(xf_vn x, xf_vn sn, xf_vn cs,
								   int pnas, xf_vn *dfactor)
{
	xf_vn ax = vn_abs(x); /* |x| */
	xf_mn small = ax < XF_SINC_SERIES_X;
	xf_vn inv = 1.0 / x, sc = sn * inv, ds = (cs - sc) * inv;
	if (vn_any(small)) {
		xf_vn x2 = x * x;
		xf_vn sinc_t =
			1.0 -
			x2 * (1.0 / 6.0) *
				(1.0 -
				 x2 * (1.0 / 20.0) *
					 (1.0 -
					  x2 * (1.0 / 42.0) *
						  (1.0 -
						   x2 * (1.0 / 72.0) *
							   (1.0 -
							    x2 * (1.0 / 110.0) *
								    (1.0 - x2 * (1.0 / 156.0))))));
		xf_vn ds_t =
			-x * (1.0 / 3.0) *
			(1.0 -
			 x2 * (1.0 / 10.0) *
				 (1.0 -
				  x2 * (1.0 / 28.0) *
					  (1.0 -
					   x2 * (1.0 / 54.0) *
						   (1.0 - x2 * (1.0 / 88.0) *
								  (1.0 - x2 * (1.0 / 130.0))))));
		sc = vn_select(small, sinc_t, sc);
		ds = vn_select(small, ds_t, ds);
	}
	if (pnas) {
		xf_vn one = (xf_vn){ 0 } + 1.0, sign = vn_select(sc < 0.0, -one, one);
		*dfactor = sign * M_PI * ds;
		return sign * sc;
	}
	*dfactor = 2.0 * sc * ds;
	return sc * sc;
}

/* sin and cos of a pair's x = a·s·I^γ·cos_p from the phase tables: with Δ = C^γ_i − C^γ_j
 * and I^γ = √(Δ² + ε²) = |Δ| + δ, x = sgn(Δ)·(θ_i − θ_j) + e, e = a·(s·δ)·cos_p, and
 * sin x, cos x follow from the tables' sin θ, cos θ by the difference and sum formulas,
 * with e's sin and cos from their series (|e| < 1e-3: exact to rounding). A lane whose e
 * is larger (frames nearly at the same strain, far above the series region: rare) takes
 * its sincos directly. sp, cp: sin and cos of θ_i − θ_j, pair by pair. */
#define XF_PHASE_E_MAX 1e-3
static inline __attribute__((always_inline)) void
vn_pair_sincos(xf_vn sp, xf_vn cp, xf_vn sgn, xf_vn e, xf_vn x, xf_vn *sn, xf_vn *cs)
{
	sp = sgn * sp;
	xf_vn e2 = e * e;
	xf_vn se = e * (1.0 - e2 * (1.0 / 6.0) * (1.0 - e2 * (1.0 / 20.0))),
	      ce = 1.0 - e2 * (1.0 / 2.0) * (1.0 - e2 * (1.0 / 12.0));
	*sn = sp * ce + cp * se;
	*cs = cp * ce - sp * se;
	xf_vn ae = vn_abs(e);
	xf_mn far = ae > XF_PHASE_E_MAX;
	if (vn_any(far)) {
		xf_vn vs, vc;
		xf_vn_sincos(x, &vs, &vc);
		*sn = vn_select(far, vs, *sn);
		*cs = vn_select(far, vc, *cs);
	}
}

#define XF_CHUNK      128 /* pairs per chunk: its arrays (~26 KB) stay in L1 */
#define XF_RUN_TABLES 1
#define XF_RUN_DATA   2

/* Per-pair sums over the angles of a pair. */
enum {
	PS_UR,
	PS_VR,
	PS_ZR,
	PS_UU,
	PS_UV,
	PS_UZ,
	PS_VV,
	PS_VZ,
	PS_ZZ,
	PS_UG,
	PS_U,
	PS_VG,
	PS_V,
	PS_N
};

/* One chunk: the pair-level factors, the per-pair sums. Padding pairs (past the end of
 * the block) have harmless factors and are masked out of every sum. */
typedef struct lam_chunk {
	double g1d[XF_CHUNK], sig[XF_CHUNK], ig[XF_CHUNK]; /* g1_D, s·I^γ, I^γ */
	double sgn[XF_CHUNK], sdl[XF_CHUNK]; /* sgn(C^γ_i − C^γ_j), s·(I^γ − |C^γ_i − C^γ_j|) */
	int fi[XF_CHUNK], fj[XF_CHUNK];	       /* the pair's frames */
	double a[3][XF_CHUNK], b[3][XF_CHUNK]; /* ∂log g1_D, ∂I^γ */
	double ps[PS_N][XF_CHUNK];
	size_t di[XF_CHUNK]; /* the pair's element in its angle's column */
	/* XF_RUN_TABLES: the XF_LANES pairs of the group share frame i and their frames j
	 * are consecutive (a run along one row of the triangle): the phase tables are read by
	 * vector loads instead of lane by lane (the same values, the same products);
	 * XF_RUN_DATA as well: their data elements are consecutive too, the data are read
	 * by one vector load (a band's pairs or a subsample's may not be) */
	unsigned char run[XF_CHUNK / XF_LANES];
} lam_chunk;

/* Fill the pair-level factors of up to XF_CHUNK pairs from the cursor; returns the count.
 * The differences of the frame integrals are gathered pair by pair (into g1d, ig and,
 * with slopes, a and b), then turned into the factors over lanes. Padding pairs (past the end of the block)
 * end with harmless factors (g1_D = I^γ = 1, no slopes). */
static inline __attribute__((always_inline)) int
chunk_pairs(const xf_lik *lik, const xf_frames *f, pair_cursor *c, lam_chunk *ch, int slopes)
{
	const size_t n = (size_t)lik->ds->n_frames;
	int k = 0, i, j;
	for (; k < XF_CHUNK && cursor_next(c, &i, &j); k++) {
		ch->fi[k] = i;
		ch->fj[k] = j;
		ch->g1d[k] = f->cd[i] - f->cd[j];
		ch->ig[k] = f->cg[i] - f->cg[j];
		for (int m = 0; m < 3 && slopes; m++) {
			ch->a[m][k] = f->dcd[m][i] - f->dcd[m][j];
			ch->b[m][k] = f->dcg[m][i] - f->dcg[m][j];
		}
		ch->di[k] = lik->gathered
				    ? c->k - 1
				    : xf_packed_index(n, (size_t)i, (size_t)j) - lik->ds->c2_base;
	}
	for (int q = k; q < XF_CHUNK; q++) { /* the padding's differences: 0 */
		ch->fi[q] = ch->fj[q] = 0;
		ch->g1d[q] = ch->ig[q] = 0.0;
		for (int m = 0; m < 3 && slopes; m++)
			ch->a[m][q] = ch->b[m][q] = 0.0;
	}
	for (int q = 0; q < k; q += XF_VW) {
		xf_vn dd[3] = { { 0 } }, dg[3] = { { 0 } }, a[3], b[3];
		for (int m = 0; m < 3 && slopes; m++) {
			dd[m] = vn_load(ch->a[m] + q);
			dg[m] = vn_load(ch->b[m] + q);
		}
		vn_store(ch->g1d + q, vn_pair_diffusion(f->w, vn_load(ch->g1d + q), dd, a));
		xf_vn diff = vn_load(ch->ig + q), ig = vn_pair_integral(diff, dg, b);
		xf_vn adiff = vn_abs(diff);
		xf_vn one = (xf_vn){ 0 } + 1.0;
		vn_store(ch->sgn + q, vn_select(diff < 0.0, -one, one));
		vn_store(ch->sdl + q, f->s * (XF_INTEGRAL_EPS2 / (ig + adiff))); /* I − |Δ| */
		vn_store(ch->ig + q, ig);
		vn_store(ch->sig + q, f->s * ig);
		for (int m = 0; m < 3 && slopes; m++) {
			vn_store(ch->a[m] + q, a[m]);
			vn_store(ch->b[m] + q, b[m]);
		}
	}
	for (int q = k; q < XF_CHUNK; q++) {
		ch->g1d[q] = ch->ig[q] = ch->sig[q] = ch->sgn[q] = 1.0;
		ch->sdl[q] = 0.0;
		for (int m = 0; m < 3 && slopes; m++)
			ch->a[m][q] = ch->b[m][q] = 0.0;
		ch->di[q] = ch->di[0];
	}
	for (int g = 0; g < XF_CHUNK / XF_LANES; g++) {
		const int q = g * XF_LANES;
		int run = q + XF_LANES <= k, data = run;
		for (int l = 1; l < XF_LANES && run; l++) {
			run = ch->fi[q + l] == ch->fi[q] && ch->fj[q + l] == ch->fj[q] + l;
			data = data && ch->di[q + l] == ch->di[q] + (size_t)l;
		}
		ch->run[g] =
			(unsigned char)(run ? (data ? XF_RUN_TABLES | XF_RUN_DATA : XF_RUN_TABLES)
					    : 0);
	}
	return k;
}

/* Register sums over the pairs of a chunk at one angle, lane by lane. */
enum {
	AS_CHI2,
	AS_G2,
	AS_G4,
	AS_G2R,
	AS_R,
	AS_Z,
	AS_ZG,
	AS_PC,
	AS_PO = AS_PC + 6,
	AS_CR = AS_PO + 6, /* the collapse level's Σ ∂(g1²)·res, then its z part */
	AS_ZR = AS_CR + 6,
	AS_N
};

/* The points of one angle over the chunk's pairs: part h of the 8 logical lanes (pairs
 * k + h·XF_VW of each group of 8 at k) at a time, its sums in native registers, then the
 * sums of the 8 lanes in the fixed order. */
static inline __attribute__((always_inline)) void chunk_angle(const xf_lik *lik, xf_accum *acc,
							      lam_chunk *ch, double s, int n_pairs,
							      int p0, int p, xf_pass_level level,
							      int shared, int pnas)
{
	const double *col =
		lik->gathered ? lik->gathered + (size_t)p * lik->ps->n_pairs : lik->ds->c2[p];
	const double ca = lik->cos_a[p], zf = -lik->sin_a[p] * XF_DEG2RAD;
	const double con = lik->contrast[p], off = lik->offset[p];
	const int n_groups = (n_pairs + XF_LANES - 1) / XF_LANES * XF_LANES;
	/* the levels that read the per-angle slope sums (the rest skip their set-up) */
	const int slope_sums = level == XF_PASS_COLLAPSE || (level == XF_PASS_HESSIAN && !shared);
	double sn[XF_CHUNK], cs[XF_CHUNK];
	const size_t nf = (size_t)lik->frames.n;
	const double *ts = lik->phase_sin + (size_t)p * nf, *tc = lik->phase_cos + (size_t)p * nf;
	/* the tables' products pair by pair (a scalar loop: lanes assembled from scalar loads
	 * stall on store forwarding), then the rest over lanes */
	for (int k0 = 0; k0 < n_groups; k0 += XF_LANES) {
		if (ch->run[k0 / XF_LANES] & XF_RUN_TABLES) {
			const double si = ts[ch->fi[k0]], ci = tc[ch->fi[k0]];
			const double *tsj = ts + ch->fj[k0], *tcj = tc + ch->fj[k0];
			for (int l = 0; l < XF_LANES; l += XF_VW) {
				const xf_vn sj = vn_load(tsj + l), cj = vn_load(tcj + l);
				vn_store(sn + k0 + l, si * cj - ci * sj);
				vn_store(cs + k0 + l, ci * cj + si * sj);
			}
			continue;
		}
		for (int k = k0; k < k0 + XF_LANES; k++) {
			const double si = ts[ch->fi[k]], ci = tc[ch->fi[k]];
			const double sj = ts[ch->fj[k]], cj = tc[ch->fj[k]];
			sn[k] = si * cj - ci * sj;
			cs[k] = ci * cj + si * sj;
		}
	}
	for (int k = 0; k < n_groups; k += XF_VW) {
		xf_vn vs, vc;
		vn_pair_sincos(vn_load(sn + k), vn_load(cs + k), vn_load(ch->sgn + k),
			       vn_sinc_arg(vn_load(ch->sdl + k) * ca, pnas),
			       vn_sinc_arg(vn_load(ch->sig + k) * ca, pnas), &vs, &vc);
		vn_store(sn + k, vs);
		vn_store(cs + k, vc);
	}
	double lanes[AS_N][XF_LANES];
	/* the collapse level's point terms u·res, v·res, u·g1², v·g1², u, v, pair by pair */
	enum { CW_UR, CW_VR, CW_UG, CW_VG, CW_U, CW_V, CW_N };
	double cw[CW_N][XF_CHUNK];
	for (int h = 0; h < XF_VR; h++) {
		const xf_vn zero = { 0 };
		xf_vn chi2 = zero, g2 = zero, g4 = zero, g2r = zero, r = zero, zs = zero, zg = zero;
		xf_vn pc[6], po[6]; /* per-angle modes: Σ a·u·g1², Σ a·u, Σ b·v·g1², Σ b·v */
		xf_vn cr[6], zr = zero; /* collapse: Σ a·u·res, Σ b·v·res, Σ z·res */
		for (int m = 0; m < 6 && slope_sums; m++)
			pc[m] = po[m] = cr[m] = zero;
		for (int k0 = 0; k0 < n_pairs; k0 += XF_LANES) {
			const int k = k0 + h * XF_VW;
			const size_t *di = ch->di + k;
			xf_mn ok = vn_iota() + (double)k < (double)n_pairs;
			xf_vn data;
			if (ch->run[k0 / XF_LANES] & XF_RUN_DATA)
				data = vn_load(col + di[0]);
			else
				for (int i = 0; i < XF_VW; i++)
					data[i] = col[di[i]];
			xf_vn g1d = vn_load(ch->g1d + k), dfactor;
			xf_vn x = vn_sinc_arg(vn_load(ch->sig + k) * ca, pnas);
			xf_vn factor = vn_shear_factor(x, vn_load(sn + k), vn_load(cs + k), pnas,
						       &dfactor);
			xf_vn g1 = g1d * factor;
			xf_mn live = ok & (g1 >=
					   XF_G1_FLOOR); /* under the floor: g1 = floor, no slope */
			g1 = vn_select(g1 < XF_G1_FLOOR, zero + XF_G1_FLOOR, g1);
			xf_vn g1sq = vn_keep(ok, g1 * g1);
			xf_vn res = vn_keep(ok, data - (off + con * (g1 * g1)));
			chi2 += res * res;
			g2 += g1sq;
			if (level == XF_PASS_VALUE)
				continue;
			if (level == XF_PASS_SCALING || level == XF_PASS_COLLAPSE) {
				g2r += g1sq * res;
				r += res;
				g4 += g1sq * g1sq;
			}
			if (level == XF_PASS_SCALING)
				continue;
			if (level == XF_PASS_COLLAPSE) {
				/* ∂(g1²) without the contrast: u, v, z of the Jacobian row over con */
				xf_vn two_g1 = 2.0 * g1;
				xf_vn sh = two_g1 * g1d * dfactor * s;
				xf_vn u = vn_keep(live, two_g1 * g1), v = vn_keep(live, sh * ca);
				xf_vn z = vn_keep(live, sh * zf * vn_load(ch->ig + k));
				vn_store(cw[CW_UR] + k, u * res);
				vn_store(cw[CW_VR] + k, v * res);
				vn_store(cw[CW_UG] + k, u * g1sq);
				vn_store(cw[CW_VG] + k, v * g1sq);
				vn_store(cw[CW_U] + k, u);
				vn_store(cw[CW_V] + k, v);
				zr += z * res;
				zg += z * g1sq;
				zs += z;
				continue;
			}
			xf_vn two_cg1 = 2.0 * con * g1;
			xf_vn shear = two_cg1 * g1d * dfactor * s;
			xf_vn u = vn_keep(live, two_cg1 * g1), v = vn_keep(live, shear * ca);
			xf_vn z = vn_keep(live, shear * zf * vn_load(ch->ig + k));
			vn_add_to(ch->ps[PS_UR] + k, u * res);
			vn_add_to(ch->ps[PS_VR] + k, v * res);
			vn_add_to(ch->ps[PS_ZR] + k, z * res);
			g2r += g1sq * res;
			r += res;
			if (level != XF_PASS_HESSIAN)
				continue;
			vn_add_to(ch->ps[PS_UU] + k, u * u);
			vn_add_to(ch->ps[PS_UV] + k, u * v);
			vn_add_to(ch->ps[PS_UZ] + k, u * z);
			vn_add_to(ch->ps[PS_VV] + k, v * v);
			vn_add_to(ch->ps[PS_VZ] + k, v * z);
			vn_add_to(ch->ps[PS_ZZ] + k, z * z);
			xf_vn ug = u * g1sq, vg = v * g1sq;
			g4 += g1sq * g1sq;
			zs += z;
			zg += z * g1sq;
			if (shared) {
				vn_add_to(ch->ps[PS_UG] + k, ug);
				vn_add_to(ch->ps[PS_U] + k, u);
				vn_add_to(ch->ps[PS_VG] + k, vg);
				vn_add_to(ch->ps[PS_V] + k, v);
			} else {
				for (int m = 0; m < 3; m++) {
					xf_vn am = vn_load(ch->a[m] + k),
					      bm = vn_load(ch->b[m] + k);
					pc[m] += am * ug;
					po[m] += am * u;
					pc[3 + m] += bm * vg;
					po[3 + m] += bm * v;
				}
			}
		}
		/* the collapse level's slope sums from the stored point terms, one parameter
		 * at a time (six accumulators, not eighteen beside the point's: those spilled),
		 * each summed over the pairs in the same order */
		for (int m = 0; m < 3 && level == XF_PASS_COLLAPSE; m++)
			for (int k0 = 0; k0 < n_pairs; k0 += XF_LANES) {
				const int k = k0 + h * XF_VW;
				xf_vn am = vn_load(ch->a[m] + k), bm = vn_load(ch->b[m] + k);
				cr[m] += am * vn_load(cw[CW_UR] + k);
				cr[3 + m] += bm * vn_load(cw[CW_VR] + k);
				pc[m] += am * vn_load(cw[CW_UG] + k);
				pc[3 + m] += bm * vn_load(cw[CW_VG] + k);
				po[m] += am * vn_load(cw[CW_U] + k);
				po[3 + m] += bm * vn_load(cw[CW_V] + k);
			}
		const int o = h * XF_VW;
		vn_store(lanes[AS_CHI2] + o, chi2);
		vn_store(lanes[AS_G2] + o, g2);
		vn_store(lanes[AS_G4] + o, g4);
		vn_store(lanes[AS_G2R] + o, g2r);
		vn_store(lanes[AS_R] + o, r);
		vn_store(lanes[AS_Z] + o, zs);
		vn_store(lanes[AS_ZG] + o, zg);
		for (int m = 0; m < 6 && slope_sums; m++) {
			vn_store(lanes[AS_PC + m] + o, pc[m]);
			vn_store(lanes[AS_PO + m] + o, po[m]);
			vn_store(lanes[AS_CR + m] + o, cr[m]);
		}
		vn_store(lanes[AS_ZR] + o, zr);
	}
	/* into the block's slot: a shared mode's scaling sums land in the first slot of the
	 * block's ring (the basis row of every angle of the ring is the same), a per-angle
	 * mode's in the angle's own */
	const size_t q = shared ? (size_t)p0 : (size_t)p;
	acc->chi2 += v8_sum(lanes[AS_CHI2]);
	acc->g1sq += v8_sum(lanes[AS_G2]);
	acc->sco[q] += v8_sum(lanes[AS_G2]);
	acc->soo[q] += n_pairs;
	if (level == XF_PASS_VALUE)
		return;
	acc->bc[q] += v8_sum(lanes[AS_G2R]);
	acc->bo[q] += v8_sum(lanes[AS_R]);
	if (level == XF_PASS_SCALING) {
		acc->scc[q] += v8_sum(lanes[AS_G4]);
		return;
	}
	if (level == XF_PASS_COLLAPSE) {
		acc->scc[q] += v8_sum(lanes[AS_G4]);
		for (int m = 0; m < 6; m++) {
			acc->pr[q * XF_N_PHYS + m] += v8_sum(lanes[AS_CR + m]);
			acc->pc[q * XF_N_PHYS + m] += v8_sum(lanes[AS_PC + m]);
			acc->po[q * XF_N_PHYS + m] += v8_sum(lanes[AS_PO + m]);
		}
		acc->pr[q * XF_N_PHYS + 6] += v8_sum(lanes[AS_ZR]);
		acc->pc[q * XF_N_PHYS + 6] += v8_sum(lanes[AS_ZG]);
		acc->po[q * XF_N_PHYS + 6] += v8_sum(lanes[AS_Z]);
		return;
	}
	if (level != XF_PASS_HESSIAN)
		return;
	acc->scc[q] += v8_sum(lanes[AS_G4]);
	acc->pc[q * XF_N_PHYS + 6] += v8_sum(lanes[AS_ZG]);
	acc->po[q * XF_N_PHYS + 6] += v8_sum(lanes[AS_Z]);
	if (!shared)
		for (int m = 0; m < 6; m++) {
			acc->pc[q * XF_N_PHYS + m] += v8_sum(lanes[AS_PC + m]);
			acc->po[q * XF_N_PHYS + m] += v8_sum(lanes[AS_PO + m]);
		}
}

/* The per-pair sums of a chunk into Jᵀr's and JᵀJ's physical blocks (and, in a shared
 * mode, the scaling cross terms), over lanes: with a = ∂log g1_D and b = ∂I^γ of a pair,
 * hpp[m][l] += Σuu·a_m·a_l, Σuv·a_m·b_l, Σvv·b_m·b_l, Σuz·a_m, Σvz·b_m, Σzz (the upper
 * triangle, the only part assemble() reads). */
static inline __attribute__((always_inline)) void chunk_pair_terms(xf_accum *acc,
								   const lam_chunk *ch, int n_pairs,
								   xf_pass_level level, int shared,
								   int p0)
{
	/* lane sums: bp[7], then h[49] (upper triangle used), then pc[6], po[6] */
	enum {
		PT_BP = 0,
		PT_H = 7,
		PT_PC = PT_H + XF_N_PHYS * XF_N_PHYS,
		PT_PO = PT_PC + 6,
		PT_N = PT_PO + 6
	};
	double lanes[PT_N][XF_LANES];
	for (int part = 0; part < XF_VR; part++) {
		xf_vn bp[7], h[XF_N_PHYS * XF_N_PHYS], pc[6], po[6];
		const xf_vn zero = { 0 };
		for (int m = 0; m < 7; m++)
			bp[m] = zero;
		for (int m = 0; m < XF_N_PHYS * XF_N_PHYS; m++)
			h[m] = zero;
		for (int m = 0; m < 6; m++)
			pc[m] = po[m] = zero;
		for (int k0 = 0; k0 < n_pairs; k0 += XF_LANES) {
			const int k = k0 + part * XF_VW;
			xf_vn a[3], b[3];
			for (int m = 0; m < 3; m++) {
				a[m] = vn_load(ch->a[m] + k);
				b[m] = vn_load(ch->b[m] + k);
			}
			xf_vn ur = vn_load(ch->ps[PS_UR] + k), vr = vn_load(ch->ps[PS_VR] + k);
			for (int m = 0; m < 3; m++) {
				bp[m] += ur * a[m];
				bp[3 + m] += vr * b[m];
			}
			bp[6] += vn_load(ch->ps[PS_ZR] + k);
			if (level != XF_PASS_HESSIAN)
				continue;
			xf_vn uu = vn_load(ch->ps[PS_UU] + k), uv = vn_load(ch->ps[PS_UV] + k);
			xf_vn vv = vn_load(ch->ps[PS_VV] + k), uz = vn_load(ch->ps[PS_UZ] + k);
			xf_vn vz = vn_load(ch->ps[PS_VZ] + k);
			for (int m = 0; m < 3; m++) {
				xf_vn uua = uu * a[m], uva = uv * a[m], vvb = vv * b[m];
				for (int l = m; l < 3; l++) {
					h[m * XF_N_PHYS + l] += uua * a[l];
					h[(3 + m) * XF_N_PHYS + 3 + l] += vvb * b[l];
				}
				for (int l = 0; l < 3; l++)
					h[m * XF_N_PHYS + 3 + l] += uva * b[l];
				h[m * XF_N_PHYS + 6] += uz * a[m];
				h[(3 + m) * XF_N_PHYS + 6] += vz * b[m];
			}
			h[6 * XF_N_PHYS + 6] += vn_load(ch->ps[PS_ZZ] + k);
			if (!shared)
				continue;
			xf_vn ug = vn_load(ch->ps[PS_UG] + k), u = vn_load(ch->ps[PS_U] + k);
			xf_vn vg = vn_load(ch->ps[PS_VG] + k), v = vn_load(ch->ps[PS_V] + k);
			for (int m = 0; m < 3; m++) {
				pc[m] += a[m] * ug;
				po[m] += a[m] * u;
				pc[3 + m] += b[m] * vg;
				po[3 + m] += b[m] * v;
			}
		}
		const int o = part * XF_VW;
		for (int m = 0; m < 7; m++)
			vn_store(lanes[PT_BP + m] + o, bp[m]);
		for (int m = 0; m < XF_N_PHYS * XF_N_PHYS; m++)
			vn_store(lanes[PT_H + m] + o, h[m]);
		for (int m = 0; m < 6; m++) {
			vn_store(lanes[PT_PC + m] + o, pc[m]);
			vn_store(lanes[PT_PO + m] + o, po[m]);
		}
	}
	for (int m = 0; m < 7; m++)
		acc->bp[m] += v8_sum(lanes[PT_BP + m]);
	if (level != XF_PASS_HESSIAN)
		return;
	for (int m = 0; m < XF_N_PHYS; m++)
		for (int l = m; l < XF_N_PHYS; l++)
			acc->hpp[m * XF_N_PHYS + l] += v8_sum(lanes[PT_H + m * XF_N_PHYS + l]);
	if (shared)
		for (int m = 0; m < 6; m++) {
			acc->pc[(size_t)p0 * XF_N_PHYS + m] += v8_sum(lanes[PT_PC + m]);
			acc->po[(size_t)p0 * XF_N_PHYS + m] += v8_sum(lanes[PT_PO + m]);
		}
}

/* One block at one level and mode. */
static inline __attribute__((always_inline)) void
laminar_block(xf_lik *lik, int block, xf_pass_level level, int shared, int pnas)
{
	xf_accum *acc = &lik->slots[block];
	lam_chunk ch;
	int p0, p1;
	const xf_frames f = block_frames(lik, block, &p0, &p1);
	pair_cursor c = cursor_at(lik, block);
	accum_clear(lik->pr, acc);
	for (;;) {
		/* the slopes a, b: only where the level differentiates */
		int n_pairs = chunk_pairs(lik, &f, &c, &ch,
					  level != XF_PASS_VALUE && level != XF_PASS_SCALING);
		if (n_pairs == 0)
			break;
		if (level == XF_PASS_GRADIENT || level == XF_PASS_HESSIAN)
			memset(ch.ps, 0, sizeof ch.ps);
		for (int p = p0; p < p1; p++)
			chunk_angle(lik, acc, &ch, f.s, n_pairs, p0, p, level, shared, pnas);
		if (level == XF_PASS_GRADIENT || level == XF_PASS_HESSIAN)
			chunk_pair_terms(acc, &ch, n_pairs, level, shared, p0);
	}
}

/* The exported kernel of this instruction set: level, scaling and shear model resolved
 * once per block into one of twelve specialised bodies. */
void XF_LAMINAR_KERNEL(xf_lik *lik, int block)
{
	const int shared = lik->pr->scaling->shared_row;
	const int pnas = lik->pr->grid.shear_model == XF_SHEAR_PNAS2024;
#define XF_LAMINAR_CASE(level)                                                                     \
	do {                                                                                       \
		if (shared)                                                                        \
			pnas ? laminar_block(lik, block, level, 1, 1)                              \
			     : laminar_block(lik, block, level, 1, 0);                             \
		else                                                                               \
			pnas ? laminar_block(lik, block, level, 0, 1)                              \
			     : laminar_block(lik, block, level, 0, 0);                             \
	} while (0)
	switch (lik->level) {
	case XF_PASS_HESSIAN: XF_LAMINAR_CASE(XF_PASS_HESSIAN); break;
	case XF_PASS_GRADIENT: XF_LAMINAR_CASE(XF_PASS_GRADIENT); break;
	case XF_PASS_SCALING: XF_LAMINAR_CASE(XF_PASS_SCALING); break;
	case XF_PASS_COLLAPSE: XF_LAMINAR_CASE(XF_PASS_COLLAPSE); break;
	default: XF_LAMINAR_CASE(XF_PASS_VALUE);
	}
#undef XF_LAMINAR_CASE
}
