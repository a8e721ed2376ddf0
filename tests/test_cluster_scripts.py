#!/usr/bin/env python3
"""The cluster scripts of mpi/ (docs/cluster.md, adr/0025), without a scheduler: `bash -n`
(and shellcheck where installed) on every script; the helper blocks that every job script
carries are identical; dry runs (XPCSFIT_DRY_RUN=1) under faked SLURM and PBS environments
print the launch line we expect (ranks, --threads, --task/--tasks, paths with spaces and
quotes that a shell reads back unchanged); oversubscription, a missing binary/config/data/
list, a bad method or array index are refused with one line and exit 2; a real run through
a fake srun/mpirun/sbatch/qsub records the command and exit code in the log, propagates the
exit code, passes SIGTERM on (143) and submits the summary job after the array.
Issue 25 (adr/0058): through a launcher that exits 1 after relaying the signal (as Open
MPI 4.1's mpirun does) the job still ends 143/130 and says "interrupted", also when only
the launcher was signalled (the program's XPCSFIT_INTERRUPT_FILE record); a stepped array
and a rerun of some of its tasks run the right slices (XPCSFIT_ARRAY_STEP); the summary
step fits at most one task's share (--max-runs, XPCSFIT_SUMMARY_RUNS), told the array's
task count by submit-batch.sh."""
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time

