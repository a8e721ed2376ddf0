"""mcmc_reference.py — an independent NumPy/SciPy transcription of the MCMC convergence
diagnostics of src/cmc/diagnostics.h, used to generate the reference values embedded in
tests/test_cmc_diagnostics.c.

Regenerate the numbers with

    /usr/bin/python3 tests/helpers/mcmc_reference.py

which prints, for every test data set, its first and last draw and the sum of all its
draws in chain-major order (the C test checks that it regenerates them bit for bit)
and every diagnostic, as the C initialisers of `references` and the E-BFMI value in
test_cmc_diagnostics.c.

Written from the paper (Vehtari, Gelman, Simpson, Carpenter, Bürkner 2021, "Rank-
normalization, folding, and localization: an improved R-hat for assessing convergence
of MCMC", Bayesian Analysis 16(2)) and Betancourt (2016) for E-BFMI, not from the C
sources, and deliberately in a different style: ranks from scipy.stats.rankdata,
autocovariances by direct O(n^2) sums instead of an FFT, the monotone sequence by
np.minimum.accumulate. Conventions the paper leaves open follow Stan and the
`posterior` R package (the paper authors' implementation):
  * split chains: first floor(n/2) and last floor(n/2) draws (odd n drops the middle);
  * rank normalisation with Blom's offsets, z = Phi^-1((r - 3/8) / (S + 1/4)), average
    ranks for ties, S the number of split draws;
  * the folding median and the tail-ESS quantiles are taken over all the given draws
    (the middle draw of odd chains included), quantiles by linear interpolation
    (NumPy's default, R's type 7);
  * ESS: rho_t = 1 - (W - mean_m acov_m(t)) / var_plus with the biased autocovariance
    (divided by n); Geyer's pairs P_k = rho_2k + rho_2k+1 are summed from k = 0, each
    capped by its predecessor, up to (not including) the first pair that is <= 0 or
    whose even lag is >= n - 5; that pair's even lag is added once when it is
    positive or the pair is not negative (Stan's antithetic-chain improvement); when
    no pair is kept, rho_0 alone is counted (as Stan and posterior do);
    tau >= 1 / log10(S), i.e. ESS <= S log10(S).
Degenerate cases give NaN (fewer than 4 draws per chain, non-finite draws, zero total
variance); R-hat is +inf when every split chain is constant but they differ. The
combined R-hat and tail ESS skip a component that is NaN (np.fmax / np.fmin).

The test draws come from a splitmix64 generator and Irwin-Hall normals (sum of twelve
uniforms minus six) fed into an AR(1) recursion: only integer operations, exactly
rounded IEEE +, *, / and sqrt, so C and Python produce identical doubles.
"""
import math

import numpy as np
from scipy import stats

MASK64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self):
        return float(self.next() >> 11) * 2.0**-53

    def normal(self):
        """Irwin-Hall approximation: mean 0, variance 1, summed in a fixed order."""
        s = 0.0
        for _ in range(12):
            s += self.uniform()
        return s - 6.0


def ar1_chains(seed, n_chains, n_draws, phi):
    """Chains of x_i = phi x_{i-1} + e_i, started from the stationary distribution."""
    rng = SplitMix64(seed)
    out = np.empty((n_chains, n_draws))
    for c in range(n_chains):
        x = rng.normal() / math.sqrt(1.0 - phi * phi)
        for i in range(n_draws):
            x = phi * x + rng.normal()
            out[c, i] = x
    return out


# ---- the diagnostics -------------------------------------------------------------------


def _valid(x):
    return x.ndim == 2 and x.shape[0] >= 1 and x.shape[1] >= 4 and np.all(np.isfinite(x))


def split(x):
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)


def rank_normalise(y):
    r = stats.rankdata(y, method="average").reshape(y.shape)
    return stats.norm.ppf((r - 0.375) / (y.size + 0.25))


def _w_and_b(y):
    """W (mean within-chain variance) and B/n (variance of the chain means), both with
    ddof 1; constant chains, or equal chain means, give exactly 0 (no rounding noise)."""
    var = np.array([0.0 if np.ptp(c) == 0 else np.var(c, ddof=1) for c in y])
    means = np.array([c[0] if np.ptp(c) == 0 else c.mean() for c in y])
    return var.mean(), 0.0 if np.ptp(means) == 0 else np.var(means, ddof=1)


def rhat_of_split(y):
    n = y.shape[1]
    w, b_over_n = _w_and_b(y)
    if w == 0:
        return np.inf if b_over_n > 0 else np.nan
    return np.sqrt(((n - 1) / n * w + b_over_n) / w)


def autocov_direct(c):
    d = c - c.mean()
    n = d.size
    return np.array([np.dot(d[: n - t], d[t:]) / n for t in range(n)])


