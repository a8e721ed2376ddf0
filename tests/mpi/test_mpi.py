#!/usr/bin/env python3
"""xpcsfit-mpi under mpirun (adr/0021, adr/0022): nlsq, cmc and fit give the bytes of the
serial xpcsfit for the layouts (ranks x threads) 1x1, 1x2, 2x1, 2x2, 3x1, and 3x1 with
every evaluator spread (XPCSFIT_TEST_DIST_ALL: the 1-block screening subsamples leave
ranks without blocks); an error every rank sees (a
corrupt file) and one only rank 0 sees (a finished result folder) end every rank with
one error line and the usual exit code, never a hang; so does an error on rank 1 alone
(MPMD launch with another --data there); in a batch, each failed file's error line
once whichever rank ran it. Exit 77 (skipped) without mpirun."""
import json
import os
import shutil
import signal
import subprocess
import sys

import h5py
import numpy as np

from small_configs import static_template
from same_result import same_array
from tally import check, summary

XF = os.environ["XF_BINARY"]
XF_MPI = os.environ["XF_MPI_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_mpi")
MPIRUN = shutil.which("mpirun")
if not MPIRUN:
    print("mpirun not found: skipped")
    sys.exit(77)
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

LAYOUTS = [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1)]
LAMINAR = """analysis_mode: laminar_flow
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.001
  end_frame: 150
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [{values}]
"""

STATIC = static_template(50, 7, 3)


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


def datasets(path):
    found = {}
    with h5py.File(path, "r") as h:
        h.visititems(lambda n, o: found.__setitem__(n, o[()])
                     if isinstance(o, h5py.Dataset) else None)
    return found


def without_timing(d):
    with open(os.path.join(d, "parameters.json")) as f:
        p = json.load(f)
    p.pop("timing_s", None)
    return p


def same_result(ref, d, what):
    """results.h5 byte for byte (every dataset), parameters.json but its timings."""
    da, db = datasets(os.path.join(ref, "results.h5")), datasets(os.path.join(d, "results.h5"))
    check(sorted(da) == sorted(db), f"{what}: dataset lists differ")
    for name in da:
        if name in db:
            check(same_array(da[name], db[name]), f"{what}: /{name} differs")
    check(without_timing(ref) == without_timing(d), f"{what}: parameters.json differs")


def one_error_line(r, code, words, what):
    lines = r.stderr.strip().splitlines()
    errors = [l for l in lines if l.startswith("xpcsfit: error:")]
    check(r.returncode == code, f"{what}: exit {r.returncode}, want {code}: {r.stderr}")
    check(len(errors) == 1, f"{what}: not one error line: {r.stderr!r}")
    for w in words:
        check(w in r.stderr, f"{what}: '{w}' not in {r.stderr!r}")


def test_nlsq():
    data = os.path.join(TMP, "lam.h5")
    r = run("simulate", "--config", write("truth.yaml", LAMINAR.format(
        data=data, values="1500, -1.1, 10.0, 0.015, -0.3, 0.0005, 1.5")),
        "--phi", "0,45,90,135", "--out", data, "--noise", "0.001")
    check(r.returncode == 0, f"simulate: {r.stderr}")
    cfg = write("lam.yaml", LAMINAR.format(data=data, values="1000, -0.6, 0.0, 0.01, 0.0, 0.0, 0.0"))
    r = run("nlsq", "--config", cfg, "--out", os.path.join(TMP, "ref"), "--threads", "1",
            "--no-plots", "--surfaces")
    check(r.returncode == 0, f"serial nlsq: {r.stderr}")
    ref = os.path.join(TMP, "ref", "nlsq")
    for ranks, threads in LAYOUTS:
        out = os.path.join(TMP, f"nlsq_{ranks}x{threads}")
        r = run_mpi(ranks, "nlsq", "--config", cfg, "--out", out, "--threads", str(threads),
                    "--no-plots", "--surfaces")
        check(r.returncode == 0, f"nlsq {ranks}x{threads}: exit {r.returncode}: {r.stderr}")
        if ranks > 1:
            check(f"{ranks} MPI ranks" in r.stderr, f"nlsq {ranks}x{threads}: ranks announced")
        check(r.stdout.count("results:") == 1, f"nlsq {ranks}x{threads}: one summary")
        same_result(ref, os.path.join(out, "nlsq"), f"nlsq {ranks}x{threads}")
    # every evaluator spread, the screening subsamples of 1 block too: ranks without blocks
    out = os.path.join(TMP, "nlsq_3x1_all")
    r = run_mpi(3, "nlsq", "--config", cfg, "--out", out, "--threads", "1", "--no-plots",
                "--surfaces", env={"XPCSFIT_TEST_DIST_ALL": "1"})
    check(r.returncode == 0, f"nlsq 3x1 every evaluator spread: {r.stderr}")
    same_result(ref, os.path.join(out, "nlsq"), "nlsq 3x1 every evaluator spread")
    held_bands(cfg, ref)
    return cfg


