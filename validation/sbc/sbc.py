#!/usr/bin/env python3
"""Simulation-based calibration of `xpcsfit fit` at its defaults (issue 34; Talts et al.
2018), over small static and laminar files, well and weakly identified — the whole CLI
path a user runs (NLSQ, the importance route or exact NUTS, whichever the defaults
choose), unlike tests/test_cmc_calibration.c, which calibrates the library's NUTS on one
static family with the route bypassed.

Per replicate r of family F (deterministic: numpy's generator keyed by (family, r)):
  1. draw the truth from the config's priors (normals truncated to the bounds, exactly
     the priors the fit uses; contrast and offset too, one of each for all angles);
  2. `xpcsfit simulate` it (noise seed r + 1);
  3. `xpcsfit fit` at the defaults (--threads 1), starting from values: null;
  4. the rank of each truth among L = 99 draws thinned evenly from results.h5 /cmc/draws
     (ties, e.g. resampled importance draws, broken at random with the same generator).
One JSON per replicate in OUT/F/rep_XXXXX.json (the run is resumable: existing replicates
are skipped; delete one to redo it). Not approximated: the noise sd σ is sampled by the fit
with a data-scaled half-normal prior (docs/cmc.md); thousands of points fix it, so its
prior does not matter to the ranks of the other parameters.

Usage:
  nice -n 15 /usr/bin/python3 validation/sbc/sbc.py run --reps 0:100 [--families all]
      [--jobs 2] [--out /tmp/xf_sbc] [--xf build/xpcsfit]
  /usr/bin/python3 validation/sbc/sbc.py report [--out /tmp/xf_sbc] [--bins 10]
report: per family and parameter the χ² over the rank bins and its p-value (uniform ranks:
p roughly uniform; a p below 0.001 is a miscalibration), the share of each route, the
failures (a fit without a posterior counts as a failure, its ranks are not used) and the
median wall and CPU seconds per replicate.
"""
import argparse
import concurrent.futures as cf
import glob
import json
import os
import resource
import shutil
import subprocess
import sys
import time

import numpy as np
from scipy import stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
L = 99  # thinned draws per replicate: ranks 0..L

# family: (mode, angles, frames, dt, noise, q, {name: (mu, sigma, lo, hi)})
STATIC_PRIORS = {"D0": (2000.0, 600.0, 100.0, 10000.0),
                 "alpha": (-0.5, 0.3, -2.0, 1.0),
                 "D_offset": (0.0, 50.0, -1000.0, 1000.0)}
LAMINAR_PRIORS = {"D0": (1200.0, 200.0, 100.0, 5000.0),
                  "alpha": (-1.2, 0.1, -2.0, 0.0),
                  "D_offset": (10.0, 10.0, -100.0, 100.0),
                  "gamma_dot_t0": (0.012, 0.002, 0.001, 0.05),
                  "beta": (-0.25, 0.05, -1.0, 0.5),
                  "gamma_dot_t_offset": (0.0004, 0.0002, -0.005, 0.005),
                  "phi0": (2.0, 2.0, -10.0, 10.0)}
SCALING_PRIORS = {"contrast": (0.3, 0.05, 0.05, 0.8), "offset": (1.0, 0.01, 0.9, 1.1)}
FAMILIES = {
    # well identified: 2 angles x 40 frames (1 640 points), q 0.008: decays within the window
    "static": ("static", [0.0, 90.0], 40, 1.0, 0.01, 0.008, STATIC_PRIORS),
    # weakly identified: 1 angle x 40 frames, 5x the noise (the prior shares the say)
    "static_weak": ("static", [0.0], 40, 1.0, 0.05, 0.0054, STATIC_PRIORS),
    # laminar, 3 angles x 50 frames at dt 1 ms (3 825 points)
    "laminar": ("laminar_flow", [-45.0, 0.0, 90.0], 50, 0.001, 0.005, 0.0054, LAMINAR_PRIORS),
    # weakly identified laminar: 2 angles x 40 frames, 0.02 noise
    "laminar_weak": ("laminar_flow", [0.0, 45.0], 40, 0.001, 0.02, 0.0054, LAMINAR_PRIORS),
}
FAMILY_ID = {name: i for i, name in enumerate(FAMILIES)}


def draw_truth(rng, priors):
    out = {}
    for n, (mu, sd, lo, hi) in priors.items():
        a, b = (lo - mu) / sd, (hi - mu) / sd
        out[n] = float(stats.truncnorm.rvs(a, b, loc=mu, scale=sd, random_state=rng))
    return out


