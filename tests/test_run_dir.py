#!/usr/bin/env python3
"""Result folders as a unit (adr/0017, docs/outputs.md "Result folders"): --force and the
refusal without it, the run lock, the INCOMPLETE marker, stale temporary files, reruns
that never mix files, parameters.json "outputs" and run.log's last line, paths with
spaces / non-ASCII / '%' end to end (nlsq, plot, cmc, simulate, config), no raw PLplot
lines, disk full on a private tmpfs (skipped with a reason when no mount namespace can be
made), SIGINT and SIGTERM in every phase (exit 130 / 143 once the signal came, the folder
marked incomplete), plot workers gone when the parent dies.

The phases of a small run last milliseconds; the test hook XPCSFIT_TEST_PAUSE=<phase>:<s>
(util/interrupt.h, docs/outputs.md) holds a phase open so that a signal lands in it."""
import fcntl
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from small_configs import static_template
from tally import check, summary
from waits import RUN_GUARD_S

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_run_dir")
# Guards against a hang, never measures: the tests wait for states (a pause's line, an
# exit). A paused phase holds an hour, so a run that ends within STOP_GUARD_S of its signal
# was stopped by it; on an idle machine it takes milliseconds, on a busy one seconds.
GUARD_S = 600
STOP_GUARD_S = 60
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)


CONFIG = static_template(40, 3, 2)
NOISE = ("*** PLPLOT", "Can't open", "HDF5-DIAG", "Segmentation fault", "Aborted",
         "AddressSanitizer", "LeakSanitizer", "runtime error:", "libpng")
PNG_SIG = b"\x89PNG\r\n\x1a\n"
PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"