def band_bytes(n, n_phi, ranks, rank):
    """c2 bytes rank holds (adr/0027): the packed elements from the first to the last
    fitted pair of its blocks of 4096 pairs, every angle."""
    n_pairs = (n - 1) * (n - 2) // 2
    n_blocks = (n_pairs + 4095) // 4096
    base, extra = divmod(n_blocks, ranks)
    count = base + (rank < extra)
    first = rank * base + min(rank, extra)
    p0, p1 = first * 4096, min((first + count) * 4096, n_pairs)
    if p1 <= p0:
        return 0, p0, p1
    packed = lambda i, j: i * n - i * (i - 1) // 2 + (j - i)
    pairs = [(i, j) for i in range(1, n - 1) for j in range(i + 1, n)]
    (i0, j0), (i1, j1) = pairs[p0], pairs[p1 - 1]
    return (packed(i1, j1) - packed(i0, j0) + 1) * n_phi * 8, p0, p1


def held_bands(cfg, ref):
    """Each rank of an NLSQ run holds the c2 of its blocks' rows only, and the result is
    the serial one with neither surfaces nor plots (rank 0 never reads the window)."""
    for ranks in (2, 3):
        out = os.path.join(TMP, f"nlsq_held_{ranks}")
        r = run_mpi(ranks, "nlsq", "--config", cfg, "--out", out, "--threads", "1",
                    "--no-plots", "--no-surfaces", env={"XPCSFIT_MPI_ALL_OUTPUT": "1"})
        check(r.returncode == 0, f"nlsq held {ranks}: {r.stderr}")
        lines = [l.split() for l in r.stderr.splitlines() if " holds c2 " in l]
        check(len(lines) == ranks, f"nlsq held {ranks}: {len(lines)} held lines: {r.stderr}")
        log = open(os.path.join(out, "nlsq", "run.log")).read()
        n = int(log.split(" frames, dt ")[0].split()[-1])
        phis = int(log.split(" angles, ")[0].split()[-1])
        total = 0
        for w in lines:  # xpcsfit: rank R of N holds c2 B bytes, pairs A to Z
            rank, held = int(w[2]), int(w[7])
            want, p0, p1 = band_bytes(n, phis, ranks, rank)
            check(held == want, f"nlsq held {ranks}: rank {rank} holds {held}, want {want}")
            check(f"pairs {p0} to {p1}" in " ".join(w), f"nlsq held {ranks}: rank {rank} pairs")
            total += held
        window = n * (n + 1) // 2 * phis * 8
        check(total < window, f"nlsq held {ranks}: {total} bytes in all, window {window}")
        check(without_timing(ref) == without_timing(os.path.join(out, "nlsq")),
              f"nlsq held {ranks}: parameters.json differs")


