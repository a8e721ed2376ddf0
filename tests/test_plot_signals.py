#!/usr/bin/env python3
"""Signals while the plots are drawn (issue 24, item 10): every interrupted run exits 130
(SIGINT) or 143 (SIGTERM) with exactly one `xpcsfit: error: interrupted ...` line, its
folder marked INCOMPLETE and nothing in it that looks finished.

The trap this guards: while PLplot draws a page, fd 2 goes to an in-memory file
(plsession.c keeps PLplot's own lines off the terminal), and a signal that ended the
process then wrote its line there, where nobody read it: exit 130/143 and no error line.
The parent draws inside such a session for overview.png (the last page: "late in the
plots phase") and, with --threads 1, for every page.

1. At fixed points, held open by the test hook XPCSFIT_TEST_PAUSE (docs/outputs.md):
   the start of the plots phase, inside the PLplot session of the first angle page
   (parent with --threads 1, a worker with --threads 2) and of overview.png (the parent),
   for nlsq, cmc's plots and `xpcsfit plot DIR`.
2. At moments spread over the plots of a run (no hook): the signal lands after a fraction
   of the time the reference run spends between its plots folder appearing and its end,
   repeated (XF_PLOT_SIGNALS runs, default 16), SIGINT and SIGTERM alternating, to the
   process or (as Ctrl-C does) to its process group, plot workers included."""
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

from small_configs import static_template
from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_plot_signals")
RUNS = int(os.environ.get("XF_PLOT_SIGNALS", "16"))
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

CONFIG = static_template(60, 5, 2)
PAGE0 = "c2_phi_000_+000.00deg.png"
SIGNALS = ((signal.SIGINT, 130), (signal.SIGTERM, 143))
# a guard against a hang, never a measure (the waits are for states: a pause's line, a
# folder, an exit)
GUARD_S = 600
TRIES = 5  # a spread run that ended before its signal is redone with half the delay


