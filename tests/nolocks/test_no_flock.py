#!/usr/bin/env python3
"""A filesystem without locks (adr/0056): with nolock_shim.so preloaded, flock() and the
fcntl() record locks fail with ENOSYS and, in a second round, ENOLCK, as on Lustre mounted
without flock or some NFS. For each: `simulate` (HDF5 create), `validate` (reading the
input), `nlsq` on the bundled CHX file, `fit` (nlsq + cmc) on a small simulated file,
`plot` of a result folder (reading results.h5) and a `batch` of two files all run, run.log
says "lock: lock file (flock unsupported: ERRNO)", and no lock file is left. Then: a stale
lock file (a dead pid of this host) is removed with a line in run.log; a live one (this
test's pid) and one of another host refuse the run (exit 2, holder and how to clear it
named); HDF5_USE_FILE_LOCKING=TRUE gives a locking error, not "damaged"; SIGTERM while the folder is held removes the lock file (exit 143); where flock()
works run.log says "lock: flock". Before the fix: "cannot lock: Function not implemented"
(ENOSYS) and "cannot open HDF5 file, truncated or damaged" (ENOLCK)."""
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys

from tally import check, summary

XF = os.environ["XF_BINARY"]
SHIM = os.environ["XF_NOLOCK_SHIM"]
SRC = os.environ["XF_SOURCE_DIR"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_no_flock")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

CHX_CONFIG = os.path.join(SRC, "configs", "chx_static.yaml")
SMALL = """analysis_mode: static
analyzer_parameters:
  dt: 0.1
  end_frame: 40
  scattering: {wavevector_q: 0.0054}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {D_offset: 0}
optimization:
  cmc:
    seed: 3
    sharding: {num_shards: 2}
    per_shard_mcmc: {num_warmup: 100, num_samples: 100, num_chains: 2}
"""
NOISE = ("HDF5-DIAG", "Segmentation fault", "Aborted", "AddressSanitizer", "runtime error:")


def env_for(errno_name):
    e = dict(os.environ)
    e.pop("HDF5_USE_FILE_LOCKING", None)  # the relaxed locking is ours to show
    if errno_name:
        e["LD_PRELOAD"] = SHIM
        e["XF_NOLOCK_ERRNO"] = errno_name
        # a sanitizer build wants its runtime first; the shim only wraps libc calls
        e["ASAN_OPTIONS"] = (e.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
    return e


def run(errno_name, *args, pause=None):
    e = env_for(errno_name)
    if pause:
        e["XPCSFIT_TEST_PAUSE"] = pause
    r = subprocess.run([XF, *args], capture_output=True, text=True, errors="replace", env=e,
                       cwd=SRC, timeout=600)
    for n in NOISE:
        check(n not in r.stderr, f"{args[0]} ({errno_name}): {n!r} on stderr: {r.stderr[-400:]}")
    return r


def log(folder):
    with open(os.path.join(folder, "run.log")) as f:
        return f.read()


def lockfiles(top):
    return glob.glob(os.path.join(top, "**", ".lockfile"), recursive=True)


def one_round(name):
    top = os.path.join(TMP, name)
    os.makedirs(top)
    cfg = os.path.join(top, "small.yaml")
    with open(cfg, "w") as f:
        f.write(SMALL)
    # HDF5 create (simulate) and read (validate) on the lockless filesystem
    files = []
    for k in range(2):
        h5 = os.path.join(top, f"s{k}.h5")
        r = run(name, "simulate", "--config", cfg, "--phi", "0,45,90", "--out", h5,
                "--seed", str(k + 1))
        check(r.returncode == 0 and os.path.exists(h5), f"{name} simulate: {r.stderr}")
        files.append(h5)
    r = run(name, "validate", "--config", CHX_CONFIG)
    check(r.returncode == 0, f"{name} validate reads the input: {r.returncode} {r.stderr}")
    check("truncated or damaged" not in r.stderr, f"{name}: the file blamed: {r.stderr}")

    # HDF5_USE_FILE_LOCKING=TRUE insists on the lock: a locking failure, the file not blamed
    e = env_for(name)
    e["HDF5_USE_FILE_LOCKING"] = "TRUE"
    r = subprocess.run([XF, "validate", "--config", CHX_CONFIG], capture_output=True, text=True,
                       env=e, cwd=SRC, timeout=600)
    check(r.returncode == 1 and "could not lock it" in r.stderr and "not of the file" in r.stderr
          and "truncated or damaged" not in r.stderr,
          f"{name} forced HDF5 locking: {r.returncode} {r.stderr}")

    # nlsq on the bundled CHX file
    out = os.path.join(top, "chx")
    r = run(name, "nlsq", "--config", CHX_CONFIG, "--out", out, "--no-plots")
    check(r.returncode == 0, f"{name} nlsq: {r.returncode} {r.stderr[-400:]}")
    check("cannot lock" not in r.stderr and "truncated or damaged" not in r.stderr,
          f"{name} nlsq: {r.stderr[-300:]}")
    if r.returncode == 0:
        text = log(os.path.join(out, "nlsq"))
        check(f"lock: lock file (flock unsupported: {name})" in text,
              f"{name}: run.log names the lock: {text[:600]}")
    # plot reads results.h5 and takes the folder's lock
    r = run(name, "plot", os.path.join(out, "nlsq"))
    check(r.returncode == 0, f"{name} plot: {r.returncode} {r.stderr[-300:]}")

    # fit: nlsq then cmc from it
    r = run(name, "fit", "--config", cfg, "--data", files[0], "--out", os.path.join(top, "fit"),
            "--no-plots")
    check(r.returncode == 0, f"{name} fit: {r.returncode} {r.stderr[-400:]}")
    for m in ("nlsq", "cmc"):
        d = os.path.join(top, "fit", m)
        check(os.path.exists(os.path.join(d, "results.h5")), f"{name} fit: {m}/results.h5")

    # a batch of two files
    r = run(name, "batch", "--config", cfg, "--out", os.path.join(top, "batch"), *files,
            "--no-plots")
    check(r.returncode == 0, f"{name} batch: {r.returncode} {r.stderr[-400:]}")
    for k in range(2):
        d = os.path.join(top, "batch", f"s{k}", "nlsq")
        check(os.path.exists(os.path.join(d, "results.h5")), f"{name} batch: s{k} results")
    check(lockfiles(top) == [], f"{name}: lock files left: {lockfiles(top)}")


def boot_id():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()


def plant(folder, pid, host, start=None):
    os.makedirs(folder, exist_ok=True)
    lines = [f"pid {pid}", f"host {host}", f"boot {boot_id()}", "since 2026-11-27T00:00:00Z"]
    if start is not None:
        lines.append(f"start {start}")
    with open(os.path.join(folder, ".lockfile"), "w") as f:
        f.write("xpcsfit lock file\n" + "\n".join(lines) + "\n")


def stale_and_live():
    out = os.path.join(TMP, "held")
    d = os.path.join(out, "nlsq")
    r = run("ENOLCK", "nlsq", "--config", CHX_CONFIG, "--out", out, "--no-plots")
    check(r.returncode == 0, f"first run: {r.stderr[-300:]}")
    # a dead pid of this host: removed, with a line in run.log
    p = subprocess.Popen(["true"])
    p.wait()
    plant(d, p.pid, socket.gethostname())
    r = run("ENOLCK", "nlsq", "--config", CHX_CONFIG, "--out", out, "--no-plots", "--force")
    check(r.returncode == 0, f"stale lock file: {r.returncode} {r.stderr[-300:]}")
    if r.returncode == 0:
        check(f"lock: removed the stale lock file of pid {p.pid}" in log(d),
              f"run.log names the stale lock: {log(d)[:800]}")
    check(not os.path.exists(os.path.join(d, ".lockfile")), "stale: lock file left")
    # a live run of this host (this test): refused, the holder named, nothing touched
    res = os.path.join(d, "results.h5")
    before = os.path.getmtime(res) if os.path.exists(res) else None
    plant(d, os.getpid(), socket.gethostname())
    for errno_name in ("ENOLCK", None):  # where flock works a lock file still counts
        r = run(errno_name, "nlsq", "--config", CHX_CONFIG, "--out", out, "--no-plots",
                "--force")
        check(r.returncode == 2 and f"pid {os.getpid()} on host {socket.gethostname()}"
              in r.stderr and ".lockfile" in r.stderr,
              f"live lock ({errno_name}): {r.returncode} {r.stderr}")
    check(before is not None and os.path.getmtime(res) == before, "live lock: result kept")
    check(os.path.exists(os.path.join(d, ".lockfile")), "live lock: its file kept")
    # a pid of this host that is alive but another process now (start differs): stale
    plant(d, os.getpid(), socket.gethostname(), start=1)
    r = run("ENOLCK", "nlsq", "--config", CHX_CONFIG, "--out", out, "--no-plots", "--force")
    check(r.returncode == 0 and "another process now" in log(d),
          f"reused pid: {r.returncode} {r.stderr[-300:]}")
    # another host: never judged from here
    plant(d, 1, "elsewhere-node")
    r = run("ENOLCK", "nlsq", "--config", CHX_CONFIG, "--out", out, "--no-plots", "--force")
    check(r.returncode == 2 and "pid 1 on host elsewhere-node" in r.stderr
          and "remove " in r.stderr, f"other host: {r.returncode} {r.stderr}")
    check(len([l for l in r.stderr.splitlines() if l.startswith("xpcsfit: error:")]) == 1,
          f"other host: one error line: {r.stderr}")
    os.unlink(os.path.join(d, ".lockfile"))


def interrupted():
    out = os.path.join(TMP, "sig")
    e = env_for("ENOSYS")
    e["XPCSFIT_TEST_PAUSE"] = "results:3600"  # an hour: only the signal ends it
    p = subprocess.Popen([XF, "nlsq", "--config", CHX_CONFIG, "--out", out, "--no-plots"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=e,
                         cwd=SRC)
    err = []
    for line in p.stderr:
        err.append(line)
        if "test pause in" in line:
            break
    held = os.path.exists(os.path.join(out, "nlsq", ".lockfile"))
    p.send_signal(signal.SIGTERM)
    err.append(p.stderr.read())
    p.wait()
    check(held, f"the lock file exists while the run holds the folder: {''.join(err)}")
    check(p.returncode == 143, f"SIGTERM: exit {p.returncode} {''.join(err)[-300:]}")
    check(lockfiles(out) == [], f"SIGTERM left the lock file: {lockfiles(out)}")


def with_flock():
    out = os.path.join(TMP, "flock")
    r = run(None, "nlsq", "--config", CHX_CONFIG, "--out", out, "--no-plots")
    check(r.returncode == 0, f"flock: {r.stderr[-300:]}")
    if r.returncode == 0:
        text = log(os.path.join(out, "nlsq"))
        check("lock: flock" in text and "hdf5: file locking off" not in text,
              f"run.log with flock: {text[:600]}")


def main():
    for name in ("ENOSYS", "ENOLCK"):
        one_round(name)
    stale_and_live()
    interrupted()
    with_flock()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
