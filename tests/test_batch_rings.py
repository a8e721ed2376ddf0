"""test_batch_rings.py — `xpcsfit batch` with several q rings per file (adr/0065
addendum, adr/0066): a config whose wavevector_q selects several rings fits every ring of
every file into OUT/<file>/nlsq/q_<q>/ (the same bytes as `xpcsfit nlsq` of that file),
with the file's rings.csv, rings.json and params_vs_q.png in OUT/<file>/nlsq/; with
optimization.rings: joint each file gets one joint fit in OUT/<file>/nlsq_joint/ (the
same estimate as `nlsq --joint`). The batch summary keeps one row per file; its column
`rings` points at the file's table. --resume skips a file whose rings are whole and
redoes one whose ring summary is missing. A file with a ring that fails is recorded
failed, its other rings written and its table still named."""
import csv
import json
import os
import shutil

import h5py
import numpy as np

from aps_fixtures import check, run, run_tests, tmp_dir

T = tmp_dir()
RINGS = [0.003, 0.0054, 0.008]
FOLDERS = ["q_0.003", "q_0.0054", "q_0.008"]
FILES = ["a", "b"]
N = 24
OUT = os.path.join(T, "per_ring")
JOINT = os.path.join(T, "joint")


def cfg(name, q, joint=False):
    path = os.path.join(T, name + ".yaml")
    lines = ["analysis_mode: static", "analyzer_parameters:", "  dt: 0.001",
             "  end_frame: %d" % N, "  scattering: {wavevector_q: %s}" % q,
             "initial_parameters: {parameter_names: [D0, alpha, D_offset], "
             "values: [3000, -1.2, 0]}"]
    if joint:
        lines.append("optimization: {rings: joint}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def data(name):
    return os.path.join(T, name + ".h5")


def batch(config, out, *extra):
    return run(["batch", "--config", config, "--out", out, "--threads", "1", "--no-plots"] +
               list(extra) + [data(n) for n in FILES])


def summary(out):
    with open(os.path.join(out, "batch_summary.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(out, "batch_summary.json")) as f:
        return rows, json.load(f)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def setup():
    for d in (OUT, JOINT):
        shutil.rmtree(d, ignore_errors=True)
    for seed, name in enumerate(FILES):
        rc, _, err = run(["simulate", "--config", cfg("sim", 0.0054), "--phi", "0,45,90",
                          "--q", ",".join("%g" % q for q in RINGS), "--out", data(name),
                          "--noise", "0.002", "--seed", str(5 + seed), "--force"])
        check(rc == 0, "simulate %s: %s" % (name, err))


def test_per_ring_folders():
    """Every ring of every file in OUT/<file>/nlsq/q_<q>/, the ring table beside them."""
    rc, _, err = batch(cfg("all", "all"), OUT)
    check(rc == 0, "batch q: all: %d %s" % (rc, err))
    for name in FILES:
        top = os.path.join(OUT, name, "nlsq")
        got = sorted(n for n in os.listdir(top) if n.startswith("q_"))
        check(got == FOLDERS, "%s: folders %s" % (name, got))
        for f in ("rings.csv", "rings.json"):
            check(os.path.isfile(os.path.join(top, f)), "%s: %s" % (name, f))
        check(not os.path.exists(os.path.join(top, "INCOMPLETE")), name + ": complete")
        for ring in FOLDERS:
            check(os.path.isfile(os.path.join(top, ring, "parameters.json")),
                  "%s/%s parameters.json" % (name, ring))
        with open(os.path.join(top, "rings.csv")) as f:
            check(len(list(csv.DictReader(f))) == len(RINGS), name + ": a row per ring")


def test_summary_row_per_file():
    """One row per file, status ok, the column rings naming the file's rings.csv."""
    rows, js = summary(OUT)
    check([r["name"] for r in rows] == FILES, "rows %s" % [r["name"] for r in rows])
    for r, o in zip(rows, js["files"]):
        check(r["status"] == "ok", "%s status %s" % (r["name"], r["status"]))
        want = "%s/nlsq/rings.csv" % r["name"]
        check(r["rings"] == want and o["rings"] == want, "rings %r %r" % (r["rings"], o["rings"]))
        check(os.path.isfile(os.path.join(OUT, want)), "the pointer names a file")
        check(r["q"] == "" and r["D0"] == "", "no single-ring values in a per-ring row")
    check(js["n_ok"] == 2 and js["n_failed"] == 0, "counts %s" % js)


def test_same_as_nlsq():
    """A file's ring folders hold the bytes `xpcsfit nlsq` writes for that file."""
    one = os.path.join(T, "nlsq_a")
    rc, _, err = run(["nlsq", "--config", cfg("all", "all"), "--data", data("a"), "--out", one,
                      "--threads", "1", "--no-plots", "--force"])
    check(rc == 0, "nlsq a: " + err)
    for ring in FOLDERS:
        check(read(os.path.join(one, "nlsq", ring, "results.h5")) ==
              read(os.path.join(OUT, "a", "nlsq", ring, "results.h5")),
              ring + ": results.h5 bytes")


def test_resume_per_file():
    """--resume skips the whole files; a file whose ring summary is gone is redone alone."""
    marker = os.path.join(OUT, "a", "nlsq", "q_0.003", "results.h5")
    before = os.stat(marker).st_mtime_ns
    rc, _, err = batch(cfg("all", "all"), OUT, "--resume")
    check(rc == 0, "resume: %d %s" % (rc, err))
    check(err.count("complete already (--resume)") == 2, "both skipped: " + err)
    check(os.stat(marker).st_mtime_ns == before, "a file that is whole is not refitted")
    os.remove(os.path.join(OUT, "b", "nlsq", "rings.json"))
    rc, _, err = batch(cfg("all", "all"), OUT, "--resume")
    check(rc == 0, "resume after removal: %d %s" % (rc, err))
    check("a.h5 complete already" in err, "a skipped: " + err)
    check("b.h5: rerun: previous run incomplete" in err, "b redone: " + err)
    check(os.path.isfile(os.path.join(OUT, "b", "nlsq", "rings.json")), "b's table rewritten")
    rc, _, err = batch(cfg("all", "all"), OUT)
    check(rc == 2 and "add --resume or --force" in err, "finished needs --resume/--force")


def test_joint_per_file():
    """optimization.rings: joint: one joint fit per file in OUT/<file>/nlsq_joint/, its
    shared parameters in the file's row, the same estimate as nlsq --joint."""
    rc, _, err = batch(cfg("joint", "all", joint=True), JOINT)
    check(rc == 0, "batch joint: %d %s" % (rc, err))
    rows, js = summary(JOINT)
    for r in rows:
        folder = os.path.join(JOINT, r["name"], "nlsq_joint")
        check(os.path.isfile(os.path.join(folder, "parameters.json")), r["name"] + " joint")
        check(not os.path.exists(os.path.join(JOINT, r["name"], "nlsq")), "no per-ring folder")
        check(r["status"] == "ok", "status " + r["status"])
        check(r["rings"] == "%s/nlsq_joint/parameters.json" % r["name"], "rings " + r["rings"])
        check(r["q"] == "", "a joint row has no single q: %r" % r["q"])
        with open(os.path.join(folder, "parameters.json")) as f:
            p = json.load(f)
        check(float(r["D0"]) == p["parameters"]["D0"]["value"], "D0 from the joint fit")
    alone = os.path.join(T, "joint_a")
    rc, _, err = run(["nlsq", "--joint", "--config", cfg("all", "all"), "--data", data("a"),
                      "--out", alone, "--threads", "1", "--no-plots", "--force"])
    check(rc == 0, "nlsq --joint a: " + err)
    with open(os.path.join(alone, "nlsq_joint", "parameters.json")) as f:
        p = json.load(f)
    check(float(rows[0]["D0"]) == p["parameters"]["D0"]["value"], "same estimate as nlsq --joint")
    rc, _, err = batch(cfg("joint", "all", joint=True), JOINT, "--resume")
    check(rc == 0 and err.count("complete already (--resume)") == 2, "joint resume: " + err)


def test_failing_ring_fails_the_file():
    """A ring whose maps are flat fails; its file is recorded failed with the ring named,
    the other rings of the file are written, and the other file is unaffected."""
    bad = os.path.join(T, "flat.h5")
    shutil.copyfile(data("a"), bad)
    with h5py.File(bad, "a") as f:  # the last ring's 3 maps (ring-major bins 7..9)
        for k in (7, 8, 9):
            m = f["xpcs/twotime/correlation_map/c2_%05d" % k]
            m[...] = np.zeros(m.shape)
    out = os.path.join(T, "failing")
    shutil.rmtree(out, ignore_errors=True)
    rc, _, err = run(["batch", "--config", cfg("all", "all"), "--out", out, "--threads", "1",
                      "--no-plots", bad, data("b")])
    check(rc == 1, "exit 1: %d %s" % (rc, err))
    rows, _ = summary(out)
    check([r["status"] for r in rows] == ["failed", "ok"], "statuses %s" % rows)
    check("ring q 0.008 1/A: error" in rows[0]["message"], "message " + rows[0]["message"])
    check(rows[0]["rings"] == "flat/nlsq/rings.csv", "pointer " + rows[0]["rings"])
    top = os.path.join(out, "flat", "nlsq")
    check(sorted(n for n in os.listdir(top) if n.startswith("q_")) == FOLDERS[:2],
          "the rings that fitted are written")


if __name__ == "__main__":
    setup()
    raise SystemExit(run_tests([test_per_ring_folders, test_summary_row_per_file,
                                test_same_as_nlsq, test_resume_per_file,
                                test_joint_per_file, test_failing_ring_fails_the_file]))
