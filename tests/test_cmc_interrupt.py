#!/usr/bin/env python3
"""The interruption matrix of `xpcsfit cmc` (issue 22, adr/0038): a real SIGINT or SIGTERM
(alternating) at moments spread over a run of 4 shards x 2 chains: while the sampling
starts, during warmup, during sampling, between the two chains of a shard (one thread: a
chain done, the other stopped; the moment that stored zeros for the stopped chain), right
after a shard was saved, in the last shard, during the self-check, and while results.h5
and the report are written; and once an interrupted --resume. The moments are found from
the run's own -vv lines on stderr (a phase line appears, then the signal, after a
fraction of the reference run's sampling time where it falls inside sampling), and from
the documented test aid XPCSFIT_TEST_PAUSE for the writing phases (docs/outputs.md).

After each: exit 130 (SIGINT) or 143 (SIGTERM), the folder marked INCOMPLETE and no
parameters.json, every stored shard whole (each chain's status byte says completed or
failed); then `cmc --resume` gives exactly the reference's bytes: parameters.json without
its timings, and every dataset of results.h5 (as tests/kill_runs.py compares). The
reference runs with 2 threads, the interrupted runs with 1 or 2."""
import os
import shutil
import signal
import subprocess
import sys
import time

from small_configs import static_template
from same_result import same_result
from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cmc_interrupt")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

SHARDS, CHAINS = 4, 2
# longer chains than the template's, so that sampling lasts long enough to aim inside it
CONFIG = static_template(60, 11, SHARDS).replace("num_warmup: 100, num_samples: 100",
                                                 "num_warmup: 250, num_samples: 250")
REASON = 160  # xf_shard_draws.reason
# The held moments (XPCSFIT_TEST_PAUSE) last an hour, ended by the signal; the timed ones
# (a fraction of the reference's sampling after a progress line) are retried, sooner.
TRIES = 4


def cmc_args(cfg, nlsq, out, threads, *more):
    return ["cmc", "--config", cfg, "--nlsq", nlsq, "--out", out, "--threads", str(threads),
            "--no-plots", "-vv", *more]


def sampling_time(stderr):
    for line in stderr.splitlines():
        if "timing: sampling" in line:
            return float(line.split("timing: sampling")[1].split()[0])
    return None


