#!/usr/bin/python3
"""The NLSQ start table: how xpcsfit and SciPy fare from many starts on the same data.

What it measures
  For three fit modes (static with per-angle scaling; laminar_flow with one shared
  contrast/offset, per_angle_mode auto; laminar_flow with per-angle scaling) it simulates
  one small APS-U file with `xpcsfit simulate` (Gaussian noise 0.002, seed 1; 20k-60k
  fitted points), then from each of >= 12 starts of the physical parameters runs
    - xpcsfit default:      `xpcsfit nlsq` with start_search enabled (screened multi-start),
                            everything else at xpcsfit's defaults;
    - xpcsfit direct:       start_search off, hierarchical start off (one local LM path);
    - xpcsfit hierarchical: start_search off, hierarchical on (laminar modes only);
    - SciPy trf:            scipy.optimize.least_squares(method='trf', x_scale='jac',
                            xtol = ftol = gtol = 1e-8, max_nfev 1000, analytic Jacobian)
                            on tests/helpers/xpcs_reference.py's independent NumPy
                            transcription of the same objective.
  Every run sees the same points (frames 1..N, upper triangle without the t = 0 row and
  the diagonal) with sigma = 1, so chi^2 is the plain sum of squared residuals in all
  four. The per-angle contrast/offset start is xpcsfit's quantile estimate (docs/nlsq.md;
  xpcsfit computes it itself, SciPy gets xpcs_reference.quantile_scaling, averaged over
  the angles for a shared pair). Starts outside the bounds are clipped onto them (label
  marked "clipped"); SciPy needs strictly interior starts and gets them nudged inward by
  1e-10 of the bound width.

  Per mode, "the optimum" is the lowest chi^2 any run reached; a run is "at the optimum"
  when (chi^2 - best)/best <= 1e-6. The table gives per start and method: status
  (xpcsfit's status/quality grade), full-data iterations (xpcsfit) or nfev (SciPy),
  whole-data pass equivalents (xpcsfit, when parameters.json reports them), the relative
  chi^2 excess and the wall time (xpcsfit: the whole process, start to files written;
  SciPy: least_squares only, the h5py read excluded). The summary counts how many starts
  each method brought to the optimum and -- the key honesty metric -- how many xpcsfit
  runs said "converged" while NOT at the optimum.

Output: markdown on stdout, every number in $XF_TMP/start_table.json.
Environment: XF_BINARY (default /work/main/build/xpcsfit), XF_TMP (default
/tmp/xf_start_table). Options: --modes, --quick (5 starts per mode), --threads N.
A benchmark: asserts nothing. Exit 0, except 2 when xpcsfit rejected a config (exit 2)
and 1 when a run crashed (a signal, an unexpected exit code, no parameters.json).
Run with Debian's /usr/bin/python3 (numpy, scipy, h5py)."""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "helpers"))
import numpy as np  # noqa: E402
from scipy.optimize import least_squares  # noqa: E402

import xpcs_reference as xr  # noqa: E402

GAP = 2.0e6            # stator-rotor gap L (Angstrom)
NOISE, SEED = "0.002", "1"
MAX_ITER = 1000        # xpcsfit max_iterations and SciPy max_nfev
OPT_TOL = 1e-6         # relative chi^2 excess that still counts as "the optimum"
XF_TIMEOUT_S = 900

# Each dataset is simulated once; modes may share one.
DATASETS = {
    # static: g1^2 ~ exp(-q^2 * integral of D): decays to ~0.02 over the 12 s window
    "static": dict(analysis_mode="static", dt=0.1, q=0.01, frames=120,
                   phi=[0.0, 45.0, 90.0], truth=[2000.0, 0.3, 50.0]),
    # laminar: at phi = 90 (almost no shear) the diffusion alone decays to ~0.6, at
    # phi ~ phi0 diffusion x shear decays to ~0.005 (dt 0.003 rather than 0.001 so both
    # decays are clearly visible in 150 frames)
    "laminar": dict(analysis_mode="laminar_flow", dt=0.003, q=0.0054, frames=150,
                    phi=[-60.0, -5.0, 0.0, 45.0, 90.0],
                    truth=[20000.0, -0.3, 100.0, 0.002, -0.2, 0.0002, 1.0]),
}

