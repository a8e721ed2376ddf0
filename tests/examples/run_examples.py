#!/usr/bin/env python3
"""run_examples.py — every config in configs/ run as a user runs it: `xpcsfit fit` (NLSQ,
then the posterior) at the shipped defaults, plots included (issue 22, "the bundled
examples work"). Label slow (`make test-slow`): a few minutes per config.

Data: the config's own file when it is bundled (chx_static: the real CHX matrix); the
demo's simulated sample for demo_*.yaml (as scripts/demo.sh writes it); for the two
homodyne-style templates, whose files are not bundled, a simulated sample at the
config's own q and dt, with truths inside its bounds (sizes below: the posterior's cost
grows with the points, see docs/performance.md).

Each run must end `converged`, graded without a prior reason (adr/0040) and without a
divergence reason (adr/0041); the wall time is printed (a number, not a check)."""
import glob
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from aps_fixtures import binary, check, run, run_tests, tmp_dir  # noqa: E402

SRC = os.environ["XF_SOURCE_DIR"]
T = tmp_dir()
# configs whose data file is not bundled: how to simulate a sample for them
SIMULATED = {
    # one angle, 200 frames at dt 0.1 s: 19 701 points
    "static_example.yaml": ["--phi", "0", "--frames", "200", "--initial", "D0=3000",
                            "--initial", "alpha=-1.2", "--initial", "D_offset=0"],
    # six angles inside its phi ranges, 120 frames at dt 1 ms: 42 126 points; the demo's
    # truths (a sample every parameter identifies; a weakly identified one, e.g. D0 2e4,
    # alpha -0.3, D_offset 100 on 100 frames, is graded marginal for its divergences and
    # R-hat: the honest answer, not this test's subject)
    "laminar_flow_example.yaml": ["--phi", "-8,-2,3,8,87,93", "--frames", "120",
                                  "--initial", "D0=1200", "--initial", "alpha=-1.2",
                                  "--initial", "D_offset=10", "--initial",
                                  "gamma_dot_0=0.012", "--initial", "beta=-0.25",
                                  "--initial", "gamma_dot_offset=0.0004",
                                  "--initial", "phi_0=2.0"],
}
DEMO = ["--phi", "-60,-5,0,45,90", "--noise", "0.002", "--seed", "1", "--lzf"]


def data_for(config):
    """The data file to fit (None: the config's own, which is bundled)."""
    name = os.path.basename(config)
    if name.startswith("demo_"):
        path = os.path.join(T, "laminar_demo.h5")
        if not os.path.exists(path):
            rc, _, err = run(["simulate", "--config",
                              os.path.join(SRC, "configs", "demo_laminar.yaml"),
                              "--out", path, *DEMO])
            check(rc == 0, "simulating the demo sample: " + err)
        return path
    if name in SIMULATED:
        path = os.path.join(T, name.replace(".yaml", ".h5"))
        rc, _, err = run(["simulate", "--config", config, "--out", path, "--force", "--noise", "0.002",
                          "--seed", "3", *SIMULATED[name]])
        check(rc == 0, "simulating data for %s: %s" % (name, err))
        return path
    return None


def fit_one(config):
    name = os.path.basename(config)
    out = os.path.join(T, name.replace(".yaml", ""))
    args = ["fit", "--config", config, "--out", out, "--force"]
    data = data_for(config)
    if data:
        args += ["--data", data]
    t0 = time.time()
    # no wall-clock limit of our own: on a loaded machine a fit takes several times its
    # idle time (ctest's TIMEOUT bounds the whole test)
    p = subprocess.run([binary(), *args], capture_output=True, text=True)
    rc, err = p.returncode, p.stderr
    wall = time.time() - t0
    path = os.path.join(out, "cmc", "parameters.json")
    check(os.path.exists(path), "%s: no posterior (exit %d): %s" % (name, rc, err[-2000:]))
    p = json.load(open(path))
    reasons = p["quality"]["reasons"]
    print("%-28s fit %.0f s wall, exit %d, %s, quality %s, %d shard(s), %s divergences" %
          (name, wall, rc, p["status"], p["quality"]["overall"], p["shards"]["planned"],
           p["shards"].get("divergences")))
    for r in reasons:
        print("    - " + r)
    check(rc == 0 and p["status"] == "converged", "%s: status %s (exit %d)" %
          (name, p["status"], rc))
    check(not any("prior" in r for r in reasons), "%s: a prior reason: %s" % (name, reasons))
    check(not any("diverged" in r for r in reasons),
          "%s: a divergence reason: %s" % (name, reasons))


def main():
    os.chdir(SRC)  # file_path in the configs is relative to the repository root
    configs = sorted(glob.glob(os.path.join(SRC, "configs", "*.yaml")))
    check(len(configs) >= 6, "configs/ has %d configs" % len(configs))
    tests = []
    for c in configs:
        def t(c=c):
            fit_one(c)
        t.__name__ = "fit " + os.path.basename(c)
        tests.append(t)
    return run_tests(tests)


if __name__ == "__main__":
    sys.exit(main())
