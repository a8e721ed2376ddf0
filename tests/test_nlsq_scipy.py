#!/usr/bin/env python3
"""xpcsfit's NLSQ against an independent SciPy fit of the same objective.

A small laminar file (3 angles incl. 0 and 90 deg, 70 frames, noise 1e-3, alpha and beta
negative) and a small static file are simulated by `xpcsfit simulate`, fitted by
`xpcsfit nlsq --no-plots` (per_angle_mode individual, explicit per-angle starts) and by
scipy.optimize.least_squares ('trf', the default bounds of model.md, x_scale='jac', tight
tolerances, the analytic Jacobian of tests/helpers/xpcs_reference.py) from the same start.
Asserted:
  - xpcsfit's chi^2 <= SciPy's chi^2 * (1 + 1e-6), and xpcsfit's reported chi^2 equals the
    NumPy objective evaluated at xpcsfit's parameters (same points, same residuals);
  - every parameter agrees within 1e-3 relative or within 0.1 reported standard errors;
  - xpcsfit's uncertainties equal sqrt(diag(s^2 (J^T J)^-1)) of the NumPy Jacobian at
    xpcsfit's solution within 1 %, s^2 = chi^2/(n - p);
  - /nlsq/c2_fit in results.h5 is the NumPy model at xpcsfit's parameters (float32 storage).
Environment: XF_BINARY (xpcsfit), XF_TMP (scratch dir)."""
import json
import os
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np
from scipy.optimize import least_squares

import xpcs_reference as xr

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_nlsq_scipy")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

Q, DT, GAP, FRAMES = 0.0054, 0.001, 2.0e6, 70
PHI = [0.0, 45.0, 90.0]
CASES = {
    "laminar": dict(mode="laminar_flow", q=Q,
                    truth=[1500.0, -1.1, 10.0, 0.015, -0.3, 0.0005, 1.5],
                    start=[1000.0, -0.6, 0.0, 0.01, 0.0, 0.0, 0.0],
                    contrast=[0.25, 0.25, 0.25], offset=[1.0, 1.0, 1.0]),
    "static": dict(mode="static", q=0.01,
                   truth=[3000.0, -0.8, 20.0],
                   start=[2000.0, -0.4, 0.0],
                   contrast=[0.25, 0.25, 0.25], offset=[1.02, 1.02, 1.02]),
    # xpcsfit's default path: per_angle_mode auto (one shared contrast/offset with 3 angles)
    # from the quantile starts, through the hierarchical start; SciPy fits the shared
    # parameterisation directly from the mean of the NumPy quantile estimates.
    "laminar_auto": dict(mode="laminar_flow", q=Q, per_angle="shared",
                         truth=[1500.0, -1.1, 10.0, 0.015, -0.3, 0.0005, 1.5],
                         start=[1000.0, -0.6, 0.0, 0.01, 0.0, 0.0, 0.0],
                         contrast=None, offset=None),
}

CONFIG = """analysis_mode: {mode}
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: {dt}
  end_frame: {frames}
  scattering: {{wavevector_q: {q}}}
  geometry: {{stator_rotor_gap: {gap}}}
initial_parameters:
  parameter_names: [{names}]
  values: [{values}]
{scaling}optimization:
  nlsq:
    max_iterations: 1000
    xtol: 1.0e-12
    gtol: 1.0e-12
    ftol: 1.0e-12
    anti_degeneracy: {anti}
"""
INDIVIDUAL = "{per_angle_mode: individual, hierarchical: {enable: false}}"
AUTO = "{per_angle_mode: auto, hierarchical: {enable: true}}"

from tally import check, summary


def fmt(v):
    return ", ".join(repr(float(x)) for x in v)


def write_config(path, case, data, values):
    scaling = ""
    if case["contrast"] is not None:
        scaling = (f"  per_angle_scaling: {{contrast: [{fmt(case['contrast'])}], "
                   f"offset: [{fmt(case['offset'])}]}}\n")
    anti = AUTO if case.get("per_angle") == "shared" else INDIVIDUAL
    with open(path, "w") as f:
        f.write(CONFIG.format(mode=case["mode"], data=data, dt=DT, frames=FRAMES, q=case["q"],
                              gap=GAP, names=", ".join(xr.mode_names(case["mode"])),
                              values=fmt(values), scaling=scaling, anti=anti))


