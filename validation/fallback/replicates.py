#!/usr/bin/env python3
"""Small static replicates at the NUTS defaults (issue 34, adr/0079): simulate a file
(1-3 angles x 50-100 frames, truths incl. weakly identified D_offset and alpha near 0),
fit with optimization.cmc.route: nuts (or ROUTE: auto, the shipped default), and report
status, the route taken, R-hat, ESS, divergences and CPU seconds.
Usage: replicates.py XPCSFIT OUTDIR FIRST COUNT [ROUTE]"""
import json, os, resource, subprocess, sys
import numpy as np

XF, OUT, FIRST, COUNT = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ROUTE = sys.argv[5] if len(sys.argv) > 5 else "nuts"
os.makedirs(OUT, exist_ok=True)
CFG = """analysis_mode: static
experimental_data: {{file_path: {data}}}
analyzer_parameters:
  dt: 0.1
  start_frame: 1
  end_frame: {frames}
  scattering: {{wavevector_q: 0.01}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [{d0}, {alpha}, {d_offset}]
optimization:
  nlsq: {{anti_degeneracy: {{per_angle_mode: individual}}}}
  cmc:
    seed: 42
    route: {route}
    per_angle_mode: individual
"""
for rep in range(FIRST, FIRST + COUNT):
    g = np.random.default_rng(1000 + rep)
    frames = int(g.choice([50, 60, 80, 100]))
    n_ang = int(g.integers(1, 4))
    d0 = float(np.exp(g.uniform(np.log(300), np.log(5000))))
    alpha = float(g.choice([g.uniform(-1.5, -0.3), g.uniform(-0.1, 0.1)]))
    d_off = float(g.choice([0.0, g.uniform(1, 50), g.uniform(50, 500)]))
    name = os.path.join(OUT, f"r{rep:03d}")
    cfg = name + ".yaml"
    with open(cfg, "w") as f:
        f.write(CFG.format(data=name + ".h5", frames=frames, d0=d0, alpha=alpha, d_offset=d_off,
                           route=ROUTE))
    phis = ",".join(str(p) for p in [0, 45, 90][:n_ang])
    subprocess.run([XF, "simulate", "--config", cfg, "--phi", phis, "--out", name + ".h5",
                    "--noise", "0.002", "--seed", str(rep + 1), "--frames", str(frames), "--force",
                    "-q"], check=True)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([XF, "fit", "--config", cfg, "--out", name + "_fit", "--force", "-q",
                        "--threads", "1"], capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    try:
        with open(os.path.join(name + "_fit", "cmc", "parameters.json")) as f:
            pj = json.load(f)
    except Exception:
        pj = {}
    c = pj.get("cmc", pj)
    print(json.dumps({"rep": rep, "frames": frames, "angles": n_ang, "d0": round(d0, 1),
                      "alpha": round(alpha, 3), "d_offset": round(d_off, 2), "rc": p.returncode,
                      "cpu_s": round(cpu, 2), "status": c.get("status"), "quality": c.get("quality"),
                      "route": (c.get("posterior_route") or {}).get("route"),
                      "diag": {k: c.get(k) for k in ("rhat_max", "ess_min", "divergences")}}),
          flush=True)
