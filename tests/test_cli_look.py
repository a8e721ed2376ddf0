#!/usr/bin/env python3
"""The user's surface of issue 11 (adr/0028): `xpcsfit plot --config` draws the selected
data without a fit (one whole PNG per angle and overview.png, nothing else written);
`xpcsfit plot OUT` finds OUT/nlsq; -q prints nothing on success and still the error line
on failure; -v prints more; progress through a pipe is paced (not one line per
iteration); -h and --help on every subcommand exit 0 with the usage on stdout.
Issue 25 (adr/0062): homodyne's `xpcsfit --config C --method nlsq|cmc|fit` is the command
it names (the same result files); the console's results: line and --help name
report.html; the summary's numbers are written to the precision their uncertainty
supports, with units."""
import json
import os
import re
import shutil
import subprocess
import time

from small_configs import static_template
from tally import check, summary
from waits import RUN_GUARD_S

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cli_look")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
COMMANDS = ["simulate", "validate", "nlsq", "cmc", "fit", "batch", "plot", "config"]


def run(*args):
    # stdout and stderr are pipes: xpcsfit sees no terminal
    return subprocess.run([XF, *args], capture_output=True, text=True, timeout=RUN_GUARD_S)


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
    check("report.html" in run("--help").stdout, "--help names report.html")
    method_form(cfg)
    validate_plan(cfg, data)
    method_completion(cfg)
    return summary()


def method_completion(cfg):
    """8. the bash completion knows the --method form: --method values, the named
    command's options after it, files after a leading --config"""
    script = os.path.join(os.environ["XF_SOURCE_DIR"], "scripts", "xpcsfit-completion.bash")

    def complete(*words):
        arr = " ".join("'" + w + "'" for w in (XF,) + words)
        r = subprocess.run(["bash", "-c", f"source '{script}'; COMP_WORDS=({arr}); "
                            f"COMP_CWORD={len(words)}; _xpcsfit; "
                            "printf '%s\\n' \"${COMPREPLY[@]}\""],
                           capture_output=True, text=True, cwd=TMP, timeout=60)
        return [w for w in r.stdout.splitlines() if w]
    name = os.path.basename(cfg)
    check(complete("--config", cfg, "--method", "") == ["nlsq", "cmc", "fit"],
          "--method completes the fits")
    check("--no-plots" in complete("--config", cfg, "--method", "nlsq", "--no-p"),
          "after --method nlsq: nlsq's options")
    check(name in complete("--config", ""), f"a leading --config completes {name}")
    check("--method" in complete("--me"), "--method offered before a command")


def validate_plan(cfg, data):
    """7. validate shows what will be fitted: per-angle modes, sigma, every parameter free or
    fixed with its start and source, bounds, CMC's prior and unit (text and JSON)"""
    r = run("validate", "--config", cfg, "--json", "--fix", "alpha=-0.1")
    if not check(r.returncode == 0, f"validate --json: {r.stderr}"):
        return
    v = json.loads(r.stdout)
    check(v["per_angle_mode"] == "individual" and v["per_angle_mode_config"] == "auto"
          and v["per_angle_mode_cmc"] == "individual" and v["sigma"] is None,
          f"modes and sigma: {v}")
    ps = {p["name"]: p for p in v["parameters"]}
    check(list(ps) == ["D0", "alpha", "D_offset", "contrast_000", "contrast_001",
                       "contrast_002", "offset_000", "offset_001", "offset_002"],
          f"the fit's parameters: {list(ps)}")
    d0, alpha = ps["D0"], ps["alpha"]
    check(not d0["fixed"] and d0["start"] == 8000 and d0["start_source"] == "config"
          and d0["lower"] == 100 and d0["upper"] == 1e5 and d0["prior_sigma"] > 0
          and d0["unit"] == "angstrom^2/s^(1+alpha)", f"D0: {d0}")
    check(alpha["fixed"] and alpha["start"] == -0.1 and ps["D_offset"]["fixed"],
          f"--fix alpha and the config's fixed D_offset: {alpha} {ps['D_offset']}")
    c0 = ps["contrast_000"]
    check(not c0["fixed"] and c0["start_source"] == "data" and 0 < c0["start"] < 1
          and c0["unit"] == "1", f"a per-angle coefficient starts at the data: {c0}")
    r = run("validate", "--config", cfg)
    lines = r.stdout.splitlines()
    check("per_angle_mode: individual (config: auto)" in lines, f"text: {r.stdout}")
    check("parameters: 8 free of 9 (3 physical, 6 per-angle coefficients)" in lines,
          f"the count line: {r.stdout}")
    row = [ln.split() for ln in lines if ln.startswith("  D0 ")]
    check(row and row[0][1:5] == ["free", "8000", "config", "100"]
          and row[0][-1] == "angstrom^2/s^(1+alpha)", f"the D0 row: {row}")


