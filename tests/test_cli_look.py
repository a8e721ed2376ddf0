#!/usr/bin/env python3
"""The user's surface of issue 11 (adr/0028): `xpcsfit plot --config` draws the selected
data without a fit (one whole PNG per angle and overview.png, nothing else written);
`xpcsfit plot OUT` finds OUT/nlsq; -q prints nothing on success and still the error line
on failure; -v prints more; progress through a pipe is paced (not one line per
iteration); -h and --help on every subcommand exit 0 with the usage on stdout."""
import os
import re
import shutil
import subprocess
import time

from small_configs import static_template
from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cli_look")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
COMMANDS = ["simulate", "validate", "nlsq", "cmc", "fit", "batch", "plot", "config"]


def run(*args):
    # stdout and stderr are pipes: xpcsfit sees no terminal
    return subprocess.run([XF, *args], capture_output=True, text=True, timeout=600)


def whole_png(path):
    with open(path, "rb") as f:
        b = f.read()
    return b.startswith(b"\x89PNG\r\n\x1a\n") and b[-12:-8] == b"\x00\x00\x00\x00" \
        and b[-8:-4] == b"IEND"


def every_file(top):
    return sorted(os.path.relpath(os.path.join(d, f), top)
                  for d, _, fs in os.walk(top) for f in fs)


def main():
    data = os.path.join(TMP, "d.h5")
    cfg = os.path.join(TMP, "c.yaml")
    with open(cfg, "w") as f:
        f.write(static_template(120, 1, 1).format(data=data))
    r = run("simulate", "--config", cfg, "--phi", "-30,0,45", "--out", data)
    check(r.returncode == 0, f"simulate: {r.stderr}")

    # 1. plot --config: one whole PNG per angle and the overview, nothing else
    out = os.path.join(TMP, "look")
    r = run("plot", "--config", cfg, "--out", out)
    check(r.returncode == 0, f"plot --config exit {r.returncode}: {r.stderr}")
    files = every_file(out)
    want = ["data_plots/c2_phi_000_-030.00deg.png", "data_plots/c2_phi_001_+000.00deg.png",
            "data_plots/c2_phi_002_+045.00deg.png", "data_plots/overview.png"]
    check(files == want, f"plot --config wrote {files}, expected {want}")
    for name in files:
        check(whole_png(os.path.join(out, name)), f"{name} is not a whole PNG")
    # --data overrides the config's file; a bad config is one error line, exit 2
    r = run("plot", "--config", cfg, "--data", data, "--out", os.path.join(TMP, "look2"))
    check(r.returncode == 0 and len(every_file(os.path.join(TMP, "look2"))) == 4,
          f"plot --config --data: {r.returncode} {r.stderr}")
    r = run("plot", "--config", os.path.join(TMP, "missing.yaml"))
    check(r.returncode == 2 and r.stderr.count("\n") == 1
          and r.stderr.startswith("xpcsfit: error: "), f"plot bad config: {r.stderr!r}")
    r = run("plot", "--out", out)
    check(r.returncode == 2, f"plot --out without --config: {r.returncode}")

    # 2. a fit, quiet: nothing on stdout or stderr; plot OUT then redraws OUT/nlsq
    fit_out = os.path.join(TMP, "fit")
    r = run("nlsq", "-q", "--config", cfg, "--out", fit_out)
    check(r.returncode == 0, f"nlsq -q exit {r.returncode}: {r.stderr}")
    check(r.stdout == "" and r.stderr == "", f"nlsq -q printed {r.stdout!r} {r.stderr!r}")
    plots = os.path.join(fit_out, "nlsq", "plots")
    gone = os.path.join(plots, "overview.png")
    os.remove(gone)
    r = run("plot", fit_out)
    check(r.returncode == 0, f"plot OUT exit {r.returncode}: {r.stderr}")
    check(os.path.exists(gone) and whole_png(gone), "plot OUT did not redraw OUT/nlsq")
    check("nlsq/plots" in r.stderr, f"plot OUT names OUT/nlsq: {r.stderr!r}")
    r = run("plot", "-q", os.path.join(fit_out, "nlsq"))
    check(r.returncode == 0 and r.stderr == "", f"plot -q DIR: {r.returncode} {r.stderr!r}")

    # 3. -q still prints the error line; -v prints more than the default
    r = run("nlsq", "-q", "--config", os.path.join(TMP, "missing.yaml"))
    check(r.returncode == 2 and re.fullmatch(r"xpcsfit: error: [^\n]+\n", r.stderr),
          f"nlsq -q on a missing config: {r.returncode} {r.stderr!r}")
    r = run("validate", "--quiet", "--config", cfg, "--data", os.path.join(TMP, "no.h5"))
    check(r.returncode != 0 and r.stderr.startswith("xpcsfit: error: ")
          and r.stderr.count("\n") == 1, f"validate --quiet, bad data: {r.stderr!r}")
    plain = run("nlsq", "--config", cfg, "--out", os.path.join(TMP, "f1"))
    verbose = run("nlsq", "-v", "--config", cfg, "--out", os.path.join(TMP, "f2"))
    check(plain.returncode == 0 and verbose.returncode == 0, "nlsq / nlsq -v")
    n_plain, n_verbose = plain.stderr.count("\n"), verbose.stderr.count("\n")
    check(n_verbose > n_plain, f"-v printed {n_verbose} lines, the default {n_plain}")
    check("data: " in verbose.stderr and "data: " not in plain.stderr,
          "-v shows the run log's info lines (the data line)")

    # 4. progress without a terminal: paced, not a line per iteration
    t0 = time.monotonic()
    r = run("nlsq", "--config", cfg, "--out", os.path.join(TMP, "f3"))
    wall = time.monotonic() - t0
    debug = run("nlsq", "-vv", "--config", cfg, "--out", os.path.join(TMP, "f4"))
    lines = [ln for ln in r.stderr.splitlines() if " iteration " in ln]
    every = [ln for ln in debug.stderr.splitlines() if " iteration " in ln]
    check(len(lines) <= 1 + int(wall / 10.0), f"{len(lines)} progress lines in {wall:.1f} s")
    check(len(every) > len(lines) and len(every) >= 3,
          f"-vv: {len(every)} iteration lines (paced: {len(lines)})")
    check(r.stderr.count("\n") <= 6, f"a piped fit printed {r.stderr.count(chr(10))} lines")

    # 5. -h and --help on every subcommand: exit 0, usage on stdout, nothing on stderr
    for cmd in COMMANDS:
        for flag in ("-h", "--help"):
            r = run(cmd, flag)
            check(r.returncode == 0 and r.stdout.startswith("usage: xpcsfit")
                  and r.stderr == "" and "--quiet" in r.stdout,
                  f"{cmd} {flag}: exit {r.returncode}, {r.stdout[:40]!r} {r.stderr!r}")
    r = run(*"nlsq --config x.yaml -h".split())
    check(r.returncode == 0 and r.stdout.startswith("usage: xpcsfit nlsq"),
          "nlsq --config x.yaml -h shows the help")
    for args in (["-h"], ["--help"], ["version", "-h"]):
        r = run(*args)
        check(r.returncode == 0 and r.stdout, f"xpcsfit {' '.join(args)}: {r.returncode}")
    return summary()


if __name__ == "__main__":
    raise SystemExit(main())
