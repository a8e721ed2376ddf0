#!/usr/bin/env python3
"""xpcsfit-mpi with several q rings (adr/0066, adr/0069): nlsq --joint (the joint fit,
each ring's own fit and the leave-one-out refits spread over the ranks), cmc --joint and
fit --joint give the bytes of one xpcsfit process on 2 and 3 ranks (and 2 x 2 threads);
batch with optimization.rings: joint too. Per-ring mode with a ring that fails (its maps
flat): nlsq, cmc, fit and batch end with the exit code, the error lines, the ring
folders and the INCOMPLETE/lock state of one process, on 2 and 3 ranks, no rank hanging
(the timeout); so does nlsq --joint over that flat ring. Exit 77 (skipped) without mpirun."""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

from small_configs import static_template
from same_result import same_result as same_folders
from tally import check, summary

XF = os.environ["XF_BINARY"]
XF_MPI = os.environ["XF_MPI_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_mpi_rings")
MPIRUN = shutil.which("mpirun")
if not MPIRUN:
    print("mpirun not found: skipped")
    sys.exit(77)
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

RINGS = "0.003,0.0054,0.008,0.01"
PHI = "0,60,120"
LAYOUTS = [(1, 2), (2, 1), (3, 1), (2, 2)]


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def run(*args):
    return subprocess.run([XF, *args], capture_output=True, text=True, timeout=1200)


def run_mpi(ranks, *args, env=None):
    return subprocess.run([MPIRUN, "--oversubscribe", "-np", str(ranks), XF_MPI, *args],
                          capture_output=True, text=True, timeout=1200,
                          env=dict(os.environ, **(env or {})))


def same_result(ref, d, what):
    """results.h5 byte for byte (every dataset), parameters.json but its timings."""
    for f in ("results.h5", "parameters.json"):
        if not check(os.path.exists(os.path.join(d, f)), f"{what}: no {f}"):
            return
    same_folders(ref, d, what)


def setup():
    data = os.path.join(TMP, "rings.h5")
    # CMC seed 8: at 2 x (100 + 100) draws per shard a shard's R-hat passes 1.1 by chance
    # alone now and then; seed 7 put one shard at 1.116 with the scaling integrated out
    # (adr/0086: over seeds 8-12 the same R-hat and ESS as before, 2-4x fewer passes)
    cfg = write("rings.yaml", static_template(50, 8, 3, q="all").format(data=data))
    r = run("simulate", "--config", cfg, "--phi", PHI, "--q", RINGS, "--out", data,
            "--noise", "0.002", "--seed", "4")
    check(r.returncode == 0, f"simulate: {r.stderr}")
    # a copy whose last ring's maps (ring-major: maps 10..12) are flat: that ring fails
    flat = os.path.join(TMP, "flat.h5")
    shutil.copyfile(data, flat)
    with h5py.File(flat, "a") as h:
        for k in (10, 11, 12):
            m = h["xpcs/twotime/correlation_map/c2_%05d" % k]
            m[...] = np.zeros(m.shape)
    return cfg, data, flat


def test_joint_nlsq(cfg):
    ref = os.path.join(TMP, "jref")
    r = run("nlsq", "--config", cfg, "--joint", "--out", ref, "--threads", "1", "--no-plots")
    check(r.returncode == 0, f"serial nlsq --joint: {r.stderr}")
    ref = os.path.join(ref, "nlsq_joint")
    for ranks, threads in LAYOUTS:
        out = os.path.join(TMP, f"j_{ranks}x{threads}")
        r = run_mpi(ranks, "nlsq", "--config", cfg, "--joint", "--out", out, "--threads",
                    str(threads), "--no-plots")
        what = f"nlsq --joint {ranks}x{threads}"
        check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr}")
        check(r.stdout.count("nlsq joint:") == 1, f"{what}: one summary: {r.stdout!r}")
        same_result(ref, os.path.join(out, "nlsq_joint"), what)
    return ref


