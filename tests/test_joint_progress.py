#!/usr/bin/env python3
"""test_joint_progress.py — a joint fit over rings says what it fits and that it is
working (issue 33 item 8, adr/0073): the start line names the free parameters of the
joint problem, and the iteration line of a one-ring nlsq (util/verbosity.h: the first at
once, then at most every few seconds without a terminal) comes during the joint fit,
before the rings' own fits; -q silences it. (A 1 000-ring joint fit used to run 240 s
without a line.) The cap on the joint problem's size is in the bad-input corpus
(rings_joint_too_large*). Lines are checked in their order, never against a clock."""
import os
import re
import shutil

from aps_fixtures import check, run, run_tests, tmp_dir

T = os.path.join(tmp_dir(), "joint_progress")
RINGS = [0.003, 0.0054, 0.008, 0.01]
PHI = [0.0, 90.0]


def cfg(name):
    path = os.path.join(T, name + ".yaml")
    with open(path, "w") as f:
        f.write("analysis_mode: static\nanalyzer_parameters:\n  dt: 0.001\n"
                "  end_frame: 30\n  scattering: {wavevector_q: all}\n"
                "initial_parameters: {parameter_names: [D0, alpha, D_offset], "
                "values: [3000, -1.2, 0]}\n")
    return path


DATA = os.path.join(T, "rings.h5")


def setup():
    shutil.rmtree(T, ignore_errors=True)
    os.makedirs(T)
    rc, _, err = run(["simulate", "--config", cfg("sim"), "--phi",
                      ",".join("%g" % p for p in PHI), "--q",
                      ",".join("%g" % q for q in RINGS), "--out", DATA, "--force",
                      "--noise", "0.01", "--seed", "3"])
    check(rc == 0, "simulate: %s" % err)


def test_progress_during_joint_fit():
    rc, _, err = run(["nlsq", "--joint", "--config", cfg("fit"), "--data", DATA, "--out",
                      os.path.join(T, "out"), "--no-plots"])
    check(rc == 0, "nlsq --joint: %d %s" % (rc, err[-500:]))
    lines = err.splitlines()
    start = [k for k, l in enumerate(lines) if "nlsq joint fit of 4 rings" in l]
    # 3 physical + contrast and offset of each of the 8 angle slots
    check(start and "19 free parameters" in lines[start[0]],
          "the start line names the free parameters: %s" % (lines[start[0]] if start else err))
    own = [k for k, l in enumerate(lines) if "joint: fitting ring" in l]
    iters = [k for k, l in enumerate(lines)
             if re.search(r"xpcsfit: nlsq \S.* iteration \d+ chi2 ", l)]
    check(start and own and any(start[0] < k < own[0] for k in iters),
          "an iteration line during the joint fit, before the rings' own fits: %s"
          % err[-1500:])
    # the first comes at once: the start screening's first run (its lines are shown for
    # a joint fit, whose screening takes minutes on hundreds of rings)
    check(start and iters and "screen" in lines[min(k for k in iters if k > start[0])],
          "the first progress line is the screening's: %s" % err[-1500:])


def test_quiet():
    rc, _, err = run(["nlsq", "--joint", "-q", "--config", cfg("fit"), "--data", DATA,
                      "--out", os.path.join(T, "out_q"), "--no-plots"])
    check(rc == 0 and "iteration" not in err, "-q: no progress line: %s" % err[-300:])


if __name__ == "__main__":
    setup()
    raise SystemExit(run_tests([test_progress_during_joint_fit, test_quiet]))