def config_text(family, data, values):
    mode, phis, frames, dt, noise, q, priors = FAMILIES[family]
    names = list(priors)
    lines = ["analysis_mode: %s" % mode,
             "experimental_data: {file_path: %s}" % data,
             "analyzer_parameters:", "  dt: %g" % dt, "  start_frame: 1",
             "  end_frame: %d" % frames, "  scattering: {wavevector_q: %g}" % q,
             "  geometry: {stator_rotor_gap: 2000000}",
             "initial_parameters:", "  parameter_names: [%s]" % ", ".join(names),
             "  values: %s" % ("null" if values is None else
                               "[%s]" % ", ".join("%.17g" % values[n] for n in names)),
             "parameter_space:", "  bounds:"]
    for n, (mu, sd, lo, hi) in list(priors.items()) + list(SCALING_PRIORS.items()):
        lines.append("    - {name: %s, min: %g, max: %g, prior_mu: %g, prior_sigma: %g}" %
                     (n, lo, hi, mu, sd))
    lines += ["optimization:", "  cmc:", "    per_angle_mode: auto"]
    return "\n".join(lines) + "\n"


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def replicate(xf, out_root, family, r, keep):
    path = os.path.join(out_root, family, "rep_%05d.json" % r)
    if os.path.exists(path):
        return path, "kept"
    work = os.path.join(out_root, family, "work_%05d" % r)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rng = np.random.default_rng([FAMILY_ID[family], r])
    mode, phis, frames, dt, noise, q, priors = FAMILIES[family]
    truth = draw_truth(rng, priors)
    scal = draw_truth(rng, SCALING_PRIORS)
    data = os.path.join(work, "data.h5")
    sim_cfg = os.path.join(work, "truth.yaml")
    fit_cfg = os.path.join(work, "fit.yaml")
    with open(sim_cfg, "w") as f:
        f.write(config_text(family, data, truth))
    with open(fit_cfg, "w") as f:
        f.write(config_text(family, data, None))
    rec = {"family": family, "replicate": r, "truth": dict(truth, **scal)}
    sim = subprocess.run([xf, "simulate", "--config", sim_cfg, "--out", data, "--force",
                          "--phi", ",".join("%g" % p for p in phis), "--frames", str(frames),
                          "--noise", str(noise), "--seed", str(r + 1),
                          "--contrast", "%.17g" % scal["contrast"],
                          "--offset", "%.17g" % scal["offset"]],
                         capture_output=True, text=True)
    if sim.returncode != 0:
        rec["error"] = "simulate: " + sim.stderr[-500:]
    else:
        t0 = time.monotonic()
        with open(os.path.join(work, "fit.out"), "w") as fo, \
                open(os.path.join(work, "fit.err"), "w") as fe:
            p = subprocess.Popen([xf, "fit", "--config", fit_cfg, "--out",
                                  os.path.join(work, "fit"), "--force", "--no-plots",
                                  "--threads", "1"], stdout=fo, stderr=fe)
            # this child's own CPU (the jobs run side by side in one process)
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
        with open(os.path.join(work, "fit.err")) as fe:
            err = fe.read()
        rec["wall_s"] = round(time.monotonic() - t0, 2)
        rec["cpu_s"] = round(ru.ru_utime + ru.ru_stime, 2)
        rec["fit_exit"] = p.returncode
        rec.update(read_fit(os.path.join(work, "fit", "cmc"), truth, scal, rng))
        if "error" in rec and err:
            rec["error"] += ": " + err[-500:]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(rec, f, indent=1)
    os.replace(tmp, path)
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return path, "done"


def read_fit(cdir, truth, scal, rng):
    pj = os.path.join(cdir, "parameters.json")
    if not os.path.exists(pj):
        return {"error": "no posterior"}
    with open(pj) as f:
        p = json.load(f)
    pr = p.get("posterior_route") or {}
    ic = pr.get("importance_check") or {}
    out = {"route": pr.get("route"), "khat": ic.get("khat"), "status": p.get("status"),
           "quality": (p.get("quality") or {}).get("overall"),
           "reasons": (p.get("quality") or {}).get("reasons"),
           "timing_s": p.get("timing_s")}
    import h5py
    with h5py.File(os.path.join(cdir, "results.h5"), "r") as f:
        d = f["cmc/draws"][()]
        names = [x.decode() if isinstance(x, bytes) else str(x)
                 for x in f["cmc/parameter_names"][()]]
    g = d.shape[0]
    if g == 0:  # a failed fit writes its result without draws: a failure, no ranks
        out["error"] = "no posterior (%s)" % out["status"]
        return out
    idx = np.floor(np.arange(L) * g / L).astype(int)  # evenly thinned: less autocorrelated
    ranks = {}
    for n, v in list(truth.items()) + list(scal.items()):
        if n not in names:
            continue
        x = d[idx, names.index(n)]
        below = int(np.sum(x < v))
        ties = int(np.sum(x == v))
        ranks[n] = below + (int(rng.integers(0, ties + 1)) if ties else 0)
    out["ranks"] = ranks
    out["draws"] = int(g)
    return out


