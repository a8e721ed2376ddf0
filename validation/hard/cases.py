#!/usr/bin/env python3
"""The hard posterior cases of issue 34 (docs/validation.md "Hard posteriors"): their
configs (tests/configs/hard/), how each file is made (`xpcsfit simulate` from the stored
config and seed: the same bytes every time, so the repository holds no data file), and
the helpers shared by the reference script (validation/hard/reference.py), the slow test
(tests/test_posterior_hard.py) and the bench (bench/posterior_cases.py).

A case's "before" numbers and its reference live in tests/configs/hard/<name>.ref.json:
a long exact NUTS run (validation/hard/reference.py) or, for static_ridge, the exact
posterior by numerical integration (validation/hard/quadrature.py, adr/0100).
"""
import json
import os
import resource
import subprocess
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARD = os.path.join(ROOT, "tests", "configs", "hard")

# name: (config, simulate arguments (--out added), joint, data file or None (simulated))
CASES = {
    "laminar_weak": ("laminar_weak.yaml",
                     ["--phi", "-45,0,45,90", "--frames", "80", "--noise", "0.01",
                      "--seed", "21"], False, None),
    "joint_rings": ("joint_rings.yaml",
                    ["--phi", "0,45,90", "--q", "0.003,0.0054,0.008", "--frames", "60",
                     "--noise", "0.01", "--seed", "31"], True, None),
    "static_ridge": ("static_ridge.yaml",
                     ["--phi", "0,30,60,90,120,150", "--frames", "120", "--noise", "0.01",
                      "--seed", "11"], False, None),
    # the size of the same ridge (reference by numerical integration)
    "static_ridge_200": ("static_ridge_200.yaml",
                         ["--phi", "0,30,60,90,120,150", "--frames", "200", "--noise", "0.01",
                          "--seed", "11"], False, None),
    # the real CHX matrix (data/chx_350_aps_u.h5, 60 726 points) with the bundled config
    "chx_static": (os.path.join("..", "..", "..", "configs", "chx_static.yaml"), None, False,
                   os.path.join(ROOT, "data", "chx_350_aps_u.h5")),
}


def config_path(name):
    return os.path.normpath(os.path.join(HARD, CASES[name][0]))


def is_joint(name):
    return CASES[name][2]


def result_sub(name, kind):
    """kind 'nlsq' or 'cmc': the result folder's subfolder (…_joint for a joint fit)."""
    return kind + ("_joint" if is_joint(name) else "")


def make_data(xf, name, folder):
    """The case's data file: simulated into folder (deterministic bytes), or the stored one."""
    _, sim, _, stored = CASES[name]
    if stored:
        return stored
    out = os.path.join(folder, name + ".h5")
    if not os.path.exists(out):
        r = subprocess.run([xf, "simulate", "--config", config_path(name), "--out", out,
                            "--force"] + sim, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("simulate %s: %s" % (name, r.stderr))
    return out


def timed(args, timeout=None):
    """Run args; return (CompletedProcess, wall s, child CPU s (user + sys))."""
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    return r, wall, cpu


def load_params(folder):
    with open(os.path.join(folder, "parameters.json")) as f:
        return json.load(f)


def route_summary(p):
    """Route, k-hat, rounds and times of a cmc parameters.json (missing keys: None)."""
    pr = p.get("posterior_route") or {}
    ic = pr.get("importance_check") or {}
    rounds = ic.get("rounds")
    if rounds is None:
        rounds = pr.get("rounds")
    if isinstance(rounds, list):
        rounds = len(rounds)
    return {"route": pr.get("route"), "khat": ic.get("khat"), "rounds": rounds,
            "note": pr.get("note"), "quality": (p.get("quality") or {}).get("overall"),
            "status": p.get("status"), "timing_s": p.get("timing_s")}


def draws_summary(results_h5, names):
    """Per published parameter: mean, sd, 5 %/95 % quantiles of results.h5's /cmc/draws."""
    import h5py
    with h5py.File(results_h5, "r") as f:
        d = f["cmc/draws"][()]
        cols = [x.decode() if isinstance(x, bytes) else str(x)
                for x in f["cmc"].attrs.get("parameter_names", [])] if "cmc" in f else []
    out = {}
    for i, n in enumerate(names):
        j = cols.index(n) if n in cols else i
        x = d[:, j]
        out[n] = {"mean": float(np.mean(x)), "sd": float(np.std(x, ddof=1)),
                  "q05": float(np.quantile(x, 0.05)), "q95": float(np.quantile(x, 0.95))}
    return out, d.shape[0]


def git_commit():
    r = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                       text=True)
    return r.stdout.strip()
