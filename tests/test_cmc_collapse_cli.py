#!/usr/bin/env python3
"""Exact NUTS with the per-angle scaling integrated out (adr/0086, docs/cmc.md "The
sampler") as a user runs it (`route: nuts`):

a. A well-identified static file (3 angles): the chains run collapsed (no fallback line),
   and the posterior agrees with the full sampler's (XPCSFIT_CMC_NO_COLLAPSE=1, the test
   aid) on the same data: every mean within 0.15 sd, every sd within 10 % (the Monte-Carlo
   error of two runs of 4 x 600 draws is ~0.05 sd and ~4 %), for θ, σ and the scaling.
   The collapsed run takes fewer gradient passes.
b. A weak file whose conditional offset runs into its bound (SBC replicate 0 of
   validation/sbc/sbc.py's static_weak family, the offset's lower bound raised from 0.9
   to 0.95, 4.5 prior sds below its truth 0.995: since adr/0093 the chains start with
   NLSQ's correlations and stay clear of 0.9; at 0.97 or above the start itself is too
   near it to collapse): a collapsed chain is abandoned and sampled in full, says so in
   run.log, and the run converges.
~30 s of CPU (most of it the full sampler of a)."""
import json
import os
import shutil
import subprocess
import sys

from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cmc_collapse_cli")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

WELL = """analysis_mode: static
experimental_data: {{file_path: {data}}}
analyzer_parameters:
  dt: 0.1
  start_frame: 1
  end_frame: 40
  scattering: {{wavevector_q: 0.01}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [900.0, -0.6, 20.0]
optimization:
  nlsq: {{anti_degeneracy: {{per_angle_mode: individual}}}}
  cmc:
    seed: 5
    route: nuts
    per_angle_mode: individual
    per_shard_mcmc: {{num_warmup: 300, num_samples: 600}}
"""

WEAK = """analysis_mode: static
experimental_data: {{file_path: {data}}}
analyzer_parameters:
  dt: 1
  start_frame: 1
  end_frame: 40
  scattering: {{wavevector_q: 0.0054}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: {values}
parameter_space:
  bounds:
    - {{name: D0, min: 100, max: 10000, prior_mu: 2000, prior_sigma: 600}}
    - {{name: alpha, min: -2, max: 1, prior_mu: -0.5, prior_sigma: 0.3}}
    - {{name: D_offset, min: -1000, max: 1000, prior_mu: 0, prior_sigma: 50}}
    - {{name: contrast, min: 0.05, max: 0.8, prior_mu: 0.3, prior_sigma: 0.05}}
    - {{name: offset, min: 0.95, max: 1.1, prior_mu: 1, prior_sigma: 0.01}}
optimization:
  cmc:
    route: nuts
    per_angle_mode: auto
    per_shard_mcmc: {{num_warmup: 300, num_samples: 300}}
"""


def run(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([XF, *args], capture_output=True, text=True, env=e)


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def params(folder):
    with open(os.path.join(folder, "cmc", "parameters.json")) as f:
        return json.load(f)


def run_log(folder):
    with open(os.path.join(folder, "cmc", "run.log")) as f:
        return f.read()


FALLBACK = "samples every coordinate instead"


def test_well_identified():
    data = os.path.join(TMP, "well.h5")
    cfg = write("well.yaml", WELL.format(data=data))
    r = run("simulate", "--config", cfg, "--phi", "0,45,90", "--out", data, "--noise", "0.003",
            "--seed", "3", "--force", "-q")
    check(r.returncode == 0, "simulate well: " + r.stderr[-300:])
    r = run("nlsq", "--config", cfg, "--out", os.path.join(TMP, "well_fit"), "--no-plots", "-q")
    check(r.returncode == 0, "nlsq well: " + r.stderr[-300:])
    nlsq = os.path.join(TMP, "well_fit", "nlsq")
    out = {}
    for name, env in (("collapsed", None), ("full", {"XPCSFIT_CMC_NO_COLLAPSE": "1"})):
        folder = os.path.join(TMP, "well_" + name)
        r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", folder, "--no-plots", "-q",
                "--threads", "1", env=env)
        check(r.returncode == 0, f"cmc {name}: exit {r.returncode}: {r.stderr[-300:]}")
        if r.returncode != 0:
            return
        out[name] = params(folder)
        check(FALLBACK not in run_log(folder), f"{name}: no chain falls back")
        check(out[name]["status"] == "converged", f"{name}: converged")
        line = ("cmc: 4 chains of this process sampled with the per-angle scaling "
                "integrated out (adr/0086), 0 of them again")
        check((line in run_log(folder)) == (name == "collapsed"),
              f"{name}: run.log says how many chains were collapsed")
    a, b = out["collapsed"], out["full"]
    for group in ("parameters", "scaling_parameters"):
        for n, v in b[group].items():
            w = a[group][n]
            dm = abs(w["mean"] - v["mean"]) / v["std"]
            ds = w["std"] / v["std"] - 1.0
            check(dm < 0.15, f"{n}: collapsed mean {w['mean']:.6g} vs full {v['mean']:.6g} "
                  f"({dm:.3f} sd)")
            check(abs(ds) < 0.10, f"{n}: collapsed sd {w['std']:.4g} vs full {v['std']:.4g} "
                  f"({100 * ds:+.1f} %)")
    sa, sb = a["shard_diagnostics"][0], b["shard_diagnostics"][0]
    print(f"gradient passes: collapsed {sa['gradient_evaluations']}, full "
          f"{sb['gradient_evaluations']}; sigma {sa['sigma_mean']:.6g} vs {sb['sigma_mean']:.6g}")
    check(abs(sa["sigma_mean"] - sb["sigma_mean"]) < 0.15 * sb["sigma_sd"], "sigma's mean")
    check(sa["gradient_evaluations"] < sb["gradient_evaluations"],
          "the collapsed chains take fewer gradient passes")


def test_weak_falls_back():
    data = os.path.join(TMP, "weak.h5")
    truth = "[2018.348374648252, -0.0051908564596573337, -53.090799922780384]"
    r = run("simulate", "--config", write("weak_truth.yaml", WEAK.format(data=data,
                                                                         values=truth)),
            "--phi", "0", "--frames", "40", "--noise", "0.05", "--seed", "1",
            "--contrast", "0.38159487606772774", "--offset", "0.9950933429168873",
            "--out", data, "--force", "-q")
    check(r.returncode == 0, "simulate weak: " + r.stderr[-300:])
    cfg = write("weak.yaml", WEAK.format(data=data, values="null"))
    folder = os.path.join(TMP, "weak_fit")
    r = run("fit", "--config", cfg, "--out", folder, "--no-plots", "-q", "--threads", "1")
    check(r.returncode == 0, f"fit weak: exit {r.returncode}: {r.stderr[-300:]}")
    if r.returncode != 0:
        return
    log = run_log(folder)
    n = log.count(FALLBACK)
    check(n >= 1, f"a collapsed chain meets the offset's bound and is sampled in full ({n})")
    check("within 8 conditional sds of a bound" in log, "run.log names the rule")
    p = params(folder)
    check(p["status"] == "converged", "the run converges")
    line = (f"cmc: 4 chains of this process sampled with the per-angle scaling integrated "
            f"out (adr/0086), {n} of them again")
    check(line in log, f"run.log counts the chains that fell back ({n})")


test_well_identified()
test_weak_falls_back()
sys.exit(summary())