def run(a):
    xf = os.path.abspath(a.xf)
    fams = list(FAMILIES) if a.families == "all" else a.families.split(",")
    lo, hi = (int(x) for x in a.reps.split(":"))
    for fam in fams:
        os.makedirs(os.path.join(a.out, fam), exist_ok=True)
    jobs = [(fam, r) for r in range(lo, hi) for fam in fams]
    t0, c0 = time.monotonic(), cpu_children()
    n = 0
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        futs = [ex.submit(replicate, xf, a.out, fam, r, a.keep) for fam, r in jobs]
        for fu in cf.as_completed(futs):
            path, what = fu.result()
            n += what == "done"
            if what == "done":
                with open(path) as f:
                    rec = json.load(f)
                print("%s %5d: route %s, %s/%s, %.1f s wall%s" %
                      (rec["family"], rec["replicate"], rec.get("route"), rec.get("status"),
                       rec.get("quality"), rec.get("wall_s", float("nan")),
                       ("; " + rec["error"][:200]) if rec.get("error") else ""), flush=True)
    wall, cpu = time.monotonic() - t0, cpu_children() - c0
    if n:
        print("%d replicates in %.0f s wall, %.0f s CPU: %.1f CPU s per replicate" %
              (n, wall, cpu, cpu / n))


def report(a):
    bins = a.bins
    width = (L + 1) / bins
    for fam in FAMILIES:
        recs = []
        for p in sorted(glob.glob(os.path.join(a.out, fam, "rep_*.json"))):
            with open(p) as f:
                recs.append(json.load(f))
        if not recs:
            continue
        ok = [r for r in recs if "ranks" in r and not r.get("error")]
        routes = {}
        for r in recs:
            routes[r.get("route") or "none"] = routes.get(r.get("route") or "none", 0) + 1
        walls = [r["wall_s"] for r in recs if "wall_s" in r]
        cpus = [r["cpu_s"] for r in recs if "cpu_s" in r]
        print("== %s: %d replicates (%d with a posterior); routes %s; quality %s; median "
              "fit %.1f s wall, %.1f s CPU" %
              (fam, len(recs), len(ok),
               ", ".join("%s %d (%.0f %%)" % (k, v, 100.0 * v / len(recs))
                         for k, v in sorted(routes.items())),
               dict(sorted(_count(r.get("quality") for r in recs).items())),
               float(np.median(walls)) if walls else float("nan"),
               float(np.median(cpus)) if cpus else float("nan")))
        if not ok:
            continue
        names = list(ok[0]["ranks"])
        print("   %-20s %6s %8s %8s  counts per bin (ranks 0..%d in %d bins)" %
              ("parameter", "n", "chi2", "p", L, bins))
        for n in names:
            rk = np.array([r["ranks"][n] for r in ok if n in r["ranks"]])
            counts = np.bincount(np.minimum((rk / width).astype(int), bins - 1),
                                 minlength=bins)
            exp = len(rk) / bins
            chi2 = float(np.sum((counts - exp) ** 2 / exp))
            pval = float(stats.chi2.sf(chi2, bins - 1))
            print("   %-20s %6d %8.2f %8.4f  %s%s" %
                  (n, len(rk), chi2, pval, " ".join(str(c) for c in counts),
                   "  <- p < 0.001" if pval < 0.001 else ""))


def _count(xs):
    out = {}
    for x in xs:
        out[str(x)] = out.get(str(x), 0) + 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--reps", default="0:10", help="FIRST:END replicate indices")
    r.add_argument("--families", default="all", help="comma list or all: " +
                   ",".join(FAMILIES))
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--out", default="/tmp/xf_sbc")
    r.add_argument("--xf", default=os.path.join(ROOT, "build", "xpcsfit"))
    r.add_argument("--keep", action="store_true", help="keep each replicate's files")
    p = sub.add_parser("report")
    p.add_argument("--out", default="/tmp/xf_sbc")
    p.add_argument("--bins", type=int, default=10)
    a = ap.parse_args()
    run(a) if a.cmd == "run" else report(a)


if __name__ == "__main__":
    sys.exit(main())
