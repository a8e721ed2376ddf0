"""run_faults.py — allocation-failure loop (issue 9; adr/0019-fuzzing-and-fault-injection.md).

Runs `xpcsfit_faults` (the CLI linked with tests/faults/fail_alloc.c) once without a
failure to count the wrapped allocations T, then once per N in 1..T with the N-th
allocation failing (XF_FAIL_ALLOC=N). Every run must end either
  - exit 1 with exactly one "xpcsfit: error:" line that says "memory" (or, from the
    result writers, "cannot write ..."), no sanitizer,
    LeakSanitizer (exit 23) or HDF5 noise, and (nlsq) no parameters.json written; or
  - exit 0 with the same result as the run without a failure (an allocation whose
    failure has a fallback, e.g. plot workers drawn in-process).
A crash, a hang, a leak, a second error line or an exit 0 with a different result fails.

batch: two files and an overrides CSV; a failing allocation may fail one file (its line
prefixed with the file, the other file done) or the whole batch before any file runs, and
a summary that is written never calls a file ok whose folder is not whole.

usage: run_faults.py validate|validate_rings|validate_joint|nlsq|laminar|batch SCRATCH [--full] [--stride S] [--head H]
Without --full: every N up to H (default 400), then every S-th (default 7) — the
`make test` variant; with --full every N (label slow)."""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "helpers"))

NOISE = ("HDF5-DIAG", "#000:", "AddressSanitizer", "runtime error:", "LeakSanitizer",
         "Segmentation fault", "Aborted", "*** PLPLOT")

CONFIG = """analysis_mode: {mode}
experimental_data:
  file_path: data.h5
analyzer_parameters:
  dt: 0.1
  start_frame: 1
  end_frame: {frames}
  scattering: {{wavevector_q: {q}}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: {names}
  values: {values}
{fixed}optimization:
  nlsq:
    max_iterations: 20
{extra}"""

CASES = {
    "validate": dict(mode="static", frames=12, names="[D0, alpha, D_offset]",
                     values="[1000.0, -0.5, 0.0]", extra="", fixed="", phi="0,90"),
    "nlsq": dict(mode="static", frames=12, names="[D0, alpha, D_offset]",
                 values="[1000.0, -0.5, 0.0]", extra="", fixed="", phi="0,90"),
    "laminar": dict(mode="laminar_flow", frames=16,
                    names="[D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]",
                    values="[1000.0, -0.5, 0.0, 0.01, 0.0, 0.0, 0.0]",
                    extra="    multi_start: {enable: true, n_starts: 3, seed: 42}\n",
                    fixed="  fixed_parameters: {gamma_dot_t_offset: 0.0, D_offset: 0.0}\n",
                    phi="-30,0,45,90"),
    "batch": dict(mode="static", frames=12, names="[D0, alpha, D_offset]",
                  values="[1000.0, -0.5, 0.0]", extra="", fixed="", phi="0,90"),
    # several q rings (issue 26): validate's plan per ring (JSON) and of the joint fit
    "validate_rings": dict(mode="static", frames=12, names="[D0, alpha, D_offset]",
                           values="[1000.0, -0.5, 0.0]", extra="", fixed="", phi="0,90",
                           q="all", rings="0.01,0.02"),
    "validate_joint": dict(mode="static", frames=12, names="[D0, alpha, D_offset]",
                           values="[1000.0, -0.5, 0.0]", extra="  rings: joint\n", fixed="",
                           phi="0,90", q="all", rings="0.01,0.02"),
}


def command(which):
    if which in ("validate", "validate_joint"):
        return ["validate", "--config", "cfg.yaml"]
    if which == "validate_rings":
        return ["validate", "--config", "cfg.yaml", "--json"]
    if which == "batch":
        return ["batch", "--config", "cfg.yaml", "--out", "out", "data.h5", "data2.h5",
                "--overrides", "o.csv", "--threads", "1", "--no-plots"]
    return ["nlsq", "--config", "cfg.yaml", "--out", "out", "--threads", "1", "--no-plots"]


def setup(which, scratch):
    if os.path.exists(scratch):
        shutil.rmtree(scratch)
    os.makedirs(scratch)
    c = dict(q="0.01", rings=None)
    c.update(CASES[which])
    rings = ["--q", c["rings"]] if c["rings"] else []
    with open(os.path.join(scratch, "cfg.yaml"), "w") as f:  # simulate takes one q or a list
        f.write(CONFIG.format(**dict(c, q="0.01")))
    subprocess.run([os.environ["XF_BINARY"], "simulate", "--config", "cfg.yaml", "--phi",
                    c["phi"], "--out", "data.h5", "--frames", str(c["frames"])] + rings,
                   cwd=scratch, check=True, capture_output=True)
    with open(os.path.join(scratch, "cfg.yaml"), "w") as f:
        f.write(CONFIG.format(**c))
    if which == "batch":
        subprocess.run([os.environ["XF_BINARY"], "simulate", "--config", "cfg.yaml", "--phi",
                        c["phi"], "--out", "data2.h5", "--frames", str(c["frames"]),
                        "--seed", "5"], cwd=scratch, check=True, capture_output=True)
        with open(os.path.join(scratch, "o.csv"), "w") as f:
            f.write("file,dt,optimization.nlsq.max_iterations\ndata2,0.1,20\n")


