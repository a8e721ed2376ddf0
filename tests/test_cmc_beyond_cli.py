#!/usr/bin/env python3
"""The posterior's mass beyond its draws (adr/0087, docs/cmc.md "Mass beyond the draws"):

a. A static file whose posterior runs thinly up the alpha = 0 ridge (small static
   replicate 15 of validation/fallback/replicates.py: 2 angles x 80 frames, alpha -0.08).
   Its exact posterior by numerical integration (validation/hard/quadrature.py --config
   ridge.yaml --data ridge.h5; grids of 40 and 80 log-D0 nodes agree within 0.3 %):
   D0 1 280 +- 1 934, 5 %/95 % at 795 / 1 895, skewness 23 — 1.3 % of the mass above
   D0 = 3 000 and 0.13 % above 30 000, out to the bound 1e5 (adr/0100: the long NUTS run
   this test was first written against, sd ~4 200, over-weighted that far tail).
   The default `fit` (the route's proposal along D0's ridge, adr/0099/0100) must find it:
   D0's 5 % and 95 % quantiles within 5 % of the integral's, its sd within 0.75-1.33 x
   (the sd of a marginal this skewed is uncertain by tens of percent at a few thousand
   effective draws), nothing flagged beyond its draws.
   Exact NUTS with the sampler that draws every coordinate (route nuts,
   XPCSFIT_CMC_NO_COLLAPSE=1, the fallback near a bound; 4 x (300 + 500) here, to keep
   the test short under the sanitizers) does not reach the tail — such draws gave D0
   1 197 +- 499 with every diagnostic clean, the wrong `good` that set adr/0087.
   On those draws the probe must find the mass (D0 flagged, its sd at least doubled, the
   mass reaching past 3 x the draws' edge), the quality must be `marginal` with a reason
   naming D0 (also in results.h5), alpha may be flagged only towards 0 (D0's tail, where
   alpha = slope / D0 follows it), and nothing off the ridge may be flagged.
b. A well-identified file: the probe runs, flags nothing, finds < 0.2 % beyond any
   parameter's draws, and its own calibration (its mass between the 95 % quantile and
   the extreme over the draws' 5 %) lies within a factor 3 of 1.
~20 s wall on 2 threads in the Release build (before adr/0100 the default run of a was
exact NUTS and the test ~6 CPU min, ~27 min under the sanitizers)."""
import json
import os

import h5py
import shutil
import subprocess
import sys

from small_configs import STATIC_FREE
from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cmc_beyond_cli")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)


# D0's exact posterior on file a (validation/hard/quadrature.py, the 80-node grid)
EXACT_D0 = {"mean": 1280.2, "sd": 1934.4, "q05": 795.4, "q95": 1895.2}