def test_joint_cmc(cfg, nlsq_ref):
    ref = os.path.join(TMP, "cjref")
    r = run("cmc", "--config", cfg, "--joint", "--nlsq", nlsq_ref, "--out", ref, "--threads",
            "1", "--no-plots")
    check(r.returncode == 0, f"serial cmc --joint: {r.stderr}")
    ref = os.path.join(ref, "cmc_joint")
    for ranks, threads in LAYOUTS[1:3]:
        out = os.path.join(TMP, f"cj_{ranks}x{threads}")
        r = run_mpi(ranks, "cmc", "--config", cfg, "--joint", "--nlsq", nlsq_ref, "--out", out,
                    "--threads", str(threads), "--no-plots")
        what = f"cmc --joint {ranks}x{threads}"
        check(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr}")
        same_result(ref, os.path.join(out, "cmc_joint"), what)
    # fit --joint: the joint NLSQ, then its posterior, both the serial bytes
    fref = os.path.join(TMP, "fjref")
    r = run("fit", "--config", cfg, "--joint", "--out", fref, "--threads", "1", "--no-plots")
    check(r.returncode == 0, f"serial fit --joint: {r.stderr}")
    out = os.path.join(TMP, "fj_2x1")
    r = run_mpi(2, "fit", "--config", cfg, "--joint", "--out", out, "--threads", "1",
                "--no-plots")
    check(r.returncode == 0, f"fit --joint 2x1: exit {r.returncode}: {r.stderr}")
    for m in ("nlsq_joint", "cmc_joint"):
        same_result(os.path.join(fref, m), os.path.join(out, m), f"fit --joint 2x1 {m}")


def test_batch_joint(cfg, data, flat):
    """rings: joint in a batch: a file's joint fit runs on the rank that has the file."""
    jcfg = write("joint.yaml", open(cfg).read() + "  rings: joint\n")
    ref = os.path.join(TMP, "bref")
    r = run("batch", "--config", jcfg, "--out", ref, "--threads", "1", "--no-plots", data, flat)
    code = r.returncode
    out = os.path.join(TMP, "b_2")
    r = run_mpi(2, "batch", "--config", jcfg, "--out", out, "--threads", "1", "--no-plots",
                data, flat)
    check(r.returncode == code, f"batch joint 2 ranks: exit {r.returncode}, serial {code}")
    same_result(os.path.join(ref, "rings", "nlsq_joint"), os.path.join(out, "rings", "nlsq_joint"),
                "batch joint 2 ranks")
    # per ring, the flat file's last ring failing: the file failed, as in one process
    ref = os.path.join(TMP, "bpref")
    r = run("batch", "--config", cfg, "--out", ref, "--threads", "1", "--no-plots", data, flat)
    check(r.returncode == 1, f"serial batch per ring, a failing ring: exit {r.returncode}")
    for ranks in (2, 3):
        out = os.path.join(TMP, f"bp_{ranks}")
        r = run_mpi(ranks, "batch", "--config", cfg, "--out", out, "--threads", "1",
                    "--no-plots", data, flat)
        what = f"batch per ring {ranks} ranks, a failing ring"
        check(r.returncode == 1, f"{what}: exit {r.returncode}: {r.stderr}")
        check(batch_rows(out) == batch_rows(ref), f"{what}: {batch_rows(out)}")
        for name in ("rings", "flat"):
            check(state(os.path.join(out, name, "nlsq")) == state(os.path.join(ref, name, "nlsq")),
                  f"{what}: {name}/nlsq/ differs")


def batch_rows(out):
    """(file, status, message) of each row of batch_summary.json, the paths made relative."""
    with open(os.path.join(out, "batch_summary.json")) as f:
        rows = json.load(f)["files"]
    return [(os.path.basename(e["file"]), e["status"], e.get("message", "").replace(out, "OUT"))
            for e in rows]


