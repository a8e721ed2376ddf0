#!/usr/bin/env python3
"""The issue's NLSQ benchmark, measured as a user runs it: simulate 23 angles x 1000
frames (about 11.5 M fitted points) as an APS-U file, then time the whole
`xpcsfit nlsq --no-plots` process and read its peak RSS. Prints numbers, asserts nothing.

Environment: XF_BINARY (xpcsfit), XF_TMP (scratch). Options: --frames, --angles, --threads,
--loss (bench_nlsq_cli_soft_l1: the same fit with homodyne's default robust loss).
"""
import argparse
import json
import os
import subprocess
import sys
import time

CONFIG = """analysis_mode: laminar_flow
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.001
  start_frame: 1
  end_frame: {frames}
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [{values}]
optimization:
  nlsq:
    anti_degeneracy: {{per_angle_mode: auto}}
    loss: {loss}
"""

TRUTH = "1000, -1.3, 5.0, 0.01, -0.2, 0.0005, 1.0"
START = "1500, -1.0, 0.0, 0.02, 0.0, 0.0, 0.0"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--angles", type=int, default=23)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--loss", default="linear",
                    help="optimization.nlsq.loss (a robust loss adds its IRLS passes)")
    args = ap.parse_args()
    xf = os.environ["XF_BINARY"]
    tmp = os.environ.get("XF_TMP", "/tmp/xpcsfit_bench")
    os.makedirs(tmp, exist_ok=True)
    data = os.path.join(tmp, f"bench_{args.angles}x{args.frames}.h5")
    phis = ",".join(f"{-90 + 180 * a / args.angles:.4f}" for a in range(args.angles))
    sim_cfg = os.path.join(tmp, "bench_truth.yaml")
    fit_cfg = os.path.join(tmp, "bench_fit.yaml")
    with open(sim_cfg, "w") as f:
        f.write(CONFIG.format(data=data, frames=args.frames, values=TRUTH, loss="linear"))
    with open(fit_cfg, "w") as f:
        f.write(CONFIG.format(data=data, frames=args.frames, values=START, loss=args.loss))
    if not os.path.exists(data):
        t0 = time.perf_counter()
        subprocess.run([xf, "simulate", "--config", sim_cfg, "--phi", phis, "--out", data,
                        "--noise", "0.001", "--lzf"], check=True)
        print(f"simulate: {time.perf_counter() - t0:.2f} s ({data})")
    out = os.path.join(tmp, "bench_out")
    t0 = time.perf_counter()
    proc = subprocess.Popen([xf, "nlsq", "--config", fit_cfg, "--out", out, "--no-plots", "--force",
                             "--threads", str(args.threads)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    # wait4 gives this child's own rusage (peak RSS of the nlsq process alone)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        print(f"xpcsfit nlsq failed with exit code {proc.returncode}")
        return 1
    rss_kib = usage.ru_maxrss
    with open(os.path.join(out, "nlsq", "parameters.json")) as f:
        p = json.load(f)
    n = p["n_points"]
    it = p["iterations"]
    fit_s = p["timing_s"]["fit"]
    data_mib = n * 8 / 2**20
    rss_mib = rss_kib / 1024
    print(f"workload: {args.angles} angles x {args.frames} frames = {n} fitted points, "
          f"{args.threads} virtual devices, loss {args.loss}")
    print(f"status: {p['status']} ({p['stop_reason']}), reduced chi2 {p['reduced_chi_squared']:.4g}")
    print(f"whole fit (process wall, --no-plots): {wall:.2f} s   [target <= 10 s]")
    print(f"  load {p['timing_s']['load']:.2f} s, fit {fit_s:.2f} s, {it} iterations")
    print(f"time per iteration: {fit_s / it:.3f} s   [target <= 0.25 s]")
    print(f"points/s per iteration: {n / (fit_s / it) / 1e6:.1f} M")
    print(f"peak RSS: {rss_mib:.0f} MiB = {rss_mib / data_mib:.2f} x fitted data "
          f"({data_mib:.0f} MiB)   [target <= 2.5 x]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
