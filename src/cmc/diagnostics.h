/* diagnostics.h — MCMC convergence diagnostics of one parameter's draws (Vehtari, Gelman,
 * Simpson, Carpenter, Bürkner 2021, "Rank-normalization, folding, and localization: an
 * improved R̂ for assessing convergence of MCMC", Bayesian Analysis 16(2)), and the
 * energy Bayesian fraction of missing information (Betancourt 2016).
 *
 * Draws are chain-major: draws[c * n_draws + i] is draw i of chain c. Every function is
 * a pure function of its arrays (no global state, no randomness) and returns NAN when the
 * quantity cannot be computed (fewer than 4 draws per chain, constant draws, ...). */
#ifndef XPCSFIT_CMC_DIAGNOSTICS_H
#define XPCSFIT_CMC_DIAGNOSTICS_H

/* Rank-normalised split R̂: the larger of the bulk R̂ (split chains, rank-normalised) and
 * the folded R̂ (|draw − median|, rank-normalised). ~1.00 when the chains agree. */
double xf_diag_rhat(const double *draws, int n_chains, int n_draws);

/* Bulk effective sample size: ESS of the rank-normalised split chains. */
double xf_diag_ess_bulk(const double *draws, int n_chains, int n_draws);

/* Tail effective sample size: the smaller ESS of the indicators I(draw ≤ q05) and
 * I(draw ≤ q95) over the split chains. */
double xf_diag_ess_tail(const double *draws, int n_chains, int n_draws);

/* ESS of the split chains without rank normalisation (for means of smooth functions). */
double xf_diag_ess(const double *draws, int n_chains, int n_draws);

/* Split R̂ without rank normalisation (the classic Gelman-Rubin on split chains). */
double xf_diag_rhat_basic(const double *draws, int n_chains, int n_draws);

/* Monte Carlo standard error of the mean: sd / sqrt(ESS), the ESS of the split chains
 * without rank normalisation (xf_diag_ess), sd over all draws. */
double xf_diag_mcse_mean(const double *draws, int n_chains, int n_draws);

/* Monte Carlo standard error of the sd by the delta method on the squared deviations
 * d² = (x − mean)²: sqrt(Var(d²) / (ESS(d²) · 4 · E[d²])), as the `posterior` package's
 * mcse_sd; Var(d²) with n − 1, E[d²] the plain mean, ESS(d²) as xf_diag_ess. */
double xf_diag_mcse_sd(const double *draws, int n_chains, int n_draws);

/* E-BFMI of one chain's total energies (Hamiltonian at each draw, in order):
 * Σ (E_n − E_{n−1})² / Σ (E_n − Ē)². Below 0.3 warns of poor exploration. */
double xf_diag_ebfmi(const double *energy, int n);

#endif
