#!/usr/bin/env python3
"""The prior named when it is the cause, and honest time (adr/0080), end to end on a small
static file (D0 = 20 000, 3 angles x 40 frames, ~2 300 points; a few seconds a run):

1. conflict: D0 ~ TruncatedNormal(14000, 100) against NLSQ's ~20 000 +/- 290. Before
   sampling, one warning line names the prior with its numbers (console and run.log) and
   parameters.json/results.h5 record the comparison. The NUTS run is made to fail
   (validation.max_per_shard_rhat: 1.0, the seed fixed: deterministic) so that the result
   has no posterior: its reason speaks of NUTS, not of shards, and names the prior; the
   prior-sensitivity check still runs on the failed run's draws and says "prior-data
   conflict". XPCSFIT_TEST_LONG_RUN_S=0 makes the long-run line appear; the progress line
   names the stage.
2. strong, correct prior: D0 ~ TruncatedNormal(20000, 50) (the truth; 6x narrower than
   the data): priorsense's "strong prior / weak likelihood", never "conflict", no warning
   at the start, and no long-run line at the default threshold.
3. informative prior that agrees: D0 ~ TruncatedNormal(20300, 300), as strong as the data
   and where they are: both sensitivities >= 0.05, named "informative prior ... (agreeing
   with the data)", never "conflict" (adr/0078 addendum)."""
import json
import math
import os
import shutil
import subprocess
import sys

import h5py

from tally import check, summary
from waits import RUN_GUARD_S

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cmc_prior_cause")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
DATA = os.path.join(TMP, "s.h5")

CONFIG = """analysis_mode: static
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.1
  end_frame: 40
  scattering: {{wavevector_q: 0.0054}}
parameter_space:
  bounds:
    - {{name: D0, min: 100, max: 100000, prior_mu: {mu}, prior_sigma: {sigma}}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [20000, -0.2, 0]
  fixed_parameters: {{D_offset: 0}}
optimization:
  cmc:
    seed: 7
    route: nuts
    sharding: {{num_shards: 1}}
    per_shard_mcmc: {{num_warmup: 150, num_samples: 400, num_chains: 2}}
    validation: {{max_per_shard_rhat: {rhat}}}
"""


def config(name, mu, sigma, rhat):
    path = os.path.join(TMP, name + ".yaml")
    with open(path, "w") as f:
        f.write(CONFIG.format(data=DATA, mu=mu, sigma=sigma, rhat=rhat))
    return path


def run(args, env=None):
    e = dict(os.environ)
    e.pop("XPCSFIT_TEST_LONG_RUN_S", None)
    e.update(env or {})
    return subprocess.run([XF, *args], capture_output=True, text=True, timeout=RUN_GUARD_S, env=e)


def cmc(name, mu, sigma, rhat, env=None):
    out = os.path.join(TMP, name)
    r = run(["cmc", "--config", config(name, mu, sigma, rhat), "--out", out, "--no-plots"],
            env)
    d = os.path.join(out, "cmc")
    with open(os.path.join(d, "parameters.json")) as f:
        p = json.load(f)
    with open(os.path.join(d, "run.log")) as f:
        log = f.read()
    return r, d, p, log


def sds(v):
    """xf_num_sds: 2 significant digits, no exponent"""
    if v == 0:
        return "0"
    decimals = 1 - math.floor(math.log10(abs(v)))
    if decimals < 0:
        unit = 10 ** -decimals
        return f"{round(v / unit) * unit:.0f}"
    return f"{v:.{decimals}f}"