SRC = os.environ.get("XF_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
MPI = os.path.join(SRC, "mpi")
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cluster_scripts")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

SLURM_MPI = os.path.join(MPI, "slurm", "xpcsfit-mpi.sbatch")
SLURM_ARRAY = os.path.join(MPI, "slurm", "xpcsfit-batch-array.sbatch")
SLURM_SUBMIT = os.path.join(MPI, "slurm", "submit-batch.sh")
PBS_MPI = os.path.join(MPI, "pbs", "xpcsfit-mpi.pbs")
PBS_ARRAY = os.path.join(MPI, "pbs", "xpcsfit-batch-array.pbs")
PBS_SUBMIT = os.path.join(MPI, "pbs", "submit-batch.sh")
JOB_SCRIPTS = [SLURM_MPI, SLURM_ARRAY, PBS_MPI, PBS_ARRAY]
ALL_SCRIPTS = JOB_SCRIPTS + [SLURM_SUBMIT, PBS_SUBMIT]

from tally import check, summary

# A test run in the background (`make test &`, nohup) inherits SIGINT ignored, and a
# signal ignored at a shell's start cannot be trapped: the job script would never see the
# SIGINT sent to it. Its children get the default back from here (exec keeps only SIG_IGN).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def write_exec(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


# Paths with a space and a quote: what a beamline folder can look like.
BIN = os.path.join(TMP, "my bin")
DATA_DIR = os.path.join(TMP, "run 42")
FAKE = os.path.join(TMP, "fake")  # fake srun / sbatch / qsub, first on PATH
for d in (BIN, DATA_DIR, FAKE):
    os.makedirs(d)
CONFIG = os.path.join(DATA_DIR, "sample's.yaml")
DATA = os.path.join(DATA_DIR, "a b.h5")
LIST = os.path.join(DATA_DIR, "files list.txt")
OUT = os.path.join(TMP, "out dir")
NODEFILE = os.path.join(DATA_DIR, "node file")
for p in (CONFIG, DATA):
    open(p, "w").close()
with open(LIST, "w") as f:
    f.write(DATA + "\n")
with open(NODEFILE, "w") as f:
    f.write("nodeA\n" * 4 + "nodeB\n" * 4)

# A stand-in for xpcsfit / xpcsfit-mpi: records argv and OMP_NUM_THREADS, sleeps when asked
# (and exits 143 on SIGTERM, 130 on SIGINT, as xpcsfit does), exits with STUB_RC. As
# xpcsfit, it sets its handlers before anything else; "$STUB_RECORD.ready", written last
# once the sleep runs, is the state a signalling check waits for (never a number of
# seconds: on a busy machine the stub may not have run a line yet).
STUB = """#!/bin/bash
stop() {
	# $! is set as soon as the sleep is forked: a signal before any assignment finds it
	[ -z "${!:-}" ] || kill "$!"
	[ -z "${XPCSFIT_INTERRUPT_FILE:-}" ] ||
		echo "interrupted by $1 during fit" > "$XPCSFIT_INTERRUPT_FILE"
	exit "$2"
}
if [ -n "${STUB_SLEEP:-}" ]; then
	trap 'stop SIGTERM 143' TERM
	trap 'stop SIGINT 130' INT
fi
printf '%s\\n' "$@" > "$STUB_RECORD.args"
echo "$OMP_NUM_THREADS" > "$STUB_RECORD.omp"
echo "${XPCSFIT_INTERRUPT_FILE:-}" > "$STUB_RECORD.interrupt_file"
if [ -n "${STUB_SLEEP:-}" ]; then
	sleep "$STUB_SLEEP" </dev/null >/dev/null 2>&1 &
	: > "$STUB_RECORD.ready"
	wait
fi
exit "${STUB_RC:-0}"
"""
write_exec(os.path.join(BIN, "xpcsfit"), STUB)
write_exec(os.path.join(BIN, "xpcsfit-mpi"), STUB)
# srun/mpirun: record their own options, drop them, run the program (one rank is enough).
# FAKE_RELAY=1: as Open MPI 4.1's mpirun does, SIGTERM or SIGINT is passed to the program
# as SIGTERM and the launcher then exits 1, whatever the program returned. Its handler is
# set before the program starts (a signal before the program's pid is known is relayed
# once it is), so the program's ready record says the launcher relays too.
LAUNCHER = """#!/bin/bash
printf '%s\\n' "$@" > "$STUB_RECORD.launcher"
while [ $# -gt 0 ]; do
	case $1 in
	-np | --hostfile | -f | -ppn | --map-by | --bind-to | -x) shift 2 ;;
	-*) shift ;;
	*) break ;;
	esac
done
[ "${FAKE_RELAY:-0}" = 1 ] || exec "$@"
child='' got=0
relay() {
	got=1
	[ -n "$child" ] || return 0
	kill -TERM "$child"
	wait "$child"
	exit 1
}
trap relay TERM INT
echo $$ > "$STUB_RECORD.launcher_pid"
"$@" & child=$!
[ "$got" = 0 ] || relay
wait "$child"
"""
write_exec(os.path.join(FAKE, "srun"), LAUNCHER)
write_exec(os.path.join(FAKE, "mpirun"), LAUNCHER)
# sbatch/qsub: append their argv (one call a line, NUL-free) and print a job id.
SUBMIT = """#!/bin/bash
printf '%s\\x1f' "$@" >> "$STUB_RECORD.{name}"
printf '\\n' >> "$STUB_RECORD.{name}"
echo "{jobid}"
"""
write_exec(os.path.join(FAKE, "sbatch"), SUBMIT.format(name="sbatch", jobid="4242;cluster"))
write_exec(os.path.join(FAKE, "qsub"), SUBMIT.format(name="qsub", jobid="77[].pbs01"))

# A guard against a hang, never a measure: on a busy 2-core machine a job that is stopped
# by its signal ends in well under a second, one that is not would run STUB_SLEEP.
GUARD_S = 300
STUB_SLEEP = "3600"

KNOBS = {"XPCSFIT_BIN_DIR": BIN, "XPCSFIT_CONFIG": CONFIG, "XPCSFIT_DATA": DATA,
         "XPCSFIT_OUT": OUT, "XPCSFIT_LIST": LIST, "XPCSFIT_MPI_FLAVOR": "openmpi"}


def clean_env():
    """The test's environment less anything a real scheduler may have set around ctest."""
    env = {k: v for k, v in os.environ.items()
           if not re.match(r"(SLURM_|PBS_|XPCSFIT_|OMP_NUM_THREADS$|NCPUS$)", k)}
    env["PATH"] = FAKE + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    return env


def run(script, env=None, dry=True, args=(), knobs=True):
    e = clean_env()
    if knobs:
        e.update(KNOBS)
    if dry:
        e["XPCSFIT_DRY_RUN"] = "1"
    e["STUB_RECORD"] = os.path.join(TMP, "record")
    e.update(env or {})
    return subprocess.run(["bash", script, *args], capture_output=True, text=True, env=e,
                          cwd=TMP, timeout=GUARD_S)


def dry_line(script, env, what):
    """The one line a dry run prints, split as a shell would, or None."""
    r = run(script, env)
    check(r.returncode == 0, f"{what}: dry run exit {r.returncode}: {r.stderr}")
    lines = r.stdout.splitlines()
    check(len(lines) == 1, f"{what}: one launch line expected, got {r.stdout!r}")
    return shlex.split(lines[0]) if lines else None


def refused(script, env, words, what, knobs=True):
    r = run(script, env, knobs=knobs)
    err = r.stderr.strip()
    check(r.returncode == 2, f"{what}: exit 2 expected, got {r.returncode} ({err})")
    check(r.stdout == "", f"{what}: nothing launched/printed on stdout: {r.stdout!r}")
    check(len(err.splitlines()) == 1 and ": error: " in err,
          f"{what}: one error line expected: {err!r}")
    for w in words:
        check(w in err, f"{what}: {w!r} missing from {err!r}")


def tail(config=CONFIG, method="nlsq", threads="8"):
    return [os.path.join(BIN, "xpcsfit-mpi"), method, "--config", config, "--data", DATA,
            "--out", OUT, "--threads", threads]


def test_syntax():
    for s in ALL_SCRIPTS:
        r = subprocess.run(["bash", "-n", s], capture_output=True, text=True)
        check(r.returncode == 0, f"bash -n {s}: {r.stderr}")
        check(os.access(s, os.X_OK), f"{s} is not executable")
        with open(s) as f:
            text = f.read()
        check("set -euo pipefail" in text, f"{s}: no set -euo pipefail")
    sc = shutil.which("shellcheck")
    if sc:
        r = subprocess.run([sc, "-s", "bash", *ALL_SCRIPTS], capture_output=True, text=True)
        check(r.returncode == 0, f"shellcheck: {r.stdout[-2000:]}")
    else:
        print("skip: shellcheck not installed")


def block(path, name):
    with open(path) as f:
        text = f.read()
    m = re.search(rf"^# ---- {name}:.*?^# ---- end {name} ----$", text, re.M | re.S)
    return m.group(0) if m else None


def test_shared_blocks_identical():
    commons = [block(s, "common") for s in JOB_SCRIPTS]
    check(all(commons), "every job script carries the common block")
    check(len(set(commons)) == 1, "the common block differs between job scripts")
    summaries = [block(s, "summary") for s in (SLURM_ARRAY, PBS_ARRAY)]
    check(all(summaries) and len(set(summaries)) == 1, "the summary block differs")
    mpiruns = [block(s, "mpirun") for s in (SLURM_MPI, PBS_MPI)]
    check(all(mpiruns) and len(set(mpiruns)) == 1, "the mpirun block differs")


SLURM_2x4x8 = {"SLURM_JOB_ID": "991", "SLURM_JOB_NUM_NODES": "2", "SLURM_NTASKS": "8",
               "SLURM_NTASKS_PER_NODE": "4", "SLURM_CPUS_PER_TASK": "8",
               "SLURM_CPUS_ON_NODE": "32"}


def test_slurm_mpi():
    srun = ["srun", "--nodes=2", "--ntasks=8", "--ntasks-per-node=4", "--cpus-per-task=8",
            "--cpu-bind=cores", "--kill-on-bad-exit=1"]
    got = dry_line(SLURM_MPI, SLURM_2x4x8, "slurm mpi")
    check(got == srun + tail(), f"slurm mpi line: {got}")
    check(not os.path.exists(OUT), "a dry run creates nothing")
    # Only --ntasks given: ranks per node from SLURM_TASKS_PER_NODE ("4(x2)").
    env = dict(SLURM_2x4x8, SLURM_TASKS_PER_NODE="4(x2)")
    del env["SLURM_NTASKS_PER_NODE"]
    check(dry_line(SLURM_MPI, env, "tasks per node") == srun + tail(), "SLURM_TASKS_PER_NODE")
    # No --cpus-per-task: the node's cores shared by its ranks (32 / 4).
    env = dict(SLURM_2x4x8)
    del env["SLURM_CPUS_PER_TASK"]
    check(dry_line(SLURM_MPI, env, "no cpus-per-task") == srun + tail(), "cores / ranks")
    # Outside SLURM: one rank, OMP_NUM_THREADS threads.
    got = dry_line(SLURM_MPI, {"OMP_NUM_THREADS": "3", "XPCSFIT_METHOD": "cmc",
                               "XPCSFIT_EXTRA_ARGS": "--resume --no-plots"}, "no slurm")
    check(got == ["srun", "--nodes=1", "--ntasks=1", "--ntasks-per-node=1",
                  "--cpus-per-task=3", "--cpu-bind=cores", "--kill-on-bad-exit=1"]
          + tail(method="cmc", threads="3") + ["--resume", "--no-plots"], f"no slurm: {got}")
    # mpirun under SLURM: Open MPI and Hydra spellings.
    got = dry_line(SLURM_MPI, dict(SLURM_2x4x8, XPCSFIT_LAUNCHER="mpirun",
                                   XPCSFIT_METHOD="fit"), "slurm mpirun openmpi")
    check(got == ["mpirun", "-np", "8", "--map-by", "ppr:4:node", "--bind-to", "none", "-x",
                  "OMP_NUM_THREADS", "-x", "XPCSFIT_INTERRUPT_FILE"] + tail(method="fit"),
          f"slurm mpirun openmpi: {got}")
    got = dry_line(SLURM_MPI, dict(SLURM_2x4x8, XPCSFIT_LAUNCHER="mpirun",
                                   XPCSFIT_MPI_FLAVOR="mpich"), "slurm mpirun mpich")
    check(got == ["mpirun", "-np", "8", "-ppn", "4"] + tail(), f"slurm mpirun mpich: {got}")

    refused(SLURM_MPI, dict(SLURM_2x4x8, SLURM_CPUS_PER_TASK="16"),
            ["oversubscribe", "4 ranks per node x 16 threads = 64 > 32"], "slurm oversubscribed")
    refused(SLURM_MPI, dict(SLURM_2x4x8, XPCSFIT_THREADS="9"), ["oversubscribe"],
            "XPCSFIT_THREADS oversubscribed")
    refused(SLURM_MPI, dict(SLURM_2x4x8, XPCSFIT_CONFIG=CONFIG + ".missing"),
            ["config not found", "XPCSFIT_CONFIG"], "slurm missing config")
    refused(SLURM_MPI, dict(SLURM_2x4x8, XPCSFIT_DATA=DATA + ".missing"),
            ["data not found"], "slurm missing data")
    refused(SLURM_MPI, dict(SLURM_2x4x8, XPCSFIT_BIN_DIR=DATA_DIR),
            ["xpcsfit-mpi not found", "XPCSFIT_BIN_DIR"], "slurm missing binary")
    refused(SLURM_MPI, dict(SLURM_2x4x8, XPCSFIT_METHOD="mcmc"), ["method"], "bad method")
    refused(SLURM_MPI, dict(SLURM_2x4x8, XPCSFIT_LAUNCHER="aprun"), ["srun or mpirun"],
            "bad launcher")
    refused(SLURM_MPI, dict(SLURM_2x4x8, SLURM_CPUS_PER_TASK="x"), ["whole number"],
            "garbage in SLURM_CPUS_PER_TASK")


def test_slurm_mpi_real_run():
    """Through the fake srun: the log, OMP_NUM_THREADS, the exit code, SIGTERM."""
    record = os.path.join(TMP, "record")
    r = run(SLURM_MPI, dict(SLURM_2x4x8, STUB_RC="1"), dry=False)
    check(r.returncode == 1, f"exit code of the fit propagated: {r.returncode} {r.stderr}")
    with open(record + ".args") as f:
        check(f.read().splitlines() == tail()[1:], "the program got the arguments")
    with open(record + ".omp") as f:
        check(f.read().strip() == "8", "OMP_NUM_THREADS exported = --threads")
    log = os.path.join(OUT, "xpcsfit-mpi-991.log")
    check(os.path.exists(log), "the out dir and the log are created")
    with open(log) as f:
        lines = f.read().splitlines()
    check(len(lines) == 3 and "2 nodes x 4 ranks x 8 threads" in lines[0],
          f"log plan: {lines}")
    check(len(lines) == 3 and shlex.split(lines[1])[0] == "srun", f"log command: {lines}")
    check(len(lines) == 3 and lines[2].endswith("end: exit 1"), f"log exit: {lines}")

    p = start_job(SLURM_MPI, dict(SLURM_2x4x8, SLURM_JOB_ID="992"))
    p.send_signal(signal.SIGTERM)
    rc, _ = end_job(p)
    # the program would sleep an hour: an end at all (within the guard) is the signal's
    check(rc == 143, f"SIGTERM passed on, the job ends with 143: {rc}")
    with open(os.path.join(OUT, "xpcsfit-mpi-992.log")) as f:
        check(f.read().rstrip().endswith("end: exit 143, interrupted by SIGTERM"),
              "the log keeps 143")


RECORDS = (".args", ".omp", ".interrupt_file", ".ready", ".launcher", ".launcher_pid")

# Read by bash at its start (BASH_ENV): in run_logged, the job script sends itself SIGTERM
# at the first command after it started its launcher in the background, before it can know
# the pid: the moment a busy node or a scancel right after the start hits by chance. The
# hook is the script's alone (BASH_ENV is unset for its children).
EARLY_SIGNAL_HOOK = """unset BASH_ENV
set -T
early_signal_sent=0
early_signal_hook() {
	[ "${FUNCNAME[1]:-}" = run_logged ] && [ "$early_signal_sent" = 0 ] || return 0
	if [ -z "${pid_before+x}" ]; then
		pid_before=${!:-}
	elif [ "${!:-}" != "$pid_before" ]; then
		early_signal_sent=1
		kill -TERM $$
	fi
}
trap early_signal_hook DEBUG
"""


def test_signal_before_the_pid_is_known():
    """A SIGTERM that reaches the job script after its launcher started but before the
    script has its pid is still passed on: the job ends 143 with its log's end line, and
    nothing of it is left running (issue 33: the traps were set after the start, and such a
    signal killed the script alone, its launcher left running)."""
    hook = os.path.join(TMP, "early signal hook.sh")
    with open(hook, "w") as f:
        f.write(EARLY_SIGNAL_HOOK)
    for script, env, log in (
            (SLURM_MPI, dict(SLURM_2x4x8, SLURM_JOB_ID="993"), "xpcsfit-mpi-993.log"),
            (PBS_MPI, dict(PBS_2x4, PBS_JOBID="994.pbs01", FAKE_RELAY="1"),
             "xpcsfit-mpi-994.log")):
        e = clean_env()
        e.update(KNOBS)
        e.update(env, STUB_SLEEP=STUB_SLEEP, STUB_RECORD=os.path.join(TMP, "record"),
                 BASH_ENV=hook)
        p = subprocess.Popen(["bash", script], env=e, cwd=TMP, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            rc = p.wait(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            rc = None
        what = f"{os.path.basename(script)}, SIGTERM before the launcher's pid is known"
        check(rc == 143, f"{what}: exit {rc}, want 143")
        if rc == 143:
            with open(os.path.join(OUT, log)) as f:
                end = f.read().rstrip().splitlines()[-1]
            check("end: exit 143, interrupted by SIGTERM" in end, f"{what}: log end {end!r}")
            # the launcher and the program stop too (a state, under a guard)
            deadline = time.monotonic() + GUARD_S
            while time.monotonic() < deadline and group_alive(p.pid):
                time.sleep(0.05)
            check(not group_alive(p.pid), f"{what}: the launcher or the program left running")
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()


def group_alive(pgid):
    """Whether any process of the process group is left (a zombie reaped by init soon)."""
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False



def start_job(script, env):
    """The script run for real in the background, once its program has set its handlers
    and its launcher (if any) relays: the stub's ready record, whatever the machine's load.
    The job gets a session of its own so that end_job can clear whatever it left."""
    record = os.path.join(TMP, "record")
    for ext in RECORDS:
        if os.path.exists(record + ext):
            os.remove(record + ext)
    e = clean_env()
    e.update(KNOBS)
    e.update(env, STUB_SLEEP=STUB_SLEEP, STUB_RECORD=record)
    p = subprocess.Popen(["bash", script], env=e, cwd=TMP, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + GUARD_S
    while (not os.path.exists(record + ".ready") and p.poll() is None
           and time.monotonic() < deadline):
        time.sleep(0.05)
    check(os.path.exists(record + ".ready"), f"{script}: the program never got ready")
    return p


def end_job(p):
    """The job's exit code and stderr; None when it did not end within the guard. Anything
    left in its session (a stub orphaned by a failure) is killed, by its process group."""
    try:
        rc = p.wait(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        rc = None
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _, err = p.communicate()
    return rc, err


def test_signal_through_mpirun():
    """Open MPI 4.1's mpirun exits 1 after relaying SIGTERM or SIGINT (the fake one here
    does the same, FAKE_RELAY=1): the job still ends with 143 (130), says 'interrupted' on
    stderr and in its log; a signal that reaches mpirun without the script is told by the
    program's record (XPCSFIT_INTERRUPT_FILE); a plain failure stays 1."""
    record = os.path.join(TMP, "record")
    cases = [(SLURM_MPI, dict(SLURM_2x4x8, XPCSFIT_LAUNCHER="mpirun"), "slurm"),
             (PBS_MPI, PBS_2x4, "pbs")]
    job = 700
    for script, env, sched in cases:
        for sig, code, name in ((signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT"),
                                (None, 143, "SIGTERM")):
            job += 1
            ids = {"SLURM_JOB_ID": str(job)} if sched == "slurm" else {"PBS_JOBID": f"{job}.pbs01"}
            what = f"{sched}, {name} to {'the launcher alone' if sig is None else 'the job'}"
            p = start_job(script, dict(env, FAKE_RELAY="1", **ids))
            if sig is None:
                with open(record + ".launcher_pid") as f:
                    os.kill(int(f.read()), signal.SIGTERM)
            else:
                p.send_signal(sig)
            rc, err = end_job(p)
            check(rc == code, f"{what}: exit {rc}, want {code}: {err}")
            want = f"exit {code}, interrupted by {name} (the launcher exited 1)"
            check(want in err, f"{what}: '{want}' not on stderr: {err!r}")
            log = os.path.join(OUT, f"xpcsfit-mpi-{job}.log")
            with open(log) as f:
                check(f.read().rstrip().endswith(want), f"{what}: the log's end line")
            with open(record + ".interrupt_file") as f:
                check(f.read().strip() == os.path.join(OUT, f"xpcsfit-mpi-{job}.interrupted"),
                      f"{what}: the program is given the record's path")
        # a failure of the program through the same launcher stays a failure
        job += 1
        ids = {"SLURM_JOB_ID": str(job)} if sched == "slurm" else {"PBS_JOBID": f"{job}.pbs01"}
        r = run(script, dict(env, FAKE_RELAY="1", STUB_RC="1", **ids), dry=False)
        check(r.returncode == 1 and "interrupted" not in r.stderr,
              f"{sched}: a failure stays exit 1: {r.returncode} {r.stderr}")
        # a record left by an earlier job of the same log name is not this job's
        stale = os.path.join(OUT, f"xpcsfit-mpi-{job}.interrupted")
        with open(stale, "w") as f:
            f.write("interrupted by SIGTERM during fit\n")
        r = run(script, dict(env, FAKE_RELAY="1", STUB_RC="1", **ids), dry=False)
        check(r.returncode == 1, f"{sched}: a stale record is removed first: {r.returncode}")
    # the array script (xpcsfit batch, no launcher): SIGINT to the job is 130
    p = start_job(SLURM_ARRAY, {"SLURM_ARRAY_JOB_ID": "510", "SLURM_ARRAY_TASK_ID": "0",
                                "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "2",
                                "SLURM_CPUS_PER_TASK": "1"})
    p.send_signal(signal.SIGINT)
    rc, err = end_job(p)
    check(rc == 130 and "interrupted by SIGINT" in err, f"array task, SIGINT: {rc} {err}")


def batch_line(task=None, threads="4", method="nlsq", extra=()):
    line = [os.path.join(BIN, "xpcsfit"), "batch", "--config", CONFIG, "--out", OUT,
            "--list", LIST, "--method", method, "--threads", threads, "--resume"]
    if task is not None:
        line += ["--task", str(task[0]), "--tasks", str(task[1])]
    return line + list(extra)


def test_slurm_array():
    base = {"SLURM_ARRAY_JOB_ID": "500", "SLURM_CPUS_PER_TASK": "4", "SLURM_CPUS_ON_NODE": "4"}
    got = dry_line(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_TASK_MIN="0",
                                     SLURM_ARRAY_TASK_COUNT="16"), "array 0")
    check(got == batch_line((0, 16)), f"array task 0: {got}")
    # --array=1-16: the index does not start at 0.
    got = dry_line(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="16", SLURM_ARRAY_TASK_MIN="1",
                                     SLURM_ARRAY_TASK_COUNT="16"), "array 1-16")
    check(got == batch_line((15, 16)), f"array 1-16, last task: {got}")
    # --array=5-11:2 (5, 7, 9, 11): index 9 is slice 2 of 4.
    got = dry_line(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="9", SLURM_ARRAY_TASK_MIN="5",
                                     SLURM_ARRAY_TASK_STEP="2", SLURM_ARRAY_TASK_COUNT="4",
                                     XPCSFIT_METHOD="cmc", XPCSFIT_EXTRA_ARGS="--no-plots"),
                   "array step")
    check(got == batch_line((2, 4), method="cmc", extra=["--no-plots"]), f"array step: {got}")
    # Rerunning task 5 of an original 0-15 array alone (sbatch --array=5).
    got = dry_line(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="5", SLURM_ARRAY_TASK_MIN="5",
                                     SLURM_ARRAY_TASK_COUNT="1", XPCSFIT_TASKS="16",
                                     XPCSFIT_ARRAY_FIRST="0"), "array rerun")
    check(got == batch_line((5, 16)), f"array rerun of one task: {got}")
    # The summary step: the whole list, --resume, no --task; without the array's task
    # count (submit-batch.sh gives it) no cap.
    got = dry_line(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_TASK_MIN="0",
                                     SLURM_ARRAY_TASK_COUNT="1", XPCSFIT_BATCH_FINAL="1"),
                   "summary")
    check(got == batch_line(), f"summary step: {got}")
    test_stepped_rerun(base)
    test_summary_bound(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="0",
                                         SLURM_ARRAY_TASK_MIN="0", SLURM_ARRAY_TASK_COUNT="1"),
                       "slurm", threads="4")
    refused(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="3", SLURM_ARRAY_TASK_MIN="0",
                              SLURM_ARRAY_TASK_COUNT="16", SLURM_CPUS_PER_TASK="8"),
            ["oversubscribe", "8 threads > 4"], "array oversubscribed")
    refused(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="20", SLURM_ARRAY_TASK_MIN="0",
                              SLURM_ARRAY_TASK_COUNT="16"), ["array index 20"],
            "array index outside the slices")
    refused(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_TASK_MIN="0",
                              SLURM_ARRAY_TASK_COUNT="2", XPCSFIT_LIST=LIST + ".missing"),
            ["file list not found"], "array missing list")
    refused(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_TASK_MIN="0",
                              SLURM_ARRAY_TASK_COUNT="2", XPCSFIT_CONFIG=CONFIG + ".missing"),
            ["config not found"], "array missing config")
    # A real task through the stub: exit 1 (a file failed) propagated, per-task log.
    r = run(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="2", SLURM_ARRAY_TASK_MIN="0",
                              SLURM_ARRAY_TASK_COUNT="4", STUB_RC="1"), dry=False)
    check(r.returncode == 1, f"array task exit code propagated: {r.returncode} {r.stderr}")
    with open(os.path.join(OUT, "xpcsfit-batch-500_2.log")) as f:
        text = f.read()
    check("task 2 of 4" in text and text.rstrip().endswith("end: exit 1"), f"array log: {text}")


