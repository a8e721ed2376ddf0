// static_shard.stan — the posterior xpcsfit's `cmc` samples on ONE shard (num_shards: 1)
// in static mode with "individual" per-angle scaling, written from the spec
// (shared/spec/model.md, cmc.md), not from xpcsfit's C sources.
//
// Model (model.md, homodyne numerical form, static):
//   t_k = k dt (k = 0..N-1), eps = max(dt/2, 1e-8), t~_k = t_k if t_k > eps else eps
//   D_k = D0 t~_k^alpha + D_offset, hard floor 1e-10
//   C_0 = 0, C_k = sum_{m<k} (D_m + D_{m+1})/2          (grid steps, no dt)
//   I_ij = sqrt((C_i - C_j)^2 + 1e-12)
//   log g1 = max(-q^2 dt I_ij / 2, -700), g1 = max(exp(log g1), 1e-10)
//   c2 = offset_a + contrast_a g1^2
// Likelihood c2_data ~ Normal(c2, sigma) (one shard-local sigma, cmc.md).
// Priors: truncated normals on the bounds (the truncation constant is a constant because
// the bounds are data, so plain normal() is used); sigma ~ HalfNormal(sigma_scale).
// Stan's own transforms (logit for the bounded parameters, log for sigma) are the same
// sampling space as cmc.md's.
//
// Index conventions: frame indices ii, jj are 0-BASED as in model.md (t_k = k dt), with
// 1 <= ii < jj <= N-1; the angle index is 1-BASED (1..n_phi).
// Written for Stan 2.21 (Debian 12's rstan): old array syntax, scalar bounds.
data {
  int<lower=3> N;                       // frames kept, t_k = k dt
  real<lower=0> q;                      // 1/Angstrom
  real<lower=0> dt;                     // s
  int<lower=1> n_phi;                   // angles
  int<lower=1> M;                       // fitted points
  int<lower=1, upper=N - 2> ii[M];      // 0-based frame index of t1
  int<lower=2, upper=N - 1> jj[M];      // 0-based frame index of t2 (> ii)
  int<lower=1, upper=n_phi> angle[M];   // 1-based angle index
  vector[M] c2;                         // measured c2(t1, t2)
  // bounds and prior (mu, sd) of D0, alpha, D_offset (in that order), contrast, offset
  vector[3] theta_lo;
  vector[3] theta_hi;
  vector[3] theta_mu;
  vector<lower=0>[3] theta_sd;
  real contrast_lo;
  real contrast_hi;
  real contrast_mu;
  real<lower=0> contrast_sd;
  real offset_lo;
  real offset_hi;
  real offset_mu;
  real<lower=0> offset_sd;
  real<lower=0> sigma_scale;            // HalfNormal scale of sigma (1.5 x 1.4826 x MAD)
  int<lower=0, upper=1> emit_c2;        // 1: write the model c2 of every point (checks)
}
transformed data {
  vector[N] tt;                         // floored times t~_k
  real w = 0.5 * q * q * dt;
  real eps = fmax(dt / 2, 1e-8);
  for (k in 1:N) {
    real t = (k - 1) * dt;
    tt[k] = t > eps ? t : eps;
  }
}
parameters {
  real<lower=theta_lo[1], upper=theta_hi[1]> D0;
  real<lower=theta_lo[2], upper=theta_hi[2]> alpha;
  real<lower=theta_lo[3], upper=theta_hi[3]> D_offset;
  vector<lower=contrast_lo, upper=contrast_hi>[n_phi] contrast;
  vector<lower=offset_lo, upper=offset_hi>[n_phi] offset;
  real<lower=0> sigma;
}
model {
  vector[N] C;                          // cumulative trapezoid of the floored rate
  vector[M] mu;
  {
    vector[N] D;
    for (k in 1:N)
      D[k] = fmax(D0 * pow(tt[k], alpha) + D_offset, 1e-10);   // hard floor
    C[1] = 0;
    for (k in 2:N)
      C[k] = C[k - 1] + 0.5 * (D[k - 1] + D[k]);
  }
  for (m in 1:M) {
    real d = C[ii[m] + 1] - C[jj[m] + 1];
    real g1 = fmax(exp(fmax(-w * sqrt(d * d + 1e-12), -700)), 1e-10);
    mu[m] = offset[angle[m]] + contrast[angle[m]] * g1 * g1;
  }
  D0 ~ normal(theta_mu[1], theta_sd[1]);
  alpha ~ normal(theta_mu[2], theta_sd[2]);
  D_offset ~ normal(theta_mu[3], theta_sd[3]);
  contrast ~ normal(contrast_mu, contrast_sd);
  offset ~ normal(offset_mu, offset_sd);
  sigma ~ normal(0, sigma_scale);
  c2 ~ normal(mu, sigma);
}
generated quantities {
  // The model c2 at the current draw, only when asked (emit_c2 = 1): used by
  // compare_static.py to check this file against tests/helpers/xpcs_reference.py.
  vector[emit_c2 ? M : 0] c2_hat;
  if (emit_c2) {
    vector[N] C;
    vector[N] D;
    for (k in 1:N)
      D[k] = fmax(D0 * pow(tt[k], alpha) + D_offset, 1e-10);
    C[1] = 0;
    for (k in 2:N)
      C[k] = C[k - 1] + 0.5 * (D[k - 1] + D[k]);
    for (m in 1:M) {
      real d = C[ii[m] + 1] - C[jj[m] + 1];
      real g1 = fmax(exp(fmax(-w * sqrt(d * d + 1e-12), -700)), 1e-10);
      c2_hat[m] = offset[angle[m]] + contrast[angle[m]] * g1 * g1;
    }
  }
}
