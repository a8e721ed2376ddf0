#!/usr/bin/env python3
"""xpcsfit batch (docs/cli.md "batch", adr/0023): four files with one truncated (three
results, the failure in the summary, exit 1); results byte-equal to single nlsq runs; the
refusal of finished results without --resume/--force; SIGKILL mid-batch then --resume
(finished files untouched, the rest done, exit 0); SIGINT/SIGTERM (130/143, the summary
true); --overrides (per-file dt and q applied and recorded); --task/--tasks (each input
run exactly once, a final --resume reruns nothing); --list (comments, relative paths);
--method fit (summary from the CMC posterior); --resume compares the resolved settings,
naming why a file is rerun (adr/0057); --max-runs (the bounded summary step of a job
array: at most N files fitted, the rest left as they were, exit 1 saying so); the fit's
goodness under its own name (chi2_red only with sigma given, residual_sd without:
adr/0062); the config read once per batch (an edit during the batch changes no file).
Bad command lines and CSVs are in tests/bad_inputs/cases_batch.py."""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_batch")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

CONFIG = """analysis_mode: static
analyzer_parameters:
  dt: 0.1
  end_frame: 40
  scattering: {{wavevector_q: {q}}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {{D_offset: 0}}
optimization:
  cmc:
    seed: 3
    sharding: {{num_shards: 2}}
    per_shard_mcmc: {{num_warmup: 100, num_samples: 100, num_chains: 2}}
"""
NOISE = ("*** PLPLOT", "HDF5-DIAG", "Segmentation fault", "Aborted", "AddressSanitizer",
         "LeakSanitizer", "runtime error:")
from tally import check, summary as tally_summary  # noqa: E402
from waits import RUN_GUARD_S  # noqa: E402