def results_h5_bytes(d):
    with open(os.path.join(d, "results.h5"), "rb") as f:
        return f.read()


def method_form(cfg):
    """6. `xpcsfit --config C --method M [options]` runs `xpcsfit M --config C [options]`"""
    a, b = os.path.join(TMP, "m_cmd"), os.path.join(TMP, "m_form")
    ra = run("nlsq", "--config", cfg, "--out", a, "--no-plots")
    rb = run("--config", cfg, "--method", "nlsq", "--out", b, "--no-plots")
    check(ra.returncode == 0 and rb.returncode == 0, f"--method nlsq: {rb.stderr[-300:]}")
    check(results_h5_bytes(os.path.join(a, "nlsq")) == results_h5_bytes(os.path.join(b, "nlsq")),
          "--config C --method nlsq writes the results of nlsq --config C")
    check(not os.path.exists(os.path.join(b, "cmc")), "--method nlsq: no cmc folder")
    # the console: the result folder with its report.html, numbers with units
    line = [ln for ln in rb.stdout.splitlines() if ln.startswith("results: ")]
    want = f"results: {b}/nlsq/ (summary page: {b}/nlsq/report.html)"
    check(line == [want], f"results: line {line}, want {want!r}")
    d0 = [ln for ln in rb.stdout.splitlines() if ln.strip().startswith("D0 ")]
    p = json.load(open(os.path.join(b, "nlsq", "parameters.json")))["parameters"]["D0"]
    check(len(d0) == 1 and d0[0].rstrip().endswith("angstrom^2/s^(1+alpha)"),
          f"D0 line with its unit: {d0}")
    m = re.search(r"D0\s+(\S+) \+/- (\S+)", d0[0]) if d0 else None
    if check(m is not None, f"D0 value +/- uncertainty: {d0}"):
        v, u = float(m.group(1)), float(m.group(2))
        digits = m.group(2).replace(".", "").lstrip("0")
        check(len(digits.rstrip("0") or "0") <= 2, f"uncertainty {m.group(2)}: 2 digits")
        check(abs(u - p["uncertainty"]) <= 0.05 * p["uncertainty"] and
              abs(v - p["value"]) <= 0.05 * p["uncertainty"] + abs(u - p["uncertainty"]),
              f"D0 {m.group(0)} vs {p['value']} +/- {p['uncertainty']}")
    # options on both sides of --method, and --method=M; cmc writes nlsq/ then cmc/
    c = os.path.join(TMP, "m_cmc")
    r = run("--no-plots", "--method=cmc", "--config", cfg, "--out", c)
    check(r.returncode == 0 and os.path.isfile(os.path.join(c, "cmc", "parameters.json"))
          and os.path.isfile(os.path.join(c, "nlsq", "parameters.json")),
          f"--method=cmc: {r.returncode} {r.stderr[-300:]}")
    r = run("--config", cfg, "--method", "fit", "-h")
    check(r.returncode == 0 and r.stdout.startswith("usage: xpcsfit cmc"),
          f"--method fit -h: the fit usage: {r.stdout[:60]!r}")


if __name__ == "__main__":
    raise SystemExit(main())