def state(top):
    """What a per-ring top folder holds: the ring folders, the summary, INCOMPLETE, lock."""
    if not os.path.isdir(top):
        return None
    names = sorted(os.listdir(top))
    return [n for n in names if n.startswith("q_") or n in
            ("rings.csv", "rings.json", "INCOMPLETE", ".lock")]


def error_lines(stderr, out):
    return [l.replace(out, "OUT") for l in stderr.splitlines()
            if l.startswith("xpcsfit: error:")]


def test_failing_ring(flat_cfg):
    """Per ring, the last ring flat: the exit code, error lines and folders of one
    process. On 3 ranks every rank's output is kept (XPCSFIT_MPI_ALL_OUTPUT): each rank
    names every ring's outcome as rank 0 does (CMC's folder is written by rank 0 alone,
    and the others once said 'error, no result' for every ring)."""
    for cmd in ("nlsq", "cmc", "fit"):
        out = os.path.join(TMP, f"fail_{cmd}_1")
        r = run(cmd, "--config", flat_cfg, "--out", out, "--threads", "1", "--no-plots")
        code, lines = r.returncode, error_lines(r.stderr, out)
        check(code == 1 and any("ring q 0.01 1/A" in l for l in lines),
              f"serial {cmd}, a failing ring: exit {code}: {r.stderr}")
        tops = ("nlsq",) if cmd == "nlsq" else ("nlsq", "cmc")
        want = {t: state(os.path.join(out, t)) for t in tops}
        for ranks in (2, 3):
            o = os.path.join(TMP, f"fail_{cmd}_{ranks}")
            every = ranks == 3
            r = run_mpi(ranks, cmd, "--config", flat_cfg, "--out", o, "--threads", "1",
                        "--no-plots", env={"XPCSFIT_MPI_ALL_OUTPUT": "1"} if every else None)
            what = f"{cmd} {ranks} ranks, a failing ring"
            check(r.returncode == code, f"{what}: exit {r.returncode}, serial {code}: {r.stderr}")
            got = error_lines(r.stderr, o)
            if every:
                rings = lambda ls: sorted(l for l in ls if l.startswith("xpcsfit: error: ring q"))
                check(rings(got) == sorted(rings(lines) * ranks),
                      f"{what}: every rank's ring lines {rings(got)}, serial {rings(lines)}")
            else:
                check(got == lines, f"{what}: error lines {got}, serial {lines}")
            for t in tops:
                check(state(os.path.join(o, t)) == want[t],
                      f"{what}: {t}/ holds {state(os.path.join(o, t))}, serial {want[t]}")


def test_failing_joint(flat_cfg):
    """nlsq --joint over a flat ring: the error line and exit code of one process on 2
    and 3 ranks, and no result folder that looks whole."""
    out = os.path.join(TMP, "jfail_1")
    r = run("nlsq", "--config", flat_cfg, "--joint", "--out", out, "--threads", "1",
            "--no-plots")
    code, lines = r.returncode, error_lines(r.stderr, out)
    check(code == 1 and len(lines) == 1, f"serial nlsq --joint, a flat ring: {code} {r.stderr}")
    for ranks in (2, 3):
        o = os.path.join(TMP, f"jfail_{ranks}")
        r = run_mpi(ranks, "nlsq", "--config", flat_cfg, "--joint", "--out", o, "--threads",
                    "1", "--no-plots")
        what = f"nlsq --joint {ranks} ranks, a flat ring"
        check(r.returncode == code, f"{what}: exit {r.returncode}, serial {code}")
        check(error_lines(r.stderr, o) == lines, f"{what}: {r.stderr}")
        check(not os.path.exists(os.path.join(o, "nlsq_joint", "parameters.json")),
              f"{what}: a result written")


def main():
    cfg, data, flat = setup()
    nlsq_ref = test_joint_nlsq(cfg)
    test_joint_cmc(cfg, nlsq_ref)
    test_batch_joint(cfg, data, flat)
    flat_cfg = write("flat.yaml", open(cfg).read().replace(data, flat))
    test_failing_ring(flat_cfg)
    test_failing_joint(flat_cfg)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
