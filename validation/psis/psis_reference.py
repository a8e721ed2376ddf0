#!/usr/bin/env python3
"""An independent NumPy transcription of PSIS (Vehtari et al., JMLR 2024; generalized
Pareto fit of Zhang & Stephens 2009 with the paper's prior on k), used to check
src/cmc/psis.c: `psis_reference.py` prints the mean and sd of k-hat over 200 replicates
for exactly Pareto ratios and for N(0,1) -> N(0, s^2) importance sampling (the numbers
quoted in tests/test_cmc_psis.c). With `--compare BINARY`, BINARY reads log ratios on
stdin and prints k-hat; the script reports the largest difference over 20 cases."""
import subprocess
import sys

import numpy as np


def gpd_fit(x):
    n = len(x)
    m = 30 + int(np.sqrt(n))
    theta = 1.0 / x[-1] + (1 - np.sqrt(m / (np.arange(m) + 0.5))) / (3 * x[int(n / 4 + 0.5) - 1])
    k = np.log1p(-theta[:, None] * x).mean(axis=1)
    ll = n * (np.log(-theta / k) - k - 1)
    w = 1 / np.exp(ll - ll[:, None]).sum(axis=1)
    keep = w >= 10 * np.finfo(float).eps
    theta_post = (theta[keep] * w[keep]).sum() / w[keep].sum()
    k_hat = np.log1p(-theta_post * x).mean()
    return (n * k_hat + 10 * 0.5) / (n + 10), -k_hat / theta_post


def psis_k(log_r):
    lw = log_r - log_r.max()
    n = len(lw)
    tail = int(np.ceil(min(0.2 * n, 3 * np.sqrt(n))))
    cutoff = max(np.sort(lw, kind="stable")[n - tail - 1], np.log(np.finfo(float).tiny))
    x = np.sort(lw[lw > cutoff])
    return gpd_fit(np.exp(x) - np.exp(cutoff))[0] if len(x) > 4 else np.inf


def pareto(rng, k, n=2000):
    return np.log1p(np.expm1(-k * np.log1p(-rng.uniform(size=n))) / k)


def normal(rng, s2, n=2000):
    x = rng.normal(size=n)
    return -0.5 * x * x / s2 + 0.5 * x * x


def main():
    rng = np.random.default_rng(5)
    if len(sys.argv) > 2 and sys.argv[1] == "--compare":
        worst = 0.0
        for t in range(20):
            lw = pareto(rng, (0.2, 0.5, 0.9)[t % 3]) if t < 12 else normal(rng, 2 + 3 * (t % 4))
            out = subprocess.run([sys.argv[2]], input="\n".join(map(repr, lw)),
                                 capture_output=True, text=True, check=True).stdout
            worst = max(worst, abs(float(out) - psis_k(lw)))
        print(f"largest |k-hat difference| over 20 cases: {worst:.3g}")
        return
    for k in (0.2, 0.5, 0.9):
        ks = [psis_k(pareto(rng, k)) for _ in range(200)]
        print(f"Pareto ratios k {k}: mean k-hat {np.mean(ks):.3f}, sd {np.std(ks):.3f}")
    for s2 in (1.25, 2.0, 10.0):
        ks = [psis_k(normal(rng, s2)) for _ in range(200)]
        print(f"N(0,1) -> N(0,{s2}): theory {1 - 1 / s2:.2f}, mean k-hat {np.mean(ks):.3f}, "
              f"sd {np.std(ks):.3f}")


if __name__ == "__main__":
    main()
