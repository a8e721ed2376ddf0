#!/usr/bin/env python3
"""The importance route's proposal along a ridge (adr/0099) on a file the fitted rounds
cannot pass: 23 angles x 310 frames laminar (1 094 478 points, just above the 1 M where
the ridge is tried), alpha -0.02, so that D(t) is nearly flat and D0 and D_offset trade
along a ridge their priors decide (NLSQ marks it `ridge`: D0 + D_offset = 1041 +/- 15).
Before adr/0099 six fitted rounds failed and exact NUTS was put at ~77 min.

`xpcsfit cmc` at the defaults from NLSQ's result must take the importance route through
the ridge proposal along D0 (parameters.json: route importance, importance_check.
ridge_param D0), converged; the shear parameters and phi0 within 4 sds of the simulated
truth and D0's sd wider than 5 000 (its prior decides it); and the same run on 1 thread
gives the same draws, bit for bit (the slices' passes are fixed-order). Label slow
(~35 s for the 2-thread run, ~60 s for the 1-thread one, on 2 quiet cores).
"""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_posterior_ridge")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

TRUTH = {"D0": 1000.0, "alpha": -0.02, "D_offset": 50.0, "gamma_dot_t0": 0.01,
         "beta": -0.2, "gamma_dot_t_offset": 0.0005, "phi0": 1.0}
CONFIG = """analysis_mode: laminar_flow
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.001
  start_frame: 1
  end_frame: 310
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [{values}]
optimization:
  nlsq:
    anti_degeneracy: {{per_angle_mode: auto}}
"""


def run(*args):
    return subprocess.run([XF, *args], capture_output=True, text=True)


def main():
    data = os.path.join(TMP, "ridge.h5")
    sim, fit = os.path.join(TMP, "sim.yaml"), os.path.join(TMP, "fit.yaml")
    with open(sim, "w") as f:
        f.write(CONFIG.format(data=data, values=", ".join(str(v) for v in TRUTH.values())))
    with open(fit, "w") as f:
        f.write(CONFIG.format(data=data, values="1500, -1.0, 0.0, 0.02, 0.0, 0.0, 0.0"))
    phis = ",".join(f"{-90 + 180 * a / 23:.4f}" for a in range(23))
    r = run("simulate", "--config", sim, "--phi", phis, "--out", data, "--noise", "0.001",
            "--lzf", "-q")
    check(r.returncode == 0, f"simulate: {r.stderr[-300:]}")
    out = os.path.join(TMP, "out")
    r = run("nlsq", "--config", fit, "--out", out, "--no-plots", "--threads", "2", "-q")
    check(os.path.exists(os.path.join(out, "nlsq", "parameters.json")),
          f"NLSQ wrote its result (exit {r.returncode}: {r.stderr[-200:]})")
    draws = {}
    for threads in ("2", "1"):
        folder = os.path.join(TMP, "cmc" + threads)
        r = run("cmc", "--config", fit, "--nlsq", os.path.join(out, "nlsq"), "--out", folder,
                "--no-plots", "--threads", threads, "-q")
        check(r.returncode == 0, f"cmc --threads {threads}: exit {r.returncode}: "
                                 f"{r.stderr[-300:]}")
        if r.returncode != 0:
            return
        with h5py.File(os.path.join(folder, "cmc", "results.h5")) as f:
            draws[threads] = np.array(f["cmc/draws"][...])
        if threads == "1":
            break
        with open(os.path.join(folder, "cmc", "parameters.json")) as f:
            p = json.load(f)
        route = p["posterior_route"]
        ic = route["importance_check"]
        print(f"route {route['route']}: {route['description']}")
        check(route["route"] == "importance", f"route importance ({route['route']})")
        check(ic["ridge_param"] == "D0", f"the ridge along D0 ({ic['ridge_param']})")
        check(p["status"] == "converged", f"converged ({p['status']})")
        for name, truth in TRUTH.items():
            e = p["parameters"][name]
            print(f"  {name:20s} {e['mean']:.6g} +- {e['std']:.3g} (truth {truth:g})")
            if name not in ("D0", "alpha", "D_offset"):
                z = (e["mean"] - truth) / e["std"]
                check(abs(z) < 4.0, f"{name} within 4 sd of the truth ({z:+.2f})")
        check(p["parameters"]["D0"]["std"] > 5000.0,
              f"D0 spread by its prior ({p['parameters']['D0']['std']:.0f})")
    check(np.array_equal(draws["2"], draws["1"]), "1 and 2 threads: the same draws")


main()
sys.exit(summary())
