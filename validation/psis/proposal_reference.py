#!/usr/bin/env python3
"""Reference values of the self-check's t proposal (adr/0039), pasted into
tests/test_cmc_proposal.c: SciPy's multivariate_t log density at three points, and the
IS-ESS/M that a Gaussian target N(0, I) gives under t_5(0, 1.5^2 I) in d dimensions,
1 / E_q[w^2] = 1 / E_p[p/q], by quadrature over the chi^2_d radius and, as a check of
the quadrature, by Monte Carlo with SciPy's sampler. Run: /usr/bin/python3 this file."""
import numpy as np
from scipy import integrate, special, stats

NU, SCALE = 5, 1.5


def ess_ratio(d, nu=NU, s=SCALE):
    s2 = s * s

    def f(t):
        lp = -0.5 * d * np.log(2 * np.pi) - 0.5 * t
        lq = (special.gammaln((nu + d) / 2) - special.gammaln(nu / 2)
              - 0.5 * d * np.log(nu * np.pi) - 0.5 * d * np.log(s2)
              - 0.5 * (nu + d) * np.log1p(t / (nu * s2)))
        lc = (0.5 * d - 1) * np.log(t) - 0.5 * t - 0.5 * d * np.log(2) - special.gammaln(0.5 * d)
        return np.exp(lp - lq + lc)

    v, _ = integrate.quad(f, 0, np.inf, epsabs=0, epsrel=1e-13, limit=500)
    return 1 / v


def ess_ratio_mc(d, n=400000, seed=1):
    q = stats.multivariate_t(loc=np.zeros(d), shape=SCALE ** 2 * np.eye(d), df=NU)
    x = q.rvs(size=n, random_state=np.random.default_rng(seed))
    lw = stats.multivariate_normal(np.zeros(d), np.eye(d)).logpdf(x) - q.logpdf(x)
    w = np.exp(lw - lw.max())
    return w.sum() ** 2 / (w ** 2).sum() / n


if __name__ == "__main__":
    mean = np.array([0.3, -1.2, 2.0])
    chol = np.array([[0.5, 0, 0], [0.2, 0.3, 0], [-0.1, 0.05, 0.8]])
    t = stats.multivariate_t(loc=mean, shape=SCALE ** 2 * chol @ chol.T, df=NU)
    for x in ([0.3, -1.2, 2.0], [1.0, -0.5, 1.0], [-2.0, 3.0, 6.0]):
        print(f"logpdf{x} = {t.logpdf(np.array(x))!r}")
    for d in (1, 2, 3, 5, 7, 9, 12, 15, 20):
        print(f"d = {d:2d}: IS-ESS/M (Gaussian target) {ess_ratio(d):.6f}"
              + (f"  Monte Carlo {ess_ratio_mc(d):.4f}" if d in (3, 9) else ""))
