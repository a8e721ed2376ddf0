#!/usr/bin/env python3
"""End-to-end checks of `xpcsfit nlsq` as a user runs it: simulate a laminar file, fit
it, read the result files back with h5py/json; determinism across --threads; statuses;
quantile starts against NumPy; the bundled real CHX matrix; error paths."""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

XF = os.environ["XF_BINARY"]
SRC = os.environ["XF_SOURCE_DIR"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_nlsq_cli")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

CONFIG = """analysis_mode: laminar_flow
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.001
  end_frame: {frames}
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [{values}]
optimization:
  nlsq:
    max_iterations: {max_iter}
    anti_degeneracy: {{per_angle_mode: {mode}}}
    start_search: {{enable: {search}}}
"""
TRUTH = "1500, -1.1, 10.0, 0.015, -0.3, 0.0005, 1.5"
START = "1000, -0.6, 0.0, 0.01, 0.0, 0.0, 0.0"
from same_result import same_array
from tally import check, summary


def write_config(name, values, frames=120, max_iter=200, mode="auto", data=None,
                 search="true"):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(CONFIG.format(data=data or os.path.join(TMP, "lam.h5"), frames=frames,
                              values=values, max_iter=max_iter, mode=mode, search=search))
    return path


def run(*args, env=None):
    return subprocess.run([XF, *args], capture_output=True, text=True, env=env)


def fit(cfg, out, *extra):
    r = run("nlsq", "--config", cfg, "--out", out, *extra)
    return r, os.path.join(out, "nlsq")


def main():
    truth_cfg = write_config("truth.yaml", TRUTH)
    r = run("simulate", "--config", truth_cfg, "--phi", "-45,0,30,90", "--out",
            os.path.join(TMP, "lam.h5"), "--noise", "0.001", "--seed", "3")
    check(r.returncode == 0, f"simulate exit {r.returncode}: {r.stderr}")

    # 1. a laminar fit: files, fields, recovery
    cfg = write_config("fit.yaml", START)
    r, d = fit(cfg, os.path.join(TMP, "out1"), "--threads", "1", "--surfaces")
    check(r.returncode == 0, f"nlsq exit {r.returncode}: {r.stderr}")
    p = json.load(open(os.path.join(d, "parameters.json")))
    for key in ("method", "analysis_mode", "status", "convergence_status", "chi_squared",
                "reduced_chi_squared", "n_points", "n_free_parameters", "sigma_rule",
                "stop_reason", "iterations", "parameters_at_bounds", "parameters",
                "per_angle", "timing_s", "residual_sd"):
        check(key in p, f"parameters.json lacks {key}")
    check(p["status"] == "converged" and p["convergence_status"] == "converged", "status")
    check(p["n_points"] == 4 * 119 * 118 // 2, f"n_points {p['n_points']}")
    check(p["n_free_parameters"] == 9, "auto mode with 4 angles: 7 + 2 free parameters")
    truth = [float(v) for v in TRUTH.split(",")]
    names = ["D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"]
    for name, t in zip(names, truth):
        v = p["parameters"][name]
        z = (v["value"] - t) / v["uncertainty"]
        check(abs(z) < 4.0, f"{name}: {v['value']} +/- {v['uncertainty']} vs truth {t}")
    check(abs(p["residual_sd"] - 0.001) < 5e-5, f"residual_sd {p['residual_sd']}")
    check(abs(p["reduced_chi_squared"] - p["residual_sd"] ** 2) < 1e-15, "reduced chi2 = s^2")
    for k in ("contrast", "offset"):
        check(k in p["parameters"], f"homodyne's parameters.{k}")
    # units beside the names, for every entry of parameters and scaling_parameters, the
    # same as results.h5 /nlsq/parameter_units (adr/0062)
    units = p.get("parameter_units", {})
    check(set(units) == set(p["parameters"]) | set(p["scaling_parameters"]),
          f"parameter_units names: {sorted(units)}")
    check(units.get("D0") == "angstrom^2/s^(1+alpha)" and units.get("phi0") == "deg"
          and units.get("gamma_dot_t0") == "1/s^(1+beta)" and units.get("contrast") == "1",
          f"parameter_units: {units}")
    q = p["quality"]
    check(q["overall"] == "good" and q["reasons"] == [], f"quality {q}")
    check(q["checks"]["distance_to_optimum_se"] <= 0.1 and q["checks"]["all_parameters_informed"]
          and q["checks"]["best_of_screened_starts"], f"checks {q['checks']}")
    s = p["search"]
    check(s["starts_screened"] >= 20 and s["refined_on_all_data"] >= 1
          and s["whole_data_pass_equivalents"] > p["iterations"], f"search {s}")
    check(set(s["estimated_start"]) == set(names), "estimated start of every physical parameter")
    check("quality: good" in r.stdout and "search:" in r.stdout, "console summary")
    check(len(p["per_angle"]["phi_deg"]) == 4, "per_angle phi")
    with h5py.File(os.path.join(d, "results.h5"), "r") as h:
        vals = h["/nlsq/values"][()]
        check(np.allclose(vals[:7], [p["parameters"][n]["value"] for n in names], rtol=0,
                          atol=0), "results.h5 values == parameters.json values")
        h5names = [n.decode() for n in h["/nlsq/parameter_names"][()]]
        h5units = [u.decode() for u in h["/nlsq/parameter_units"][()]]
        check(h5units == [units[n] for n in h5names], f"/nlsq/parameter_units {h5units}")
        check(h["/nlsq/covariance"].shape == (len(vals), len(vals)), "covariance shape")
        check(h["/data/c2"].shape == (4, 120, 120), "surface shape")
        res = h["/nlsq/residuals"][0]
        check(np.isnan(res[0, 5]) and np.isnan(res[7, 7]), "NaN where not fitted")
        check(abs(np.nanstd(h["/nlsq/residuals"][()]) - 0.001) < 1e-4, "residual map sd")
        check(h["/nlsq"].attrs["status"] in ("converged", b"converged"), "status attribute")
        check(h["/nlsq"].attrs["quality"] in ("good", b"good"), "quality attribute")
    check(os.path.getsize(os.path.join(d, "run.log")) > 0, "run.log written")
    check(len([f for f in os.listdir(os.path.join(d, "plots")) if f.endswith(".png")]) == 5,
          "4 angle plots + overview")

    # 2. bitwise identical results for 1 and 3 virtual devices
    r3, d3 = fit(cfg, os.path.join(TMP, "out3"), "--threads", "3", "--surfaces")
    check(r3.returncode == 0, "nlsq --threads 3")
    # the angle plots are drawn by 3 worker processes here, by this one with --threads 1
    # (as the surface writer hands each angle on)
    pngs = sorted(os.listdir(os.path.join(d, "plots")))
    check(pngs == sorted(os.listdir(os.path.join(d3, "plots"))), "same plot files")
    for name in pngs:
        a = open(os.path.join(d, "plots", name), "rb").read()
        b = open(os.path.join(d3, "plots", name), "rb").read()
        check(a == b, f"plot {name} differs between 1 and 3 threads")
    with h5py.File(os.path.join(d, "results.h5"), "r") as a, \
            h5py.File(os.path.join(d3, "results.h5"), "r") as b:
        for ds in ("/nlsq/values", "/nlsq/covariance", "/nlsq/chi_squared", "/nlsq/c2_fit"):
            check(a[ds][()].tobytes() == b[ds][()].tobytes(), f"{ds} differs across threads")
    # and with 2 (issue #12: the PNGs are painted pixel by pixel, the surfaces computed on
    # the pool): every PNG and every results.h5 dataset the same for 1, 2 and 3 threads
    r2, d2 = fit(cfg, os.path.join(TMP, "out2"), "--threads", "2", "--surfaces")
    check(r2.returncode == 0, "nlsq --threads 2")
    check(pngs == sorted(os.listdir(os.path.join(d2, "plots"))), "same plot files, 2 threads")
    for name in pngs:
        a = open(os.path.join(d, "plots", name), "rb").read()
        b = open(os.path.join(d2, "plots", name), "rb").read()
        check(a == b, f"plot {name} differs between 1 and 2 threads")

    # the plots drawn from the surfaces as results.h5 is written (plot_stream.c: 1 thread
    # in the writer, 2 and 3 in forked workers) are the bytes of the plots drawn alone
    # after a run without surfaces (--no-surfaces, the default)
    rn, dn = fit(cfg, os.path.join(TMP, "out_nosurf"), "--threads", "2", "--no-surfaces")
    check(rn.returncode == 0, "nlsq --no-surfaces")
    check(pngs == sorted(os.listdir(os.path.join(dn, "plots"))), "same plot files, no surfaces")
    for name in pngs:
        a = open(os.path.join(d, "plots", name), "rb").read()
        b = open(os.path.join(dn, "plots", name), "rb").read()
        check(a == b, f"plot {name} differs between surfaces and --no-surfaces")

    def datasets(h):
        names = []
        h.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        return sorted(names)

    with h5py.File(os.path.join(d, "results.h5"), "r") as a:
        for other in (d2, d3):
            with h5py.File(os.path.join(other, "results.h5"), "r") as b:
                check(datasets(a) == datasets(b), f"same datasets in {other}")
                for ds in datasets(a):
                    check(same_array(a[ds][()], b[ds][()]),
                          f"{ds} differs across threads ({other})")

    # --profile: each phase's time and peak memory on stderr, in run.log and in
    # parameters.json "timings"; the phases add up to about the total
    r, dp = fit(cfg, os.path.join(TMP, "out_profile"), "--threads", "2", "--profile",
                "--surfaces")
    check(r.returncode == 0, f"nlsq --profile: {r.stderr}")
    check("xpcsfit: profile: load" in r.stderr and "total" in r.stderr, "profile line")
    check("profile: load" in open(os.path.join(dp, "run.log")).read(), "profile in run.log")
    t = json.load(open(os.path.join(dp, "parameters.json")))["timings"]
    phases = t["phases"]
    for name in ("load", "select", "fit", "covariance", "surfaces", "plots", "writing"):
        check(name in phases, f"timings.phases lacks {name}: {sorted(phases)}")
    for name, v in phases.items():
        check(set(v) == {"wall_s", "peak_rss_mib"} and v["wall_s"] >= 0, f"phase {name}: {v}")
        check(v["peak_rss_mib"] is None or v["peak_rss_mib"] > 0, f"phase {name} memory")
    total = sum(v["wall_s"] for v in phases.values())
    check(total <= t["total_s"] + 1e-6 and total >= 0.9 * t["total_s"] - 0.05,
          f"phases sum {total} vs total {t['total_s']}")
    p0 = json.load(open(os.path.join(d, "parameters.json")))
    check("timings" not in p0, "no timings without --profile")

    # parallel.virtual_devices sets the thread count when --threads is not given
    cfg_vd = os.path.join(TMP, "vd.yaml")
    with open(cfg_vd, "w") as f:
        f.write(open(cfg).read() + "parallel:\n  virtual_devices: 3\n")
    r, dv = fit(cfg_vd, os.path.join(TMP, "out_vd"), "--no-plots")
    check(r.returncode == 0 and "3 virtual devices" in r.stderr, "parallel.virtual_devices")
    r, dv = fit(cfg_vd, os.path.join(TMP, "out_vd"), "--no-plots", "--threads", "2", "--force")
    check("2 virtual devices" in r.stderr, "--threads wins over parallel.virtual_devices")

    # 3. max_iterations (which caps the iterations on all the data; a single path here,
    # so that no screening does the work first): never "converged", exit 0, a warning
    cfg_short = write_config("short.yaml", START, max_iter=2, search="false")
    r, d = fit(cfg_short, os.path.join(TMP, "short"), "--no-plots")
    check(r.returncode == 0, f"max_iterations exit {r.returncode}")
    p = json.load(open(os.path.join(d, "parameters.json")))
    check(p["status"] == "max_iterations" and p["convergence_status"] == "max_iter",
          f"status {p['status']}")
    check("max_iterations" in r.stderr, "warning on stderr")

    # 4. constant mode: per-angle values are the quantile estimates (NumPy percentiles)
    cfg_const = write_config("const.yaml", START, mode="constant")
    r, d = fit(cfg_const, os.path.join(TMP, "const"), "--no-plots")
    check(r.returncode == 0, "constant mode")
    p = json.load(open(os.path.join(d, "parameters.json")))
    with h5py.File(os.path.join(TMP, "lam.h5"), "r") as h:
        phis = h["/xpcs/qmap/dynamic_v_list_dim1"][()]
        order = np.argsort(phis)
        maps = [h[f"/xpcs/twotime/correlation_map/c2_{k + 1:05d}"][()] for k in order]
    iu, ju = np.triu_indices(120, 1)
    keep = iu >= 1
    iu, ju = iu[keep], ju[keep]
    lag = ju - iu
    for a, m in enumerate(maps):
        c2 = m[iu, ju]
        off = np.percentile(c2[lag >= np.percentile(lag, 80)], 10)
        con = np.percentile(c2[lag <= np.percentile(lag, 20)], 90) - off
        check(abs(p["per_angle"]["offset"][a] - off) < 1e-12, f"quantile offset angle {a}")
        check(abs(p["per_angle"]["contrast"][a] - con) < 1e-12, f"quantile contrast angle {a}")

    # 5. the bundled real CHX matrix (static): converges, sane reduced chi2, plots
    chx_cfg = os.path.join(SRC, "configs", "chx_static.yaml")
    if os.path.exists(chx_cfg):
        r = subprocess.run([XF, "nlsq", "--config", chx_cfg, "--out", os.path.join(TMP, "chx")],
                           capture_output=True, text=True, cwd=SRC)
        check(r.returncode == 0, f"CHX nlsq exit {r.returncode}: {r.stderr[-300:]}")
        p = json.load(open(os.path.join(TMP, "chx", "nlsq", "parameters.json")))
        check(p["status"] == "converged", f"CHX status {p['status']}")
        # the CHX pixels are noisy (sd 0.0729 about their mean over the fitted points);
        # the decay explains part of it: the residual sd must be clearly below that
        check(0.05 < p["residual_sd"] < 0.99 * 0.0729, f"CHX residual sd {p['residual_sd']}")
        check(p["parameters"]["D_offset"].get("fixed") is True, "CHX D_offset fixed")
        d0 = p["parameters"]["D0"]
        check(100 <= d0["value"] <= 1e5 and d0["uncertainty"] > 0, f"CHX D0 {d0}")
        check(os.path.exists(os.path.join(TMP, "chx", "nlsq", "plots", "overview.png")), "CHX plots")
    else:
        check(False, "configs/chx_static.yaml missing")

    # 7. surfaces in several chunks (N = 600: row blocks of 436 + a short one of 164),
    #    prepared on 1 or 3 threads: the same file bytes, and the right values
    big = os.path.join(TMP, "big.h5")
    big_cfg = write_config("big.yaml", TRUTH, frames=600, data=big)
    r = run("simulate", "--config", big_cfg, "--phi", "0,90", "--out", big, "--noise", "0.001")
    check(r.returncode == 0, "simulate 600 frames")
    big_fit = write_config("big_fit.yaml", START, frames=600, data=big, max_iter=3)
    outs = []
    for t in ("1", "3"):
        r, d = fit(big_fit, os.path.join(TMP, "big" + t), "--threads", t, "--no-plots",
                 "--surfaces")
        check(r.returncode == 0, f"600-frame fit on {t} threads")
        outs.append(os.path.join(d, "results.h5"))
    check(open(outs[0], "rb").read() == open(outs[1], "rb").read(),
          "results.h5 bytes differ between 1 and 3 threads")
    with h5py.File(outs[0], "r") as h, h5py.File(big, "r") as src:
        check(h["/nlsq/c2_fit"].chunks == (1, 436, 600), f"chunks {h['/nlsq/c2_fit'].chunks}")
        stored = src["/xpcs/twotime/correlation_map/c2_00002"][()]  # phi = 90
        full = stored + stored.T - np.diag(np.diag(stored))
        surf = h["/data/c2"][1]
        off = ~np.eye(600, dtype=bool)
        check(np.array_equal(surf[off], full[off].astype(np.float32)), "/data/c2 values")
        res = h["/nlsq/residuals"][1]
        fitv = h["/nlsq/c2_fit"][1]
        check(np.allclose(res[1:, 1:][off[1:, 1:]],
                          (full - fitv.astype(np.float64))[1:, 1:][off[1:, 1:]], atol=1e-6),
              "residuals = data - fit")
        check(np.isnan(res[0]).all() and np.isnan(np.diag(res)).all(), "NaN rows")
        check(np.array_equal(fitv, fitv.T), "fit surface symmetric")

    # 8. Ctrl-C during the fit: exit 130, nothing written. The signal is sent when the
    #    first iteration line appears, so the fit is surely still running.
    big_slow = write_config("big_slow.yaml", START, frames=600, data=big, max_iter=1000)
    out_int = os.path.join(TMP, "interrupted")
    proc = subprocess.Popen([XF, "nlsq", "--config", big_slow, "--out", out_int, "--threads", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "iteration" in line:
            proc.send_signal(2)
            break
    rest = proc.stderr.read()
    proc.wait()
    check(proc.returncode == 130, f"interrupted exit code {proc.returncode}")
    check("interrupted" in rest, "interrupted message")
    check(not os.path.exists(out_int), "nothing written after an interrupt")

    # 6. error paths: one line, the right exit code, nothing written
    r = run("nlsq", "--config", os.path.join(TMP, "nope.yaml"), "--out", os.path.join(TMP, "e1"))
    check(r.returncode == 2 and r.stderr.startswith("xpcsfit: error:"), f"missing config: {r.returncode}")
    check(not os.path.exists(os.path.join(TMP, "e1")), "nothing written for a missing config")
    bad_data = write_config("bad.yaml", START, data=os.path.join(TMP, "missing.h5"))
    r = run("nlsq", "--config", bad_data, "--out", os.path.join(TMP, "e2"))
    check(r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, f"missing data: {r.stderr}")
    check(not os.path.exists(os.path.join(TMP, "e2")), "nothing written for missing data")
    r = run("nlsq", "--config", cfg, "--threads", "0")
    check(r.returncode == 2, "--threads 0 is a usage error")
    r = run("nlsq")
    check(r.returncode == 2, "no --config is a usage error")

    return summary()


if __name__ == "__main__":
    sys.exit(main())