def conflict():
    r, d, p, log = cmc("conflict", 14000, 100, 1.0, {"XPCSFIT_TEST_LONG_RUN_S": "0"})
    print(r.stderr)
    check(r.returncode == 1, f"conflict: exit {r.returncode} (a failed result is exit 1)")
    pv = p["prior_vs_nlsq"]["parameters"]["D0"]
    away = abs(pv["nlsq"] - 14000) / pv["nlsq_std"]
    check(abs(pv["nlsq_sd_away"] - away) < 1e-9 * away and pv["conflict"] is True
          and abs(pv["prior_sd_away"] - abs(pv["nlsq"] - 14000) / 100) < 1e-9
          and abs(pv["log_density_vs_peak"] + 0.5 * pv["prior_sd_away"] ** 2) < 1e-6,
          f"conflict: prior_vs_nlsq {pv}")
    check(p["prior_vs_nlsq"]["conflicts"] == 1, "conflict: one prior flagged before sampling")
    # the line at the start, on the console and in run.log, with the prior and numbers
    start = (f"prior-data conflict in waiting: the prior on D0, TruncatedNormal(14000, 100), "
             f"is {sds(away)} NLSQ sd")
    check(start in r.stderr and start in log, f"conflict: '{start}' missing")
    check(r.stderr.index(start) < r.stderr.index("posterior: exact NUTS"),
          "conflict: the prior is named before the sampling")
    # no posterior: NUTS's words, the prior named, no shards
    reasons = p["quality"]["reasons"]
    want = (f"the prior on D0 (TruncatedNormal(14000, 100)) conflicts with the data "
            f"({sds(away)} NLSQ sd away)")
    check(p["status"] == "failed" and reasons[0].startswith(
        "no posterior: NUTS did not converge: max R-hat") and want in reasons[0],
        f"conflict: first reason {reasons[0]!r}")
    for text in [r.stderr] + reasons:
        for word in ("every shard", "shards", "combined posterior", "kept shards"):
            check(word not in text, f"conflict: a one-shard run speaks of '{word}': {text}")
    # the prior check on the failed run's draws: priorsense's diagnosis
    s = p["prior_sensitivity"]
    d0 = s["parameters"]["D0"]
    check(s["failed_run"] is True and d0["diagnosis"] == "prior-data conflict"
          and d0["prior_sensitivity"] > 0.05 and d0["likelihood_sensitivity"] > 0.05,
          f"conflict: sensitivity {s}")
    check(any(x.startswith("prior-data conflict on D0: ") and "failed run's draws" in x
              for x in reasons), f"conflict: reasons {reasons}")
    with h5py.File(os.path.join(d, "results.h5"), "r") as h:
        names = [n.decode() for n in h["cmc/parameter_names"][()]]
        g = h["cmc/prior_vs_nlsq"]
        k = names.index("D0")
        check(g["conflict"][k] == 1 and abs(g["nlsq_sd_away"][k] - away) < 1e-9 * away,
              "conflict: results.h5 /cmc/prior_vs_nlsq")
        check("failed_run" in h["cmc/prior_sensitivity"].attrs,
              "conflict: results.h5 prior_sensitivity marks the failed run")
    with open(os.path.join(d, "report.html")) as f:
        page = f.read()
    check("prior far from the data (before sampling)" in page
          and f"D0 {away:.0f} NLSQ sd from its prior" in page,
          "conflict: report.html names the prior")
    # honest time: the stage, and the long-run line (threshold 0 by the test knob)
    check("posterior: exact NUTS " in r.stderr and " chains, iterations " in r.stderr,
          "conflict: the progress line names the stage")
    check("exact NUTS on" in r.stderr and "is expected to take ~" in r.stderr
          and "xpcsfit-mpi" in r.stderr and "running on" in r.stderr
          and "is expected to take" in log, "conflict: the long-run line")


def strong_prior():
    r, d, p, log = cmc("strong", 20000, 50, 1.1)
    print(r.stderr)
    check(r.returncode == 0, f"strong: exit {r.returncode}: {r.stderr}")
    s = p["prior_sensitivity"]
    d0 = s["parameters"]["D0"]
    print(f"strong: D0 prior {d0['prior_sensitivity']:.4f}, likelihood "
          f"{d0['likelihood_sensitivity']:.4f}")
    check(d0["diagnosis"] == "strong prior / weak likelihood",
          f"strong: diagnosis {d0['diagnosis']}")
    check(p["prior_vs_nlsq"]["parameters"]["D0"]["conflict"] is False
          and p["prior_vs_nlsq"]["conflicts"] == 0, "strong: no conflict before sampling")
    text = r.stderr + log + " ".join(p["quality"]["reasons"])
    check("conflict" not in text, "strong: a strong, correct prior is called a conflict")
    check(any(x.startswith("strong prior / weak likelihood on D0: ")
              for x in p["quality"]["reasons"]), f"strong: reasons {p['quality']['reasons']}")
    check("is expected to take" not in r.stderr, "strong: a long-run line on a short run")


def agreeing_prior():
    """a prior as strong as the data, centred near them: both sensitivities >= 0.05
    (priorsense's "conflict"), yet an informative prior that agrees (adr/0078 addendum)"""
    r, d, p, log = cmc("agree", 20300, 300, 1.1)
    check(r.returncode == 0, f"agree: exit {r.returncode}: {r.stderr}")
    d0 = p["prior_sensitivity"]["parameters"]["D0"]
    print(f"agree: D0 prior {d0['prior_sensitivity']:.4f}, likelihood "
          f"{d0['likelihood_sensitivity']:.4f}, NLSQ {d0['nlsq']:.0f} +/- {d0['nlsq_std']:.0f}")
    thr = p["prior_sensitivity"]["threshold"]
    check(d0["prior_sensitivity"] >= thr and d0["likelihood_sensitivity"] >= thr,
          f"agree: not both sensitive: {d0}")
    check(d0["diagnosis"] == "informative prior, agreeing with the data",
          f"agree: diagnosis {d0['diagnosis']}")
    reasons = " ".join(p["quality"]["reasons"])
    check("conflict" not in reasons and "informative prior on D0 (agreeing with the data): "
          in reasons, f"agree: reasons {p['quality']['reasons']}")


def main():
    r = run(["simulate", "--config", config("truth", 20000, 50, 1.1), "--phi", "0,60,120",
             "--out", DATA, "--noise", "0.01", "--seed", "1"])
    check(r.returncode == 0, f"simulate: {r.stderr}")
    conflict()
    strong_prior()
    agreeing_prior()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