def run_case(name, case):
    data = os.path.join(TMP, f"{name}.h5")
    truth_cfg = os.path.join(TMP, f"{name}_truth.yaml")
    fit_cfg = os.path.join(TMP, f"{name}_fit.yaml")
    write_config(truth_cfg, case, data, case["truth"])
    write_config(fit_cfg, case, data, case["start"])
    r = subprocess.run([XF, "simulate", "--config", truth_cfg, "--phi",
                        ",".join(str(p) for p in PHI), "--out", data, "--noise", "0.001",
                        "--seed", "7"], capture_output=True, text=True)
    check(r.returncode == 0, f"{name}: simulate exit {r.returncode}: {r.stderr}")
    if r.returncode != 0:
        return

    # xpcsfit
    out = os.path.join(TMP, f"{name}_out")
    t0 = time.perf_counter()
    r = subprocess.run([XF, "nlsq", "--config", fit_cfg, "--out", out, "--no-plots",
                        "--surfaces", "--threads", "2"], capture_output=True, text=True)
    t_xf = time.perf_counter() - t0
    check(r.returncode == 0, f"{name}: nlsq exit {r.returncode}: {r.stderr}")
    if r.returncode != 0:
        return
    pj = json.load(open(os.path.join(out, "nlsq", "parameters.json")))
    check(pj["status"] == "converged", f"{name}: xpcsfit status {pj['status']}")
    # the mode used: auto over enough angles is recorded as shared (docs/outputs.md)
    check(pj["per_angle_mode"] == ("shared" if case.get("per_angle") == "shared"
                                   else "individual"),
          f"{name}: per_angle_mode {pj.get('per_angle_mode')}")

    # SciPy on the same points from the same start
    ds = xr.read_aps_u(data, case["q"], 1, FRAMES)
    prob = xr.Problem(ds, case["mode"], DT, GAP, per_angle=case.get("per_angle", "individual"))
    if case["contrast"] is None:
        con0, off0 = xr.quantile_scaling(ds)
    else:
        con0, off0 = case["contrast"], case["offset"]
    x0 = prob.pack(case["start"], con0, off0)
    lo, hi = prob.bounds()
    t0 = time.perf_counter()
    sp = least_squares(prob.residuals, x0, jac=prob.jacobian, bounds=(lo, hi), method="trf",
                       x_scale="jac", xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=3000)
    t_sp = time.perf_counter() - t0
    chi_sp = prob.chi_squared(sp.x)

    # xpcsfit's solution in the same parameter vector
    x_xf = prob.pack([pj["parameters"][n]["value"] for n in prob.pm.names],
                     pj["per_angle"]["contrast"], pj["per_angle"]["offset"])
    se_xf = prob.pack([pj["parameters"][n]["uncertainty"] for n in prob.pm.names],
                      pj["per_angle"]["contrast_uncertainty"],
                      pj["per_angle"]["offset_uncertainty"])
    if prob.per_angle == "shared":
        # shared scaling is reported per angle: every angle must carry the same value
        for key in ("contrast", "offset", "contrast_uncertainty", "offset_uncertainty"):
            v = np.asarray(pj["per_angle"][key], dtype=float)
            check(np.all(v == v[0]), f"{name}: shared {key} differs between angles: {v}")
    chi_xf = pj["chi_squared"]
    print(f"{name}: n = {ds.n_points}, p = {len(x0)}; xpcsfit chi2 {chi_xf:.10g} "
          f"({pj['iterations']} it, {t_xf:.2f} s), SciPy chi2 {chi_sp:.10g} "
          f"(nfev {sp.nfev}, status {sp.status}, {t_sp:.2f} s)")
    check(pj["n_points"] == ds.n_points,
          f"{name}: n_points {pj['n_points']} != NumPy's {ds.n_points}")
    check(chi_xf <= chi_sp * (1 + 1e-6),
          f"{name}: xpcsfit chi2 {chi_xf!r} > SciPy chi2 {chi_sp!r} x (1 + 1e-6)")
    chi_np = prob.chi_squared(x_xf)
    check(abs(chi_np - chi_xf) <= 1e-9 * chi_xf,
          f"{name}: NumPy chi2 at xpcsfit's solution {chi_np!r} != reported {chi_xf!r}")

    # parameters and uncertainties
    cov = prob.covariance(x_xf)
    se_np = np.sqrt(np.diag(cov))
    for k, n in enumerate(prob.names):
        d = abs(x_xf[k] - sp.x[k])
        ok = d <= 1e-3 * abs(sp.x[k]) or d <= 0.1 * se_xf[k]
        print(f"  {n:20s} xpcsfit {x_xf[k]: .10g} +/- {se_xf[k]:.4g}   SciPy {sp.x[k]: .10g}"
              f"   NumPy s.e. {se_np[k]:.4g}")
        check(ok, f"{name}: {n}: xpcsfit {x_xf[k]!r} vs SciPy {sp.x[k]!r} "
                  f"(s.e. {se_xf[k]!r})")
        check(abs(se_xf[k] - se_np[k]) <= 0.01 * se_np[k],
              f"{name}: {n}: xpcsfit uncertainty {se_xf[k]!r} vs NumPy {se_np[k]!r}")

    # the fitted surfaces are the model at the reported parameters
    with h5py.File(os.path.join(out, "nlsq", "results.h5"), "r") as f:
        fit = f["/nlsq/c2_fit"][()].astype(np.float64)
    th, con, off = prob.split(x_xf)
    full = xr.model_c2_full(case["mode"], ds.q, DT, GAP, ds.phi, FRAMES, th, con, off)
    err = np.abs(fit[:, ds.i, ds.j] - full[:, ds.i, ds.j]).max()
    check(err < 2e-7 * np.abs(full).max(), f"{name}: c2_fit differs from NumPy by {err!r}")


def main():
    for name, case in CASES.items():
        run_case(name, case)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
