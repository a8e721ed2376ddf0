#!/usr/bin/env python3
"""The posterior at beamline scale (issue 23, adr/0045), measured as a user runs it:
- the 23 angles x 1000 frames laminar file (about 11.5 M fitted points, the NLSQ
  benchmark's): `xpcsfit nlsq`, then `xpcsfit cmc` at the shipped defaults (the importance
  route, exact NUTS if its check fails); wall times, the route taken, k-hat, the IS-ESS and
  the smallest coordinate ESS, and the posterior's wall time over NLSQ's;
- the 4 x 300 laminar file: one default `xpcsfit fit` (NLSQ then the posterior).
Each also prints one row in the columns of bench/posterior_cases.py (NLSQ and posterior
wall / CPU s, route, k-hat, rounds, status/quality, posterior CPU over NLSQ CPU; issue 34).
Prints numbers, asserts nothing. Environment: XF_BINARY, XF_TMP. Options: --frames,
--angles, --threads, --skip-small, --truth (7 comma-separated values, the large file's),
--noise (the large file's).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import posterior_cases  # noqa: E402  (its row format, and validation/hard/cases.py)
from posterior_cases import cases  # noqa: E402

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
    """wall s; the CPU s (user + sys) of the child in LAST_CPU[0]"""
    r, dt, cpu = cases.timed(args)
    LAST_CPU[0] = cpu
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    return dt


LAST_CPU = [0.0]


def make(xf, tmp, angles, frames, noise, truth=TRUTH):
    data = os.path.join(tmp, f"post_{angles}x{frames}.h5")
    phis = ",".join(f"{-90 + 180 * a / angles:.4f}" for a in range(angles))
    sim_cfg = os.path.join(tmp, f"post_truth_{angles}x{frames}.yaml")
    fit_cfg = os.path.join(tmp, f"post_fit_{angles}x{frames}.yaml")
    with open(sim_cfg, "w") as f:
        f.write(CONFIG.format(data=data, frames=frames, values=truth))
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
    ap.add_argument("--truth", default=TRUTH)
    ap.add_argument("--noise", type=float, default=0.001)
    args = ap.parse_args()
    xf = os.environ["XF_BINARY"]
    tmp = os.environ.get("XF_TMP", "/tmp/xpcsfit_bench")
    os.makedirs(tmp, exist_ok=True)
    th = ["--threads", str(args.threads)]
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    cfg = make(xf, tmp, args.angles, args.frames, args.noise, args.truth.replace(",", ", "))
    out = os.path.join(tmp, "post_big")
    t_nlsq = timed([xf, "nlsq", "--config", cfg, "--out", out, "--no-plots", "--force", *th])
    c_nlsq = LAST_CPU[0]
    t_post = timed([xf, "cmc", "--config", cfg, "--nlsq", os.path.join(out, "nlsq"), "--out",
                    out, "--no-plots", "--force", *th])
    c_post = LAST_CPU[0]
    print(f"{args.angles} x {args.frames} laminar, {args.threads} threads: nlsq {t_nlsq:.1f} s, "
          f"posterior {t_post:.1f} s wall ({t_post / t_nlsq:.0f} x NLSQ)")
    print("  " + route_line(os.path.join(out, "cmc")))
    print(posterior_cases.HEADER)
    with open(os.path.join(out, "nlsq", "parameters.json")) as f:
        n = json.load(f)
    print(posterior_cases.row(f"laminar {args.angles}x{args.frames}", n.get("n_points"),
                              t_nlsq, c_nlsq, t_post, c_post,
                              cases.route_summary(cases.load_params(os.path.join(out, "cmc")))))
    if not args.skip_small:
        cfg = make(xf, tmp, 4, 300, 0.002)
        out = os.path.join(tmp, "post_small")
        m = posterior_cases.measure(xf, "laminar 4x300", cfg, None, False, out, args.threads)
        print(f"4 x 300 laminar default fit (NLSQ, posterior; no plots): "
              f"{m.get('fit_wall_s', float('nan')):.1f} s wall")
        print("  " + route_line(os.path.join(out, "cmc")))
        print(posterior_cases.HEADER)
        posterior_cases.print_row(m)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