def setup():
    data = os.path.join(TMP, "s.h5")
    cfg = os.path.join(TMP, "c.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=data))
    r = subprocess.run([XF, "simulate", "--config", cfg, "--phi", "0,45,90", "--out", data,
                        "--seed", "3"], capture_output=True, text=True)
    check(r.returncode == 0, f"simulate: {r.stderr}")
    return cfg


def error_lines(err):
    return [l for l in err.splitlines() if l.startswith("xpcsfit: error:")]


def interrupted_well(what, d, rc, code, err, final=("parameters.json", "run.log"),
                     may_be_complete=False):
    """rc the signal's code, one error line saying so, the folder marked incomplete and
    without the files that make a result look finished. may_be_complete: the signal may
    have come after the folder was completed (the exit tail, long under ASan); then the
    line must say the results were complete, and they must be."""
    lines = error_lines(err)
    check(rc == code, f"{what}: exit {rc}, want {code}: {err[-400:]!r}")
    check(len(lines) == 1 and "interrupted by" in lines[0],
          f"{what}: want one 'interrupted' error line: {err[-400:]!r}")
    if may_be_complete and not os.path.exists(os.path.join(d, "INCOMPLETE")):
        check(len(lines) == 1 and "the results were complete already" in lines[0],
              f"{what}: no INCOMPLETE marker, and the line does not say the results "
              f"were complete: {err[-400:]!r}")
        for name in ("parameters.json", "results.h5", "run.log"):
            check(os.path.exists(os.path.join(d, name)), f"{what}: complete without {name}")
        return
    check(os.path.exists(os.path.join(d, "INCOMPLETE")), f"{what}: no INCOMPLETE marker")
    for name in final:
        check(not os.path.exists(os.path.join(d, name)), f"{what}: {name} written")
    check("libpng" not in err and "PLPLOT" not in err, f"{what}: library noise: {err[-400:]!r}")


def paused(args, hook, sig):
    """Run args held at hook (an hour: only the signal ends it), send sig when the pause
    is announced; (rc, stderr)."""
    env = dict(os.environ, XPCSFIT_TEST_PAUSE=hook + ":3600")
    p = subprocess.Popen([XF, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, errors="replace", env=env)
    err = []
    for line in p.stderr:
        err.append(line)
        if "test pause in" in line:
            break
    p.send_signal(sig)
    err.append(p.stderr.read())
    p.wait(timeout=GUARD_S)
    return p.returncode, "".join(err)


def test_hooks(cfg):
    points = [("plots", "2"), ("plot:" + PAGE0, "1"), ("plot:" + PAGE0, "2"),
              ("plot:overview.png", "1"), ("plot:overview.png", "2")]
    k = 0
    for hook, threads in points:
        for sig, code in SIGNALS:
            out = os.path.join(TMP, f"hook_{k}")
            k += 1
            rc, err = paused(["nlsq", "--config", cfg, "--out", out, "--threads", threads],
                             hook, sig)
            what = f"nlsq --threads {threads}, {signal.Signals(sig).name} at {hook}"
            check("test pause in " + hook in err, f"{what}: the hook did not hold: {err[-300:]}")
            interrupted_well(what, os.path.join(out, "nlsq"), rc, code, err)
    # after the folder was completed (the summary, the exit tail): the line says the
    # results were complete, and they are
    for sig, code in SIGNALS:
        out = os.path.join(TMP, f"hook_{k}")
        k += 1
        rc, err = paused(["nlsq", "--config", cfg, "--out", out, "--threads", "2"],
                         "summary", sig)
        what = f"nlsq, {signal.Signals(sig).name} at the summary"
        check("test pause in summary" in err, f"{what}: the hook did not hold: {err[-300:]}")
        d = os.path.join(out, "nlsq")
        check(not os.path.exists(os.path.join(d, "INCOMPLETE")), f"{what}: INCOMPLETE left")
        interrupted_well(what, d, rc, code, err, final=(), may_be_complete=True)
    # a finished NLSQ result for cmc and for plot DIR
    done = os.path.join(TMP, "done")
    r = subprocess.run([XF, "nlsq", "--config", cfg, "--out", done, "--threads", "2"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"nlsq: {r.stderr[-300:]}")
    rc, err = paused(["cmc", "--config", cfg, "--nlsq", os.path.join(done, "nlsq"), "--out",
                      os.path.join(TMP, "cmc_sig"), "--threads", "2"],
                     "plot:overview.png", signal.SIGTERM)
    interrupted_well("cmc, SIGTERM in overview.png's session",
                     os.path.join(TMP, "cmc_sig", "cmc"), rc, 143, err)
    # plot DIR: redrawing into a finished folder, which it does not mark; one line still
    rc, err = paused(["plot", os.path.join(done, "nlsq")], "plot:overview.png", signal.SIGINT)
    lines = error_lines(err)
    check(rc == 130 and len(lines) == 1 and "interrupted by SIGINT" in lines[0],
          f"plot DIR, SIGINT in overview.png's session: {rc} {err[-300:]!r}")


def plots_dir(out):
    return os.path.join(out, "nlsq", "plots")


def run_until_plots(cfg, out, threads):
    """Start nlsq in a process group of its own (its plot workers join it); returns
    (process, time its plots folder appeared) or (p, None)."""
    p = subprocess.Popen([XF, "nlsq", "--config", cfg, "--out", out, "--threads", threads],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         errors="replace", start_new_session=True)
    while p.poll() is None:
        if os.path.isdir(plots_dir(out)):
            return p, time.monotonic()
        time.sleep(0.0005)
    return p, None


def test_spread(cfg):
    # the reference: how long the plots take, from the folder's appearance to the end
    spans = {}
    for threads in ("1", "2"):
        out = os.path.join(TMP, f"ref_{threads}")
        p, t0 = run_until_plots(cfg, out, threads)
        p.communicate()
        check(p.returncode == 0 and t0 is not None, f"reference run --threads {threads}")
        spans[threads] = time.monotonic() - t0 if t0 else 0.5
    hits = 0
    for k in range(RUNS):
        threads = "1" if k % 2 == 0 else "2"
        sig, code = SIGNALS[(k // 2) % 2]
        group = k % 8 >= 4  # as Ctrl-C does: the workers get it too
        frac = (k + 0.5) / RUNS  # spread over the span, early to late
        # A run that finished before its signal (the machine's load changed since the
        # reference) is redone with half the delay, the last time with none: the signal
        # then lands as the plots folder appears, in the plots, whatever the load.
        scale = 1.0
        for attempt in range(TRIES):
            out = os.path.join(TMP, f"spread_{k}")
            shutil.rmtree(out, ignore_errors=True)
            p, t0 = run_until_plots(cfg, out, threads)
            if t0 is None:
                p.communicate()
                break
            scale = 0.5 ** attempt if attempt < TRIES - 1 else 0.0
            delay = scale * frac * spans[threads] - (time.monotonic() - t0)
            if delay > 0:
                time.sleep(delay)
            if group:
                os.killpg(p.pid, sig)
            else:
                p.send_signal(sig)
            _, err = p.communicate(timeout=GUARD_S)
            if p.returncode != 0:
                break
        what = (f"nlsq --threads {threads}, {signal.Signals(sig).name} "
                f"{'to the group ' if group else ''}at {frac:.2f} x {scale} of the plots "
                f"({spans[threads]:.2f} s)")
        if p.returncode == 0:  # finished first, even signalled as the plots began
            continue
        hits += 1
        # it may land after parameters.json (the last moments): INCOMPLETE says so
        interrupted_well(what, os.path.join(out, "nlsq"), p.returncode, code, err, final=(),
                         may_be_complete=True)
        for png in glob.glob(os.path.join(plots_dir(out), "*.png")):
            with open(png, "rb") as f:
                data = f.read()
            check(data.endswith(b"IEND\xaeB`\x82"), f"{what}: {png} not whole")
    print(f"spread: {hits} of {RUNS} runs interrupted in their plots "
          f"(spans {spans['1']:.2f} s / {spans['2']:.2f} s)")
    check(hits >= RUNS // 4, f"spread: only {hits} of {RUNS} signals landed before the end")


def main():
    cfg = setup()
    test_hooks(cfg)
    test_spread(cfg)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
