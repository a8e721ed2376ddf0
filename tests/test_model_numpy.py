#!/usr/bin/env python3
"""The independent NumPy model (tests/helpers/xpcs_reference.py) against model.md and
against xpcsfit.

1. model.md's reference values (Cases A, A2, B), transcribed here independently of the C
   tests, to 1e-12 relative.
2. The NumPy analytic Jacobian against central differences (so that the SciPy fits of
   test_nlsq_scipy.py and the benchmark run on exact derivatives).
3. `xpcsfit simulate --noise 0` writes the model itself: every stored upper-triangle
   element (t = 0 row and diagonal included) equals the NumPy model within 1e-12 absolute,
   for a laminar file with negative alpha/beta, a static file, and a file with start_frame
   > 1 read back through the NumPy reader.
4. Several q (adr/0064): the joint problem of three rings with a q per angle slot, dumped
   by test_likelihood_rings (XF_RINGS_DUMP): every slot's model value equals the NumPy
   model at that slot's q (1e-12 absolute), the pass's χ² and its Jᵀr (the exact analytic
   gradient, physical and per-slot parts) equal the NumPy ones; one q for every slot
   does not match (the check can tell).
Environment: XF_BINARY (xpcsfit), XF_TMP (scratch dir)."""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

import xpcs_reference as xr

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_model_numpy")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

from tally import check, summary


def close(got, want, rel, what):
    check(abs(got - want) <= rel * abs(want), f"{what}: got {got!r}, want {want!r}")


def reference_values():
    # Case A, static: q 0.01, dt 0.1, N 5, D0 1000, alpha 0.5, D_offset 10, contrast 0.5.
    a = xr.model_c2_full("static", 0.01, 0.1, 2e6, [0.0], 5, [1000.0, 0.5, 10.0], 0.5, 1.0)[0]
    for (i, j), want in {(0, 0): 1.499999999995, (0, 1): 1.498602370606266,
                         (0, 4): 1.4911826956972702, (1, 3): 1.4955242092743044}.items():
        close(a[i, j], want, 1e-12, f"Case A c2[{i},{j}]")
    # Case A2: alpha -1.5, D_offset 0 (the t = 0 floor of a negative exponent).
    a2 = xr.model_c2_full("static", 0.01, 0.1, 2e6, [0.0], 5, [1000.0, -1.5, 0.0], 0.5, 1.0)[0]
    for (i, j), want in {(0, 1): 1.2729478141394595, (0, 4): 1.1922393174110146,
                         (1, 4): 1.3521539786224344}.items():
        close(a2[i, j], want, 1e-12, f"Case A2 c2[{i},{j}]")
    # Case B, laminar: q 0.0054, L 2e6, dt 0.001, N 1001, D0 1000, gamma_dot_t0 0.01.
    b = xr.model_c2_full("laminar_flow", 0.0054, 0.001, 2e6, [0.0, 45.0, 90.0], 1001,
                         [1000.0, 0.0, 0.0, 0.01, 0.0, 0.0, 0.0], 0.3, 1.0)
    for (k, i, j), want in {(0, 0, 1000): 1.000003284222363, (0, 0, 500): 1.000016093493354,
                            (0, 100, 900): 1.0000060362016348,
                            (0, 10, 11): 1.2999321685728102,
                            (1, 0, 1000): 1.0000003436389144,
                            (1, 10, 11): 1.2999617090409366,
                            (2, 0, 1000): 1.2913783150797273}.items():
        close(b[k, i, j], want, 1e-12, f"Case B phi {[0, 45, 90][k]} c2[{i},{j}]")
    # symmetry and the t1 = t2 value (I_ii = 1e-6)
    check(np.array_equal(b[1], b[1].T), "Case B map not symmetric")


def jacobian_check():
    n = 40
    i, j = xr.fitted_pairs(n)
    rng = np.random.default_rng(1)
    for mode, theta in (("laminar_flow", [1200.0, -0.9, 5.0, 0.02, -0.2, 0.001, 2.0]),
                        ("static", [1200.0, -1.3, 30.0])):
        phi = np.array([-30.0, 0.0, 90.0])
        ds = xr.Dataset(0.0054, phi, n, i, j, 1.0 + 0.01 * rng.standard_normal((3, i.size)))
        prob = xr.Problem(ds, mode, 0.001, 2e6)
        x = prob.pack(theta, [0.3, 0.28, 0.31], [1.0, 1.01, 0.99])
        J = prob.jacobian(x)
        lo, hi = prob.bounds()
        for a, name in enumerate(prob.names):
            h = 1e-6 * (hi[a] - lo[a])
            xp, xm = x.copy(), x.copy()
            xp[a] += h
            xm[a] -= h
            num = (prob.residuals(xp) - prob.residuals(xm)) / (2 * h)
            scale = np.abs(J[:, a]).max()
            err = np.abs(num - J[:, a]).max() / scale
            check(scale > 0 and err < 1e-6, f"{mode} d r/d {name}: central difference "
                                            f"differs by {err:.3g} relative")