# Fit modes: dataset, xpcsfit's per_angle_mode, SciPy's matching parameterisation.
MODES = {
    "static": dict(data="static", per_angle_mode="individual", scipy="individual",
                   hierarchical=False),
    "laminar_auto": dict(data="laminar", per_angle_mode="auto", scipy="shared",
                         hierarchical=True),
    "laminar_individual": dict(data="laminar", per_angle_mode="individual",
                               scipy="individual", hierarchical=True),
}

# xpcsfit methods: (name, start_search, hierarchical); None = leave xpcsfit's default.
XF_METHODS = [("default", True, None), ("direct", False, False),
              ("hierarchical", False, True)]

SCALE = ("D0", "gamma_dot_t0")          # positive scale parameters
# homodyne's defaults: the middle of each bound, and its template's values
MID_BOUNDS = dict(D0=50050.0, alpha=0.0, D_offset=0.0, gamma_dot_t0=0.2500005, beta=0.0,
                  gamma_dot_t_offset=0.0, phi0=0.0)
TEMPLATE = dict(D0=1000.0, alpha=0.5, D_offset=10.0, gamma_dot_t0=0.01, beta=0.5,
                gamma_dot_t_offset=0.0, phi0=0.0)

CONFIG = """analysis_mode: {mode}
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: {dt}
  start_frame: 1
  end_frame: {frames}
  scattering: {{wavevector_q: {q}}}
  geometry: {{stator_rotor_gap: {gap}}}
initial_parameters:
  parameter_names: [{names}]
  values: {values}
optimization:
  nlsq:
    max_iterations: {max_iter}
    anti_degeneracy:
      per_angle_mode: {per_angle_mode}
{hierarchical}    start_search: {{enable: {search}}}
"""


# ------------------------------------------------------------------ configs and data

def yaml_values(values):
    """A YAML flow list of floats, or null (xpcsfit then estimates the start)."""
    if values is None:
        return "null"
    return "[" + ", ".join(repr(float(v)) for v in values) + "]"


def write_config(path, ds, data, values, per_angle_mode="individual", search=False,
                 hierarchical=None):
    """Write an xpcsfit config; hierarchical None leaves the key out (xpcsfit default)."""
    hier = "" if hierarchical is None else \
        f"      hierarchical: {{enable: {str(hierarchical).lower()}}}\n"
    names = xr.mode_names(ds["analysis_mode"])
    with open(path, "w") as f:
        f.write(CONFIG.format(mode=ds["analysis_mode"], data=data, dt=ds["dt"],
                              frames=ds["frames"], q=ds["q"], gap=GAP,
                              names=", ".join(names), values=yaml_values(values),
                              max_iter=MAX_ITER, per_angle_mode=per_angle_mode,
                              hierarchical=hier, search=str(search).lower()))


def simulate(xf, key, tmp):
    """Simulate dataset `key` from its truth; returns the HDF5 path."""
    ds = DATASETS[key]
    data = os.path.join(tmp, f"{key}.h5")
    cfg = os.path.join(tmp, f"{key}_truth.yaml")
    write_config(cfg, ds, data, ds["truth"])
    r = subprocess.run([xf, "simulate", "--config", cfg,
                        "--phi", ",".join(f"{p:g}" for p in ds["phi"]), "--out", data,
                        "--force", "--noise", NOISE, "--seed", SEED], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"xpcsfit simulate failed (exit {r.returncode}) for {cfg}:\n"
                           f"{r.stderr.strip()}")
    return data


# ------------------------------------------------------------------ starts

def bound_arrays(names):
    lo = np.array([xr.DEFAULT_BOUNDS[n][0] for n in names])
    hi = np.array([xr.DEFAULT_BOUNDS[n][1] for n in names])
    return lo, hi


