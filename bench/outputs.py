#!/usr/bin/env python3
"""Issues #12 and 25, outputs: what plots and surfaces add to an NLSQ run, measured as a
user runs it on the nlsq_cli.py workload (23 angles x 1000 frames). Times, interleaved
`--repeat` times, medians reported:
  bare      `xpcsfit nlsq --no-plots --no-surfaces` (no outputs but the numbers)
  default   `xpcsfit nlsq` (plots: 10 angle pages, report; no surfaces since adr/0059)
  surfaces  `xpcsfit nlsq --surfaces` (the full-resolution maps in results.h5 too)
  plot      `xpcsfit plot DIR` on the default run's result (data reloaded, model
            recomputed)
and prints default/bare against the target (<= 1.5), plot DIR against <= 3 s, and the
sizes of the default run's files (docs/outputs.md "Output budget"). Wall and CPU (user +
sys of the process and its children) both: on a busy machine the CPU ratio is the
steadier one. Asserts nothing.

Environment: XF_BINARY, XF_TMP (the data file is nlsq_cli.py's, simulated when missing).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd):
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err}")
    profile = [l for l in err.splitlines() if "profile:" in l]
    return wall, usage.ru_utime + usage.ru_stime, profile[-1] if profile else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    xf = os.environ["XF_BINARY"]
    tmp = os.environ.get("XF_TMP", "/tmp/xpcsfit_bench")
    fit_cfg = os.path.join(tmp, "bench_fit.yaml")
    if not os.path.exists(fit_cfg):  # nlsq_cli.py writes the data and the configs
        subprocess.run([sys.executable, os.path.join(HERE, "nlsq_cli.py")], check=True,
                       stdout=subprocess.DEVNULL)
    out = os.path.join(tmp, "outputs_out")
    # --profile where the binary has it (so that an older build can be measured too)
    helps = subprocess.run([xf, "nlsq", "--help"], capture_output=True, text=True).stdout
    prof = ["--profile"] if "--profile" in helps else []
    nlsq = [xf, "nlsq", *prof, "--config", fit_cfg, "--out", out, "--force",
            "--threads", str(args.threads)]
    helps_surf = "--surfaces " in helps or "--surfaces|" in helps
    runs = {"bare": nlsq + ["--no-plots", "--no-surfaces"], "default": nlsq,
            "plot": [xf, "plot", *prof, os.path.join(out, "nlsq")]}
    if helps_surf:  # an older build wrote them by default: "default" is that run there
        surf_out = os.path.join(tmp, "outputs_surf")
        runs["surfaces"] = [a if a != out else surf_out for a in nlsq] + ["--surfaces"]
    got = {k: [] for k in runs}
    for _ in range(args.repeat):
        for k, cmd in runs.items():  # interleaved: a busy spell hits every kind alike
            got[k].append(timed(cmd))
    med = {k: (statistics.median(w for w, _, _ in v), statistics.median(c for _, c, _ in v))
           for k, v in got.items()}
    print(f"workload: {fit_cfg}, {args.threads} threads, median of {args.repeat} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for k in runs:
        print(f"  {k:8s} wall {med[k][0]:6.2f} s   cpu {med[k][1]:6.2f} s   {got[k][-1][2]}")
    print(f"default / bare: wall {med['default'][0] / med['bare'][0]:.2f}x, "
          f"cpu {med['default'][1] / med['bare'][1]:.2f}x   [target <= 1.5x]")
    print(f"xpcsfit plot DIR: wall {med['plot'][0]:.2f} s   [target <= 3 s for 23 angles]")
    d = os.path.join(out, "nlsq")
    plots = sum(os.path.getsize(os.path.join(d, "plots", f))
                for f in os.listdir(os.path.join(d, "plots")))
    print(f"default files: results.h5 {os.path.getsize(os.path.join(d, 'results.h5')) / 1e6:.3f} MB, "
          f"report.html {os.path.getsize(os.path.join(d, 'report.html')) / 1e6:.3f} MB, "
          f"plots/ {plots / 1e6:.1f} MB   [docs/outputs.md \"Output budget\"]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