def tau_geyer(rho):
    n = rho.size
    pairs = rho[0 : n - 1 : 2] + rho[1:n:2]
    stop = next(k for k in range(pairs.size) if 2 * k >= n - 5 or pairs[k] <= 0)
    kept = np.minimum.accumulate(pairs[:stop])
    head = kept.sum() if stop > 0 else rho[0]
    even = rho[2 * stop]
    last = even if (even > 0 or pairs[stop] >= 0) else 0.0
    return -1.0 + 2.0 * head + last


def ess_of_split(y):
    m, n = y.shape
    w, b_over_n = _w_and_b(y)
    var_plus = (n - 1) / n * w + b_over_n
    if var_plus == 0:
        return np.nan
    acov = np.mean([autocov_direct(c) for c in y], axis=0)
    rho = 1.0 - (w - acov) / var_plus
    rho[0] = 1.0
    s = m * n
    return s / max(tau_geyer(rho), 1.0 / np.log10(s))


def rhat_basic(x):
    return rhat_of_split(split(x)) if _valid(x) else np.nan


def ess_basic(x):
    return ess_of_split(split(x)) if _valid(x) else np.nan


def rhat(x):
    if not _valid(x):
        return np.nan
    bulk = rhat_of_split(rank_normalise(split(x)))
    folded = rhat_of_split(rank_normalise(split(np.abs(x - np.median(x)))))
    return np.fmax(bulk, folded)


def ess_bulk(x):
    return ess_of_split(rank_normalise(split(x))) if _valid(x) else np.nan


def ess_tail(x):
    if not _valid(x):
        return np.nan
    q05, q95 = np.quantile(x, [0.05, 0.95])
    e05 = ess_of_split(split((x <= q05).astype(float)))
    e95 = ess_of_split(split((x <= q95).astype(float)))
    return np.fmin(e05, e95)


def ebfmi(energy):
    e = np.asarray(energy, dtype=float)
    if e.size < 4 or not np.all(np.isfinite(e)) or np.ptp(e) == 0:
        return np.nan
    return np.sum(np.diff(e) ** 2) / np.sum((e - e.mean()) ** 2)


# ---- the test data sets (keep in step with test_cmc_diagnostics.c) ---------------------


def datasets():
    """name -> (seed, chains, draws, phi, transformed draws)."""
    out = {}
    # 4 x 200 AR(1), chain c shifted by 0.15 c: R-hat visibly above 1. Seed 8 makes the
    # monotone cap act and leaves a positive even lag after the last pair (all 4 ESS)
    x = ar1_chains(8, 4, 200, 0.6)
    out["ar"] = (8, 4, 200, 0.6, x + 0.15 * np.arange(4)[:, None])
    # odd length, skewed (x^3), chain 2 twice as wide: the folded R-hat dominates
    x = ar1_chains(2, 3, 101, 0.3)
    y = x * x * x
    y[2] *= 2.0
    out["odd"] = (2, 3, 101, 0.3, y)
    # integers: ties everywhere (rank averaging, folding, quantiles on atoms)
    x = ar1_chains(3, 4, 50, 0.4)
    out["ties"] = (3, 4, 50, 0.4, np.floor(x + 0.5))
    # 2 x 9: split chains of 4 draws, too short for any Geyer pair
    out["short"] = (4, 2, 9, 0.0, ar1_chains(4, 2, 9, 0.0))
    # one strongly autocorrelated chain of 30: split chains of 15
    out["single"] = (5, 1, 30, 0.8, ar1_chains(5, 1, 30, 0.8))
    return out


def _c(v):
    """A C literal that reads back as the same double (repr is the shortest such)."""
    return "NAN" if np.isnan(v) else ("INFINITY" if np.isinf(v) else repr(float(v)))


def sequential_sum(x):
    """Sum in chain-major order, one addition at a time, as the C test adds them."""
    s = 0.0
    for v in x.ravel():
        s += float(v)
    return s


def main():
    print("/* name, seed, chains, draws, phi, first draw, last draw, sum of the draws,")
    print(" * { rhat, rhat_basic, ess, ess_bulk, ess_tail } */")
    for name, (seed, m, n, phi, x) in datasets().items():
        vals = [rhat(x), rhat_basic(x), ess_basic(x), ess_bulk(x), ess_tail(x)]
        print('\t{ "%s", %d, %d, %d, %s, %s, %s, %s,' % (
            name, seed, m, n, _c(phi), _c(x[0, 0]), _c(x[-1, -1]), _c(sequential_sum(x))))
        print("\t  { %s } }," % ", ".join(_c(v) for v in vals))
    x = datasets()["ar"][4]
    print("/* E-BFMI of chain 0 of \"ar\" taken as energies */ %s" % _c(ebfmi(x[0])))


if __name__ == "__main__":
    main()