def test_stepped_rerun(base):
    """--array=0-30:2 is 16 tasks; rerunning index 10 alone (sbatch --array=10: a one-task
    array from 10 by 1) must run slice 5 of the original 16, not slice 10."""
    got = dry_line(SLURM_ARRAY, dict(base, SLURM_ARRAY_TASK_ID="10", SLURM_ARRAY_TASK_MIN="0",
                                     SLURM_ARRAY_TASK_STEP="2", SLURM_ARRAY_TASK_COUNT="16"),
                   "array 0-30:2")
    check(got == batch_line((5, 16)), f"array 0-30:2, index 10: {got}")
    rerun = dict(base, SLURM_ARRAY_TASK_ID="10", SLURM_ARRAY_TASK_MIN="10",
                 SLURM_ARRAY_TASK_STEP="1", SLURM_ARRAY_TASK_COUNT="1", XPCSFIT_TASKS="16",
                 XPCSFIT_ARRAY_FIRST="0", XPCSFIT_ARRAY_STEP="2")
    got = dry_line(SLURM_ARRAY, rerun, "stepped rerun")
    check(got == batch_line((5, 16)), f"rerun of index 10 of 0-30:2: {got}")
    # a rerun of two (--array=10,14): its own step (4 here) never mixes in
    got = dry_line(SLURM_ARRAY, dict(rerun, SLURM_ARRAY_TASK_ID="14", SLURM_ARRAY_TASK_STEP="4",
                                     SLURM_ARRAY_TASK_COUNT="2"), "stepped rerun of two")
    check(got == batch_line((7, 16)), f"rerun of index 14 of 0-30:2: {got}")
    r = run(SLURM_ARRAY, rerun, dry=False)
    with open(os.path.join(OUT, "xpcsfit-batch-500_10.log")) as f:
        text = f.read()
    check(r.returncode == 0 and "task 5 of 16 (index 10 = 0 + 5 x 2)" in text,
          f"the log says the slicing: {text} {r.stderr}")
    refused(SLURM_ARRAY, dict(rerun, XPCSFIT_ARRAY_STEP="3"), ["array index 10", "step 3"],
            "index off the original step")
    refused(SLURM_ARRAY, dict(rerun, XPCSFIT_TASKS=""), ["XPCSFIT_TASKS"],
            "first/step without the task count")


