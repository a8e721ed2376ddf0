#!/usr/bin/env python3
"""The posterior at beamline scale (issue 23, adr/0045), measured as a user runs it:
- the 23 angles x 1000 frames laminar file (about 11.5 M fitted points, the NLSQ
  benchmark's): `xpcsfit nlsq`, then `xpcsfit cmc` at the shipped defaults (the importance
  route, exact NUTS if its check fails); wall times, the route taken, k-hat, the IS-ESS and
  the smallest coordinate ESS, and the posterior's wall time over NLSQ's;
- the 4 x 300 laminar file: one default `xpcsfit fit` (NLSQ then the posterior).
Prints numbers, asserts nothing. Environment: XF_BINARY, XF_TMP. Options: --frames,
--angles, --threads, --skip-small.
"""
import argparse
import json
import os
import subprocess
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
"""

TRUTH = "1000, -1.3, 5.0, 0.01, -0.2, 0.0005, 1.0"
START = "1500, -1.0, 0.0, 0.02, 0.0, 0.0, 0.0"


def timed(args):
    t0 = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return dt


def make(xf, tmp, angles, frames, noise):
    data = os.path.join(tmp, f"post_{angles}x{frames}.h5")
    phis = ",".join(f"{-90 + 180 * a / angles:.4f}" for a in range(angles))
    sim_cfg = os.path.join(tmp, f"post_truth_{angles}x{frames}.yaml")
    fit_cfg = os.path.join(tmp, f"post_fit_{angles}x{frames}.yaml")
    with open(sim_cfg, "w") as f:
        f.write(CONFIG.format(data=data, frames=frames, values=TRUTH))
    with open(fit_cfg, "w") as f:
        f.write(CONFIG.format(data=data, frames=frames, values=START))
    if not os.path.exists(data):
        subprocess.run([xf, "simulate", "--config", sim_cfg, "--phi", phis, "--out", data,
                        "--noise", str(noise), "--lzf"], check=True, capture_output=True)
    return fit_cfg


def route_line(d):
    with open(os.path.join(d, "parameters.json")) as f:
        p = json.load(f)
    r, c, t = p["posterior_route"], p["posterior_route"]["importance_check"], p["timing_s"]
    s = f"route {r['route']}"
    if c:
        s += (f", k-hat {c['khat']:.3f}, M {c['M']}, IS-ESS {c['is_ess']:.0f} "
              f"(IS-ESS/M {c['is_ess_per_M']:.3f}), smallest coordinate ESS "
              f"{c['coordinate_ess_min']:.0f} ({c['coordinate_ess_min_of']})")
    s += f"; stages: importance {t['importance_route']:.1f} s, NUTS {t['nuts']:.1f} s"
    if r.get("note"):
        s += f"; note: {r['note']}"
    return s + f"; quality {p['quality']['overall']}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--angles", type=int, default=23)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--skip-small", action="store_true")
    args = ap.parse_args()
    xf = os.environ["XF_BINARY"]
    tmp = os.environ.get("XF_TMP", "/tmp/xpcsfit_bench")
    os.makedirs(tmp, exist_ok=True)
    th = ["--threads", str(args.threads)]
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    cfg = make(xf, tmp, args.angles, args.frames, 0.001)
    out = os.path.join(tmp, "post_big")
    t_nlsq = timed([xf, "nlsq", "--config", cfg, "--out", out, "--no-plots", *th])
    t_post = timed([xf, "cmc", "--config", cfg, "--nlsq", os.path.join(out, "nlsq"), "--out",
                    out, "--no-plots", *th])
    print(f"{args.angles} x {args.frames} laminar, {args.threads} threads: nlsq {t_nlsq:.1f} s, "
          f"posterior {t_post:.1f} s wall ({t_post / t_nlsq:.0f} x NLSQ)")
    print("  " + route_line(os.path.join(out, "cmc")))
    if not args.skip_small:
        cfg = make(xf, tmp, 4, 300, 0.002)
        out = os.path.join(tmp, "post_small")
        t_fit = timed([xf, "fit", "--config", cfg, "--out", out, *th])
        print(f"4 x 300 laminar default fit (NLSQ, posterior, plots): {t_fit:.1f} s wall")
        print("  " + route_line(os.path.join(out, "cmc")))
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