CONFIG = """analysis_mode: {mode}
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: {dt}
  start_frame: {start}
  end_frame: {frames}
  scattering: {{wavevector_q: {q}}}
  geometry: {{stator_rotor_gap: {gap}}}
initial_parameters:
  parameter_names: [{names}]
  values: [{values}]
"""


def simulated_file(name, mode, theta, q, dt, gap, frames, phi, contrast, offset):
    data = os.path.join(TMP, name + ".h5")
    cfg = os.path.join(TMP, name + ".yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(mode=mode, data=data, dt=dt, start=1, frames=frames, q=q, gap=gap,
                              names=", ".join(xr.mode_names(mode)),
                              values=", ".join(repr(v) for v in theta)))
    r = subprocess.run([XF, "simulate", "--config", cfg, "--phi", ",".join(str(p) for p in phi),
                        "--out", data, "--noise", "0", "--contrast", repr(contrast),
                        "--offset", repr(offset)], capture_output=True, text=True)
    check(r.returncode == 0, f"{name}: simulate exit {r.returncode}: {r.stderr}")
    if r.returncode != 0:
        return None
    want = xr.model_c2_full(mode, q, dt, gap, phi, frames, theta, contrast, offset)
    iu = np.triu_indices(frames)
    with h5py.File(data, "r") as f:
        maps = [f[f"/xpcs/twotime/correlation_map/c2_{k + 1:05d}"][()] for k in range(len(phi))]
        q_file = float(np.ravel(f["/xpcs/qmap/dynamic_v_list_dim0"][()])[0])
    check(q_file == q, f"{name}: file q {q_file!r} != {q!r}")
    for k, m in enumerate(maps):
        check(m.shape == (frames, frames), f"{name}: map {k} shape {m.shape}")
        err = np.abs(m[iu] - want[k][iu]).max()
        print(f"{name}: phi {phi[k]:+.1f}: max |file - NumPy| over the upper triangle {err:.3g}")
        check(err < 1e-12, f"{name}: phi {phi[k]}: max |file - NumPy| = {err!r}")
    return data, want