def from_dict(names, d):
    return [d[n] for n in names]


def scaled(names, truth, factor):
    """The truth with the scale parameters (D0, gamma_dot_t0) multiplied by factor."""
    return [v * factor if n in SCALE else v for n, v in zip(names, truth)]


def replaced(names, truth, **changes):
    return [changes.get(n, v) for n, v in zip(names, truth)]


def random_starts(names, n, seed):
    """Uniform in the bounds, log-uniform for the scale parameters; seeded."""
    rng = np.random.default_rng(seed)
    lo, hi = bound_arrays(names)
    out = []
    for _ in range(n):
        v = [math.exp(rng.uniform(math.log(a), math.log(b))) if nm in SCALE
             else rng.uniform(a, b) for nm, a, b in zip(names, lo, hi)]
        out.append(v)
    return out


def far_starts(names, truth):
    """Starts far from the truth in the directions that usually hurt."""
    far = [("far: D0 1e5, alpha -2", replaced(names, truth, D0=1e5, alpha=-2.0)),
           ("far: D0 1e2, alpha 2", replaced(names, truth, D0=1e2, alpha=2.0))]
    if "gamma_dot_t0" in names:
        far += [("far: gamma_dot_t0 0.5", replaced(names, truth, gamma_dot_t0=0.5)),
                ("far: gamma_dot_t0 1e-6, phi0 -8",
                 replaced(names, truth, gamma_dot_t0=1e-6, phi0=-8.0))]
    else:
        far += [("far: D_offset 1e4", replaced(names, truth, D_offset=1e4))]
    return far


def build_starts(names, truth, quick):
    """[(label, values or None)] for one mode; values clipped into the bounds."""
    lo, hi = bound_arrays(names)
    at_zero = {n: (xr.DEFAULT_BOUNDS[n][0] if n in SCALE else 0.0) for n in names}
    starts = [("truth", list(truth)),
              ("near truth (scale x1.3)", scaled(names, truth, 1.3)),
              ("scale params /10", scaled(names, truth, 0.1)),
              ("scale params x10", scaled(names, truth, 10.0)),
              ("all at lower bound", list(lo)),
              ("all at upper bound", list(hi)),
              ("0 where allowed (scale at lower bound)", from_dict(names, at_zero)),
              ("homodyne mid-bounds", from_dict(names, MID_BOUNDS)),
              ("homodyne template", from_dict(names, TEMPLATE))]
    starts += far_starts(names, truth)
    starts += [(f"random #{k + 1} (seed 7)", v)
               for k, v in enumerate(random_starts(names, 3, seed=7))]
    starts.append(("values: null (xpcsfit estimates; SciPy at mid-bounds)", None))
    if quick:
        keep = {"truth", "scale params /10", "homodyne mid-bounds",
                "far: D0 1e5, alpha -2"}
        starts = [s for s in starts if s[0] in keep or s[1] is None]
    return [clip_start(label, v, lo, hi) for label, v in starts]


def clip_start(label, values, lo, hi):
    if values is None:
        return label, None
    v = np.clip(np.asarray(values, dtype=float), lo, hi)
    if not np.array_equal(v, np.asarray(values, dtype=float)):
        label += " (clipped)"
    return label, [float(x) for x in v]


# ------------------------------------------------------------------ runs

class RunFailure(Exception):
    """xpcsfit returned a config error (exit 2) or crashed."""