def run(*args, env=None, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([XF, *args], capture_output=True, text=True, errors="replace", env=e,
                       cwd=cwd, timeout=RUN_GUARD_S)
    for n in NOISE:
        check(n not in r.stderr, f"{args[0]}: library noise {n!r} on stderr: {r.stderr[-400:]}")
    return r


def setup(folder, phi="0,45,90"):
    os.makedirs(folder, exist_ok=True)
    data = os.path.join(folder, "s.h5")
    cfg = os.path.join(folder, "c.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=data))
    r = run("simulate", "--config", cfg, "--phi", phi, "--out", data, "--seed", "2")
    check(r.returncode == 0, f"simulate into {folder}: {r.stderr}")
    return cfg


def params(d):
    with open(os.path.join(d, "parameters.json")) as f:
        return json.load(f)


def last_log_line(d):
    with open(os.path.join(d, "run.log")) as f:
        return f.read().strip().splitlines()[-1]


def png_whole(path):
    with open(path, "rb") as f:
        b = f.read()
    return b.startswith(PNG_SIG) and b.endswith(PNG_END)


def is_complete(d, plots=True):
    """The state of a folder that holds a whole result."""
    ok = not os.path.exists(os.path.join(d, "INCOMPLETE"))
    for name in ("results.h5", "parameters.json", "run.log"):
        ok = ok and os.path.exists(os.path.join(d, name))
    if not ok:
        return False
    p = params(d)
    ok = p.get("outputs", {}).get("status") == "complete"
    ok = ok and last_log_line(d).startswith("complete")
    if plots:
        pngs = glob.glob(os.path.join(d, "plots", "*.png"))
        ok = ok and len(pngs) > 0 and all(png_whole(p) for p in pngs)
    return ok


def looks_complete(d):
    """What a user (or a script) would take for a finished result."""
    return (os.path.isdir(d) and not os.path.exists(os.path.join(d, "INCOMPLETE"))
            and os.path.exists(os.path.join(d, "parameters.json")))


def temporaries(d):
    return [p for p in glob.glob(os.path.join(d, "**", "*.tmp.*"), recursive=True)]


def test_force_and_rerun(cfg):
    out = os.path.join(TMP, "force")
    d = os.path.join(out, "nlsq")
    r = run("nlsq", "--config", cfg, "--out", out, "--threads", "2")
    check(r.returncode == 0 and is_complete(d), f"first run complete: {r.stderr[-300:]}")
    p = params(d)
    check(p["outputs"] == {"status": "complete", "plots": "written", "report": "report.html"}, f"outputs {p['outputs']}")
    before = {f: os.path.getmtime(os.path.join(d, f)) for f in ("results.h5", "run.log")}
    r = run("nlsq", "--config", cfg, "--out", out)
    check(r.returncode == 2 and "--force" in r.stderr and len(r.stderr.splitlines()) == 1,
          f"rerun without --force refused: {r.returncode} {r.stderr}")
    check(all(os.path.getmtime(os.path.join(d, f)) == t for f, t in before.items()),
          "the refused rerun changed nothing")
    # leftovers a mixed folder would keep: a plot of an angle the new run does not have
    stray = os.path.join(d, "plots", "c2_phi_009_+170.00deg.png")
    shutil.copy(os.path.join(d, "plots", "overview.png"), stray)
    r = run("nlsq", "--config", cfg, "--out", out, "--no-plots", "--force")
    check(r.returncode == 0, f"--force rerun: {r.stderr[-300:]}")
    check(not os.path.exists(os.path.join(d, "plots")), "--force removed the old plots/")
    check(is_complete(d, plots=False), "--force rerun complete")
    check(params(d)["outputs"]["plots"] == "skipped", "--no-plots: outputs.plots skipped")
    with open(os.path.join(d, "run.log")) as f:
        check("removed the previous finished result" in f.read(), "run.log says what --force removed")


def test_lock(cfg):
    out = os.path.join(TMP, "locked")
    d = os.path.join(out, "nlsq")
    os.makedirs(d)
    fd = os.open(os.path.join(d, ".lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    r = run("nlsq", "--config", cfg, "--out", out, "--force")
    check(r.returncode == 2 and "another xpcsfit run" in r.stderr,
          f"locked folder refused: {r.returncode} {r.stderr}")
    os.close(fd)
    r = run("nlsq", "--config", cfg, "--out", out)
    check(r.returncode == 0 and is_complete(d), f"runs once the lock is free: {r.stderr[-300:]}")
    # two runs started together: one writes, the other is refused; never mixed files
    out2 = os.path.join(TMP, "race")
    procs = [subprocess.Popen([XF, "nlsq", "--config", cfg, "--out", out2, "--no-plots"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    rcs = sorted(p.wait() for p in procs)
    for p in procs:
        p.stderr.close()
    check(rcs == [0, 2], f"concurrent runs: exit codes {rcs}, want one 0 and one 2")
    check(is_complete(os.path.join(out2, "nlsq"), plots=False), "the winner's folder is whole")


def test_stale_and_incomplete(cfg):
    out = os.path.join(TMP, "stale")
    d = os.path.join(out, "nlsq")
    os.makedirs(os.path.join(d, "plots"))
    # what a killed run leaves: its marker, temporaries, a result file of its own
    for name in ("results.h5.tmp.999999", "plots/overview.png.tmp.999998",
                 "parameters.json.tmp.1"):
        with open(os.path.join(d, name), "w") as f:
            f.write("partial")
    with open(os.path.join(d, "INCOMPLETE"), "w") as f:
        f.write("xpcsfit nlsq (pid 999999) started writing this folder\n")
    with open(os.path.join(d, "results.h5"), "w") as f:
        f.write("from the killed run")
    r = run("nlsq", "--config", cfg, "--out", out)  # no --force: an incomplete folder
    check(r.returncode == 0 and is_complete(d), f"incomplete folder replaced: {r.stderr[-300:]}")
    check(temporaries(d) == [], f"stale temporaries removed: {temporaries(d)}")
    # simulate and config: temporaries of dead processes go, a live one's stays
    data = os.path.join(TMP, "stale_sim.h5")
    dead, live = data + ".tmp.999999", data + ".tmp.%d" % os.getpid()
    for p in (dead, live):
        open(p, "w").close()
    r = run("simulate", "--config", cfg, "--phi", "0", "--out", data)
    check(r.returncode == 0, "simulate")
    check(not os.path.exists(dead) and os.path.exists(live),
          "simulate removes a dead run's temporary file, not a live one's")
    conf = os.path.join(TMP, "stale_c.yaml")
    open(conf + ".tmp.999999", "w").close()
    r = run("config", "--mode", "static", "--out", conf)
    check(r.returncode == 0 and not os.path.exists(conf + ".tmp.999999"), "config --out")


def own_tmp_name_taken(cfg, kind):
    """config --out and simulate --out write "<file>.tmp.<pid>" first: a FIFO (the open
    would block) or a symbolic link (the write would go through it) left at the name of
    the writer's own pid is removed, never opened (issue 24). The child's pid is known
    before it execs, so the node is made at its name."""
    out = os.path.join(TMP, f"own_tmp_{kind}.yaml")
    target = os.path.join(TMP, "own_tmp_target.txt")
    with open(target, "w") as f:
        f.write("not ours\n")
    for cmd in (["config", "--mode", "static", "--out", out],
                ["simulate", "--config", cfg, "--phi", "0",
                 "--out", out.replace(".yaml", ".h5")]):
        dest = cmd[-1]
        r_fd, w_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # wait for the node, then become xpcsfit
            os.close(w_fd)
            os.read(r_fd, 1)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.execv(XF, [XF, *cmd])
        os.close(r_fd)
        tmp = f"{dest}.tmp.{pid}"
        if kind == "fifo":
            os.mkfifo(tmp)
        else:
            os.symlink(target, tmp)
        os.write(w_fd, b"x")
        os.close(w_fd)
        code = None
        deadline = time.monotonic() + GUARD_S  # a guard against the hang, not a measure
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.1)
        if code is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        check(code == 0, f"{cmd[0]} with a {kind} at its temporary name: exit {code} "
                         "(None: hung)")
        check(os.path.isfile(dest) and not os.path.islink(dest) and not os.path.lexists(tmp),
              f"{cmd[0]}: the file written, the {kind} gone")
        with open(target, "rb") as f:
            check(f.read() == b"not ours\n", f"{cmd[0]}: nothing written through the link")


def test_odd_paths():
    """Spaces, non-ASCII, '%' (PLplot's family-file format character) everywhere."""
    top = os.path.join(TMP, "odd %n dir é ü")
    cfg = setup(top)
    data = os.path.join(top, "data %d 100% ß.h5")
    r = run("simulate", "--config", cfg, "--phi", "0,90", "--out", data)
    check(r.returncode == 0 and os.path.exists(data), f"simulate to {data}: {r.stderr}")
    out = os.path.join(top, "out %s %n ø")
    r = run("nlsq", "--config", cfg, "--data", data, "--out", out, "--threads", "2")
    d = os.path.join(out, "nlsq")
    check(r.returncode == 0 and is_complete(d), f"nlsq into {out}: {r.stderr[-400:]}")
    check("warning" not in r.stderr, f"no warning for an odd path: {r.stderr[-300:]}")
    check(len(glob.glob(os.path.join(glob.escape(d), "plots", "*.png"))) == 3,
          "2 angle plots + overview")
    r = run("plot", d)
    check(r.returncode == 0, f"plot {d}: {r.stderr}")
    check(all(png_whole(p) for p in glob.glob(os.path.join(glob.escape(d), "plots", "*.png"))),
          "redrawn plots whole")
    r = run("cmc", "--config", cfg, "--data", data, "--nlsq", out, "--out", out,
            "--threads", "2")
    c = os.path.join(out, "cmc")
    check(r.returncode in (0, 1) and os.path.exists(os.path.join(c, "parameters.json"))
          and not os.path.exists(os.path.join(c, "INCOMPLETE")), f"cmc into {out}: {r.stderr[-400:]}")
    check(len(glob.glob(os.path.join(glob.escape(c), "plots", "*.png"))) > 0, "cmc plots")
    conf = os.path.join(top, "tmpl %n.yaml")
    r = run("config", "--mode", "laminar_flow", "--out", conf)
    check(r.returncode == 0 and os.path.getsize(conf) > 0, "config --out odd path")


def test_disk_full(cfg):
    """A small private tmpfs: exit 1 (or 0 with plots reported missing), one error line,
    no crash, nothing under a final name that is not whole."""
    mnt = os.path.join(TMP, "mnt")
    os.makedirs(mnt, exist_ok=True)
    probe = subprocess.run(["unshare", "-m", "sh", "-c",
                            f"mount -t tmpfs -o size=64k tmpfs '{mnt}'"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print("SKIP disk full: cannot mount a tmpfs in a private mount namespace "
              f"({probe.stderr.strip() or probe.returncode})")
        return
    in_plots = 0  # sizes at which the disk filled while the plots were written
    for size in ("24k", "60k", "120k", "200k", "300k", "400k", "500k"):
        copy = os.path.join(TMP, "full_" + size)
        script = (f"mount -t tmpfs -o size={size} tmpfs '{mnt}' && "
                  f"'{XF}' nlsq --config '{cfg}' --out '{mnt}/o' --threads 2; rc=$?; "
                  f"cp -a '{mnt}/o' '{copy}' 2>/dev/null; exit $rc")
        r = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                           text=True, errors="replace", timeout=GUARD_S)
        what = f"disk full ({size})"
        for n in NOISE:
            check(n not in r.stderr, f"{what}: {n!r} on stderr")
        errors = [l for l in r.stderr.splitlines() if l.startswith("xpcsfit: error:")]
        in_plots += "cannot write plot: No space left on device" in r.stderr
        check(r.returncode in (0, 1), f"{what}: exit {r.returncode}: {r.stderr[-300:]}")
        d = os.path.join(copy, "nlsq")
        if r.returncode == 1:
            check(len(errors) == 1, f"{what}: one error line: {errors}")
            check(not looks_complete(d), f"{what}: a failed run looks complete")
        else:
            p = params(d)
            check(p["outputs"]["status"] in ("complete", "partial"), f"{what}: outputs")
            if p["outputs"]["status"] == "partial":
                check("plots not written" in r.stderr, f"{what}: plots warning")
                check(last_log_line(d).startswith("partial"), f"{what}: run.log says partial")
        for png in glob.glob(os.path.join(d, "plots", "*.png")):
            check(png_whole(png), f"{what}: {png} under its final name is not a whole PNG")
        if os.path.exists(os.path.join(d, "parameters.json")):
            params(d)  # parses
    check(in_plots > 0, "disk full: no size filled the disk while the plots were written")
    # simulate on a full disk
    script = (f"mount -t tmpfs -o size=24k tmpfs '{mnt}' && "
              f"'{XF}' simulate --config '{cfg}' --phi 0,45,90 --out '{mnt}/s.h5'; rc=$?; "
              f"ls '{mnt}'; exit $rc")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True)
    check(r.returncode == 1 and "disk full" in r.stderr and "s.h5" not in r.stdout,
          f"simulate on a full disk: {r.returncode} {r.stdout} {r.stderr}")


def interrupt(args, phase, sig, out_dir=None, hook=None):
    """Start a run paused in a phase (an hour: only the signal ends it), send sig once the
    pause's line came, return (rc, seconds to exit, stderr)."""
    env = dict(os.environ)
    env["XPCSFIT_TEST_PAUSE"] = (hook or phase) + ":3600"
    p = subprocess.Popen([XF, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, env=env)
    err = []
    for line in p.stderr:
        err.append(line)
        if "test pause in" in line:
            break
    t0 = time.time()
    p.send_signal(sig)
    rest = p.stderr.read()
    p.wait()
    return p.returncode, time.time() - t0, "".join(err) + rest


def test_signals(cfg):
    phases = [("load", "absent"), ("fit", "absent"), ("results.h5", "incomplete"),
              ("plots", "incomplete"), ("write", "incomplete")]
    for phase, expect in phases:
        for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
            out = os.path.join(TMP, f"sig_{phase}_{code}")
            d = os.path.join(out, "nlsq")
            rc, dt, err = interrupt(["nlsq", "--config", cfg, "--out", out, "--threads", "2"],
                                    phase, sig)
            what = f"nlsq {signal.Signals(sig).name} during {phase}"
            check(rc == code, f"{what}: exit {rc}, want {code}: {err[-300:]}")
            check(dt < STOP_GUARD_S, f"{what}: {dt:.2f} s to stop")
            errors = [l for l in err.splitlines() if l.startswith("xpcsfit: error:")]
            check(len(errors) == 1 and "interrupted" in errors[0], f"{what}: {errors}")
            check(not looks_complete(d), f"{what}: folder looks complete")
            if expect == "absent":
                check(not os.path.exists(d), f"{what}: nothing written before any result file")
            else:
                check(os.path.exists(os.path.join(d, "INCOMPLETE")), f"{what}: INCOMPLETE marker")
                with open(os.path.join(d, "INCOMPLETE")) as f:
                    check("interrupted by " + signal.Signals(sig).name in f.read(),
                          f"{what}: the marker says why")
    # a finished result replaced with --force, interrupted while plotting: the old files
    # are gone, the folder is marked incomplete, never a mix
    out = os.path.join(TMP, "sig_force")
    d = os.path.join(out, "nlsq")
    r = run("nlsq", "--config", cfg, "--out", out)
    check(r.returncode == 0, "run before --force")
    rc, dt, err = interrupt(["nlsq", "--config", cfg, "--out", out, "--force"], "plots",
                            signal.SIGTERM)
    check(rc == 143 and os.path.exists(os.path.join(d, "INCOMPLETE"))
          and not os.path.exists(os.path.join(d, "parameters.json"))
          and not os.path.exists(os.path.join(d, "run.log")),
          f"--force interrupted in plots: {rc}, {os.listdir(d)}")
    # validate, and cmc while sampling (a polling phase) and while writing
    rc, dt, err = interrupt(["validate", "--config", cfg], "validate", signal.SIGTERM)
    check(rc == 143 and dt < STOP_GUARD_S, f"validate SIGTERM: {rc} {err[-200:]}")
    nlsq_dir = os.path.join(TMP, "force")  # finished above
    for phase, sig, code in (("sample", signal.SIGINT, 130), ("plots", signal.SIGTERM, 143)):
        out = os.path.join(TMP, f"sig_cmc_{phase}")
        rc, dt, err = interrupt(["cmc", "--config", cfg, "--nlsq", nlsq_dir, "--out", out],
                                phase, sig)
        c = os.path.join(out, "cmc")
        check(rc == code and dt < STOP_GUARD_S,
              f"cmc {phase}: exit {rc} after {dt:.2f} s: {err[-300:]}")
        check(not looks_complete(c), f"cmc {phase}: folder looks complete")
        if phase == "plots":
            check(os.path.exists(os.path.join(c, "INCOMPLETE")), "cmc plots: marker")
            r = run("cmc", "--config", cfg, "--nlsq", nlsq_dir, "--out", out, "--resume")
            # exit 1 would be a posterior marked failed: a whole result all the same
            check(r.returncode in (0, 1) and is_complete(c),
                  f"cmc --resume after it: {r.stderr[-300:]}")
            check("resumed 2 of 2 shards" in r.stderr, "the shards were reused")


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def alive(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" not in f.read()
    except OSError:
        return False


def test_workers_die(cfg):
    for sig in (signal.SIGKILL, signal.SIGTERM):
        out = os.path.join(TMP, f"workers_{sig}")
        # the workers' pause (600 s) outlasts the guard below: a worker gone within it
        # was stopped by its parent's end
        env = dict(os.environ, XPCSFIT_TEST_PAUSE="plot_worker:600")
        p = subprocess.Popen([XF, "nlsq", "--config", cfg, "--out", out, "--threads", "3"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env)
        held = 0  # each worker says its pause: all three running, whatever the load
        for line in p.stderr:
            held += "test pause in plot_worker" in line
            if held == 3:
                break
        kids = children_of(p.pid)
        check(len(kids) == 3, f"3 plot workers running: {kids}")
        p.send_signal(sig)
        p.wait()
        p.stderr.close()
        deadline = time.monotonic() + STOP_GUARD_S
        while time.monotonic() < deadline and any(alive(k) for k in kids):
            time.sleep(0.05)
        check(not any(alive(k) for k in kids),
              f"plot workers still running {STOP_GUARD_S} s after the parent got "
              f"{signal.Signals(sig).name}")
        check(not looks_complete(os.path.join(out, "nlsq")), "killed in plots: not complete")


def test_cmc_nlsq_not_converged():
    """cmc without --nlsq on data where NLSQ does not converge: NLSQ's failure is a
    warning there (CMC goes on from it), never an "error:" line followed by more work."""
    top = os.path.join(TMP, "noisy")
    os.makedirs(top)
    cfg = os.path.join(top, "c.yaml")
    data = os.path.join(top, "s.h5")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=data).replace("end_frame: 40", "end_frame: 60"))
    r = run("simulate", "--config", cfg, "--phi", "0,90", "--out", data, "--noise", "1.0")
    check(r.returncode == 0, "simulate noisy")
    r = run("nlsq", "--config", cfg, "--out", os.path.join(top, "alone"), "--no-plots")
    if r.returncode != 1:
        print("SKIP cmc warm start: NLSQ converged on the noisy data")
        return
    r = run("cmc", "--config", cfg, "--out", os.path.join(top, "out"), "--no-plots")
    errors = [l for l in r.stderr.splitlines() if l.startswith("xpcsfit: error:")]
    check("the NLSQ fit did not converge" in r.stderr and "CMC starts from it" in r.stderr,
          f"NLSQ failure is a warning: {r.stderr[-400:]}")
    check(not any("the fit did not converge" in l for l in errors), f"no NLSQ error line: {errors}")
    check(len(errors) <= 1 and os.path.exists(os.path.join(top, "out", "cmc", "parameters.json")),
          f"CMC ran and wrote its result: {errors}")


def main():
    cfg = setup(os.path.join(TMP, "base"))
    test_cmc_nlsq_not_converged()
    test_force_and_rerun(cfg)
    test_lock(cfg)
    test_stale_and_incomplete(cfg)
    own_tmp_name_taken(cfg, "fifo")
    own_tmp_name_taken(cfg, "link")
    test_odd_paths()
    test_disk_full(cfg)
    test_signals(cfg)
    test_workers_die(cfg)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
