#!/usr/bin/env python3
"""Kill tests (label slow; issue 9): SIGKILL at random moments of `nlsq` and of `cmc`
(XF_KILLS of each, default 24). After every kill the result folder either carries its
INCOMPLETE marker or holds the whole result, equal to an uninterrupted run's; never a
folder that looks complete and is not. Then a rerun (nlsq --force, cmc --resume) gives the
same bytes as the uninterrupted run: parameters.json without its timings, and every
dataset of results.h5."""
import os
import random
import shutil
import signal
import subprocess
import sys
import time

from small_configs import static_template
from same_result import same_result
from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_kill_runs")
KILLS = int(os.environ.get("XF_KILLS", "24"))
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

CONFIG = static_template(60, 11, 4)


def timed(args):
    t0 = time.time()
    r = subprocess.run([XF, *args], capture_output=True, text=True)
    return r, time.time() - t0


def kill_at(args, delay):
    p = subprocess.Popen([XF, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    return p.wait()


def same_whole_result(a, b, what):
    """The same result, and b's run.log closed as complete."""
    same_result(a, b, what)
    with open(os.path.join(b, "run.log")) as f:
        check(f.read().strip().splitlines()[-1].startswith("complete"), f"{what}: run.log")


def after_kill(d, ref, what):
    """The invariant: marked incomplete, or absent, or whole and equal to the reference."""
    if not os.path.isdir(d) or os.path.exists(os.path.join(d, "INCOMPLETE")):
        return "incomplete"
    if not os.path.exists(os.path.join(d, "parameters.json")):
        check(not os.path.exists(os.path.join(d, "run.log")), f"{what}: run.log without results")
        return "empty"
    same_whole_result(ref, d, what + " (folder without INCOMPLETE)")
    return "complete"


def main():
    rng = random.Random(int(os.environ.get("XF_KILL_SEED", "20261124")))
    cfg = os.path.join(TMP, "c.yaml")
    data = os.path.join(TMP, "s.h5")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=data))
    r = subprocess.run([XF, "simulate", "--config", cfg, "--phi", "0,45,90,135", "--out", data,
                        "--seed", "5"], capture_output=True, text=True)
    check(r.returncode == 0, f"simulate: {r.stderr}")

    # nlsq: the reference, then kills at random moments of a --force rerun
    r, t_nlsq = timed(["nlsq", "--config", cfg, "--out", os.path.join(TMP, "ref"),
                       "--threads", "2"])
    check(r.returncode == 0, f"reference nlsq: {r.stderr[-300:]}")
    ref = os.path.join(TMP, "ref", "nlsq")
    out = os.path.join(TMP, "killed")
    d = os.path.join(out, "nlsq")
    states = {}
    for k in range(KILLS):
        delay = rng.uniform(0.0, 1.5 * t_nlsq)
        kill_at(["nlsq", "--config", cfg, "--out", out, "--threads", "2", "--force"], delay)
        s = after_kill(d, ref, f"nlsq kill {k} at {delay:.3f} s")
        states[s] = states.get(s, 0) + 1
    print(f"nlsq: {KILLS} kills over {t_nlsq:.2f} s runs: {states}")
    r = subprocess.run([XF, "nlsq", "--config", cfg, "--out", out, "--threads", "2", "--force"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"nlsq rerun --force: {r.stderr[-300:]}")
    same_whole_result(ref, d, "nlsq rerun after kills")

    # cmc: the reference, then kills of --force and --resume runs; a last --resume run
    # goes to its end
    cref_out = os.path.join(TMP, "cref")
    r, t_cmc = timed(["cmc", "--config", cfg, "--nlsq", ref, "--out", cref_out, "--threads",
                      "2", "--no-plots"])
    check(r.returncode in (0, 1), f"reference cmc: {r.stderr[-300:]}")
    cref = os.path.join(cref_out, "cmc")
    out = os.path.join(TMP, "ckilled")
    c = os.path.join(out, "cmc")
    states = {}
    for k in range(KILLS):
        delay = rng.uniform(0.0, 1.3 * t_cmc)
        # every other run starts afresh (--force resamples every shard), so that kills
        # land during sampling and not only in runs that resume nearly everything
        mode = "--force" if k % 2 == 0 else "--resume"
        kill_at(["cmc", "--config", cfg, "--nlsq", ref, "--out", out, "--threads", "2",
                 "--no-plots", mode], delay)
        s = after_kill(c, cref, f"cmc kill {k} at {delay:.3f} s")
        states[s] = states.get(s, 0) + 1
    print(f"cmc: {KILLS} kills over {t_cmc:.2f} s runs: {states}")
    r = subprocess.run([XF, "cmc", "--config", cfg, "--nlsq", ref, "--out", out, "--threads",
                        "2", "--no-plots", "--resume"], capture_output=True, text=True)
    check(r.returncode in (0, 1), f"cmc --resume: {r.stderr[-300:]}")
    same_whole_result(cref, c, "cmc --resume after kills")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