def file_comparisons():
    lam = [1500.0, -1.3, 10.0, 0.015, -0.2, 0.0005, 1.5]
    simulated_file("laminar", "laminar_flow", lam, 0.0054, 0.001, 2e6, 80,
                   [-45.0, 0.0, 30.0, 90.0], 0.3, 1.0)
    simulated_file("static", "static", [3000.0, -0.8, 20.0], 0.01, 0.001, 2e6, 60,
                   [0.0, 90.0], 0.25, 1.05)
    # Strong decay: the -700 clip of log g1_D and the 1e-10 floor of g1 (model.md).
    theta = [1e5, 0.5, 1e5, 0.5, 0.0, 0.1, 0.0]
    pm = xr.PairModel("laminar_flow", 0.1, 0.1, 2e6, [0.0], 30, *np.triu_indices(30))
    g1, _ = pm.g1(theta, want_grad=False)
    check((g1 == xr.G1_FLOOR).sum() > 100, "floors case does not reach the g1 floor")
    check(xr.cumtrapz(xr.rate_and_grad(pm.tt, 1e5, 0.5, 1e5)[0])[-1] * pm.w > 700,
          "floors case does not reach the log clip")
    simulated_file("floors", "laminar_flow", theta, 0.1, 0.1, 2e6, 30, [0.0, 60.0], 0.4, 1.0)
    # A rate that goes negative (D_offset < 0): the 1e-10 rate floor for t > 0.2 s.
    theta = [1e3, -1.0, -5e3]
    check((xr.rate_and_grad(xr.floored_times(40, 0.01), *theta)[0] == xr.RATE_FLOOR).sum() > 10,
          "rate-floor case does not reach the rate floor")
    simulated_file("rate_floor", "static", theta, 0.0054, 0.01, 2e6, 40, [0.0], 0.3, 1.0)

    # the NumPy reader of the fitted points, with a frame window, against the model
    out = simulated_file("window", "laminar_flow", lam, 0.0054, 0.001, 2e6, 50,
                         [90.0, 0.0, -45.0], 0.3, 1.0)
    if out is None:
        return
    data, _ = out
    ds = xr.read_aps_u(data, 0.0055, start_frame=11, end_frame=40)
    check(list(ds.phi) == [-45.0, 0.0, 90.0], f"reader angle order {list(ds.phi)}")
    check(ds.n_frames == 30 and ds.values.shape == (3, 29 * 28 // 2),
          f"reader window: {ds.n_frames} frames, {ds.values.shape}")
    # the frame window restarts time at its first frame
    want = xr.model_c2_full("laminar_flow", 0.0054, 0.001, 2e6, ds.phi, 30, lam, 0.3, 1.0)
    full = xr.model_c2_full("laminar_flow", 0.0054, 0.001, 2e6, ds.phi, 50, lam, 0.3, 1.0)
    sub = full[:, 10:40, 10:40][:, ds.i, ds.j]
    check(np.abs(sub - ds.values).max() < 1e-12, "reader window values != file values")
    check(np.abs(want[:, ds.i, ds.j] - sub).max() > 1e-6,
          "model on a window equals the full-grid model: the window test cannot tell")


def several_q():
    exe = os.path.join(os.path.dirname(XF), "tests", "test_likelihood_rings")
    path = os.path.join(TMP, "rings.txt")
    r = subprocess.run([exe], env=dict(os.environ, XF_RINGS_DUMP=path), capture_output=True,
                       text=True)
    check(r.returncode == 0, f"test_likelihood_rings dump: rc {r.returncode} {r.stderr}")
    lines = open(path).read().split("\n")
    head = lines[0].split()
    frames, dt, gap, n = int(head[1]), float(head[3]), float(head[5]), int(head[7])
    theta = [float(v) for v in lines[1].split()[1:]]
    slots = np.array([[float(v) for v in lines[2 + s].split()[1:]] for s in range(n)])
    chi2 = float(lines[2 + n].split()[1])
    b = np.array([float(v) for v in lines[3 + n].split()[1:]])
    rows = np.loadtxt(lines[4 + n:])
    q, phi, con, off = slots.T
    check(len(set(q)) == 3, f"the dump has {len(set(q))} distinct q, expected 3")
    np_ = len(theta)
    chi2_np, b_np = 0.0, np.zeros(np_ + 2 * n)
    worst, worst_one_q = 0.0, 0.0
    for s in range(n):
        mine = rows[rows[:, 0] == s]
        i, j = mine[:, 1].astype(int), mine[:, 2].astype(int)
        for qq, role in ((q[s], "slot"), (q[0], "one q")):
            pm = xr.PairModel("laminar_flow", qq, dt, gap, [phi[s]], frames, i, j)
            g1, dg = pm.g1(theta)
            model = off[s] + con[s] * g1[0] ** 2
            err = np.abs(model - mine[:, 4]).max()
            if role == "slot":
                worst = max(worst, err)
                res = mine[:, 3] - model
                chi2_np += float(res @ res)
                b_np[:np_] += (2.0 * con[s] * g1[0] * res) @ dg[0]  # Σ ∂c2/∂θ · res
                b_np[np_ + s] = float((g1[0] ** 2) @ res)
                b_np[np_ + n + s] = float(res.sum())
            elif s >= 3:
                worst_one_q = max(worst_one_q, err)
    check(worst < 1e-12, f"several q: model of a slot differs from NumPy by {worst:.3g}")
    check(worst_one_q > 1e-6, f"several q: one q for every slot matches too ({worst_one_q:.3g})")
    close(chi2, chi2_np, 1e-10, "several q: chi2")
    scale = np.sqrt(chi2_np) * np.abs(b_np).max()
    for k in range(np_ + 2 * n):
        check(abs(b[k] - b_np[k]) <= 1e-9 * max(abs(b_np[k]), 1e-6 * scale),
              f"several q: b[{k}] pass {b[k]!r}, NumPy {b_np[k]!r}")


def main():
    reference_values()
    jacobian_check()
    file_comparisons()
    several_q()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
