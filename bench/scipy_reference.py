#!/usr/bin/env python3
"""xpcsfit NLSQ vs a vectorised NumPy/SciPy fit of the same problem (speed reference).

Simulates a laminar-flow APS-U file with `xpcsfit simulate` (default 5 angles x 633 frames
= 996 980 fitted points), then from the same start, on the same points and with the same
parameterisation (per_angle_mode individual, hierarchical start off, so both run one
bounded Gauss-Newton/LM-type fit of 7 + 2 n_phi parameters):
  - times the whole `xpcsfit nlsq --no-plots` process (wall time, start to results written);
  - times scipy.optimize.least_squares (method 'trf', model.md's default bounds,
    x_scale='jac', default tolerances 1e-8 like xpcsfit's) with the analytic Jacobian of
    tests/helpers/xpcs_reference.py (whole-array NumPy, no Python loop over points), its
    wall time including every residual and Jacobian evaluation (file reading excluded and
    reported separately).
Prints clearly labelled lines: times, iterations / nfev, chi^2 of each, and the ratios.
Asserts nothing except that both runs finish (exit 1 if xpcsfit fails).

Environment: XF_BINARY (xpcsfit), XF_TMP (scratch). Options: --frames, --angles,
--threads (xpcsfit's virtual devices; default all cores)."""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "helpers"))
import numpy as np  # noqa: E402
from scipy.optimize import least_squares  # noqa: E402

import xpcs_reference as xr  # noqa: E402

Q, DT, GAP = 0.0054, 0.001, 2.0e6
TRUTH = [1000.0, -1.3, 5.0, 0.01, -0.2, 0.0005, 1.0]
START = [1500.0, -1.0, 0.0, 0.02, 0.0, 0.0, 0.0]
CONTRAST0, OFFSET0 = 0.25, 1.0

CONFIG = """analysis_mode: laminar_flow
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: {dt}
  start_frame: 1
  end_frame: {frames}
  scattering: {{wavevector_q: {q}}}
  geometry: {{stator_rotor_gap: {gap}}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [{values}]
  per_angle_scaling: {{contrast: [{contrast}], offset: [{offset}]}}
optimization:
  nlsq:
    anti_degeneracy: {{per_angle_mode: individual, hierarchical: {{enable: false}}}}
"""


def write_config(path, data, frames, values, n_phi):
    with open(path, "w") as f:
        f.write(CONFIG.format(data=data, dt=DT, frames=frames, q=Q, gap=GAP,
                              values=", ".join(repr(v) for v in values),
                              contrast=", ".join([repr(CONTRAST0)] * n_phi),
                              offset=", ".join([repr(OFFSET0)] * n_phi)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=633)
    ap.add_argument("--angles", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    xf = os.environ["XF_BINARY"]
    tmp = os.environ.get("XF_TMP", "/tmp/xpcsfit_bench")
    os.makedirs(tmp, exist_ok=True)
    # angles spread over [-90, 90], 0 and 90 included when n_phi allows
    phis = np.linspace(-90.0, 90.0, args.angles) if args.angles > 1 else np.array([0.0])
    data = os.path.join(tmp, f"scipyref_{args.angles}x{args.frames}.h5")
    sim_cfg = os.path.join(tmp, "scipyref_truth.yaml")
    fit_cfg = os.path.join(tmp, "scipyref_fit.yaml")
    write_config(sim_cfg, data, args.frames, TRUTH, args.angles)
    write_config(fit_cfg, data, args.frames, START, args.angles)
    subprocess.run([xf, "simulate", "--config", sim_cfg,
                    "--phi", ",".join(f"{p:.4f}" for p in phis), "--out", data,
                    "--force", "--noise", "0.001", "--seed", "11"], check=True, capture_output=True)

    out = os.path.join(tmp, "scipyref_out")
    t0 = time.perf_counter()
    r = subprocess.run([xf, "nlsq", "--config", fit_cfg, "--out", out, "--no-plots", "--force",
                        "--threads", str(args.threads)], capture_output=True, text=True)
    t_xf = time.perf_counter() - t0
    if r.returncode != 0:
        print(f"xpcsfit nlsq failed (exit {r.returncode}): {r.stderr.strip()}")
        return 1
    pj = json.load(open(os.path.join(out, "nlsq", "parameters.json")))

    t0 = time.perf_counter()
    ds = xr.read_aps_u(data, Q, 1, args.frames)
    t_load = time.perf_counter() - t0
    prob = xr.Problem(ds, "laminar_flow", DT, GAP)
    x0 = prob.pack(START, CONTRAST0, OFFSET0)
    lo, hi = prob.bounds()
    t0 = time.perf_counter()
    sp = least_squares(prob.residuals, x0, jac=prob.jacobian, bounds=(lo, hi), method="trf",
                       x_scale="jac", xtol=1e-8, ftol=1e-8, gtol=1e-8, max_nfev=1000)
    t_sp = time.perf_counter() - t0
    chi_sp = prob.chi_squared(sp.x)
    chi_xf = float(pj["chi_squared"])

    print(f"problem: laminar_flow, {args.angles} angles x {args.frames} frames, "
          f"{ds.n_points} fitted points, {len(x0)} free parameters (per_angle_mode individual)")
    print(f"xpcsfit nlsq whole process: {t_xf:.3f} s ({args.threads} virtual devices), "
          f"iterations {pj['iterations']}, status {pj['status']} ({pj['stop_reason']}), "
          f"chi2 {chi_xf:.12g}")
    print(f"scipy least_squares (trf, analytic jac): {t_sp:.3f} s (+ {t_load:.3f} s h5py read), "
          f"nfev {sp.nfev}, njev {sp.njev}, status {sp.status}, chi2 {chi_sp:.12g}")
    print(f"ratio time scipy/xpcsfit: {t_sp / t_xf:.1f}x")
    print(f"ratio chi2 xpcsfit/scipy: {chi_xf / chi_sp:.9f}")
    names = prob.names
    x_xf = prob.pack([pj["parameters"][n]["value"] for n in prob.pm.names],
                     pj["per_angle"]["contrast"], pj["per_angle"]["offset"])
    worst = int(np.argmax(np.abs(x_xf - sp.x) / np.maximum(np.abs(sp.x), 1e-12)))
    print(f"largest relative parameter difference: {names[worst]} "
          f"{abs(x_xf[worst] - sp.x[worst]) / max(abs(sp.x[worst]), 1e-12):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