def read_parameters(out_dir):
    try:
        with open(os.path.join(out_dir, "nlsq", "parameters.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def screening_passes(search):
    """Screening passes: 'screening_passes' if reported, else the rounds' sum."""
    if not isinstance(search, dict):
        return None
    if "screening_passes" in search:
        return search["screening_passes"]
    rounds = [search.get(k) for k in ("screening_round1", "screening_round2")]
    passes = [r.get("passes") for r in rounds if isinstance(r, dict)]
    return sum(p for p in passes if isinstance(p, (int, float))) if passes else None


def run_xpcsfit(xf, cfg, out_dir, threads):
    """One `xpcsfit nlsq` process; returns a record (status 'config_error' / 'crash' /
    'timeout' when no usable result came back)."""
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [xf, "nlsq", "--config", cfg, "--out", out_dir, "--no-plots", "--no-surfaces"]
    if threads:
        cmd += ["--threads", str(threads)]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=XF_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return dict(status="timeout", exit=None, wall_s=time.perf_counter() - t0,
                    config=cfg)
    wall = time.perf_counter() - t0
    pj = read_parameters(out_dir) if r.returncode in (0, 1) else None
    if pj is None:
        kind = "config_error" if r.returncode == 2 else "crash"
        return dict(status=kind, exit=r.returncode, wall_s=wall, config=cfg,
                    stderr=r.stderr.strip()[-2000:])
    search = pj.get("search") if isinstance(pj.get("search"), dict) else None
    quality = pj.get("quality") if isinstance(pj.get("quality"), dict) else {}
    return dict(status=pj.get("status", "?"), exit=r.returncode, wall_s=wall,
                iterations=pj.get("iterations"), chi2=finite(pj.get("chi_squared")),
                n_points=pj.get("n_points"), stop_reason=pj.get("stop_reason"),
                quality=quality.get("overall"),
                pass_equivalents=search.get("whole_data_pass_equivalents")
                if search else None,
                screening_passes=screening_passes(search), search=search, config=cfg)


def finite(x):
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def scipy_start(prob, theta, scaling):
    """x0 at the physical start and the quantile scaling, nudged strictly inside."""
    lo, hi = prob.bounds()
    x0 = prob.pack(theta, scaling[0], scaling[1])
    eps = 1e-10 * (hi - lo)
    return np.clip(x0, lo + eps, hi - eps), lo, hi


def run_scipy(prob, theta, scaling):
    x0, lo, hi = scipy_start(prob, theta, scaling)
    t0 = time.perf_counter()
    try:
        sp = least_squares(prob.residuals, x0, jac=prob.jacobian, bounds=(lo, hi),
                           method="trf", x_scale="jac", xtol=1e-8, ftol=1e-8, gtol=1e-8,
                           max_nfev=MAX_ITER)
    except Exception as e:  # noqa: BLE001 -- a benchmark records, it does not stop
        return dict(status="error", error=repr(e), wall_s=time.perf_counter() - t0)
    wall = time.perf_counter() - t0
    chi2 = finite(float(sp.fun @ sp.fun))
    return dict(status="success" if sp.success else "failed", scipy_status=int(sp.status),
                message=sp.message, nfev=int(sp.nfev),
                njev=int(sp.njev) if sp.njev is not None else None,
                chi2=chi2, wall_s=wall, x=[float(v) for v in sp.x])


# ------------------------------------------------------------------ one mode

def load_problem(mode, data):
    cfg = MODES[mode]
    ds = DATASETS[cfg["data"]]
    d = xr.read_aps_u(data, ds["q"], 1, ds["frames"])
    prob = xr.Problem(d, ds["analysis_mode"], ds["dt"], GAP, per_angle=cfg["scipy"])
    return prob, xr.quantile_scaling(d)


def run_mode(mode, xf, data, tmp, quick, threads, log):
    cfg = MODES[mode]
    ds = DATASETS[cfg["data"]]
    names = xr.mode_names(ds["analysis_mode"])
    prob, scaling = load_problem(mode, data)
    methods = [m for m in XF_METHODS if cfg["hierarchical"] or m[0] != "hierarchical"]
    rows = []
    for k, (label, values) in enumerate(build_starts(names, ds["truth"], quick)):
        runs = {}
        for name, search, hier in methods:
            out = os.path.join(tmp, "runs", mode, f"{k:02d}_{name}")
            os.makedirs(out, exist_ok=True)
            yml = os.path.join(out, "config.yaml")
            write_config(yml, ds, data, values, cfg["per_angle_mode"], search, hier)
            runs[name] = run_xpcsfit(xf, yml, os.path.join(out, "result"), threads)
            report_failure(mode, label, name, runs[name])
            check_points(mode, runs[name], prob.ds.n_points)
        theta = values if values is not None else from_dict(names, MID_BOUNDS)
        runs["scipy"] = run_scipy(prob, theta, scaling)
        rows.append(dict(label=label, start=values, scipy_start=theta, runs=runs))
        log(f"  {mode}: start {k + 1} '{label}' done")
    res = dict(mode=mode, analysis_mode=ds["analysis_mode"],
               per_angle_mode=cfg["per_angle_mode"], scipy_per_angle=cfg["scipy"],
               data=data, dataset=ds, n_points=int(prob.ds.n_points),
               n_parameters=len(prob.names), quantile_scaling=[s.tolist() for s in scaling],
               methods=[m[0] for m in methods] + ["scipy"], rows=rows)
    score(res)
    return res


def report_failure(mode, label, method, run):
    """Config errors and crashes are printed at once, loudly, on stderr."""
    if run["status"] in ("config_error", "crash", "timeout"):
        print(f"!!! {mode} / {label} / xpcsfit {method}: {run['status'].upper()} "
              f"(exit {run.get('exit')}), config {run['config']}\n"
              f"!!! {run.get('stderr', '')}", file=sys.stderr)


def check_points(mode, run, n_points):
    """Warn when xpcsfit fitted other points than SciPy (chi^2 not comparable)."""
    n = run.get("n_points")
    if n is not None and n != n_points:
        print(f"!!! {mode}: xpcsfit fitted {n} points, SciPy {n_points}: chi^2 values "
              f"are not comparable", file=sys.stderr)


def score(res):
    """Best chi^2 of the mode, each run's relative excess, and the summary counts."""
    chis = [r["chi2"] for row in res["rows"] for r in row["runs"].values()
            if r.get("chi2") is not None]
    best = min(chis) if chis else None
    res["best_chi2"] = best
    summary = {m: dict(runs=0, at_optimum=0, converged=0, converged_not_optimal=0)
               for m in res["methods"]}
    for row in res["rows"]:
        for m, r in row["runs"].items():
            ex = (r["chi2"] - best) / best if r.get("chi2") is not None and best else None
            r["excess"] = ex
            r["at_optimum"] = ex is not None and ex <= OPT_TOL
            s = summary[m]
            s["runs"] += 1
            s["at_optimum"] += r["at_optimum"]
            if m != "scipy" and r["status"] == "converged":
                s["converged"] += 1
                s["converged_not_optimal"] += not r["at_optimum"]
    res["summary"] = summary
    res["converged_not_optimal_total"] = sum(
        s["converged_not_optimal"] for m, s in summary.items() if m != "scipy")


# ------------------------------------------------------------------ printing

STATUS_SHORT = {"converged": "conv", "max_iterations": "maxit", "failed": "FAILED",
                "config_error": "CONFIG ERROR", "crash": "CRASH", "timeout": "TIMEOUT"}


def fmt_num(x, spec):
    return "—" if x is None else format(x, spec)


def fmt_excess(r):
    if r.get("chi2") is None:
        return "—"
    return "optimum" if r["at_optimum"] else f"{r['excess']:.2e}"


def fmt_status(r):
    s = STATUS_SHORT.get(r["status"], r["status"])
    return f"{s}/{r['quality']}" if r.get("quality") else s


def xf_cells(r):
    pe = r.get("pass_equivalents")
    return [fmt_status(r), fmt_num(r.get("iterations"), "d"), fmt_num(pe, ".1f"),
            fmt_excess(r), fmt_num(r.get("wall_s"), ".2f")]


def scipy_cells(r):
    status = "" if r["status"] == "success" else f" ({r['status']})"
    return [fmt_num(r.get("nfev"), "d") + status, fmt_excess(r),
            fmt_num(r.get("wall_s"), ".2f")]


def markdown(res):
    """The mode's heading, table and summary line."""
    ds = res["dataset"]
    xf_methods = [m for m in res["methods"] if m != "scipy"]
    lines = [f"### {res['mode']}: {res['analysis_mode']}, per_angle_mode "
             f"{res['per_angle_mode']} (SciPy: {res['scipy_per_angle']}), "
             f"{len(ds['phi'])} angles x {ds['frames']} frames, {res['n_points']} points, "
             f"{res['n_parameters']} free parameters",
             "",
             f"truth {ds['truth']}; best chi^2 any method reached: "
             f"{fmt_num(res['best_chi2'], '.10g')}",
             ""]
    head = ["start"]
    for m in xf_methods:
        head += [f"{m}: status", "it", "pass-eq", "Δχ²/χ²", "s"]
    head += ["SciPy trf: nfev", "Δχ²/χ²", "s"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in res["rows"]:
        cells = [row["label"]]
        for m in xf_methods:
            cells += xf_cells(row["runs"][m])
        cells += scipy_cells(row["runs"]["scipy"])
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", summary_line(res), ""]
    return "\n".join(lines)


def summary_line(res):
    s = res["summary"]
    reached = ", ".join(f"{m} {s[m]['at_optimum']}/{s[m]['runs']}" for m in res["methods"])
    bad = ", ".join(f"{m} {s[m]['converged_not_optimal']}/{s[m]['converged']}"
                    for m in res["methods"] if m != "scipy")
    return (f"**{res['mode']}: at the optimum: {reached}. xpcsfit runs that said "
            f"CONVERGED but are NOT at the optimum: {res['converged_not_optimal_total']} "
            f"({bad} of those that said converged).**")


# ------------------------------------------------------------------ main

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated subset of " + ", ".join(MODES))
    ap.add_argument("--quick", action="store_true", help="5 starts per mode (testing)")
    ap.add_argument("--threads", type=int, default=None,
                    help="passed to xpcsfit nlsq --threads (default: xpcsfit's)")
    args = ap.parse_args()
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        ap.error(f"unknown mode(s) {unknown}; choose from {list(MODES)}")
    return args


def exit_code(results):
    statuses = [r["status"] for res in results for row in res["rows"]
                for r in row["runs"].values()]
    if "config_error" in statuses:
        return 2
    return 1 if ("crash" in statuses or "timeout" in statuses) else 0


def main():
    args = parse_args()
    xf = os.environ.get("XF_BINARY", "/work/main/build/xpcsfit")
    tmp = os.environ.get("XF_TMP", "/tmp/xf_start_table")
    os.makedirs(tmp, exist_ok=True)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    t_all = time.perf_counter()
    data = {}
    results = []
    for mode in args.modes:
        key = MODES[mode]["data"]
        if key not in data:
            data[key] = simulate(xf, key, tmp)
        log(f"{mode}: running starts")
        results.append(run_mode(mode, xf, data[key], tmp, args.quick, args.threads, log))
    elapsed = time.perf_counter() - t_all

    print(f"## NLSQ start table (xpcsfit {xf}; noise {NOISE}, seed {SEED}, sigma 1; "
          f"Δχ²/χ² relative to the best of the mode, 'optimum' if <= {OPT_TOL:g}; "
          f"it = full-data iterations; pass-eq = whole-data pass equivalents; "
          f"xpcsfit s = whole process, SciPy s = least_squares only)\n")
    for res in results:
        print(markdown(res))
    total = sum(res["converged_not_optimal_total"] for res in results)
    print(f"**TOTAL xpcsfit runs that said CONVERGED while NOT at the optimum: {total}**")
    print(f"\nwall time of this benchmark: {elapsed:.1f} s")
    out = os.path.join(tmp, "start_table.json")
    with open(out, "w") as f:
        json.dump(dict(binary=xf, threads=args.threads, quick=args.quick,
                       optimum_tolerance=OPT_TOL, elapsed_s=elapsed,
                       converged_not_optimal_total=total, modes=results), f, indent=1)
    print(f"numbers: {out}")
    code = exit_code(results)
    if code:
        print(f"!!! some xpcsfit runs ended in a config error or crash (exit {code}); "
              f"see the stderr above and {out}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