def test_cmc():
    data = os.path.join(TMP, "s.h5")
    cfg = write("static.yaml", STATIC.format(data=data))
    r = run("simulate", "--config", cfg, "--phi", "0,60,120", "--out", data, "--noise",
            "0.002", "--seed", "1")
    check(r.returncode == 0, f"simulate: {r.stderr}")
    r = run("nlsq", "--config", cfg, "--out", os.path.join(TMP, "n"), "--no-plots",
            "--no-surfaces")
    check(r.returncode == 0, f"nlsq: {r.stderr}")
    nlsq = os.path.join(TMP, "n", "nlsq")
    ref = os.path.join(TMP, "cref")
    r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", ref, "--threads", "1", "--no-plots")
    check(r.returncode == 0, f"serial cmc: {r.stderr}")
    ref = os.path.join(ref, "cmc")
    shards = sorted(os.listdir(os.path.join(ref, "shards")))
    check(len(shards) == 3, "3 shard files")
    for ranks, threads in LAYOUTS:
        out = os.path.join(TMP, f"cmc_{ranks}x{threads}")
        r = run_mpi(ranks, "cmc", "--config", cfg, "--nlsq", nlsq, "--out", out, "--threads",
                    str(threads), "--no-plots")
        check(r.returncode == 0, f"cmc {ranks}x{threads}: exit {r.returncode}: {r.stderr}")
        d = os.path.join(out, "cmc")
        same_result(ref, d, f"cmc {ranks}x{threads}")
        for s in shards:  # rank 0's store holds every shard, the same bytes
            p = os.path.join(d, "shards", s)
            check(os.path.exists(p) and open(p, "rb").read() ==
                  open(os.path.join(ref, "shards", s), "rb").read(),
                  f"cmc {ranks}x{threads}: {s} differs")
    # --resume: every shard read back from rank 0's store, nothing sampled again
    out = os.path.join(TMP, "cmc_2x1")
    r = run_mpi(2, "cmc", "--config", cfg, "--nlsq", nlsq, "--out", out, "--resume",
                "--no-plots")
    check(r.returncode == 0 and "resumed 3 of 3" in r.stderr, f"cmc --resume: {r.stderr}")
    same_result(ref, os.path.join(out, "cmc"), "cmc --resume 2x1")
    test_cmc_interrupted_rank(cfg, nlsq, ref)
    # fit = nlsq then cmc
    r = run("fit", "--config", cfg, "--out", os.path.join(TMP, "fref"), "--threads", "1",
            "--no-plots")
    check(r.returncode == 0, f"serial fit: {r.stderr}")
    r = run_mpi(2, "fit", "--config", cfg, "--out", os.path.join(TMP, "fit_2x1"), "--threads",
                "1", "--no-plots")
    check(r.returncode == 0, f"fit 2x1: {r.stderr}")
    for m in ("nlsq", "cmc"):
        same_result(os.path.join(TMP, "fref", m), os.path.join(TMP, "fit_2x1", m), f"fit 2x1 {m}")
    return cfg, nlsq


def test_exact():
    """K = 1 (adr/0045): the importance route shares its points among the ranks, exact NUTS
    its likelihood passes (every rank runs the chains in step); both give the bytes of one
    process over 1-3 ranks and 1-2 threads."""
    data = os.path.join(TMP, "e.h5")
    cfg = write("exact.yaml", static_template(40, 5, 1).format(data=data))
    r = run("simulate", "--config", cfg, "--phi", "0,60,120", "--out", data, "--noise",
            "0.002", "--seed", "3")
    check(r.returncode == 0, f"simulate: {r.stderr}")
    r = run("nlsq", "--config", cfg, "--out", os.path.join(TMP, "en"), "--no-plots",
            "--no-surfaces")
    check(r.returncode == 0, f"nlsq: {r.stderr}")
    nlsq = os.path.join(TMP, "en", "nlsq")
    for route in ("auto", "nuts"):
        ref = os.path.join(TMP, f"eref_{route}")
        r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", ref, "--threads", "1",
                "--no-plots", "--set", f"optimization.cmc.route={route}")
        check(r.returncode == 0, f"serial cmc, route {route}: {r.stderr}")
        with open(os.path.join(ref, "cmc", "parameters.json")) as f:
            got = json.load(f)["posterior_route"]["route"]
        check(got == ("importance" if route == "auto" else "nuts"),
              f"route {route}: the posterior came by {got}")
        for ranks, threads in LAYOUTS:
            out = os.path.join(TMP, f"e_{route}_{ranks}x{threads}")
            r = run_mpi(ranks, "cmc", "--config", cfg, "--nlsq", nlsq, "--out", out,
                        "--threads", str(threads), "--no-plots", "--set",
                        f"optimization.cmc.route={route}")
            check(r.returncode == 0, f"cmc {route} {ranks}x{threads}: {r.stderr}")
            same_result(os.path.join(ref, "cmc"), os.path.join(out, "cmc"),
                        f"exact posterior, route {route}, {ranks}x{threads}")