def test_summary_bound(script, base, what, threads):
    """The summary step runs at most one task's share: ceil(list entries / tasks) files
    (comments and blank lines are no entries); XPCSFIT_SUMMARY_RUNS sets it, 'all' lifts
    it, garbage is refused."""
    listed = os.path.join(DATA_DIR, "ten files.txt")
    with open(listed, "w") as f:
        f.write("# ten inputs\n\n" + "".join(f"/d/f{k}.h5\n" for k in range(10)))
    env = dict(base, XPCSFIT_BATCH_FINAL="1", XPCSFIT_LIST=listed, XPCSFIT_TASKS="4")

    def line(extra):
        return [os.path.join(BIN, "xpcsfit"), "batch", "--config", CONFIG, "--out", OUT,
                "--list", listed, "--method", "nlsq", "--threads", threads, "--resume"] + extra
    got = dry_line(script, env, f"{what} summary of 10 over 4 tasks")
    check(got == line(["--max-runs", "3"]), f"{what}: summary of 10 files over 4 tasks: {got}")
    got = dry_line(script, dict(env, XPCSFIT_SUMMARY_RUNS="0"), f"{what} summary only")
    check(got == line(["--max-runs", "0"]), f"{what}: XPCSFIT_SUMMARY_RUNS=0: {got}")
    got = dry_line(script, dict(env, XPCSFIT_SUMMARY_RUNS="all"), f"{what} summary, no cap")
    check(got == line([]), f"{what}: XPCSFIT_SUMMARY_RUNS=all: {got}")
    refused(script, dict(env, XPCSFIT_SUMMARY_RUNS="-1"), ["XPCSFIT_SUMMARY_RUNS"],
            f"{what}: bad XPCSFIT_SUMMARY_RUNS")
    # through the stub: the log's plan says the cap
    r = run(script, env, dry=False)
    logs = [n for n in os.listdir(OUT) if n.endswith("-final.log")]
    text = "".join(open(os.path.join(OUT, n)).read() for n in logs)
    check(r.returncode == 0 and "at most 3 files run" in text, f"{what}: summary log: {text}")