def run(*args, env=None):
    return subprocess.run([XF, *args], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


def load(folder):
    with open(os.path.join(folder, "cmc", "parameters.json")) as f:
        p = json.load(f)
    p["_h5"] = os.path.join(folder, "cmc", "results.h5")
    return p


def fit(name, frames, truth, phi, noise, seed):
    data = os.path.join(TMP, name + ".h5")
    cfg = os.path.join(TMP, name + ".yaml")
    with open(cfg, "w") as f:
        f.write(STATIC_FREE.format(data=data, frames=frames, d0=truth[0], alpha=truth[1],
                                   d_offset=truth[2]))
    r = run("simulate", "--config", cfg, "--phi", phi, "--out", data, "--noise", noise,
            "--seed", seed, "--frames", str(frames), "--force", "-q")
    check(r.returncode == 0, f"simulate {name}: {r.stderr[-300:]}")
    folder = os.path.join(TMP, name + "_fit")
    r = run("fit", "--config", cfg, "--out", folder, "--no-plots", "-q", "--threads", "2")
    check(r.returncode == 0, f"fit {name}: exit {r.returncode}: {r.stderr[-300:]}")
    if r.returncode != 0:
        return None
    return load(folder)


def test_ridge_tail():
    p = fit("ridge", 80, (1655.2603878112832, -0.08141293910421354, 0.0), "0,45", "0.002",
            "16")
    if p is None:
        return
    d0 = p["parameters"]["D0"]
    print(f"default: route {p['posterior_route']['route']}, D0 {d0['mean']:.0f} +- "
          f"{d0['std']:.0f} [{d0['q05']:.0f}, {d0['q95']:.0f}]; exact {EXACT_D0}; probe "
          f"{p['beyond_draws']['parameters']['D0']}")
    for q in ("q05", "q95"):
        check(abs(d0[q] / EXACT_D0[q] - 1) < 0.05,
              f"the default run's D0 {q} {d0[q]:.0f} vs the integral's {EXACT_D0[q]:.0f}")
    check(0.75 < d0["std"] / EXACT_D0["sd"] < 1.33,
          f"the default run reaches the tail: D0 sd {d0['std']:.0f} vs {EXACT_D0['sd']:.0f}")
    check(not p["beyond_draws"]["parameters"]["D0"]["flagged"],
          "nothing flagged beyond draws that reached the tail")
    folder = os.path.join(TMP, "ridge_full")
    r = run("cmc", "--config", os.path.join(TMP, "ridge.yaml"), "--nlsq",
            os.path.join(TMP, "ridge_fit", "nlsq"), "--out", folder, "--no-plots", "-q",
            "--threads", "2", "--set", "optimization.cmc.per_shard_mcmc.num_warmup=300",
            "--set", "optimization.cmc.per_shard_mcmc.num_samples=500",
            "--set", "optimization.cmc.route=nuts",
            env={"XPCSFIT_CMC_NO_COLLAPSE": "1"})
    check(r.returncode == 0, f"cmc, full sampler: exit {r.returncode}: {r.stderr[-300:]}")
    if r.returncode != 0:
        return
    p = load(folder)
    b = p["beyond_draws"]
    check(b is not None, "the probe ran")
    if b is None:
        return
    d0, alpha = b["parameters"]["D0"], b["parameters"]["alpha"]
    print(f"route {p['posterior_route']['route']}; D0 {p['parameters']['D0']['mean']:.0f} +- "
          f"{p['parameters']['D0']['std']:.0f}; probe: D0 {d0}, alpha {alpha}; "
          f"{b['passes']} passes")
    check(d0["flagged"], "D0's mass beyond the draws is flagged")
    check(d0["sd_ratio"] > 2.0, f"D0's sd at least doubled by it ({d0['sd_ratio']:.2f})")
    check(d0["reach"] > 3.0 * d0["draws_edge"],
          f"the mass reaches far past the draws ({d0['reach']:.0f} vs {d0['draws_edge']:.0f})")
    # alpha may be flagged only towards 0, where D0's tail takes it (alpha = slope / D0 on
    # the ridge: draws that miss D0's tail miss alpha's there too, adr/0097's metric);
    # nothing off the ridge is flagged
    check(not alpha["flagged"] or alpha["draws_edge"] < alpha["reach"] < 0.0,
          f"alpha flagged only towards D0's tail ({alpha})")
    off_ridge = [n for n, e in b["parameters"].items()
                 if n not in ("D0", "alpha", "D_offset") and e["flagged"]]
    check(not off_ridge, f"nothing off the ridge flagged ({off_ridge})")
    with h5py.File(p["_h5"]) as f:  # the same numbers in results.h5
        names = [n.decode() for n in f["cmc/parameter_names"][:]]
        g = f["cmc/beyond_draws"]
        k = names.index("D0")
        check(g["mass_beyond_draws"][k] == d0["mass_beyond_draws"] and g["flagged"][k] == 1,
              "results.h5 /cmc/beyond_draws holds D0's numbers")
    q = p["quality"]
    check(q["overall"] == "marginal", f"quality marginal ({q['overall']})")
    check(any(r.startswith("the exact posterior of D0 reaches beyond the draws")
              for r in q["reasons"]), "a reason names D0")


def test_well_identified():
    p = fit("well", 40, (900.0, -0.6, 20.0), "0,45,90", "0.003", "3")
    if p is None:
        return
    b = p["beyond_draws"]
    check(b is not None, "the probe ran")
    if b is None:
        return
    print(f"route {p['posterior_route']['route']}; probe {b}")
    check(b["flagged"] == 0, "nothing flagged")
    for name, e in b["parameters"].items():
        check(e["mass_beyond_draws"] < 2e-3, f"{name}: mass beyond {e['mass_beyond_draws']:.2g}")
        check(e["sd_ratio"] < 1.02, f"{name}: sd ratio {e['sd_ratio']:.4f}")
        check(1 / 3 < e["calibration"] < 3, f"{name}: calibration {e['calibration']:.2f}")
    check(p["quality"]["overall"] == "good", f"quality good ({p['quality']})")


test_ridge_tail()
test_well_identified()
sys.exit(summary())
