"""test_rings.py — per-ring mode of `xpcsfit nlsq` (adr/0065): a config whose
wavevector_q selects several rings fits each ring into DIR/nlsq/q_<q>/, every folder the
same bytes (results.h5; parameters.json but for its timings) as a run whose wavevector_q
is that ring's single value; the bytes do not depend on --threads; rings.csv and
rings.json hold each folder's parameters.json values; params_vs_q.png is drawn; a ring
that fails gives exit 1, is named in one line, and the other rings are still written; a
finished per-ring result is only replaced with --force; an interrupted one is redone; cmc
--nlsq DIR fits every ring from that ring's NLSQ folder into DIR/cmc/q_<q>/ (same bytes as
the one-ring cmc run)."""
import csv
import json
import os
import shutil
import signal
import subprocess

import h5py
import numpy as np

from aps_fixtures import binary, check, run, run_tests, tmp_dir
from waits import GUARD_S, read_until

T = tmp_dir()
RINGS = [0.003, 0.0054, 0.008]
FOLDERS = ["q_0.003", "q_0.0054", "q_0.008"]
PHI = [-10.0, 0.0, 45.0, 90.0]
N = 24
DATA = os.path.join(T, "rings.h5")
OUT1 = os.path.join(T, "all_t1")
OUT3 = os.path.join(T, "all_t3")


def cfg(name, q):
    path = os.path.join(T, name + ".yaml")
    with open(path, "w") as f:
        f.write("\n".join([
            "analysis_mode: static", "analyzer_parameters:", "  dt: 0.001",
            "  end_frame: %d" % N, "  scattering: {wavevector_q: %s}" % q,
            "initial_parameters: {parameter_names: [D0, alpha, D_offset], "
            "values: [3000, -1.2, 0]}"]) + "\n")
    return path


def nlsq(config, out, data=DATA, *extra):
    return run(["nlsq", "--config", config, "--data", data, "--out", out] + list(extra))


def setup():
    rc, _, err = run(["simulate", "--config", cfg("sim", 0.0054), "--phi",
                      ",".join("%g" % p for p in PHI), "--q",
                      ",".join("%g" % q for q in RINGS), "--out", DATA, "--noise", "0.002",
                      "--seed", "5", "--force"])
    check(rc == 0, "simulate: " + err)
    for out, threads in ((OUT1, "1"), (OUT3, "3")):
        rc, stdout, err = nlsq(cfg("all", "all"), out, DATA, "--threads", threads, "--force")
        check(rc == 0, "nlsq all --threads %s: %d %s" % (threads, rc, err))


def params(folder):
    with open(os.path.join(folder, "parameters.json")) as f:
        return json.load(f)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_one_folder_per_ring():
    top = os.path.join(OUT1, "nlsq")
    names = sorted(n for n in os.listdir(top) if n.startswith("q_"))
    check(names == FOLDERS, "folders %s" % names)
    check(not os.path.exists(os.path.join(top, "INCOMPLETE")), "top folder complete")
    for name in FOLDERS:
        d = os.path.join(top, name)
        for f in ("results.h5", "parameters.json", "run.log", "report.html", "plots"):
            check(os.path.exists(os.path.join(d, f)), "%s/%s" % (name, f))
        check(not os.path.exists(os.path.join(d, "INCOMPLETE")), name + " complete")


def without_timing(p):
    p = dict(p)
    p.pop("timing_s", None)
    p.pop("config", None)  # the config file's path: another file for the one-ring run
    return json.dumps(p, sort_keys=True)


def test_same_as_one_ring():
    """Each ring's folder holds the bytes of the run whose wavevector_q is that ring."""
    for q, name in zip(RINGS, FOLDERS):
        one = os.path.join(T, "one_" + name)
        rc, _, err = nlsq(cfg("one_" + name, q), one, DATA, "--threads", "1", "--force")
        check(rc == 0, "one ring %g: %s" % (q, err))
        ring = os.path.join(OUT1, "nlsq", name)
        check(read(os.path.join(ring, "results.h5")) ==
              read(os.path.join(one, "nlsq", "results.h5")), name + ": results.h5 bytes")
        check(without_timing(params(ring)) == without_timing(params(os.path.join(one, "nlsq"))),
              name + ": parameters.json")


def test_threads_same_bytes():
    for f in ["rings.csv", "rings.json", "params_vs_q.png", "report.html"] + \
            [os.path.join(n, "results.h5") for n in FOLDERS]:
        check(read(os.path.join(OUT1, "nlsq", f)) == read(os.path.join(OUT3, "nlsq", f)),
              f + ": same bytes with 1 and 3 threads")