def interrupt(args, trigger, delay, sig, pause=None):
    """Run, wait for a stderr line containing trigger, sleep delay, send sig; return the
    exit code, stderr, and whether the signal was sent before the process ended."""
    env = dict(os.environ)
    if pause:
        env["XPCSFIT_TEST_PAUSE"] = pause
    p = subprocess.Popen([XF, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, env=env)
    lines, sent = [], False
    for line in p.stderr:
        lines.append(line)
        if not sent and trigger in line:
            time.sleep(delay)
            p.send_signal(sig)
            sent = True
    return p.wait(), "".join(lines), sent


def stored_shards(c, what):
    """The shard files; each must be whole: its chains' status bytes (store.c, XFSHARD2:
    magic, hash, 4 counts, evals, warmup divergences, σ scale, noise, reason, step sizes,
    statuses) all completed (1) or failed (2)."""
    d = os.path.join(c, "shards")
    names = sorted(n for n in os.listdir(d) if n.endswith(".bin")) if os.path.isdir(d) else []
    for n in names:
        with open(os.path.join(d, n), "rb") as f:
            head = f.read(8 + 8 + 16 + 8 + 4 + 8 + 8 + REASON + 8 * CHAINS + CHAINS)
        chains = int.from_bytes(head[16:20], "little")
        status = head[-CHAINS:]
        check(head[:8] == b"XFSHARD2" and chains == CHAINS and all(s in (1, 2) for s in status),
              f"{what}: {n} is not a whole shard (statuses {list(status)})")
    return len(names)


def main():
    t_start = time.time()
    cfg = os.path.join(TMP, "c.yaml")
    data = os.path.join(TMP, "s.h5")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=data))
    r = subprocess.run([XF, "simulate", "--config", cfg, "--phi", "0,45,90,135", "--out", data,
                        "--seed", "5"], capture_output=True, text=True)
    check(r.returncode == 0, f"simulate: {r.stderr}")
    r = subprocess.run([XF, "nlsq", "--config", cfg, "--out", os.path.join(TMP, "n"),
                        "--threads", "2"], capture_output=True, text=True)
    check(r.returncode == 0, f"nlsq: {r.stderr[-300:]}")
    nlsq = os.path.join(TMP, "n", "nlsq")

    # the references: 2 threads (compared against) and 1 (its sampling time, and the
    # same bytes for any thread count)
    ref_out = os.path.join(TMP, "ref")
    r = subprocess.run([XF, *cmc_args(cfg, nlsq, ref_out, 2)], capture_output=True, text=True)
    ref_rc = r.returncode
    check(ref_rc in (0, 1) and sampling_time(r.stderr), f"reference: {r.stderr[-300:]}")
    t2 = sampling_time(r.stderr) or 1.0
    ref = os.path.join(ref_out, "cmc")
    r = subprocess.run([XF, *cmc_args(cfg, nlsq, os.path.join(TMP, "ref1"), 1)],
                       capture_output=True, text=True)
    same_result(ref, os.path.join(TMP, "ref1", "cmc"), "1 thread against 2")
    print(f"reference: sampling {t2:.2f} s on 2 threads, {sampling_time(r.stderr)} s on 1")

    # the first progress line: the chains start now; one shard on one thread is chain 0,
    # then chain 1, on two threads its chains side by side
    start = "cmc shards 0/"
    held = "test pause in "
    # (name, threads, trigger line, delay after it, XPCSFIT_TEST_PAUSE). The pauses of
    # cmc_chain_<shard>_<chain> hold that chain's start (run.c): the signal lands with the
    # chains before it finished and that one stopping at its first warmup step
    moments = [
        ("sampling starts", 2, held + "sample", 0.0, "sample:3600"),
        ("warmup of shard 0", 2, held + "cmc_chain_0_0", 0.0, "cmc_chain_0_0:3600"),
        ("sampling", 2, start, 0.5 * t2 / SHARDS, None),
        ("between the chains of shard 1", 1, held + "cmc_chain_1_1", 0.0, "cmc_chain_1_1:3600"),
        ("between shards 1 and 2", 1, held + "cmc_chain_2_0", 0.0, "cmc_chain_2_0:3600"),
        ("after a shard was saved", 2, "cmc shards 2/", 0.0, None),
        ("last shard", 2, "cmc shards 3/", 0.5 * t2 / SHARDS, None),
        ("self-check", 2, "cmc: self-check", 0.0, None),
        ("results.h5", 2, held + "results.h5", 0.0, "results.h5:3600"),
        ("report", 1, held + "report", 0.0, "report:3600"),
    ]
    # where the moment fixes it: the whole shards stored (one thread: in task order)
    expect = {"sampling starts": 0, "between the chains of shard 1": 1,
              "between shards 1 and 2": 2}
    kept = []
    for k, (name, threads, trigger, delay, pause) in enumerate(moments):
        sig, code = (signal.SIGINT, 130) if k % 2 == 0 else (signal.SIGTERM, 143)
        what = f"{name} ({signal.Signals(sig).name}, {threads} thread(s))"
        out = os.path.join(TMP, f"m{k}")
        c = os.path.join(out, "cmc")
        # a moment timed from the reference that the run outlived no more (the machine's
        # load changed) is redone with half the delay, the last time with none: the
        # signal then lands right at its trigger line, before the run's end
        for attempt in range(TRIES):
            shutil.rmtree(out, ignore_errors=True)
            scale = 0.5 ** attempt if attempt < TRIES - 1 else 0.0
            rc, err, sent = interrupt(cmc_args(cfg, nlsq, out, threads), trigger,
                                      scale * delay, sig, pause)
            if delay == 0 or rc == code:
                break
        check(sent, f"{what}: the trigger line never came: {err[-300:]}")
        check(rc == code, f"{what}: exit {rc}, not {code}: {err[-300:]}")
        check("interrupted" in err, f"{what}: no 'interrupted' line: {err[-300:]}")
        check(os.path.exists(os.path.join(c, "INCOMPLETE")), f"{what}: no INCOMPLETE marker")
        check(not os.path.exists(os.path.join(c, "parameters.json")),
              f"{what}: parameters.json of an interrupted run")
        n = stored_shards(c, what)
        check(expect.get(name, n) == n, f"{what}: {n} shards stored, not {expect.get(name)}")
        if name == "between shards 1 and 2":
            # interrupt the --resume too, between the chains of the last shard
            rc, err, sent = interrupt(cmc_args(cfg, nlsq, out, 1, "--resume"),
                                      held + "cmc_chain_3_1", 0.0, sig, "cmc_chain_3_1:3600")
            check(sent and rc == code, f"{what}, its --resume: exit {rc}: {err[-300:]}")
            m = stored_shards(c, what + ", its --resume")
            check(m == SHARDS - 1, f"{what}, its --resume: {m} shards stored, not 3")
        r = subprocess.run([XF, *cmc_args(cfg, nlsq, out, 2, "--resume")], capture_output=True,
                           text=True)
        check(r.returncode == ref_rc, f"{what}: --resume exit {r.returncode}: {r.stderr[-300:]}")
        if r.returncode == ref_rc:
            same_result(ref, c, f"{what}, then --resume")
        said = [l for l in err.splitlines() if "error:" in l][-1:] or ["(no error line)"]
        kept.append(f"{name}: {n} shards stored; {said[0].split('error: ')[-1][:60]}")
    print("the interrupted runs:\n  " + "\n  ".join(kept))
    print(f"{len(moments)} interruptions in {time.time() - t_start:.1f} s")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
