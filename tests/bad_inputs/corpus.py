"""corpus.py — the bad-input corpus (issue 9): what a case is and how one is checked.

A case builds its inputs in a scratch folder, runs one xpcsfit command and expects an
exit code and one error line naming the problem. Cases live in the cases_*.py modules of
this folder, one per class of trouble (data files, configs, outputs and paths, fits,
batch runs in cases_batch.py);
each module has a list CASES. docs/errors.md is written from the same list
(make_errors_doc.py), so the page and the tests cannot drift apart.

A case is a dict:
  name     short id, unique, [a-z0-9_]
  klass    the class of trouble it belongs to (a heading of docs/errors.md)
  make     function(scratch_dir) -> list of CLI arguments (without the program name);
           it writes whatever files the case needs under scratch_dir
  rc       expected exit code (1 run/data, 2 usage/config, 130/143 signals)
  needles  substrings the single "xpcsfit: error:" line must contain
  fix      what the user should do (one sentence, for docs/errors.md)
  check    optional function(scratch_dir, rc, stdout, stderr) -> None, raising
           AssertionError for anything more (e.g. nothing written that looks like a result)
  env      optional dict of extra environment variables
  preexec  optional function run in the child just before xpcsfit starts (resource
           limits: a file size limit stands in for a full disk)
  timeout  optional seconds (default 60); running past it is a failure (a hang). Only a
           guard: it is raised to GUARD_S, so that a busy machine never trips it
"""
import os
import re
import shutil
import subprocess

NOISE = ("HDF5-DIAG", "#000:", "AddressSanitizer", "runtime error:", "LeakSanitizer",
         "*** PLPLOT", "Can't open", "Segmentation fault", "Aborted", "libpng")


def binary():
    return os.path.abspath(os.environ["XF_BINARY"])


def all_cases():
    """Every case of every cases_*.py module beside this file, in module then list order."""
    import importlib
    here = os.path.dirname(os.path.abspath(__file__))
    cases = []
    for fn in sorted(os.listdir(here)):
        if fn.startswith("cases_") and fn.endswith(".py"):
            mod = importlib.import_module(fn[:-3])
            cases.extend(mod.CASES)
    names = [c["name"] for c in cases]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise AssertionError("duplicate case names: %s" % ", ".join(dup))
    return cases


def run_case(case, scratch):
    """Build and run one case in an empty scratch folder; returns (rc, stdout, stderr)."""
    if os.path.exists(scratch):
        shutil.rmtree(scratch)
    os.makedirs(scratch)
    args = case["make"](scratch)
    env = dict(os.environ)
    env.update(case.get("env") or {})
    p = subprocess.run([binary()] + list(args), capture_output=True, text=True,
                       errors="replace", env=env, cwd=scratch,
                       timeout=guard_s(case), stdin=subprocess.DEVNULL,
                       preexec_fn=case.get("preexec"))
    return p.returncode, p.stdout, p.stderr


# A hang never ends: a guard of minutes finds it as well as one of seconds, and a refusal
# that takes 2 s idle can take 30 s on a machine whose cores are busy (issue 33).
GUARD_S = 300


def guard_s(case):
    return max(case.get("timeout", 60), GUARD_S)


def error_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("xpcsfit: error:")]


def check_case(case, scratch):
    """Run a case and check it; returns its error line. Raises AssertionError."""
    try:
        rc, out, err = run_case(case, scratch)
    except subprocess.TimeoutExpired:
        raise AssertionError("hung for more than %ss" % guard_s(case))
    lines = error_lines(err)
    if rc != case["rc"]:
        raise AssertionError("exit %d, want %d; stderr: %s" % (rc, case["rc"], err[-800:]))
    if len(lines) != 1:
        raise AssertionError("want one error line, got %d: %s" % (len(lines), err[-800:]))
    for n in case["needles"]:
        if n not in lines[0]:
            raise AssertionError("%r not in %r" % (n, lines[0]))
    for n in NOISE:
        if n in err:
            raise AssertionError("noise %r on stderr: %s" % (n, err[-800:]))
    if case.get("check"):
        case["check"](scratch, rc, out, err)
    return lines[0]


def looks_like_result(folder):
    """Files under folder (recursively) that a user could take for a finished result:
    results.h5, posterior.nc, parameters.json, run.log or a PNG under its final name."""
    found = []
    for root, _, files in os.walk(folder):
        for f in files:
            if f in ("results.h5", "posterior.nc", "parameters.json", "run.log") or \
                    f.endswith(".png"):
                found.append(os.path.join(root, f))
    return found


def expect_nothing_written(subdir="out"):
    """A check: no result-looking file under scratch/subdir."""
    def check(scratch, rc, out, err):
        found = looks_like_result(os.path.join(scratch, subdir))
        if found:
            raise AssertionError("result-looking files written: %s" % found)
    return check


def generic(line, scratch):
    """An error line with the scratch path replaced, for docs/errors.md."""
    line = line.replace(scratch + "/", "").replace(scratch, ".")
    return re.sub(r"\.tmp\.\d+", ".tmp.PID", line)
