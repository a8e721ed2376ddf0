#!/usr/bin/env python3
"""Robust losses (adr/0033) against SciPy on data with outliers.

A small static file and a small laminar file (3 angles, 70 frames, noise 1e-3) are
simulated by `xpcsfit simulate`; 1 % of the fitted points of every map get +0.05 (50 noise
sd: outliers). Each of soft_l1, huber, cauchy, arctan with f_scale 0.003 is fitted by
`xpcsfit nlsq` (per_angle_mode individual, the same start) and by
scipy.optimize.least_squares(loss=..., f_scale=0.003, 'trf', x_scale='jac', tight
tolerances, the analytic Jacobian of tests/helpers/xpcs_reference.py). Asserted:
  - xpcsfit's reported chi_squared is the robust cost f_scale^2 Σ ρ((r/f_scale)^2) of
    NumPy at xpcsfit's parameters (1e-9 relative), and it is <= SciPy's (1 + 1e-6);
  - every parameter agrees with SciPy's within 1e-4 relative or 1e-6 of its bound width;
  - the robust fits move D0 nearer the truth than the linear fit of the same data does;
  - loss linear (explicit, with an f_scale) gives the same bytes as no loss key;
  - a robust fit gives the same bits on 1 and 2 virtual devices.
Environment: XF_BINARY, XF_TMP."""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
from scipy.optimize import least_squares

import xpcs_reference as xr
from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_nlsq_robust")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

DT, GAP, FRAMES, F_SCALE = 0.001, 2.0e6, 70, 0.003
PHI = [0.0, 45.0, 90.0]
LOSSES = ["soft_l1", "huber", "cauchy", "arctan"]
PARAM_REL, PARAM_WIDTH = 1e-4, 1e-6
CASES = {
    "static": dict(mode="static", q=0.01, truth=[3000.0, -0.8, 20.0],
                   start=[2000.0, -0.4, 0.0]),
    "laminar": dict(mode="laminar_flow", q=0.0054,
                    truth=[1500.0, -1.1, 10.0, 0.015, -0.3, 0.0005, 1.5],
                    start=[1000.0, -0.6, 0.0, 0.01, 0.0, 0.0, 0.0]),
}
CONFIG = """analysis_mode: {mode}
experimental_data: {{file_path: {data}}}
analyzer_parameters:
  dt: {dt}
  end_frame: {frames}
  scattering: {{wavevector_q: {q}}}
  geometry: {{stator_rotor_gap: {gap}}}
initial_parameters:
  parameter_names: [{names}]
  values: [{values}]
  per_angle_scaling: {{contrast: [0.25, 0.25, 0.25], offset: [1.0, 1.0, 1.0]}}
optimization:
  nlsq:
    max_iterations: 1000
    xtol: 1.0e-12
    gtol: 1.0e-12
    ftol: 1.0e-12
{loss}    anti_degeneracy: {{per_angle_mode: individual, hierarchical: {{enable: false}}}}
"""


def fmt(v):
    return ", ".join(repr(float(x)) for x in v)


def write_config(path, case, data, values, loss=""):
    with open(path, "w") as f:
        f.write(CONFIG.format(mode=case["mode"], data=data, dt=DT, frames=FRAMES, q=case["q"],
                              gap=GAP, names=", ".join(xr.mode_names(case["mode"])),
                              values=fmt(values), loss=loss))


def loss_lines(loss):
    return f"    loss: {loss}\n    f_scale: {F_SCALE}\n" if loss else ""