def batch_result(scratch):
    """The summary without wall times, and each file's parameters.json without timings."""
    p = os.path.join(scratch, "out", "batch_summary.csv")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        rows = [r for r in csv.DictReader(f)]
    for r in rows:
        r.pop("wall_s")
        q = os.path.join(scratch, "out", r["name"], "nlsq", "parameters.json")
        if os.path.exists(q):
            with open(q) as f:
                d = json.load(f)
            d.pop("timing_s", None)
            r["parameters.json"] = d
    return json.dumps(rows, sort_keys=True)


def batch_summary_true(scratch):
    """None when every row the summary calls ok has a whole folder; else the row."""
    p = os.path.join(scratch, "out", "batch_summary.csv")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        for r in csv.DictReader(f):
            d = os.path.join(scratch, "out", r["name"], "nlsq")
            whole = (os.path.exists(os.path.join(d, "parameters.json"))
                     and not os.path.exists(os.path.join(d, "INCOMPLETE")))
            if r["status"] == "ok" and not whole:
                return r
    return None


def result_of(which, scratch, stdout):
    """What a successful run produced, for comparison (no timings)."""
    if which.startswith("validate"):
        return stdout
    if which == "batch":
        return batch_result(scratch)
    p = os.path.join(scratch, "out", "nlsq", "parameters.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        d = json.load(f)
    d.pop("timing_s", None)
    return json.dumps(d, sort_keys=True)


def run_once(which, scratch, n, report=None):
    out = os.path.join(scratch, "out")
    if os.path.exists(out):
        shutil.rmtree(out)
    env = dict(os.environ)
    env["XF_FAIL_ALLOC"] = str(n)
    if report:
        env["XF_FAIL_ALLOC_REPORT"] = report
    try:
        p = subprocess.run([os.environ["XF_FAULTS_BINARY"]] + command(which), cwd=scratch,
                           env=env, capture_output=True, text=True, errors="replace",
                           timeout=600, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, "", "hung for 120 s"
    return p.returncode, p.stdout, p.stderr


def check(which, scratch, n, reference, rc, out, err):
    """None when the run with allocation n failing behaved; else what went wrong."""
    if rc is None:
        return err
    lines = [l for l in err.splitlines() if l.startswith("xpcsfit: error:")]
    noise = [x for x in NOISE if x in err]
    if noise:
        return "rc %d, %s in stderr: %s" % (rc, noise[0], err[-1500:])
    if rc == 23:
        return "leak (LeakSanitizer): " + err[-1500:]
    if rc == 0:
        if lines:
            return "exit 0 with an error line: %s" % lines
        if result_of(which, scratch, out) != reference:
            return "exit 0 but the result differs from the run without a failure"
        return None
    if rc != 1:
        return "exit %d (want 1 or 0): %s" % (rc, err[-800:])
    if len(lines) != 1:
        return "want one error line, got %d: %s" % (len(lines), err[-800:])
    line = lines[0]
    if which == "batch":  # a file's failure is prefixed with the file
        for name in ("data.h5: ", "data2.h5: "):
            line = line.replace("xpcsfit: error: " + name, "xpcsfit: error: ", 1)
        bad = batch_summary_true(scratch)
        if bad:
            return "the summary calls a file ok whose folder is not whole: %s" % bad
    # the result writers (src/io) report a failed write, whatever the cause, as
    # "cannot write <what>, <file>": one line, exit 1, nothing under a final name
    if "memory" not in line and not line.startswith("xpcsfit: error: cannot write "):
        return "error line does not name the cause: %s" % lines[0]
    if which in ("nlsq", "laminar") and os.path.exists(os.path.join(scratch, "out", "nlsq",
                                                           "parameters.json")):
        return "parameters.json written by a failed run"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("which", choices=sorted(CASES))
    ap.add_argument("scratch")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--stride", type=int, default=7)
    ap.add_argument("--head", type=int, default=400)
    a = ap.parse_args()
    scratch = os.path.abspath(a.scratch)
    setup(a.which, scratch)
    report = os.path.join(scratch, "count.txt")
    rc, out, err = run_once(a.which, scratch, 0, report)
    if rc != 0:
        print("FAIL: the run without a failure exits %s: %s" % (rc, err[-800:]))
        return 1
    reference = result_of(a.which, scratch, out)
    with open(report) as f:
        total = int(f.read())
    ns = [n for n in range(1, total + 1)
          if a.full or n <= a.head or (n - a.head) % a.stride == 0]
    failures, exits = [], {}
    for n in ns:
        rc, out, err = run_once(a.which, scratch, n)
        exits[rc] = exits.get(rc, 0) + 1
        why = check(a.which, scratch, n, reference, rc, out, err)
        if why:
            failures.append((n, why))
            print("FAIL N=%d: %s" % (n, why))
    print("%s: %d allocations wrapped; failed each of %d of them (%s); exits %s; %d bad"
          % (a.which, total, len(ns), "all" if len(ns) == total else "head %d + stride %d"
             % (a.head, a.stride), dict(sorted(exits.items(), key=str)), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
