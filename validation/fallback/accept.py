#!/usr/bin/env python3
"""accept.py XPCSFIT OUTDIR TARGETS SEEDS: the curved-ridge static set of adr/0041 (phi 0,
50 frames, q 0.01, truth D0 1200, alpha -1.2, D_offset 10; tests/test_cmc_route.py
"ridge") sampled by exact NUTS (route: nuts) at each target acceptance and seed:
divergences after warmup, min bulk ESS, gradient evaluations, CPU s, sds (adr/0079)."""
import json, os, resource, subprocess, sys

XF, OUT = sys.argv[1], sys.argv[2]
TARGETS = [float(t) for t in sys.argv[3].split(",")]
SEEDS = [int(s) for s in sys.argv[4].split(",")]
os.makedirs(OUT, exist_ok=True)
cfg = os.path.join(OUT, "ridge.yaml")
data = os.path.join(OUT, "ridge.h5")
with open(cfg, "w") as f:
    f.write(f"""analysis_mode: static
experimental_data: {{file_path: {data}}}
analyzer_parameters:
  dt: 0.1
  start_frame: 1
  end_frame: 50
  scattering: {{wavevector_q: 0.01}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [1200, -1.2, 10]
optimization:
  nlsq: {{anti_degeneracy: {{per_angle_mode: individual}}}}
  cmc:
    seed: 42
    route: nuts
    per_angle_mode: individual
""")
subprocess.run([XF, "simulate", "--config", cfg, "--phi", "0", "--out", data, "--noise", "0.002",
                "--seed", "1", "--frames", "50", "--force", "-q"], check=True)
for t in TARGETS:
    for s in SEEDS:
        d = os.path.join(OUT, f"t{t}_s{s}")
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([XF, "fit", "--config", cfg, "--out", d, "--force", "-q", "--threads", "1",
                        "--set", f"optimization.cmc.seed={s}",
                        "--set", f"optimization.cmc.per_shard_mcmc.target_accept_prob={t}"],
                       capture_output=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        p = json.load(open(os.path.join(d, "cmc", "parameters.json")))
        sh = p["shard_diagnostics"][0]
        pd = p["posterior_diagnostics"]["parameters"]
        ess = min(v["ess_bulk"] for v in pd.values() if v.get("ess_bulk") is not None)
        sds = {k: p["parameters"][k]["std"] for k in ("D0", "alpha", "D_offset")}
        means = {k: p["parameters"][k]["mean"] for k in ("D0", "alpha", "D_offset")}
        print(json.dumps({"target": t, "seed": s, "status": p["status"], "div": sh["divergences"],
                          "rhat": round(sh["rhat_max"], 4), "ess_min": round(ess),
                          "grad": p["sampler"]["gradient_evaluations"], "cpu_s": round(cpu, 2),
                          "mean": means, "sd": sds}), flush=True)
