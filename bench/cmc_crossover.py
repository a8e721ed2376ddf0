#!/usr/bin/env python3
"""Exact NUTS on the whole data (num_shards: 1, route: nuts) against CMC (K = 4, 16) on
the same data and machine (issue #16): time to a bulk ESS of 400 for every sampled parameter. Data: the
K-independence case of tests/test_cmc_calibration.c (laminar, 6 angles x 80 frames,
D0 2e4, alpha -0.5, D_offset 5e3, noise 2.5e-4), simulated as an APS-U file.

Time to ESS 400 = the sampling wall time scaled to the draws that give the smallest
shard's bulk ESS 400 (warmup counted whole): t * (W + S * 400 / ESS_min) / (W + S), with W
warmup and S draws per chain, assuming a warmup iteration costs what a draw does. For
CMC every shard must reach 400 (the combination is only as good as its worst shard).
Prints numbers; asserts nothing. Environment: XF_BINARY, XF_TMP."""
import json
import os
import subprocess
import sys

CONFIG = """analysis_mode: laminar_flow
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.001
  start_frame: 1
  end_frame: 80
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [{values}]
optimization:
  nlsq:
    anti_degeneracy: {{per_angle_mode: auto}}
  cmc:
    route: {route}
    sharding: {{num_shards: {k}}}
    per_shard_mcmc: {{num_warmup: {w}, num_samples: {s}}}
"""
TRUTH = "20000, -0.5, 5000, 0.015, -0.3, 0.0005, 1.5"
START = "15000, -0.4, 3000, 0.01, 0, 0, 0"
WARMUP, DRAWS = 500, 1500


def run(*args):
    r = subprocess.run([os.environ["XF_BINARY"], *args], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"xpcsfit {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return r


def main():
    tmp = os.environ.get("XF_TMP", "/tmp/xf_cmc_crossover")
    os.makedirs(tmp, exist_ok=True)
    data = os.path.join(tmp, "laminar_6x80.h5")

    def config(name, k, values):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            # exact NUTS on one shard: the reference this bench times CMC against (the
            # default route would take the importance route and run no chains)
            f.write(CONFIG.format(data=data, k=k, w=WARMUP, s=DRAWS, values=values,
                                  route="nuts" if k == 1 else "auto"))
        return path

    run("simulate", "--config", config("truth.yaml", 1, TRUTH), "--phi",
        "-60,-30,0,30,60,90", "--out", data, "--force", "--noise", "0.00025", "--seed", "5",
        "--contrast", "0.3", "--offset", "1.0")
    run("nlsq", "--config", config("start.yaml", 1, START), "--out", tmp, "--no-plots",
        "--no-surfaces", "--force")
    threads = str(os.cpu_count() or 2)
    print(f"laminar 6 angles x 80 frames, {threads} virtual devices, 4 chains x "
          f"({WARMUP} + {DRAWS}) per shard")
    print("| K | shards' points | sampling wall s | min bulk ESS (worst shard) | "
          "time to ESS 400 s | k-hat |")
    print("|---|---|---|---|---|---|")
    for k in (1, 4, 16):
        out = os.path.join(tmp, f"k{k}")
        run("cmc", "--config", config(f"k{k}.yaml", k, START), "--nlsq",
            os.path.join(tmp, "nlsq"), "--out", out, "--threads", threads, "--no-plots",
            "--force")
        p = json.load(open(os.path.join(out, "cmc", "parameters.json")))
        shards = p["shard_diagnostics"]
        ess = min(s["ess_bulk_min"] for s in shards)
        wall = p["timing_s"]["sampling"]
        t400 = wall * (WARMUP + DRAWS * 400.0 / ess) / (WARMUP + DRAWS)
        check = p.get("consensus_check") or {}
        print(f"| {k} | {shards[0]['n_points']} | {wall:.1f} | {ess:.0f} | {t400:.1f} | "
              f"{check.get('khat', float('nan')):.2f} |")


if __name__ == "__main__":
    main()
