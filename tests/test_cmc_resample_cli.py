#!/usr/bin/env python3
"""A one-shard posterior whose draws diverged is sampled again by every chain at the raised
target acceptance (adr/0090). A small static file (1 angle x 50 frames, route nuts, 4 x
(200 + 300)) at target_accept_prob 0.6 diverges; it must:
- say so on run.log ("N of 1200 draws diverged at target acceptance 0.6: every chain
  samples again at 0.8");
- keep exactly the draws of a run configured at 0.8 (which does not diverge): the draws
  kept do not depend on which chains diverged — every chain samples again from its start;
- count the passes of both runs in gradient_evaluations;
- give the same result when killed (SIGTERM) at the start of a chain's second sampling
  and resumed (its first draws are not stored: the resumed run decides the same).
A few seconds of CPU."""
import os
import shutil
import signal
import subprocess
import sys

import h5py
import numpy as np

from same_result import params, same_result
from small_configs import STATIC_FREE
from tally import check, summary
from waits import RUN_GUARD_S, read_until

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cmc_resample_cli")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

# the small static replicates' config; route nuts and short chains by --set
MORE = ["--set", "optimization.cmc.route=nuts",
        "--set", "optimization.cmc.per_shard_mcmc.num_warmup=200",
        "--set", "optimization.cmc.per_shard_mcmc.num_samples=300"]


def run(*args, env=None):
    return subprocess.run([XF, *args], capture_output=True, text=True, timeout=RUN_GUARD_S,
                          env=env)


def cmc(cfg, nlsq, out, target, *more):
    return ["cmc", "--config", cfg, "--nlsq", nlsq, "--out", out, "--no-plots", *MORE, "--set",
            f"optimization.cmc.per_shard_mcmc.target_accept_prob={target}", *more]


def draws(out):
    with h5py.File(os.path.join(out, "cmc", "results.h5"), "r") as h:
        return h["/cmc/draws"][()]


def log(out):
    with open(os.path.join(out, "cmc", "run.log")) as f:
        return f.read()


def main():
    data, cfg = os.path.join(TMP, "d.h5"), os.path.join(TMP, "c.yaml")
    with open(cfg, "w") as f:
        f.write(STATIC_FREE.format(data=data, frames=50, d0=1000, alpha=-0.5, d_offset=10))
    r = run("simulate", "--config", cfg, "--phi", "0", "--out", data, "--noise", "0.002",
            "--seed", "5", "--frames", "50", "--force", "-q")
    check(r.returncode == 0, f"simulate: {r.stderr[-300:]}")
    nl = os.path.join(TMP, "nl")
    r = run("nlsq", "--config", cfg, "--out", nl, "--no-plots", "-q")
    check(r.returncode == 0, f"nlsq: {r.stderr[-300:]}")
    nl = os.path.join(nl, "nlsq")

    direct = os.path.join(TMP, "direct")
    r = run(*cmc(cfg, nl, direct, 0.8, "--threads", "2"))
    check(r.returncode == 0, f"cmc at 0.8: exit {r.returncode}: {r.stderr[-300:]}")
    pd = params(os.path.join(direct, "cmc"))
    check("samples again" not in log(direct), "a run at 0.8 that does not diverge: once")
    check(pd["shard_diagnostics"][0]["divergence_rate"] == 0,
          f"the run at 0.8 has no divergence (the comparison below needs it): "
          f"{pd['shard_diagnostics'][0]['divergence_rate']}")

    again = os.path.join(TMP, "again")
    r = run(*cmc(cfg, nl, again, 0.6, "--threads", "2"))
    check(r.returncode == 0, f"cmc at 0.6: exit {r.returncode}: {r.stderr[-300:]}")
    lines = [ln for ln in log(again).splitlines() if "samples again" in ln]
    print("\n".join(lines))
    check(len(lines) == 1 and "of 1200 draws diverged at target acceptance 0.6: every chain "
          "samples again at 0.8 (adr/0090)" in lines[0], f"run.log: {lines}")
    pa = params(os.path.join(again, "cmc"))
    check(np.array_equal(draws(again), draws(direct)),
          "the draws kept are those of a run at 0.8, byte for byte")
    ga, gd = pa["sampler"]["gradient_evaluations"], pd["sampler"]["gradient_evaluations"]
    print(f"gradient evaluations: {ga} (0.6, then 0.8) against {gd} (0.8)")
    check(ga > gd, "gradient_evaluations counts both runs")
    check(pa["quality"]["overall"] == pd["quality"]["overall"] and
          pa["shard_diagnostics"][0]["divergence_rate"] == 0,
          f"graded as the run at 0.8: {pa['quality']}")

    # killed as a chain starts its second sampling, then resumed: the same result
    killed = os.path.join(TMP, "killed")
    env = dict(os.environ, XPCSFIT_TEST_PAUSE="cmc_chain_0_1_again:3600")
    p = subprocess.Popen([XF, *cmc(cfg, nl, killed, 0.6, "--threads", "1", "-vv")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    found, _ = read_until(p.stderr, "test pause in cmc_chain_0_1_again")
    check(found, "the second sampling of chain 1 reached")
    p.send_signal(signal.SIGTERM)
    p.stderr.read()
    rc = p.wait(timeout=RUN_GUARD_S)
    check(rc == 143, f"SIGTERM: exit {rc}")
    shards = os.path.join(killed, "cmc", "shards")
    check(not os.path.isdir(shards) or not os.listdir(shards) or all(
        not n.startswith("shard_") for n in os.listdir(shards)),
        f"the first draws not stored: {os.listdir(shards) if os.path.isdir(shards) else []}")
    r = run(*cmc(cfg, nl, killed, 0.6, "--threads", "2", "--resume"))
    check(r.returncode == 0, f"--resume: exit {r.returncode}: {r.stderr[-300:]}")
    same_result(os.path.join(again, "cmc"), os.path.join(killed, "cmc"),
                "killed in the second sampling and resumed")
    return summary()


sys.exit(main())