def test_summary_matches_folders():
    top = os.path.join(OUT1, "nlsq")
    with open(os.path.join(top, "rings.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(top, "rings.json")) as f:
        js = json.load(f)["rings"]
    check(len(rows) == 3 and len(js) == 3, "three rings")
    for row, j, q, name in zip(rows, js, RINGS, FOLDERS):
        p = params(os.path.join(top, name))
        check(row["folder"] == name and j["folder"] == name, "folder " + name)
        check(abs(float(row["q_per_A"]) - q) <= 1e-12 and j["q_per_A"] == float(row["q_per_A"]),
              "q " + name)
        check(row["status"] == p["status"] == j["status"], "status " + name)
        check(row["quality"] == p["quality"]["overall"] == j["quality"], "quality " + name)
        for key in ("chi_squared", "reduced_chi_squared", "residual_sd"):
            check(float(row[key]) == p[key] == j[key], key + " " + name)
        for k in ("D0", "alpha", "D_offset"):
            v, u = p["parameters"][k]["value"], p["parameters"][k]["uncertainty"]
            check(float(row[k]) == v and float(row[k + "_sd"]) == u, "csv %s %s" % (name, k))
            check(j["parameters"][k]["value"] == v and j["parameters"][k]["uncertainty"] == u,
                  "json %s %s" % (name, k))


def test_plot_exists():
    png = read(os.path.join(OUT1, "nlsq", "params_vs_q.png"))
    check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000, "params_vs_q.png")


def test_failing_ring():
    """A ring whose maps are NaN fails alone: exit 1, named in one line, others written."""
    bad = os.path.join(T, "bad.h5")
    shutil.copy(DATA, bad)
    with h5py.File(bad, "r+") as f:
        g = f["/xpcs/twotime/correlation_map"]
        for k in sorted(g.keys())[4:8]:  # ring 1 (q 0.0054): maps 5..8, ring-major
            a = g[k][()]
            a[:] = np.nan
            g[k][...] = a
    out = os.path.join(T, "bad_out")
    shutil.rmtree(out, ignore_errors=True)
    rc, stdout, err = nlsq(cfg("all", "all"), out, bad, "--threads", "1", "--no-plots")
    check(rc == 1, "exit 1: %d %s" % (rc, err))
    check(sum("ring q 0.0054 1/A" in l and "error:" in l for l in err.splitlines()) == 1,
          "the failed ring named once: " + err)
    top = os.path.join(out, "nlsq")
    check(sorted(n for n in os.listdir(top) if n.startswith("q_")) == ["q_0.003", "q_0.008"],
          "the other rings written")
    with open(os.path.join(top, "rings.csv")) as f:
        rows = list(csv.DictReader(f))
    check([r["status"] for r in rows] == ["converged", "error", "converged"], "statuses")
    check(not os.path.exists(os.path.join(top, "INCOMPLETE")), "summary complete")
    check(not os.path.exists(os.path.join(top, "params_vs_q.png")), "--no-plots")


def test_finished_needs_force():
    rc, _, err = nlsq(cfg("all", "all"), OUT1, DATA, "--threads", "1")
    check(rc == 2 and "--force" in err, "finished result refused: %d %s" % (rc, err))
    out = os.path.join(T, "forced")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(OUT1, out)
    rc, _, err = nlsq(cfg("all", "all"), out, DATA, "--threads", "1", "--force")
    check(rc == 0, "--force: " + err)
    check(read(os.path.join(out, "nlsq", "rings.csv")) ==
          read(os.path.join(OUT1, "nlsq", "rings.csv")), "same summary again")


def test_interrupted_then_rerun():
    """SIGINT during the first ring's summary: exit 130, DIR/nlsq/ marked INCOMPLETE (the
    finished ring kept); the next run, without --force, redoes it whole."""
    out = os.path.join(T, "interrupted")
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, XPCSFIT_TEST_PAUSE="summary:3600")
    p = subprocess.Popen([binary(), "nlsq", "--config", cfg("all", "all"), "--data", DATA,
                          "--out", out, "--threads", "1", "-q"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    top = os.path.join(out, "nlsq")
    # the pause's line: the first ring's folder is complete and the run holds in its summary
    held, said = read_until(p.stderr, "test pause in summary")
    check(held and os.path.exists(os.path.join(top, "q_0.003", "run.log")),
          "the first ring finished, the run held in its summary: %s" % said[-300:])
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=GUARD_S)
    check(p.returncode == 130, "exit 130: %d %s" % (p.returncode, err))
    check(os.path.exists(os.path.join(top, "INCOMPLETE")), "marked incomplete")
    check(not os.path.exists(os.path.join(top, "rings.csv")), "no summary")
    check(not os.path.exists(os.path.join(top, "report.html")), "no page")
    rc, _, err = nlsq(cfg("all", "all"), out, DATA, "--threads", "1")
    check(rc == 0, "rerun without --force: " + err)
    check(not os.path.exists(os.path.join(top, "INCOMPLETE")), "complete after the rerun")
    check(read(os.path.join(top, "rings.csv")) == read(os.path.join(OUT1, "nlsq", "rings.csv")),
          "the same summary")


def cmc_cfg(name, q):
    path = cfg(name, q)
    with open(path, "a") as f:
        f.write("optimization:\n  cmc:\n    seed: 7\n")
    return path


def test_cmc_per_ring():
    """cmc --nlsq DIR with several rings: each ring starts from DIR/nlsq/q_<q>/ and is
    written to OUT/cmc/q_<q>/, the same results.h5 bytes as the one-ring cmc run; the
    summary holds each ring's posterior value and uncertainty."""
    out = os.path.join(T, "cmc_all")
    shutil.rmtree(out, ignore_errors=True)
    rc, _, err = run(["cmc", "--config", cmc_cfg("cmc_all", "all"), "--data", DATA, "--out",
                      out, "--nlsq", OUT1, "--threads", "2", "--no-plots"])
    check(rc == 0, "cmc all: %d %s" % (rc, err))
    top = os.path.join(out, "cmc")
    check(sorted(n for n in os.listdir(top) if n.startswith("q_")) == FOLDERS, "cmc folders")
    check(not os.path.exists(os.path.join(out, "nlsq")), "no NLSQ folder with --nlsq")
    with open(os.path.join(top, "rings.csv")) as f:
        rows = list(csv.DictReader(f))
    for row, name in zip(rows, FOLDERS):
        p = params(os.path.join(top, name))
        check(row["status"] == p["convergence_status"] or row["status"] == p.get("status"),
              "status " + name)
        for k in ("D0", "alpha", "D_offset"):
            v, u = p["parameters"][k]["value"], p["parameters"][k]["uncertainty"]
            check(float(row[k]) == v and float(row[k + "_sd"]) == u, "cmc %s %s" % (name, k))
    one = os.path.join(T, "cmc_one")
    shutil.rmtree(one, ignore_errors=True)
    rc, _, err = run(["cmc", "--config", cmc_cfg("cmc_one", 0.0054), "--data", DATA, "--out",
                      one, "--nlsq", os.path.join(OUT1, "nlsq", "q_0.0054"), "--threads",
                      "2", "--no-plots"])
    check(rc == 0, "cmc one ring: " + err)
    check(read(os.path.join(top, "q_0.0054", "results.h5")) ==
          read(os.path.join(one, "cmc", "results.h5")), "cmc q_0.0054: results.h5 bytes")


def test_config_warning_once():
    """A config warning is said once per run, not once per ring (the config is parsed for
    the selection and again by every ring); each ring's run.log holds it once, as the
    ring's own run."""
    path = cfg("warn", "all")
    with open(path) as f:
        text = f.read().replace("  dt: 0.001", "  dt: 0.001\n  temporal: {frame_interval: 2}")
    with open(path, "w") as f:
        f.write(text)
    out = os.path.join(T, "warn_out")
    rc, _, err = nlsq(path, out, DATA, "--threads", "1", "--no-plots", "--force")
    check(rc == 0, "nlsq: %d %s" % (rc, err))
    check(err.count("frame_interval 2 is not supported") == 1, "warned once: " + err)
    for folder in FOLDERS:
        log = read(os.path.join(out, "nlsq", folder, "run.log")).decode()
        check(log.count("frame_interval 2 is not supported") == 1,
              "%s/run.log: the warning once" % folder)
        check(log.count("command: nlsq") == 1, "%s/run.log: its own run only" % folder)


def test_config_read_once():
    """The config file is read once per run, when the command starts: an edit made while
    the rings run (here while the second ring is held just before its load) changes no
    ring, nor one made before a one-ring run's load. Every ring's folder is the unedited
    run's, byte for byte, and its run.log records the text the rings were fitted with."""
    path = cfg("edited", "all")
    out = os.path.join(T, "edited_out")
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, XPCSFIT_TEST_PAUSE="load#2:5")
    p = subprocess.Popen([binary(), "nlsq", "--config", path, "--data", DATA, "--out", out,
                          "--threads", "1", "--no-plots"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    held, said = read_until(p.stderr, "test pause in load")
    check(held, "the second ring held before its load: %s" % said[-300:])
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:  # another frame time: another fit, were it read again
        f.write(text.replace("  dt: 0.001", "  dt: 0.002"))
    _, err = p.communicate(timeout=GUARD_S)
    check(p.returncode == 0, "nlsq: %d %s" % (p.returncode, err))
    for name in FOLDERS:
        ring = os.path.join(out, "nlsq", name)
        check(read(os.path.join(ring, "results.h5")) ==
              read(os.path.join(OUT1, "nlsq", name, "results.h5")),
              name + ": results.h5 as the unedited config's")
        log = read(os.path.join(ring, "run.log")).decode()
        check("  dt: 0.001" in log and "  dt: 0.002" not in log,
              name + "/run.log: the config text the ring was fitted with")
    # one ring: the run is held at its only load, after the command read the bytes
    path = cfg("edited_one", 0.0054)
    out = os.path.join(T, "edited_one_out")
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, XPCSFIT_TEST_PAUSE="load#1:5")
    p = subprocess.Popen([binary(), "nlsq", "--config", path, "--data", DATA, "--out", out,
                          "--threads", "1", "--no-plots"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    held, said = read_until(p.stderr, "test pause in load")
    check(held, "the one-ring run held before its load: %s" % said[-300:])
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace("  dt: 0.001", "  dt: 0.002"))
    _, err = p.communicate(timeout=GUARD_S)
    check(p.returncode == 0, "one ring: %d %s" % (p.returncode, err))
    check(read(os.path.join(out, "nlsq", "results.h5")) ==
          read(os.path.join(OUT1, "nlsq", "q_0.0054", "results.h5")),
          "one ring: results.h5 as the unedited config's")


def ring_folders(top):
    return sorted(n for n in os.listdir(top) if n.startswith("q_"))


def test_force_removes_stale_rings():
    """--force with another selection: the ring folders the new run does not select are
    removed (DIR/nlsq/ holds this run's rings only); a one-ring run over a per-ring result
    leaves no ring folder; a ring folder holding a file of the user's is kept, said once."""
    out = os.path.join(T, "stale")
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(OUT1, out)
    top = os.path.join(out, "nlsq")
    rc, _, err = nlsq(cfg("two", "[0.003, 0.008]"), out, DATA, "--threads", "1",
                      "--no-plots", "--force")
    check(rc == 0, "--force, two rings: " + err)
    check(ring_folders(top) == ["q_0.003", "q_0.008"], "stale q_0.0054 removed: %s"
          % ring_folders(top))
    with open(os.path.join(top, "rings.csv")) as f:
        check(len(list(csv.DictReader(f))) == 2, "the table lists the two rings")
    # a per-ring result replaced by a one-ring result: no ring folder left beside it
    with open(os.path.join(top, "q_0.008", "notes.txt"), "w") as f:
        f.write("mine\n")
    rc, _, err = nlsq(cfg("one", "0.0054"), out, DATA, "--threads", "1", "--no-plots",
                      "--force")
    check(rc == 0, "--force, one ring: " + err)
    check(ring_folders(top) == ["q_0.008"], "q_0.003 removed: %s" % ring_folders(top))
    check(os.listdir(os.path.join(top, "q_0.008")) == ["notes.txt"],
          "only the user's file left in the kept folder")
    check(err.count("stale ring folder kept") == 1 and "q_0.008" in err, err)
    check(os.path.isfile(os.path.join(top, "parameters.json"))
          and not os.path.exists(os.path.join(top, "rings.csv")), "the one-ring result")


if __name__ == "__main__":
    setup()
    raise SystemExit(run_tests([test_one_folder_per_ring, test_same_as_one_ring,
                                test_threads_same_bytes, test_summary_matches_folders,
                                test_plot_exists, test_failing_ring, test_finished_needs_force,
                                test_interrupted_then_rerun, test_cmc_per_ring,
                                test_config_warning_once, test_config_read_once,
                                test_force_removes_stale_rings]))