def run(*args, env=None, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([XF, *args], capture_output=True, text=True, errors="replace", env=e,
                       cwd=cwd or TMP, timeout=RUN_GUARD_S)
    for n in NOISE:
        check(n not in r.stderr, f"{args[0]}: noise {n!r} on stderr: {r.stderr[-400:]}")
    return r


def write(name, text):
    path = os.path.join(TMP, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def simulate(name, seed, q="0.0054", dt="0.1"):
    cfg = write(f"sim_{name}.yaml", CONFIG.format(q=q).replace("dt: 0.1", f"dt: {dt}"))
    out = os.path.join(TMP, name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    r = run("simulate", "--config", cfg, "--phi", "0,45,90", "--out", out, "--seed", str(seed))
    check(r.returncode == 0, f"simulate {name}: {r.stderr}")
    return out


def summary(out):
    with open(os.path.join(out, "batch_summary.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(out, "batch_summary.json")) as f:
        js = json.load(f)
    return rows, js


def params(d):
    with open(os.path.join(d, "parameters.json")) as f:
        p = json.load(f)
    p.pop("timing_s", None)
    return p


def error_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("xpcsfit: error:")]


def complete(d):
    return (os.path.exists(os.path.join(d, "parameters.json"))
            and not os.path.exists(os.path.join(d, "INCOMPLETE")))


def stamps(d):
    """inode and mtime of every file of a result folder"""
    found = {}
    for root, _, files in os.walk(d):
        for f in files:
            st = os.stat(os.path.join(root, f))
            found[os.path.relpath(os.path.join(root, f), d)] = (st.st_ino, st.st_mtime_ns)
    return found


CFG = write("c.yaml", CONFIG.format(q="0.0054"))
FILES = [simulate(f"s{k}.h5", k + 1) for k in range(4)]
with open(FILES[3], "rb") as f:
    head = f.read(3000)
BAD = write("bad.h5", "")
with open(BAD, "wb") as f:
    f.write(head)


def test_failure_isolation():
    out = os.path.join(TMP, "b1")
    inputs = [FILES[0], FILES[1], BAD, FILES[2]]
    r = run("batch", "--config", CFG, "--out", out, *inputs, "--no-plots")
    check(r.returncode == 1, f"one bad file: exit {r.returncode}, want 1: {r.stderr[-600:]}")
    lines = error_lines(r.stderr)
    check(len(lines) == 1 and lines[0].startswith(f"xpcsfit: error: {BAD}: "),
          f"one error line prefixed with the file: {lines}")
    for k in (0, 1, 2):
        name = os.path.basename(FILES[k])[:-3]
        check(complete(os.path.join(out, name, "nlsq")), f"{name} complete")
    rows, js = summary(out)
    check([r["name"] for r in rows] == ["s0", "s1", "bad", "s2"], f"rows {rows}")
    check([r["status"] for r in rows] == ["ok", "ok", "failed", "ok"], "statuses")
    bad = rows[2]
    check("truncated" in bad["message"] or "damaged" in bad["message"],
          f"the failure's message: {bad['message']}")
    check(bad["D0"] == "" and bad["chi2_red"] == "", "no values for the failed file")
    check(float(rows[0]["D0"]) > 0 and float(rows[0]["D0_sd"]) > 0, "D0 and its sd")
    check(rows[0]["D_offset_sd"] == "", "fixed parameter: empty sd")
    check(rows[0]["n_angles"] == "3" and float(rows[0]["q"]) == 0.0054, "q, n_angles")
    check(js["n_ok"] == 3 and js["n_failed"] == 1 and js["n_pending"] == 0, f"counts {js}")
    check(js["files"][2]["message"] == bad["message"], "json message = csv message")
    with open(os.path.join(out, "s0", "batch.json")) as f:
        rec = json.load(f)
    check(rec["status"] == "ok" and rec["input"] == FILES[0] and len(rec["input_crc32"]) == 8,
          f"batch.json {rec}")
    progress = [l for l in r.stderr.splitlines() if l.startswith("xpcsfit: batch: ")]
    check(len(progress) == 4 and "4/4 files done, 1 failed" in progress[-1],
          f"progress lines {progress}")

    # determinism: each file's result equals a single nlsq run of it, byte for byte
    for k in (0, 1, 2):
        single = os.path.join(TMP, f"single{k}")
        r1 = run("nlsq", "--config", CFG, "--data", FILES[k], "--out", single, "--no-plots")
        check(r1.returncode == 0, f"single nlsq {k}")
        a = os.path.join(single, "nlsq")
        b = os.path.join(out, f"s{k}", "nlsq")
        with open(os.path.join(a, "results.h5"), "rb") as fa, \
                open(os.path.join(b, "results.h5"), "rb") as fb:
            check(fa.read() == fb.read(), f"s{k}: results.h5 differs from the single run")
        check(params(a) == params(b), f"s{k}: parameters.json differs (timings aside)")

    # a finished result is refused without --resume/--force, nothing touched
    before = stamps(os.path.join(out, "s0"))
    r = run("batch", "--config", CFG, "--out", out, *inputs, "--no-plots")
    check(r.returncode == 2 and "--resume or --force" in r.stderr, f"refusal: {r.stderr}")
    check(stamps(os.path.join(out, "s0")) == before, "refused batch touched nothing")

    # --force redoes everything (same bytes); --resume only the failed one
    r = run("batch", "--config", CFG, "--out", out, *inputs, "--no-plots", "--resume")
    check(r.returncode == 1, f"--resume with the bad file still there: {r.returncode}")
    check(stamps(os.path.join(out, "s0")) == before, "--resume left s0 alone")
    check(r.stderr.count("complete already (--resume)") == 3, "three skipped")
    r = run("batch", "--config", CFG, "--out", out, FILES[0], "--no-plots", "--force")
    check(r.returncode == 0, f"--force: {r.stderr[-400:]}")
    check(stamps(os.path.join(out, "s0", "nlsq"))["results.h5"]
          != before["nlsq/results.h5"], "--force rewrote results.h5")
    # the summary covers the inputs of this command only
    rows, _ = summary(out)
    check([r["name"] for r in rows] == ["s0"], "summary of the --force run")

    # a changed config reruns on --resume
    cfg2 = write("c2.yaml", CONFIG.format(q="0.0054").replace("values: [8000", "values: [7000"))
    r = run("batch", "--config", cfg2, "--out", out, FILES[0], "--no-plots", "--resume")
    check(r.returncode == 0 and "complete already" not in r.stderr,
          f"changed config reruns: {r.stderr[-300:]}")


# A guard against a hang, never a measure: every wait below is for a state.
GUARD_S = 300


def wait_for_ok(out, n, proc, timeout=GUARD_S):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout and proc.poll() is None:
        try:
            rows, _ = summary(out)
            if sum(r["status"] == "ok" for r in rows) >= n:
                return True
        except (OSError, ValueError, KeyError, json.JSONDecodeError):
            pass
        time.sleep(0.05)
    return False


def wait_for_line(proc, needle, lines):
    """Read proc's stderr until a line holds needle (True) or it ends (False); the lines
    read are kept in lines."""
    for line in proc.stderr:
        lines.append(line)
        if needle in line:
            return True
    return False


def test_kill_and_resume():
    out = os.path.join(TMP, "b2")
    inputs = FILES[:3]
    # the second file's load is held until the kill: the first is finished then, the
    # second and third not, however busy the machine
    env = dict(os.environ, XPCSFIT_TEST_PAUSE="load#2:3600")
    p = subprocess.Popen([XF, "batch", "--config", CFG, "--out", out, *inputs],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=env, cwd=TMP)
    lines = []
    held = wait_for_line(p, "test pause in load", lines)
    got = held and wait_for_ok(out, 1, p)
    p.send_signal(signal.SIGKILL)
    p.communicate()
    check(got, f"the first file finished before the kill: {''.join(lines)[-500:]}")
    rows, js = summary(out)
    check([r["status"] for r in rows] == ["ok", "pending", "pending"],
          f"summary after SIGKILL is true: {[r['status'] for r in rows]}")
    before = stamps(os.path.join(out, "s0"))
    r = run("batch", "--config", CFG, "--out", out, *inputs, "--resume")
    check(r.returncode == 0, f"--resume after SIGKILL: {r.returncode} {r.stderr[-500:]}")
    check(stamps(os.path.join(out, "s0")) == before, "finished file untouched (inode, mtime)")
    check(r.stderr.count("complete already (--resume)") == 1, "only s0 skipped")
    rows, js = summary(out)
    check([r["status"] for r in rows] == ["ok"] * 3 and js["n_ok"] == 3, "summary complete")
    for k in range(3):
        check(complete(os.path.join(out, f"s{k}", "nlsq")), f"s{k} complete after --resume")


def test_signals():
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        out = os.path.join(TMP, f"b3_{code}")
        # the second file's fit is held (an hour) until the signal: the signal lands in it
        env = dict(os.environ, XPCSFIT_TEST_PAUSE="fit#2:3600")
        p = subprocess.Popen([XF, "batch", "--config", CFG, "--out", out, *FILES[:3],
                              "--no-plots"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=TMP)
        lines = []
        held = wait_for_line(p, "test pause in fit", lines)
        got = held and wait_for_ok(out, 1, p)
        p.send_signal(sig)
        guard = threading.Timer(GUARD_S, p.kill)
        guard.start()
        err = "".join(lines) + p.stderr.read()
        p.wait()
        guard.cancel()
        # an end at all within the guard is the signal's: the pause would last an hour
        check(got and p.returncode == code, f"{sig.name}: exit {p.returncode}, want {code}")
        check(len(error_lines(err)) == 1, f"{sig.name}: one error line: {err[-500:]}")
        rows, _ = summary(out)
        check([r["status"] for r in rows] == ["ok", "pending", "pending"],
              f"{sig.name}: summary true: {[r['status'] for r in rows]}")


def test_overrides():
    out = os.path.join(TMP, "b4")
    a = simulate("ov/a.h5", 11, dt="0.2")
    b = simulate("ov/b.h5", 12, q="0.0080")
    csvp = write("ov/o.csv", "file,dt,q\n# a comment\nov/a.h5,0.2,\nb,,0.0080\n")
    r = run("batch", "--config", CFG, "--out", out, a, b, "--overrides", csvp, "--no-plots")
    check(r.returncode == 0, f"overrides: {r.stderr[-500:]}")
    pa, pb = params(os.path.join(out, "a", "nlsq")), params(os.path.join(out, "b", "nlsq"))
    check(pa["data"]["dt_s"] == 0.2 and pb["data"]["dt_s"] == 0.1, "per-file dt applied")
    with open(os.path.join(out, "a", "nlsq", "run.log")) as f:
        log = f.read()
    check("override: analyzer_parameters.dt = 0.2 (" in log, "run.log records the override")
    with open(os.path.join(out, "b", "nlsq", "run.log")) as f:
        log = f.read()
    check("override: analyzer_parameters.scattering.wavevector_q = 0.0080" in log,
          "run.log records the q override")
    check("dt 0.2 s (config)" in open(os.path.join(out, "a", "nlsq", "run.log")).read(),
          "dt from the (overridden) config")
    # the same as a single run with the overridden config
    cfg_a = write("ov/ca.yaml", CONFIG.format(q="0.0054").replace("dt: 0.1", "dt: 0.2"))
    single = os.path.join(TMP, "ov_single")
    run("nlsq", "--config", cfg_a, "--data", a, "--out", single, "--no-plots")
    ps = params(os.path.join(single, "nlsq"))
    check(ps["parameters"] == pa["parameters"], "override = a config that says so")
    # a changed override reruns under --resume; the unchanged file is skipped
    write("ov/o.csv", "file,dt,q\nov/a.h5,0.25,\nb,,0.0080\n")
    r = run("batch", "--config", CFG, "--out", out, a, b, "--overrides", csvp, "--no-plots",
            "--resume")
    check(r.returncode == 0 and r.stderr.count("complete already") == 1,
          f"changed override reruns a only: {r.stderr[-400:]}")
    check(params(os.path.join(out, "a", "nlsq"))["data"]["dt_s"] == 0.25, "new dt")


def test_tasks_and_list():
    out = os.path.join(TMP, "b5")
    os.makedirs(os.path.join(TMP, "lists"), exist_ok=True)
    lst = write("lists/inputs.txt", "# the series\n\n../s0.h5\n  ../s1.h5  \n%s\n../s2.h5\n"
                % FILES[3].replace("s3.h5", "bad.h5"))
    ran = []
    for k in range(3):
        r = run("batch", "--config", CFG, "--out", out, "--list", lst, "--no-plots",
                "--task", str(k), "--tasks", "3")
        want = 1 if k == 2 else 0  # bad.h5 is index 2
        check(r.returncode == want, f"task {k}: exit {r.returncode}: {r.stderr[-300:]}")
        ran.append([l.split("; ")[-1].split(" ")[0] for l in r.stderr.splitlines()
                    if l.startswith("xpcsfit: batch (task")])
        rows, _ = summary(out)
        check(len(rows) == 4, "the summary lists every input")
    flat = sorted(os.path.basename(p) for t in ran for p in t)
    check(flat == ["bad.h5", "s0.h5", "s1.h5", "s2.h5"], f"each input exactly once: {ran}")
    check([os.path.basename(p) for p in ran[0]] == ["s0.h5", "s2.h5"], f"task 0: {ran[0]}")
    rows, js = summary(out)
    check(rows[0]["file"].endswith("lists/../s0.h5"), f"list paths relative: {rows[0]}")
    check(js["n_ok"] == 3 and js["n_failed"] == 1, f"after the three tasks: {js}")
    stamp = stamps(os.path.join(out, "s0"))
    r = run("batch", "--config", CFG, "--out", out, "--list", lst, "--no-plots", "--resume")
    check(r.returncode == 1 and r.stderr.count("complete already") == 3,
          f"final --resume reruns only the failed one: {r.stderr[-400:]}")
    check(stamps(os.path.join(out, "s0")) == stamp, "final --resume left s0 alone")


def test_fit_method():
    out = os.path.join(TMP, "b6")
    r = run("batch", "--config", CFG, "--out", out, FILES[0], "--method", "fit", "--no-plots")
    check(r.returncode == 0, f"--method fit: {r.stderr[-500:]}")
    check(complete(os.path.join(out, "s0", "nlsq")) and complete(os.path.join(out, "s0", "cmc")),
          "nlsq and cmc folders")
    rows, _ = summary(out)
    with open(os.path.join(out, "s0", "cmc", "parameters.json")) as f:
        cmc = json.load(f)
    d0 = cmc["parameters"]["D0"]
    check(float(rows[0]["D0"]) == d0["value"] == d0["mean"], "D0 = the posterior mean")
    check(float(rows[0]["D0_sd"]) == d0["uncertainty"] == d0["std"], "D0_sd = posterior sd")


def test_goodness_columns():
    """Without sigma the "reduced chi2" is the residual variance (4e-6 for noise 0.002):
    the summary calls it what it is, residual_sd, as parameters.json does; chi2_red is
    filled only when sigma is given."""
    for sigma, out in ((None, "goodness_nosigma"), ("0.002", "goodness_sigma")):
        out = os.path.join(TMP, out)
        extra = ["--set", f"optimization.nlsq.sigma={sigma}"] if sigma else []
        r = run("batch", "--config", CFG, "--out", out, FILES[0], "--no-plots", *extra)
        check(r.returncode == 0, f"batch sigma {sigma}: {r.stderr[-400:]}")
        rows, js = summary(out)
        with open(os.path.join(out, "batch_summary.csv")) as f:
            head = f.readline().strip().split(",")
        check(head[5:7] == ["chi2_red", "residual_sd"], f"goodness columns: {head}")
        p = params(os.path.join(out, "s0", "nlsq"))
        row, jrow = rows[0], js["files"][0]
        if sigma:
            check(float(row["chi2_red"]) == p["reduced_chi_squared"] and
                  row["residual_sd"] == "", f"sigma given: chi2_red only: {row}")
            check(0.5 < float(row["chi2_red"]) < 2.0, f"a real reduced chi2: {row}")
            check(jrow["chi2_red"] == p["reduced_chi_squared"] and jrow["residual_sd"] is None,
                  f"json sigma given: {jrow}")
        else:
            check(row["chi2_red"] == "" and float(row["residual_sd"]) == p["residual_sd"],
                  f"sigma not given: residual_sd only: {row}")
            check(jrow["chi2_red"] is None and jrow["residual_sd"] == p["residual_sd"],
                  f"json sigma not given: {jrow}")


def test_resume_fingerprint():
    """--resume compares the resolved settings (adr/0057), not the config's bytes: a
    comment, key order, layout or number spelling reruns nothing; a real change reruns,
    naming the key on the console and in run.log; a record of an earlier xpcsfit (no
    settings) falls back to the config's bytes."""
    out = os.path.join(TMP, "fingerprint")
    files = [simulate("fp/f0.h5", 41), simulate("fp/f1.h5", 42)]
    r = run("batch", "--config", CFG, "--out", out, *files, "--no-plots")
    check(r.returncode == 0, f"first batch: {r.stderr[-300:]}")
    before = {k: stamps(os.path.join(out, f"f{k}")) for k in (0, 1)}
    same = ("# the same settings, written differently\n"
            "optimization:\n  cmc:\n"
            "    per_shard_mcmc: {num_chains: 2, num_samples: 1.0e2, num_warmup: 100}\n"
            "    sharding:\n      num_shards: 2   # two\n    seed: 3\n"
            "initial_parameters:\n  fixed_parameters: {D_offset: 0.0}\n"
            "  values: [8.0e+3, -0.10, 0]\n  parameter_names: [D0, alpha, D_offset]\n"
            "analyzer_parameters:\n  scattering:\n    wavevector_q: 0.0054\n"
            "  end_frame: 40\n  dt: 1e-1\n"
            "analysis_mode: static\n")
    cfg_same = write("fp/same.yaml", same)
    r = run("batch", "--config", cfg_same, "--out", out, *files, "--no-plots", "--resume")
    check(r.returncode == 0 and r.stderr.count("complete already (--resume)") == 2
          and "rerun" not in r.stderr, f"comments and key order rerun: {r.stderr[-600:]}")
    check(all(stamps(os.path.join(out, f"f{k}")) == before[k] for k in (0, 1)),
          "nothing rewritten")
    # a real change: the key and both values named, on the console and in run.log
    cfg_new = write("fp/new.yaml", same.replace("values: [8.0e+3", "values: [7000"))
    r = run("batch", "--config", cfg_new, "--out", out, files[0], "--no-plots", "--resume")
    why = "rerun: settings changed (initial_parameters.values[0] 8000 -> 7000)"
    check(r.returncode == 0 and f"xpcsfit: batch: {files[0]}: {why}" in r.stderr,
          f"the reason on the console: {r.stderr[-600:]}")
    with open(os.path.join(out, "f0", "nlsq", "run.log")) as f:
        check(why in f.read(), "the reason in run.log")
    with open(os.path.join(out, "f0", "batch.json")) as f:
        rec = json.load(f)
    check(rec["settings"]["initial_parameters.values[0]"] == "7000"
          and len(rec["settings_crc32"]) == 8, f"settings recorded: {rec.get('settings')}")
    # an override on the command line is a setting too
    r = run("batch", "--config", cfg_new, "--out", out, files[0], "--no-plots", "--resume",
            "--set", "analyzer_parameters.end_frame=35")
    check(r.returncode == 0 and "analyzer_parameters.end_frame 40 -> 35" in r.stderr,
          f"an override reruns: {r.stderr[-400:]}")
    # an input changed, and a previous run that did not finish
    r = run("batch", "--config", cfg_new, "--out", out, files[0], "--no-plots", "--resume",
            "--set", "analyzer_parameters.end_frame=35")
    check("complete already" in r.stderr, f"unchanged: skipped: {r.stderr[-300:]}")
    with open(files[0], "ab") as f:
        f.write(b"\0")
    open(os.path.join(out, "f1", "nlsq", "INCOMPLETE"), "w").close()
    r = run("batch", "--config", cfg_same, "--out", out, *files, "--no-plots", "--resume")
    check("rerun: input changed" in r.stderr and
          f"{files[1]}: rerun: previous run incomplete" in r.stderr,
          f"input changed / incomplete: {r.stderr[-600:]}")
    # a record of an xpcsfit before settings fingerprints: the config's bytes decide
    path = os.path.join(out, "f1", "batch.json")
    with open(path) as f:
        rec = json.load(f)
    for key in ("settings", "settings_crc32"):
        rec.pop(key)
    with open(path, "w") as f:
        json.dump(rec, f)
    r = run("batch", "--config", cfg_same, "--out", out, files[1], "--no-plots", "--resume")
    check("complete already" in r.stderr, f"old record, same bytes: {r.stderr[-300:]}")
    with open(path) as f:
        check("settings" not in json.load(f), "a skipped file's record is not rewritten")
    r = run("batch", "--config", CFG, "--out", out, files[1], "--no-plots", "--resume")
    check("rerun: settings fingerprint changed" in r.stderr,
          f"old record, other bytes: {r.stderr[-300:]}")


def test_config_read_once():
    """The config is read once per batch: an edit made while the batch runs (here while
    the second file is held just before its load) changes no file. The second file's
    result is the unedited config's, byte for byte, its run.log records the text it was
    fitted with, and both records name the same config bytes."""
    out = os.path.join(TMP, "read_once")
    cfg = write("read_once.yaml", CONFIG.format(q="0.0054"))
    p = subprocess.Popen([XF, "batch", "--config", cfg, "--out", out, FILES[0], FILES[1],
                          "--no-plots"], env=dict(os.environ, XPCSFIT_TEST_PAUSE="load#2:5"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=TMP)
    lines = []
    check(wait_for_line(p, "test pause in load", lines),
          f"the second file held before its load: {''.join(lines)[-400:]}")
    write("read_once.yaml", CONFIG.format(q="0.0054").replace("values: [8000", "values: [7000"))
    _, err = p.communicate(timeout=RUN_GUARD_S)
    check(p.returncode == 0, f"batch: {p.returncode} {err[-400:]}")
    single = os.path.join(TMP, "read_once_single")
    r = run("nlsq", "--config", CFG, "--data", FILES[1], "--out", single, "--no-plots")
    check(r.returncode == 0, f"single nlsq: {r.stderr[-300:]}")
    with open(os.path.join(single, "nlsq", "results.h5"), "rb") as fa, \
            open(os.path.join(out, "s1", "nlsq", "results.h5"), "rb") as fb:
        check(fa.read() == fb.read(), "s1: results.h5 as the unedited config's")
    with open(os.path.join(out, "s1", "nlsq", "run.log")) as f:
        log = f.read()
    check("values: [8000" in log and "values: [7000" not in log,
          "s1/run.log: the config text it was fitted with")
    crc = []
    for name in ("s0", "s1"):
        with open(os.path.join(out, name, "batch.json")) as f:
            crc.append(json.load(f)["config_crc32"])
    check(crc[0] == crc[1], f"both records name the bytes read at the start: {crc}")


def test_max_runs():
    """--max-runs N fits at most N files (complete ones skipped by --resume do not count),
    leaves the others as they were (never run: pending), says how many in one error line
    and exits 1; --max-runs 0 only rewrites the summary; a cap not reached changes
    nothing."""
    out = os.path.join(TMP, "b7")
    files = [FILES[0], FILES[1], FILES[2], BAD]
    r = run("batch", "--config", CFG, "--out", out, "--no-plots", FILES[0])
    check(r.returncode == 0, f"first file: {r.stderr[-300:]}")
    stamp = stamps(os.path.join(out, "s0"))
    r = run("batch", "--config", CFG, "--out", out, "--no-plots", "--resume", "--max-runs",
            "1", *files)
    errs = error_lines(r.stderr)
    check(r.returncode == 1, f"--max-runs 1: exit {r.returncode}: {r.stderr[-400:]}")
    check(len(errs) == 1 and "--max-runs 1 reached: 2 files not run" in errs[0]
          and "--resume" in errs[0], f"--max-runs 1: one line: {errs}")
    check(stamps(os.path.join(out, "s0")) == stamp, "the complete file is not counted nor touched")
    check(complete(os.path.join(out, "s1", "nlsq")), "the one run allowed: s1")
    check(not os.path.exists(os.path.join(out, "s2")) and
          not os.path.exists(os.path.join(out, "bad")), "s2 and bad.h5 not run")
    rows, js = summary(out)
    check([x["status"] for x in rows] == ["ok", "ok", "pending", "pending"],
          f"summary after --max-runs 1: {[x['status'] for x in rows]}")
    check("1 files run" not in r.stdout and "2 ok, 0 failed, 2 pending of 4 files" in r.stdout,
          f"totals: {r.stdout[-200:]}")
    r = run("batch", "--config", CFG, "--out", out, "--no-plots", "--resume", "--max-runs",
            "0", *files)
    check(r.returncode == 1 and "--max-runs 0 reached: 2 files not run" in r.stderr
          and "nlsq:" not in r.stdout, f"--max-runs 0: summary only: {r.stderr[-300:]}")
    r = run("batch", "--config", CFG, "--out", out, "--no-plots", "--resume", "--max-runs",
            "5", *files)
    check(r.returncode == 1 and "--max-runs" not in r.stderr and len(error_lines(r.stderr)) == 1,
          f"--max-runs 5 not reached: only bad.h5 fails: {r.stderr[-400:]}")
    rows, _ = summary(out)
    check([x["status"] for x in rows] == ["ok", "ok", "ok", "failed"], f"{rows}")


for t in (test_failure_isolation, test_kill_and_resume, test_signals, test_overrides,
          test_tasks_and_list, test_fit_method, test_resume_fingerprint, test_max_runs,
          test_goodness_columns, test_config_read_once):
    print("--", t.__name__)
    t()
sys.exit(tally_summary())