def inject_outliers(path):
    """+0.05 at 1 % of the fitted pairs of every map (both triangles: symmetric)."""
    rng = np.random.default_rng(11)
    i, j = xr.fitted_pairs(FRAMES)
    with h5py.File(path, "r+") as f:
        grp = f["/xpcs/twotime/correlation_map"]
        for name in sorted(grp):
            m = grp[name][()]
            pick = rng.choice(i.size, size=i.size // 100, replace=False)
            m[i[pick], j[pick]] += 0.05
            m[j[pick], i[pick]] += 0.05
            grp[name][...] = m


def rho(loss, z):
    if loss == "soft_l1":
        return 2.0 * (np.sqrt(1.0 + z) - 1.0)
    if loss == "huber":
        return np.where(z <= 1.0, z, 2.0 * np.sqrt(z) - 1.0)
    if loss == "cauchy":
        return np.log1p(z)
    if loss == "arctan":
        return np.arctan(z)
    return z


def fit_xf(name, case, data, loss, threads="2"):
    cfg = os.path.join(TMP, f"{name}_{loss or 'none'}.yaml")
    write_config(cfg, case, data, case["start"], loss_lines(loss))
    out = os.path.join(TMP, f"{name}_{loss or 'none'}_t{threads}_out")
    r = subprocess.run([XF, "nlsq", "--config", cfg, "--out", out, "--no-plots",
                        "--no-surfaces", "--threads", threads], capture_output=True, text=True)
    check(r.returncode in (0, 1), f"{name} {loss}: nlsq exit {r.returncode}: {r.stderr}")
    if r.returncode not in (0, 1):
        return None, out
    return json.load(open(os.path.join(out, "nlsq", "parameters.json"))), out


def run_case(name, case):
    data = os.path.join(TMP, f"{name}.h5")
    truth_cfg = os.path.join(TMP, f"{name}_truth.yaml")
    write_config(truth_cfg, case, data, case["truth"])
    r = subprocess.run([XF, "simulate", "--config", truth_cfg, "--phi",
                        ",".join(str(p) for p in PHI), "--out", data, "--noise", "0.001",
                        "--seed", "7"], capture_output=True, text=True)
    check(r.returncode == 0, f"{name}: simulate: {r.stderr}")
    if r.returncode != 0:
        return
    inject_outliers(data)
    ds = xr.read_aps_u(data, case["q"], 1, FRAMES)
    prob = xr.Problem(ds, case["mode"], DT, GAP, per_angle="individual")
    x0 = prob.pack(case["start"], [0.25] * 3, [1.0] * 3)
    lo, hi = prob.bounds()
    width = hi - lo

    # linear: no key and an explicit 'linear' give the same bytes
    pj_none, out_none = fit_xf(name, case, data, "")
    pj_lin, out_lin = fit_xf(name, case, data, "linear")
    if pj_none and pj_lin:
        with h5py.File(os.path.join(out_none, "nlsq", "results.h5"), "r") as a, \
                h5py.File(os.path.join(out_lin, "nlsq", "results.h5"), "r") as b:
            for key in ("parameters", "uncertainties"):
                if f"/nlsq/{key}" in a:
                    same = np.array_equal(a[f"/nlsq/{key}"][()], b[f"/nlsq/{key}"][()])
                    check(same, f"{name}: linear {key} differ from the default's")
        check(pj_none["chi_squared"] == pj_lin["chi_squared"],
              f"{name}: linear chi2 {pj_lin['chi_squared']!r} != {pj_none['chi_squared']!r}")
    d0_linear_err = abs(pj_none["parameters"]["D0"]["value"] - case["truth"][0]) \
        if pj_none else None

    for loss in LOSSES:
        pj, _ = fit_xf(name, case, data, loss)
        if pj is None:
            continue
        sp = least_squares(prob.residuals, x0, jac=prob.jacobian, bounds=(lo, hi),
                           method="trf", x_scale="jac", loss=loss, f_scale=F_SCALE,
                           xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=3000)
        cost_sp = 2.0 * sp.cost  # SciPy's cost is half of f^2 Σ ρ
        x_xf = prob.pack([pj["parameters"][n]["value"] for n in prob.pm.names],
                         pj["per_angle"]["contrast"], pj["per_angle"]["offset"])
        rr = prob.residuals(x_xf)
        cost_np = float(F_SCALE ** 2 * np.sum(rho(loss, (rr / F_SCALE) ** 2)))
        cost_xf = pj["chi_squared"]
        worst = 0.0
        for k, n in enumerate(prob.names):
            d = abs(x_xf[k] - sp.x[k])
            ok = d <= PARAM_REL * abs(sp.x[k]) or d <= PARAM_WIDTH * width[k]
            worst = max(worst, d / max(abs(sp.x[k]), 1e-300))
            check(ok, f"{name} {loss}: {n}: xpcsfit {x_xf[k]!r} vs SciPy {sp.x[k]!r}")
        print(f"{name} {loss}: cost xpcsfit {cost_xf:.12g} ({pj['iterations']} it, "
              f"{pj['status']}), SciPy {cost_sp:.12g} (nfev {sp.nfev}); max relative "
              f"parameter difference {worst:.2e}; D0 {x_xf[0]:.6g} (truth "
              f"{case['truth'][0]}, linear fit "
              f"{pj_none['parameters']['D0']['value'] if pj_none else float('nan'):.6g})")
        check(abs(cost_np - cost_xf) <= 1e-9 * cost_xf,
              f"{name} {loss}: reported cost {cost_xf!r} != NumPy robust cost {cost_np!r}")
        check(cost_xf <= cost_sp * (1 + 1e-6),
              f"{name} {loss}: xpcsfit cost {cost_xf!r} > SciPy {cost_sp!r} (1 + 1e-6)")
        if loss == "cauchy":  # deterministic: the same bits on 1 and 2 virtual devices
            pj1, _ = fit_xf(name, case, data, loss, threads="1")
            check(pj1 is not None and pj1["chi_squared"] == cost_xf and
                  pj1["parameters"] == pj["parameters"],
                  f"{name} {loss}: 1 and 2 threads differ")
        if d0_linear_err is not None:
            check(abs(x_xf[0] - case["truth"][0]) < d0_linear_err,
                  f"{name} {loss}: D0 {x_xf[0]!r} not nearer the truth than linear's")


def main():
    for name, case in CASES.items():
        run_case(name, case)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