def submitted(name):
    path = os.path.join(TMP, "record." + name)
    with open(path) as f:
        calls = [line.split("\x1f")[:-1] for line in f.read().splitlines()]
    os.remove(path)
    return calls


def test_slurm_submit():
    r = run(SLURM_SUBMIT, dry=False, args=["--array=0-31%8"])
    check(r.returncode == 0, f"submit-batch.sh (slurm): {r.returncode} {r.stderr}")
    calls = submitted("sbatch")
    check(len(calls) == 2, f"two sbatch calls: {calls}")
    if len(calls) == 2:
        check(calls[0] == ["--parsable", "--array=0-31%8", SLURM_ARRAY], f"array: {calls[0]}")
        check("--dependency=afterany:4242" in calls[1] and "--array=0" in calls[1]
              and "--export=ALL,XPCSFIT_BATCH_FINAL=1,XPCSFIT_TASKS=32" in calls[1]
              and calls[1][-1] == SLURM_ARRAY, f"summary job: {calls[1]}")
    # the summary is told the array's task count, whichever way --array was given
    for args, n in ((["-a", "0-30:2"], 16), (["--array", "1,3,5-9"], 7), (["-p", "x"], 16),
                    (["--array=0-15", "--array=4-9%2"], 6)):
        r = run(SLURM_SUBMIT, args=args)
        check(r.returncode == 0 and f"XPCSFIT_TASKS={n} " in r.stdout,
              f"submit {args}: {n} tasks expected: {r.stdout} {r.stderr}")
    r = run(SLURM_SUBMIT, args=["--array=5-2"])
    check(r.returncode == 2 and "cannot read the array" in r.stderr, f"--array=5-2: {r.stderr}")
    r = run(SLURM_SUBMIT)
    check(r.returncode == 0 and len(r.stdout.splitlines()) == 2, f"dry submit: {r.stdout}")