def rank_pids(rank, out):
    """The processes of this test's run (its --out in the command line) with that rank."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if (cmd and os.path.basename(cmd[0]) == os.path.basename(XF_MPI).encode() and
                out.encode() in cmd and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env):
            found.append(int(pid))
    return found


def test_cmc_interrupted_rank(cfg, nlsq, ref):
    """adr/0038 over MPI: rank 1 (shard 1 of 3) gets SIGTERM between the two chains of
    shard 1 (XPCSFIT_TEST_PAUSE holds chain 1's start). Rank 0's store then holds only
    whole shards, shard 1 not among them; --resume gives the reference's bytes."""
    out = os.path.join(TMP, "cmc_int")
    p = subprocess.Popen([MPIRUN, "--oversubscribe", "-np", "2", XF_MPI, "cmc", "--config", cfg,
                          "--nlsq", nlsq, "--out", out, "--threads", "1", "--no-plots"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, XPCSFIT_TEST_PAUSE="cmc_chain_1_1:300",
                                  XPCSFIT_MPI_ALL_OUTPUT="1"))
    sent, err = False, []
    for line in p.stderr:
        err.append(line)
        if not sent and "test pause in cmc_chain_1_1" in line:
            for pid in rank_pids(1, out):
                os.kill(pid, signal.SIGTERM)
                sent = True
    rc = p.wait(timeout=600)  # a guard against a hang
    check(sent and rc != 0, f"cmc, rank 1 interrupted: sent {sent}, exit {rc}: {''.join(err)}")
    store = os.path.join(out, "cmc", "shards")
    names = sorted(os.listdir(store)) if os.path.isdir(store) else []
    check("shard_000001.bin" not in names, f"cmc, rank 1 interrupted: shard 1 stored: {names}")
    for n in names:
        with open(os.path.join(store, n), "rb") as f:
            head = f.read(8 + 8 + 16 + 8 + 4 + 8 + 8 + 160 + 8 * 2 + 2)
        check(head[:8] == b"XFSHARD2" and all(b in (1, 2) for b in head[-2:]),
              f"cmc, rank 1 interrupted: {n} is not whole")
    r = run_mpi(2, "cmc", "--config", cfg, "--nlsq", nlsq, "--out", out, "--resume",
                "--no-plots")
    check(r.returncode == 0, f"cmc --resume after rank 1 was interrupted: {r.stderr}")
    same_result(ref, os.path.join(out, "cmc"), "cmc --resume after rank 1 was interrupted")


def test_errors(lam_cfg, static_cfg, nlsq):
    # a corrupt file, seen by every rank: exit 1, one line, no hang (the timeout)
    bad = os.path.join(TMP, "corrupt.h5")
    with open(bad, "wb") as f:
        f.write(b"\x89HDF\r\n\x1a\n" + b"\0" * 300)
    for ranks in (2, 3):
        r = run_mpi(ranks, "nlsq", "--config", lam_cfg, "--data", bad, "--out",
                    os.path.join(TMP, f"bad{ranks}"))
        one_error_line(r, 1, ["corrupt.h5"], f"corrupt file, {ranks} ranks")
    # seen by rank 1 alone (MPMD: its own --data): rank 0 prints rank 1's error line
    good = os.path.join(TMP, "lam.h5")
    r = subprocess.run([MPIRUN, "--oversubscribe", "-np", "1", XF_MPI, "nlsq", "--config", lam_cfg,
                        "--data", good, "--out", os.path.join(TMP, "mpmd"), ":", "-np", "1",
                        XF_MPI, "nlsq", "--config", lam_cfg, "--data", bad, "--out",
                        os.path.join(TMP, "mpmd")], capture_output=True, text=True, timeout=1200)
    one_error_line(r, 1, ["corrupt.h5"], "corrupt file on rank 1 alone")
    check(not os.path.exists(os.path.join(TMP, "mpmd", "nlsq", "results.h5")),
          "rank 1's error: no result written")
    # seen by rank 0 alone: a finished result without --force (exit 2)
    r = run_mpi(2, "nlsq", "--config", lam_cfg, "--out", os.path.join(TMP, "nlsq_2x1"),
                "--no-plots")
    one_error_line(r, 2, ["--force"], "finished result folder, 2 ranks")
    # a config error: exit 2
    r = run_mpi(2, "cmc", "--config", os.path.join(TMP, "missing.yaml"), "--nlsq", nlsq,
                "--out", os.path.join(TMP, "nocfg"))
    one_error_line(r, 2, ["missing.yaml"], "missing config, 2 ranks")
    # χ² overflows (σ = 1e-300): the non-finite search, chained over the ranks when
    # they hold bands, names the serial run's point
    cfg = write("sigma.yaml", STATIC.format(data=os.path.join(TMP, "s.h5")).replace(
        "optimization:\n", "optimization:\n  nlsq: {sigma: 1.0e-300}\n"))
    r = run("nlsq", "--config", cfg, "--out", os.path.join(TMP, "sigma_1"), "--no-plots")
    want = [l for l in r.stderr.splitlines() if l.startswith("xpcsfit: error:")]
    check(r.returncode == 1 and len(want) == 1 and "σ = 1e-300" in want[0],
          f"σ = 1e-300 serial: {r.stderr}")
    for ranks in (2, 3):
        r = run_mpi(ranks, "nlsq", "--config", cfg, "--out", os.path.join(TMP, f"sigma_{ranks}"),
                    "--no-plots")
        one_error_line(r, 1, want, f"σ = 1e-300, {ranks} ranks")
    # a command of rank 0 alone (version) runs once
    r = run_mpi(2, "version")
    check(r.returncode == 0 and r.stdout.count("xpcsfit") == 1, f"version: {r.stdout!r}")


def test_batch(static_cfg):
    """batch over 2 and 3 ranks: the files spread over the ranks, each file's results the
    bytes of the serial batch, one summary of every file by rank 0; a corrupt file fails
    alone (exit 1) whichever rank had it; --task/--tasks compose with the ranks."""
    files = []
    for k in range(4):
        path = os.path.join(TMP, f"series_{k}.h5")
        r = run("simulate", "--config", static_cfg, "--phi", "0,90", "--out", path,
                "--seed", str(k + 1))
        check(r.returncode == 0, f"simulate {path}: {r.stderr}")
        files.append(path)
    bad = os.path.join(TMP, "series_bad.h5")
    with open(bad, "wb") as f:
        f.write(b"\x89HDF\r\n\x1a\n" + b"\0" * 300)
    files.insert(2, bad)
    ref = os.path.join(TMP, "batch_ref")
    r = run("batch", "--config", static_cfg, "--out", ref, "--threads", "1", "--no-plots",
            *files)
    check(r.returncode == 1, f"serial batch: exit {r.returncode}: {r.stderr}")
    for ranks in (2, 3):
        out = os.path.join(TMP, f"batch_{ranks}")
        r = run_mpi(ranks, "batch", "--config", static_cfg, "--out", out, "--threads", "1",
                    "--no-plots", *files)
        check(r.returncode == 1, f"batch {ranks} ranks: exit {r.returncode}: {r.stderr}")
        check(r.stdout.count("batch: 4 ok, 1 failed, 0 pending of 5 files") == 1,
              f"batch {ranks} ranks: one total line: {r.stdout!r}")
        with open(os.path.join(out, "batch_summary.json")) as f:
            summ = json.load(f)
        status = {os.path.basename(e["file"]): e["status"] for e in summ["files"]}
        check(status == {os.path.basename(p): "failed" if p == bad else "ok" for p in files},
              f"batch {ranks} ranks: summary {status}")
        for p in files:
            if p != bad:
                name = os.path.basename(p)[:-3]
                same_result(os.path.join(ref, name, "nlsq"), os.path.join(out, name, "nlsq"),
                            f"batch {ranks} ranks, {name}")
    # an array task of 2 on 2 ranks: files 0 and 2 of task 0 over the ranks, the rest
    # pending; then the final --resume on 2 ranks completes them
    out = os.path.join(TMP, "batch_task")
    r = run_mpi(2, "batch", "--config", static_cfg, "--out", out, "--threads", "1",
                "--no-plots", "--task", "0", "--tasks", "2", *files)
    check(r.returncode == 1 and "2 ok, 1 failed, 2 pending of 5 files" in r.stdout,
          f"batch task 0 of 2 on 2 ranks: exit {r.returncode}: {r.stdout!r} {r.stderr!r}")
    r = run_mpi(2, "batch", "--config", static_cfg, "--out", out, "--threads", "1",
                "--no-plots", "--resume", *files)
    check(r.returncode == 1 and "4 ok, 1 failed, 0 pending of 5 files" in r.stdout,
          f"batch --resume on 2 ranks: exit {r.returncode}: {r.stdout!r} {r.stderr!r}")


def test_batch_error_lines(static_cfg):
    """A bad file's error line reaches stderr exactly once whichever rank ran it (issue 24
    item 9: the other ranks' stderr goes to /dev/null, and the lines of rank 1 and 2 were
    lost): the lines of the serial batch, each once, with 2 ranks (bad files on ranks 1
    and 0) and 3 ranks (on ranks 1 and 2), and with XPCSFIT_MPI_ALL_OUTPUT=1."""
    bad = []
    for name in ("bad_a.h5", "bad_b.h5"):
        path = os.path.join(TMP, name)
        with open(path, "wb") as f:
            f.write(b"\x89HDF\r\n\x1a\n" + b"\0" * 300)
        bad.append(path)
    missing = os.path.join(TMP, "missing_c.h5")  # a refusal of another kind
    files = [os.path.join(TMP, "series_0.h5"), bad[0], bad[1], missing,
             os.path.join(TMP, "series_1.h5")]
    r = run("batch", "--config", static_cfg, "--out", os.path.join(TMP, "lines_ref"),
            "--threads", "1", "--no-plots", *files)
    want = sorted(l for l in r.stderr.splitlines() if l.startswith("xpcsfit: error:"))
    check(r.returncode == 1 and len(want) == 3, f"serial batch error lines: {r.stderr!r}")
    for ranks, env in ((2, None), (3, None), (3, {"XPCSFIT_MPI_ALL_OUTPUT": "1"})):
        what = f"batch error lines, {ranks} ranks{' (all output)' if env else ''}"
        r = run_mpi(ranks, "batch", "--config", static_cfg, "--out",
                    os.path.join(TMP, f"lines_{ranks}_{int(bool(env))}"), "--threads", "1",
                    "--no-plots", "-q", *files, env=env)
        got = sorted(l for l in r.stderr.splitlines() if l.startswith("xpcsfit: error:"))
        check(r.returncode == 1, f"{what}: exit {r.returncode}: {r.stderr!r}")
        check(got == want, f"{what}: {got} want {want}")


def main():
    lam_cfg = test_nlsq()
    static_cfg, nlsq = test_cmc()
    test_exact()
    test_errors(lam_cfg, static_cfg, nlsq)
    test_batch(static_cfg)
    test_batch_error_lines(static_cfg)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
