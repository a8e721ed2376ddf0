#!/usr/bin/env python3
"""The posterior's cost on every bundled config and on the hard cases (issue 34's "Done
when" table, docs/performance.md "Posterior per file"): one default `xpcsfit fit` each, run
from the repository root (the configs' file paths are relative to it), and one row each:

  case | points | NLSQ wall / CPU s | posterior wall / CPU s | route | k-hat | rounds |
  status / quality | posterior CPU / NLSQ CPU

NLSQ and posterior times are the stages' own (parameters.json timing_s, wall), their CPU
seconds from a separate `nlsq` run and from the whole `fit` minus it (getrusage of the
child: user + sys). Prints numbers, asserts nothing (label bench). Data: the config's own
file when bundled (chx_static), the demo's sample for demo_*.yaml (scripts/demo.sh), a
simulated sample for the two homodyne-style templates (as tests/examples/run_examples.py),
and the hard cases simulated from tests/configs/hard/ (validation/hard/cases.py).

Environment: XF_BINARY, XF_SOURCE_DIR, XF_TMP. Options: --only NAME[,NAME] (a config's
stem or a hard case), --skip-hard, --skip-configs, --threads N (default: all cores),
--json FILE (the rows).
"""
import argparse
import glob
import json
import os
import sys

SRC = os.environ.get("XF_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "validation", "hard"))
import cases  # noqa: E402

# as tests/examples/run_examples.py (keep the two in step)
SIMULATED = {
    "static_example": ["--phi", "0", "--frames", "200", "--initial", "D0=3000",
                       "--initial", "alpha=-1.2", "--initial", "D_offset=0",
                       "--noise", "0.002", "--seed", "3"],
    "laminar_flow_example": ["--phi", "-8,-2,3,8,87,93", "--frames", "120",
                             "--initial", "D0=1200", "--initial", "alpha=-1.2",
                             "--initial", "D_offset=10", "--initial", "gamma_dot_0=0.012",
                             "--initial", "beta=-0.25", "--initial",
                             "gamma_dot_offset=0.0004", "--initial", "phi_0=2.0",
                             "--noise", "0.002", "--seed", "3"],
}
DEMO = ["--phi", "-60,-5,0,45,90", "--noise", "0.002", "--seed", "1", "--lzf"]

HEADER = ("%-22s %9s %7s %7s %8s %8s %-10s %6s %6s %-22s %8s" %
          ("case", "points", "nlsq_w", "nlsq_c", "post_w", "post_c", "route", "k-hat",
           "rounds", "status/quality", "post/nlsq"))


def fmt(v, f):
    return "-" if v is None else f % v


def row(name, points, nlsq_wall, nlsq_cpu, post_wall, post_cpu, summary):
    """One table row (also used by bench/posterior.py): summary from cases.route_summary."""
    ratio = post_cpu / nlsq_cpu if post_cpu is not None and nlsq_cpu else None
    st = "%s/%s" % (summary.get("status"), summary.get("quality"))
    return ("%-22s %9s %7s %7s %8s %8s %-10s %6s %6s %-22s %8s" %
            (name, fmt(points, "%d"), fmt(nlsq_wall, "%.1f"), fmt(nlsq_cpu, "%.1f"),
             fmt(post_wall, "%.1f"), fmt(post_cpu, "%.1f"), summary.get("route") or "-",
             fmt(summary.get("khat"), "%.2f"), fmt(summary.get("rounds"), "%s"), st,
             fmt(ratio, "%.0fx")))


def measure(xf, name, config, data, joint, out, threads):
    """nlsq alone (its CPU), then the default fit; the posterior's CPU = fit - nlsq."""
    base = ["--config", config, "--no-plots", "--force", "--threads", str(threads)]
    if data:
        base += ["--data", data]
    if joint:
        base.append("--joint")
    r, _, nlsq_cpu = cases.timed([xf, "nlsq", *base, "--out", out + "_nlsq"])
    if r.returncode not in (0, 1):
        return {"case": name, "error": "nlsq exit %d: %s" % (r.returncode, r.stderr[-300:])}
    r, fit_wall, fit_cpu = cases.timed([xf, "fit", *base, "--out", out])
    sub_c = "cmc_joint" if joint else "cmc"
    sub_n = "nlsq_joint" if joint else "nlsq"
    try:
        c = cases.load_params(os.path.join(out, sub_c))
        n = cases.load_params(os.path.join(out, sub_n))
    except OSError:
        return {"case": name, "error": "fit exit %d: %s" % (r.returncode, r.stderr[-300:])}
    s = cases.route_summary(c)
    t = s.get("timing_s") or {}
    nt = n.get("timing_s") or {}
    nlsq_wall = nt.get("total") if isinstance(nt, dict) else None
    post_wall = t.get("total")
    points = (n.get("data") or {}).get("n_points") or (c.get("data") or {}).get("n_points")
    return {"case": name, "points": points, "nlsq_wall_s": nlsq_wall, "nlsq_cpu_s": nlsq_cpu,
            "post_wall_s": post_wall, "post_cpu_s": max(fit_cpu - nlsq_cpu, 0.0),
            "fit_wall_s": fit_wall, "fit_cpu_s": fit_cpu, "fit_exit": r.returncode,
            "summary": {k: v for k, v in s.items() if k != "timing_s"}, "timing_s": t}


def print_row(m):
    if "error" in m:
        print("%-22s error: %s" % (m["case"], m["error"]), flush=True)
        return
    print(row(m["case"], m["points"], m["nlsq_wall_s"], m["nlsq_cpu_s"], m["post_wall_s"],
              m["post_cpu_s"], m["summary"]), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-hard", action="store_true")
    ap.add_argument("--skip-configs", action="store_true")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json")
    a = ap.parse_args()
    xf = os.path.abspath(os.environ.get("XF_BINARY", os.path.join(SRC, "build", "xpcsfit")))
    tmp = os.path.abspath(os.environ.get("XF_TMP", "/tmp/xpcsfit_bench"))
    tmp = os.path.join(tmp, "posterior_cases")
    os.makedirs(tmp, exist_ok=True)
    only = set(x for x in a.only.split(",") if x)
    os.chdir(SRC)  # configs' file paths are relative to the repository root
    print("load average before: %.2f; threads %d" % (os.getloadavg()[0], a.threads))
    print("wall: the stages' own timing_s; CPU: user + sys (nlsq run alone; posterior = "
          "fit - nlsq)")
    print(HEADER, flush=True)
    rows = []
    todo = []
    if not a.skip_configs:
        for c in sorted(glob.glob(os.path.join(SRC, "configs", "*.yaml"))):
            todo.append((os.path.basename(c)[:-5], c, False))
    if not a.skip_hard:
        for name in cases.CASES:
            if name != "chx_static":  # the bundled config itself, above
                todo.append(("hard/" + name, cases.config_path(name), cases.is_joint(name)))
    for name, config, joint in todo:
        stem = name.split("/")[-1]
        if only and stem not in only and name not in only:
            continue
        data = None
        if stem.startswith("demo_"):
            data = os.path.join(tmp, "laminar_demo.h5")
            if not os.path.exists(data):
                cases.timed([xf, "simulate", "--config",
                             os.path.join(SRC, "configs", "demo_laminar.yaml"), "--out", data,
                             *DEMO])
        elif stem in SIMULATED:
            data = os.path.join(tmp, stem + ".h5")
            cases.timed([xf, "simulate", "--config", config, "--out", data, "--force",
                         *SIMULATED[stem]])
        elif name.startswith("hard/"):
            data = cases.make_data(xf, stem, tmp)
        m = measure(xf, name, config, data, joint, os.path.join(tmp, stem), a.threads)
        print_row(m)
        rows.append(m)
    print("load average after: %.2f" % os.getloadavg()[0])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