PBS_2x4 = {"PBS_JOBID": "321.pbs01", "PBS_NODEFILE": NODEFILE, "NCPUS": "32",
           "OMP_NUM_THREADS": "8", "PBS_O_WORKDIR": DATA_DIR}


def test_pbs_mpi():
    got = dry_line(PBS_MPI, PBS_2x4, "pbs openmpi")
    check(got == ["mpirun", "-np", "8", "--hostfile", NODEFILE, "--map-by", "ppr:4:node",
                  "--bind-to", "none", "-x", "OMP_NUM_THREADS", "-x", "XPCSFIT_INTERRUPT_FILE"]
          + tail(), f"pbs openmpi: {got}")
    got = dry_line(PBS_MPI, dict(PBS_2x4, XPCSFIT_MPI_FLAVOR="mpich",
                                 XPCSFIT_MPIRUN_ARGS="-genv I_MPI_DEBUG 4"), "pbs mpich")
    check(got == ["mpirun", "-np", "8", "-f", NODEFILE, "-ppn", "4", "-genv", "I_MPI_DEBUG",
                  "4"] + tail(), f"pbs mpich: {got}")
    # No ompthreads: the chunk's ncpus shared by its ranks.
    env = dict(PBS_2x4)
    del env["OMP_NUM_THREADS"]
    check(dry_line(PBS_MPI, env, "pbs ncpus")[-1] == "8", "pbs threads = ncpus / mpiprocs")
    # ompthreads left out of the select line: PBS sets OMP_NUM_THREADS = ncpus.
    refused(PBS_MPI, dict(PBS_2x4, OMP_NUM_THREADS="32"),
            ["oversubscribe", "4 ranks per node x 32 threads = 128 > 32", "ompthreads"],
            "pbs oversubscribed")
    refused(PBS_MPI, dict(PBS_2x4, XPCSFIT_CONFIG=CONFIG + ".missing"), ["config not found"],
            "pbs missing config")
    refused(PBS_MPI, dict(PBS_2x4, PBS_NODEFILE=NODEFILE + ".missing"), ["PBS_NODEFILE"],
            "pbs missing node file")
    # A real run through the fake mpirun: the launcher got the node file, exit 0, log.
    r = run(PBS_MPI, PBS_2x4, dry=False)
    check(r.returncode == 0, f"pbs real run: {r.returncode} {r.stderr}")
    with open(os.path.join(TMP, "record.launcher")) as f:
        args = f.read().splitlines()
    check(args[:4] == ["-np", "8", "--hostfile", NODEFILE], f"pbs mpirun args: {args}")
    with open(os.path.join(OUT, "xpcsfit-mpi-321.log")) as f:
        check(f.read().rstrip().endswith("end: exit 0"), "pbs log")


