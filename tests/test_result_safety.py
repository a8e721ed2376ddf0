#!/usr/bin/env python3
"""A finished result is never lost, nothing is written through a link, nothing hangs
(issue 33 items 1-4, adr/0071, docs/outputs.md "Result folders"):

1. every refusal (exit 1 or 2) of every command that is decidable before a result folder
   is claimed leaves the finished folders byte-identical (names, bytes, mtimes) — among
   them `cmc --force`/`--resume` with an `--nlsq` result of another data file, other
   angles (--phi) or another frame window, which used to remove results.h5,
   parameters.json, run.log and report.html first;
2. a symbolic link inside a result folder (plots/, shards/, .lock, a result file, a page
   in plots/) is removed or replaced itself: `nlsq --force`, the rerun of an INCOMPLETE
   folder, `cmc --force`/`--resume` and `xpcsfit plot DIR` leave the link's target
   (outside --out) untouched;
3. an interrupted (SIGTERM once a new shard is saved) or failed (posterior.nc cannot be
   written) `cmc --force`/`--resume` leaves no old posterior.nc (or other old result file)
   beside its new shards;
4. a FIFO, a socket, a folder or a link in place of a shard, and a FIFO in place of
   .lock, parameters.json (--nlsq DIR), results.h5 (plot DIR) or batch.json (batch --resume):
   the command ends with its documented outcome instead of blocking; a FIFO or a link at
   XPCSFIT_INTERRUPT_FILE's temporary name is neither waited on nor written through.

Waits are for states (a file appears); the subprocess timeouts are guards only."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from small_configs import static_template
from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_result_safety")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
GUARD_S = 600  # a run that blocks is caught by this, never a timing assumption

CONFIG = static_template(40, 3, 2)
RESULT_NAMES = ("results.h5", "parameters.json", "run.log", "report.html", "posterior.nc")


def run(*args, env=None, preexec=None):
    e = dict(os.environ)
    e.update(env or {})
    try:
        return subprocess.run([XF, *args], capture_output=True, text=True, errors="replace",
                              env=e, timeout=GUARD_S, preexec_fn=preexec, cwd=TMP)
    except subprocess.TimeoutExpired:
        check(False, f"{' '.join(args)}: did not end within {GUARD_S} s (blocked)")
        return subprocess.CompletedProcess(args, -1, "", "timeout")


def path(*parts):
    return os.path.join(TMP, *parts)


def write(p, text):
    with open(p, "w") as f:
        f.write(text)


def config(name, data):
    p = path(name)
    write(p, CONFIG.format(data=path(data)))
    return p


def snapshot(*roots):
    """name -> (kind, bytes or link target, mtime_ns) of every node under roots."""
    snap = {}
    for root in roots:
        for top, dirs, files in os.walk(root):
            for n in sorted(dirs + files):
                p = os.path.join(top, n)
                if n == ".lock":  # the run lock: its holder's pid, not a result
                    continue
                st = os.lstat(p)
                if os.path.islink(p):
                    snap[p] = ("link", os.readlink(p), st.st_mtime_ns)
                elif os.path.isdir(p):
                    snap[p] = ("dir", None, None)  # a folder's mtime moves with .lock
                elif not os.path.isfile(p):  # a FIFO: never opened here either
                    snap[p] = ("node", st.st_mode, st.st_mtime_ns)
                else:
                    with open(p, "rb") as f:
                        snap[p] = ("file", f.read(), st.st_mtime_ns)
    return snap


def differences(a, b):
    names = sorted(set(a) | set(b))
    return [n for n in names if a.get(n) != b.get(n)]


def finished(out, nlsq_args=(), cmc=True, cfg=None):
    cfg = cfg or path("c.yaml")
    r = run("nlsq", "--config", cfg, "--out", out, "--threads", "2", *nlsq_args)
    check(r.returncode == 0, f"nlsq into {out}: {r.stderr[-300:]}")
    if cmc:
        r = run("cmc", "--config", cfg, "--nlsq", out, "--out", out, "--threads", "2")
        check(r.returncode == 0, f"cmc into {out}: {r.stderr[-300:]}")


# -- 1. refusals before the claim ---------------------------------------------------------
def test_refusals():
    out = path("o")
    finished(out)
    check(os.path.exists(path("o", "cmc", "posterior.nc")), "the finished cmc has posterior.nc")
    c = path("c.yaml")
    # NLSQ results that do not match this data and config
    finished(path("other_file"), cmc=False, cfg=path("c2.yaml"))
    finished(path("other_phi"), ("--phi", "-10:50"), cmc=False)
    finished(path("other_frames"), ("--set", "analyzer_parameters.end_frame=30"), cmc=False)
    incomplete = path("incomplete")
    shutil.copytree(path("o", "nlsq"), os.path.join(incomplete, "nlsq"))
    write(os.path.join(incomplete, "nlsq", "INCOMPLETE"), "interrupted\n")
    write(path("bad.yaml"), "analysis_mode: nonsense\n")
    with open(c) as f:  # a per_angle_scaling list that does not fit the angles kept
        write(path("pa.yaml"), f.read().replace(
            "  fixed_parameters:", "  per_angle_scaling: {contrast: [0.5, 0.5], offset: [1.0, 1.0]}\n"
            "  fixed_parameters:"))
    cmc = ["cmc", "--config", c, "--out", out, "--threads", "2"]
    cases = [
        # (what, args, exit code)
        ("cmc --force, NLSQ of another data file", cmc + ["--force", "--nlsq", path("other_file")], 2),
        ("cmc --resume, NLSQ of another data file", cmc + ["--resume", "--nlsq", path("other_file")], 2),
        ("cmc --force, NLSQ of other angles", cmc + ["--force", "--nlsq", path("other_phi")], 2),
        ("cmc --resume, NLSQ of other angles", cmc + ["--resume", "--nlsq", path("other_phi")], 2),
        ("cmc --force, NLSQ of another frame window",
         cmc + ["--force", "--nlsq", path("other_frames")], 2),
        ("cmc --resume, NLSQ of another frame window",
         cmc + ["--resume", "--nlsq", path("other_frames")], 2),
        ("cmc --force, an incomplete NLSQ", cmc + ["--force", "--nlsq", incomplete], 1),
        ("cmc --force, no NLSQ result there", cmc + ["--force", "--nlsq", path("nowhere")], 2),
        ("cmc --force, more shards than frame pairs",
         cmc + ["--force", "--nlsq", out, "--set", "optimization.cmc.sharding.num_shards=100000"], 2),
        ("cmc --resume, more shards than frame pairs (NLSQ first)",
         cmc + ["--resume", "--set", "optimization.cmc.sharding.num_shards=100000"], 2),
        ("cmc without --force", cmc + ["--nlsq", out], 2),
        ("cmc --force, a missing data file", cmc + ["--force", "--nlsq", out, "--data", path("no.h5")], 1),
        ("cmc --force, a bad config", ["cmc", "--config", path("bad.yaml"), "--out", out, "--force"], 2),
        ("fit --force --nlsq", ["fit", "--config", c, "--out", out, "--force", "--nlsq", out], 2),
        ("fit --force, more shards than frame pairs",
         ["fit", "--config", c, "--out", out, "--force", "--set",
          "optimization.cmc.sharding.num_shards=100000"], 2),
        ("nlsq --force, per_angle_scaling of 2 values for 3 angles",
         ["nlsq", "--config", path("pa.yaml"), "--out", out, "--force"], 2),
        ("cmc --force, per_angle_scaling of 2 values for 3 angles",
         cmc[:2] + [path("pa.yaml")] + cmc[3:] + ["--force", "--nlsq", out], 2),
        ("cmc --resume, per_angle_scaling of 2 values (NLSQ first)",
         cmc[:2] + [path("pa.yaml")] + cmc[3:] + ["--resume"], 2),
        ("fit --force, per_angle_scaling of 2 values for 3 angles",
         ["fit", "--config", path("pa.yaml"), "--out", out, "--force"], 2),
        ("nlsq --force, no angle in --phi", ["nlsq", "--config", c, "--out", out, "--force",
                                             "--phi", "200:300"], 1),
        ("cmc --force, fewer than 3 frames", cmc + ["--force", "--nlsq", out, "--set",
                                                    "analyzer_parameters.start_frame=39"], 1),
        ("nlsq without --force", ["nlsq", "--config", c, "--out", out], 2),
        ("nlsq --force, a missing data file",
         ["nlsq", "--config", c, "--out", out, "--force", "--data", path("no.h5")], 1),
        ("nlsq --force, a bad override",
         ["nlsq", "--config", c, "--out", out, "--force", "--set", "analyzer_parameters.dt=abc"], 2),
        ("nlsq --force --threads 0", ["nlsq", "--config", c, "--out", out, "--force", "--threads", "0"], 2),
        ("plot DIR, a missing data file", ["plot", path("o", "nlsq"), "--data", path("no.h5")], 1),
        ("plot, a bad config", ["plot", "--config", path("bad.yaml"), "--out", out], 2),
        ("batch --resume --force", ["batch", "--config", c, "--out", out, "--resume", "--force",
                                    path("s.h5")], 2),
        ("simulate onto an existing file",
         ["simulate", "--config", c, "--out", path("s.h5"), "--seed", "5"], 2),
        ("config --out onto an existing file", ["config", "--mode", "static", "--out", c], 2),
        ("validate, a bad config", ["validate", "--config", path("bad.yaml")], 2),
    ]
    watched = (out, path("s.h5"), path("c.yaml"))
    for what, args, code in cases:
        before = snapshot(*watched[:1])
        files_before = {p: open(p, "rb").read() for p in watched[1:]}
        r = run(*args)
        check(r.returncode == code,
              f"{what}: exit {r.returncode}, want {code}: {r.stderr[-300:]}")
        check("error:" in r.stderr, f"{what}: an error line: {r.stderr[-300:]}")
        diff = differences(before, snapshot(*watched[:1]))
        check(not diff, f"{what}: the finished results are untouched, changed: {diff[:6]}")
        for p, b in files_before.items():
            check(open(p, "rb").read() == b, f"{what}: {p} untouched")


# -- 2. links inside a result folder --------------------------------------------------------
def outside_tree(name):
    """A folder outside every --out with files a run must never touch: one with the name
    of a page xpcsfit writes, one of its own."""
    d = path(name)
    os.makedirs(d)
    for n in ("overview.png", "keep.txt", "shard_000000.bin", "results.h5"):
        write(os.path.join(d, n), f"the user's {n}\n")
    return d


def real_folder(p):
    return os.path.isdir(p) and not os.path.islink(p)


def test_links():
    c = path("c.yaml")
    out = path("links")
    finished(out)
    nlsq, cmc = os.path.join(out, "nlsq"), os.path.join(out, "cmc")
    target = outside_tree("outside")
    files = path("outside_files")
    os.makedirs(files)
    for n in ("a", "b", "c", "d", "e"):
        write(os.path.join(files, n), f"file {n}\n")
    keep = snapshot(target, files)

    def link_plots(d):
        p = os.path.join(d, "plots")
        if os.path.islink(p) or os.path.isfile(p):
            os.unlink(p)
        shutil.rmtree(p, ignore_errors=True)
        os.symlink(target, p)

    def untouched(what):
        diff = differences(keep, snapshot(target, files))
        check(not diff, f"{what}: the link's target outside --out is untouched: {diff[:6]}")

    # nlsq --force with plots/ a link to a folder outside, and the lock a link to a file
    link_plots(nlsq)
    os.unlink(os.path.join(nlsq, ".lock"))
    os.symlink(os.path.join(files, "a"), os.path.join(nlsq, ".lock"))
    r = run("nlsq", "--config", c, "--out", out, "--force", "--threads", "2")
    check(r.returncode == 0, f"nlsq --force over a plots link: {r.stderr[-300:]}")
    untouched("nlsq --force, plots/ and .lock links")
    check(not os.path.islink(os.path.join(nlsq, ".lock")), "nlsq --force: .lock a file of its own")
    check(real_folder(os.path.join(nlsq, "plots")) and
          os.path.exists(os.path.join(nlsq, "plots", "overview.png")),
          "nlsq --force: plots/ is a folder of its own with the new pages")
    # the rerun of an INCOMPLETE folder (no --force), links to files outside too
    link_plots(nlsq)
    write(os.path.join(nlsq, "INCOMPLETE"), "interrupted\n")
    for n, f in (("results.h5", "a"), ("report.html", "b"), ("run.log", "c")):
        os.unlink(os.path.join(nlsq, n))
        os.symlink(os.path.join(files, f), os.path.join(nlsq, n))
    r = run("nlsq", "--config", c, "--out", out, "--threads", "2")
    check(r.returncode == 0, f"rerun of an incomplete folder: {r.stderr[-300:]}")
    untouched("rerun of an INCOMPLETE folder, plots/ and result files links")
    for n in ("results.h5", "report.html", "run.log"):
        check(not os.path.islink(os.path.join(nlsq, n)), f"rerun: {n} is a file of its own")
    # a link to a file outside inside a real plots/ folder
    os.unlink(os.path.join(nlsq, "plots", "overview.png"))
    os.symlink(os.path.join(files, "d"), os.path.join(nlsq, "plots", "overview.png"))
    r = run("nlsq", "--config", c, "--out", out, "--force", "--threads", "2")
    check(r.returncode == 0, f"nlsq --force, a page a link: {r.stderr[-300:]}")
    untouched("nlsq --force, plots/overview.png a link")
    # xpcsfit plot DIR
    link_plots(nlsq)
    r = run("plot", nlsq)
    check(r.returncode == 0, f"plot DIR over a plots link: {r.stderr[-300:]}")
    untouched("plot DIR, plots/ a link")
    check(real_folder(os.path.join(nlsq, "plots")), "plot DIR: plots/ a folder of its own")
    # cmc --force with plots/, shards/ and posterior.nc links
    link_plots(cmc)
    shutil.rmtree(os.path.join(cmc, "shards"))
    os.symlink(target, os.path.join(cmc, "shards"))
    os.unlink(os.path.join(cmc, "posterior.nc"))
    os.symlink(os.path.join(files, "e"), os.path.join(cmc, "posterior.nc"))
    r = run("cmc", "--config", c, "--nlsq", out, "--out", out, "--force", "--threads", "2")
    check(r.returncode == 0, f"cmc --force over links: {r.stderr[-300:]}")
    untouched("cmc --force, plots/, shards/ and posterior.nc links")
    check(real_folder(os.path.join(cmc, "shards")) and real_folder(os.path.join(cmc, "plots"))
          and not os.path.islink(os.path.join(cmc, "posterior.nc")),
          "cmc --force: shards/, plots/ and posterior.nc its own")
    # cmc --resume with shards/ a link (its files are not the run's) and plot DIR on cmc/
    shutil.rmtree(os.path.join(cmc, "shards"))
    os.symlink(target, os.path.join(cmc, "shards"))
    r = run("cmc", "--config", c, "--nlsq", out, "--out", out, "--resume", "--threads", "2")
    check(r.returncode == 0, f"cmc --resume over a shards link: {r.stderr[-300:]}")
    untouched("cmc --resume, shards/ a link")
    link_plots(cmc)
    r = run("plot", cmc)
    check(r.returncode == 0, f"plot DIR (cmc) over a plots link: {r.stderr[-300:]}")
    untouched("plot DIR (cmc), plots/ a link")
    # the result folder itself (DIR/nlsq, DIR/cmc) a link to a folder outside: the link is
    # replaced by a folder of its own (the target held a page and files of result names)
    for sub, args in (("nlsq", ("nlsq", "--config", c, "--out", out, "--force")),
                      ("cmc", ("cmc", "--config", c, "--nlsq", out, "--out", out, "--force"))):
        d = os.path.join(out, sub)
        shutil.rmtree(d)
        os.symlink(target, d)
        r = run(*args, "--threads", "2")
        check(r.returncode == 0, f"{sub} --force, DIR/{sub} a link: {r.stderr[-300:]}")
        untouched(f"{sub} --force, DIR/{sub} a link")
        check(real_folder(d) and os.path.isfile(os.path.join(d, "results.h5")),
              f"{sub} --force: DIR/{sub} a folder of its own with the new result")
    # batch: DIR/<stem> and DIR/<stem>/nlsq links to a folder outside
    b = path("links_batch")
    for rel in ("s", os.path.join("s", "nlsq")):
        shutil.rmtree(b, ignore_errors=True)
        os.makedirs(os.path.dirname(os.path.join(b, rel)), exist_ok=True)
        os.symlink(target, os.path.join(b, rel))
        r = run("batch", "--config", c, "--out", b, path("s.h5"), "--no-plots", "--force")
        check(r.returncode == 0, f"batch --force, {rel} a link: {r.stderr[-300:]}")
        untouched(f"batch --force, {rel} a link")
        check(real_folder(os.path.join(b, rel)), f"batch --force: {rel} a folder of its own")


# -- 3. no old posterior.nc beside new shards ---------------------------------------------
def old_results_left(cmc, old):
    """Names of result files of the old run still in the folder (the same file: inode and
    mtime; a rerun writes the same bytes, so bytes would not tell)."""
    left = []
    for n in RESULT_NAMES:
        p = os.path.join(cmc, n)
        if os.path.isfile(p):
            st = os.stat(p)
            if (st.st_ino, st.st_mtime_ns) == old.get(n):
                left.append(n)
    return left


def read_results(cmc):
    old = {}
    for n in RESULT_NAMES:
        st = os.stat(os.path.join(cmc, n))
        old[n] = (st.st_ino, st.st_mtime_ns)
    return old


def test_old_posterior_gone():
    c = path("c.yaml")
    for flag in ("--force", "--resume"):
        out = path("posterior" + flag)
        finished(out)
        cmc = os.path.join(out, "cmc")
        old = read_results(cmc)
        shutil.rmtree(os.path.join(cmc, "shards"))  # --resume: nothing to reuse
        # interrupted: held at the start of shard 1, once shard 0's file is saved
        shard0 = os.path.join(cmc, "shards", "shard_000000.bin")
        e = dict(os.environ, XPCSFIT_TEST_PAUSE="cmc_chain_1_0:600")
        p = subprocess.Popen([XF, "cmc", "--config", c, "--nlsq", out, "--out", out, flag,
                              "--threads", "1"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=e, text=True, cwd=TMP)
        t0 = time.monotonic()
        while not os.path.exists(shard0) and p.poll() is None and time.monotonic() - t0 < GUARD_S:
            time.sleep(0.02)
        check(os.path.exists(shard0), f"cmc {flag}: a new shard was saved")
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(GUARD_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        check(p.returncode == 143, f"cmc {flag} interrupted: exit {p.returncode}, want 143")
        check(os.path.exists(os.path.join(cmc, "INCOMPLETE")), f"cmc {flag} interrupted: INCOMPLETE")
        left = old_results_left(cmc, old)
        check(not left, f"cmc {flag} interrupted: no old result beside the new shards: {left}")
        check(not os.path.exists(os.path.join(cmc, "posterior.nc")),
              f"cmc {flag} interrupted: no posterior.nc at all")
        # failed: posterior.nc cannot be written (a folder of files holds its temporary
        # name), after sampling and after the new results.h5
        finished_again = run("cmc", "--config", c, "--nlsq", out, "--out", out, "--force",
                             "--threads", "2")
        check(finished_again.returncode == 0, f"cmc {flag}: finished again")
        old = read_results(cmc)

        def block_posterior():  # in the child: its pid is the run's
            os.makedirs(os.path.join(cmc, f"posterior.nc.tmp.{os.getpid()}", "x"))

        r = run("cmc", "--config", c, "--nlsq", out, "--out", out, flag, "--threads", "2",
                preexec=block_posterior)
        check(r.returncode == 1 and "posterior.nc" in r.stderr,
              f"cmc {flag} failing to write posterior.nc: exit {r.returncode}: {r.stderr[-300:]}")
        check(os.path.exists(os.path.join(cmc, "INCOMPLETE")), f"cmc {flag} failed: INCOMPLETE")
        left = old_results_left(cmc, old)
        check(not left, f"cmc {flag} failed: no old result beside the new shards: {left}")
        check(not os.path.exists(os.path.join(cmc, "posterior.nc")),
              f"cmc {flag} failed: no posterior.nc at all")
        for blocker in [n for n in os.listdir(cmc) if n.startswith("posterior.nc.tmp.")]:
            shutil.rmtree(os.path.join(cmc, blocker))


def test_old_ring_gone():
    """Several rings one by one, --force interrupted once the first ring is complete (its
    console summary), before the second ring's turn: the second ring's old result is gone
    already (the top claim clears every ring it fits again), not left complete beside the
    new first ring."""
    rings = path("rings.h5")
    cfg = path("rings.yaml")
    write(cfg, CONFIG.format(data=rings).replace("wavevector_q: 0.0054", "wavevector_q: all"))
    r = run("simulate", "--config", path("c.yaml"), "--phi", "0,45", "--q", "0.003,0.0054",
            "--out", rings, "--seed", "4")
    check(r.returncode == 0, f"simulate rings: {r.stderr[-300:]}")
    out = path("rings_out")
    finished(out, cmc=False, cfg=cfg)
    top = os.path.join(out, "nlsq")
    old = {}
    for top_dir, _, files in os.walk(top):
        for n in files:
            if n != ".lock":
                st = os.stat(os.path.join(top_dir, n))
                old[os.path.join(top_dir, n)] = (st.st_ino, st.st_mtime_ns)
    check(any("q_0.0054" in k for k in old), "the finished rings result has q_0.0054/")
    e = dict(os.environ, XPCSFIT_TEST_PAUSE="summary:600")
    p = subprocess.Popen([XF, "nlsq", "--config", cfg, "--out", out, "--force", "--threads", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e, text=True,
                         cwd=TMP)
    paused = False
    for line in p.stderr:  # the pause's line: the first ring is complete
        if "test pause in summary" in line:
            paused = True
            break
    check(paused, "rings --force: the first ring's summary was reached")
    p.send_signal(signal.SIGTERM)
    try:
        p.communicate(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
    check(p.returncode == 143, f"rings --force interrupted: exit {p.returncode}, want 143")
    check(os.path.exists(os.path.join(top, "INCOMPLETE")), "rings --force interrupted: INCOMPLETE")
    left = [k for k, v in old.items() if os.path.isfile(k) and
            (os.stat(k).st_ino, os.stat(k).st_mtime_ns) == v]
    check(not left, f"rings --force interrupted: no old ring result beside the new ring: {left[:4]}")


# -- 4. special files where a file is read --------------------------------------------------
def make_node(p, kind):
    if os.path.lexists(p):
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        else:
            os.unlink(p)
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(p)
        s.close()
    elif kind == "folder":
        os.mkdir(p)
    elif kind == "link to a fifo":
        f = path("fifo_target")
        if os.path.lexists(f):
            os.unlink(f)
        os.mkfifo(f)
        os.symlink(f, p)


def test_special_files():
    c = path("c.yaml")
    out = path("fifo")
    finished(out)
    cmc = os.path.join(out, "cmc")
    shard1 = os.path.join(cmc, "shards", "shard_000001.bin")
    for kind in ("fifo", "socket", "folder", "link to a fifo"):
        make_node(shard1, kind)
        r = run("cmc", "--config", c, "--nlsq", out, "--out", out, "--resume", "--threads", "2")
        check(r.returncode == 0, f"--resume with a {kind} as a shard: exit {r.returncode}: {r.stderr[-300:]}")
        check("resumed 1 of 2 shards" in r.stderr,
              f"--resume with a {kind} as a shard: the other shard resumed, this one run again: "
              f"{r.stderr[-400:]}")
        check(os.path.isfile(shard1) and not os.path.islink(shard1),
              f"--resume with a {kind} as a shard: a regular shard file in its place")
    # a FIFO in place of the lock: the run takes a lock file of its own
    make_node(os.path.join(out, "nlsq", ".lock"), "fifo")
    r = run("nlsq", "--config", c, "--out", out, "--force", "--threads", "2")
    check(r.returncode == 0, f"nlsq --force with a FIFO .lock: exit {r.returncode}: {r.stderr[-300:]}")
    check(os.path.isfile(os.path.join(out, "nlsq", ".lock")), "nlsq --force: .lock a regular file")
    # parameters.json of --nlsq DIR a FIFO: refused at once, the finished cmc kept
    fake = path("fifo_nlsq", "nlsq")
    shutil.copytree(os.path.join(out, "nlsq"), fake)
    make_node(os.path.join(fake, "parameters.json"), "fifo")
    before = snapshot(cmc)
    r = run("cmc", "--config", c, "--nlsq", path("fifo_nlsq"), "--out", out, "--force")
    check(r.returncode == 2 and "not a regular file" in r.stderr,
          f"--nlsq DIR with a FIFO parameters.json: exit {r.returncode}: {r.stderr[-300:]}")
    check(not differences(before, snapshot(cmc)), "--nlsq DIR with a FIFO: the cmc result kept")
    # plot DIR whose results.h5 is a FIFO
    plotted = path("fifo_plot")
    shutil.copytree(os.path.join(out, "nlsq"), plotted)
    make_node(os.path.join(plotted, "results.h5"), "fifo")
    r = run("plot", plotted)
    check(r.returncode == 1 and "not a regular file" in r.stderr,
          f"plot DIR with a FIFO results.h5: exit {r.returncode}: {r.stderr[-300:]}")
    # batch --resume whose record is a FIFO: the record is unreadable, the file runs again
    b = path("fifo_batch")
    r = run("batch", "--config", c, "--out", b, path("s.h5"), "--no-plots")
    check(r.returncode == 0, f"batch: {r.stderr[-300:]}")
    make_node(os.path.join(b, "s", "batch.json"), "fifo")
    r = run("batch", "--config", c, "--out", b, path("s.h5"), "--no-plots", "--resume")
    check(r.returncode == 0, f"batch --resume with a FIFO record: exit {r.returncode}: {r.stderr[-300:]}")
    with open(os.path.join(b, "batch_summary.json")) as f:
        check(json.load(f)["n_ok"] == 1, "batch --resume with a FIFO record: the file ran again")
    # XPCSFIT_INTERRUPT_FILE's temporary name (PATH.tmp) a FIFO or a link to a user's file:
    # SIGTERM still ends the run (the handler blocked in open on the FIFO) and the file
    # outside is untouched (it was truncated and written through the link)
    users = path("users_file")
    write(users, "the user's own\n")
    for kind in ("fifo", "link"):
        record = path(f"interrupted_{kind}")
        tmp = record + ".tmp"
        if kind == "fifo":
            os.mkfifo(tmp)
        else:
            os.symlink(users, tmp)
        e = dict(os.environ, XPCSFIT_TEST_PAUSE="fit:600", XPCSFIT_INTERRUPT_FILE=record)
        p = subprocess.Popen([XF, "nlsq", "--config", c, "--out", path(f"intr_{kind}"), "--force",
                              "--threads", "1"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=e, text=True, cwd=TMP)
        for line in p.stderr:  # the pause's line: the fit is held
            if "test pause in fit" in line:
                break
        p.send_signal(signal.SIGTERM)
        try:
            p.communicate(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
        check(p.returncode == 143, f"SIGTERM with a {kind} at PATH.tmp: exit {p.returncode}, want 143")
        with open(users) as f:
            check(f.read() == "the user's own\n", f"SIGTERM with a {kind} at PATH.tmp: the user's file kept")
        check(os.path.isfile(record) and "interrupted by SIGTERM" in open(record).read(),
              f"SIGTERM with a {kind} at PATH.tmp: the record written")


def main():
    config("c.yaml", "s.h5")
    config("c2.yaml", "s2.h5")
    for data, seed in (("s.h5", "2"), ("s2.h5", "3")):
        r = run("simulate", "--config", path("c.yaml"), "--phi", "0,45,90", "--out", path(data),
                "--seed", seed)
        check(r.returncode == 0, f"simulate {data}: {r.stderr}")
    only = sys.argv[1:]
    for name, fn in (("refusals", test_refusals), ("links", test_links),
                     ("posterior", test_old_posterior_gone), ("rings", test_old_ring_gone),
                     ("special", test_special_files)):
        if not only or name in only:
            fn()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