def test_pbs_array():
    base = {"PBS_ARRAY_ID": "77[].pbs01", "NCPUS": "8", "OMP_NUM_THREADS": "8"}
    got = dry_line(PBS_ARRAY, dict(base, PBS_ARRAY_INDEX="0"), "pbs array 0")
    check(got == batch_line((0, 16), threads="8"), f"pbs array 0 (-J 0-15): {got}")
    got = dry_line(PBS_ARRAY, dict(base, PBS_ARRAY_INDEX="8", XPCSFIT_ARRAY_FIRST="1",
                                   XPCSFIT_TASKS="8"), "pbs array 1-8")
    check(got == batch_line((7, 8), threads="8"), f"pbs array -J 1-8, last: {got}")
    # the summary: at most one subjob's share run (1 list entry / 16 tasks: 1)
    got = dry_line(PBS_ARRAY, dict(base, XPCSFIT_BATCH_FINAL="1"), "pbs summary")
    check(got == batch_line(threads="8", extra=["--max-runs", "1"]), f"pbs summary step: {got}")
    test_summary_bound(PBS_ARRAY, base, "pbs", threads="8")
    # -J 0-30:2: index 10 is slice 5 of 16; 11 is no index of it
    step = dict(base, XPCSFIT_ARRAY_STEP="2")
    got = dry_line(PBS_ARRAY, dict(step, PBS_ARRAY_INDEX="10"), "pbs -J 0-30:2")
    check(got == batch_line((5, 16), threads="8"), f"pbs -J 0-30:2, index 10: {got}")
    got = dry_line(PBS_ARRAY, dict(step, PBS_ARRAY_INDEX="30"), "pbs -J 0-30:2 last")
    check(got == batch_line((15, 16), threads="8"), f"pbs -J 0-30:2, index 30: {got}")
    refused(PBS_ARRAY, dict(step, PBS_ARRAY_INDEX="11"), ["array index 11", "step 2"],
            "pbs index off the step")
    refused(PBS_ARRAY, dict(step, PBS_ARRAY_INDEX="10", XPCSFIT_ARRAY_STEP="0"),
            ["XPCSFIT_ARRAY_STEP"], "pbs step 0")
    refused(PBS_ARRAY, dict(base, PBS_ARRAY_INDEX="16"), ["array index 16", "#PBS -J"],
            "pbs array index outside -J")
    refused(PBS_ARRAY, dict(base, PBS_ARRAY_INDEX="1", OMP_NUM_THREADS="16"),
            ["oversubscribe"], "pbs array oversubscribed")
    refused(PBS_ARRAY, dict(base, PBS_ARRAY_INDEX="1", XPCSFIT_CONFIG=CONFIG + ".missing"),
            ["config not found"], "pbs array missing config")
    r = run(PBS_ARRAY, dict(base, PBS_ARRAY_INDEX="3", STUB_RC="0"), dry=False)
    check(r.returncode == 0, f"pbs array real run: {r.stderr}")
    check(os.path.exists(os.path.join(OUT, "xpcsfit-batch-77_3.log")), "pbs array log name")


def test_pbs_submit():
    r = run(PBS_SUBMIT, dry=False, args=["-q", "workq"])
    check(r.returncode == 0, f"submit-batch.sh (pbs): {r.returncode} {r.stderr}")
    calls = submitted("qsub")
    check(len(calls) == 2, f"two qsub calls: {calls}")
    if len(calls) == 2:
        check(calls[0] == ["-V", "-q", "workq", PBS_ARRAY], f"pbs array submit: {calls[0]}")
        final = calls[1]
        check("depend=afterany:77[].pbs01" in final and "XPCSFIT_BATCH_FINAL=1" in final
              and "-J" not in final and "select=1:ncpus=8:ompthreads=8:mem=16gb" in final
              and final[-3:] == ["--", "/bin/bash", PBS_ARRAY], f"pbs summary job: {final}")


def main():
    test_syntax()
    test_shared_blocks_identical()
    test_slurm_mpi()
    test_slurm_mpi_real_run()
    test_signal_before_the_pid_is_known()
    test_signal_through_mpirun()
    test_slurm_array()
    test_slurm_submit()
    test_pbs_mpi()
    test_pbs_array()
    test_pbs_submit()
    sys.exit(summary())


if __name__ == "__main__":
    main()
