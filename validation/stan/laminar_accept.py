#!/usr/bin/python3
"""laminar_accept.py — xpcsfit's NUTS at several target acceptances on a small laminar-flow
posterior (no Stan model exists for laminar_flow; the reference is xpcsfit itself at a high
target acceptance, default 0.99, over the same seeds).

Data: `xpcsfit simulate` with configs/demo_laminar.yaml's truth (D0 1200, alpha -1.2,
D_offset 10, gamma_dot_t0 0.012, beta -0.25, gamma_dot_t_offset 0.0004, phi0 2), 5 angles
(-60, -5, 0, 45, 90), --frames frames (default 80), noise 0.002, seed 1. NLSQ once (the
demo's start point, per_angle_mode auto), then `xpcsfit cmc` with num_shards: 1 (exact
NUTS) at every --deltas value x every --seeds seed, default 4 chains x (500 + 1500), dense
metric. target_accept_prob below 0.90 is raised to 0.90 by the binary for laminar_flow
(a floor); the run records the value used.

Prints per run: divergences (post-warmup), step size, gradient evaluations per iteration
(warmup included), sampling and CPU time, and every parameter's mean difference in
reference sds and sd ratio against the reference (the --ref-delta runs, pooled over the
seeds: mean of the means, pooled sd); writes every number to WORK/laminar.json.
Asserts nothing. Results: docs/validation.md and adr/0041-nuts-defaults.md.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
THETA = ["D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"]
TRUTH = [1200.0, -1.2, 10.0, 0.012, -0.25, 0.0004, 2.0]


def run(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        with open(log) as f:
            tail = f.read()[-3000:]
        raise RuntimeError(f"{' '.join(cmd[:2])} failed (exit {r.returncode}):\n{tail}")


def cpu_children():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xf", default=os.environ.get("XF_BINARY",
                                                   os.path.join(ROOT, "build", "xpcsfit")))
    ap.add_argument("--work", default="/tmp/xf_laminar")
    ap.add_argument("--frames", type=int, default=80)
    ap.add_argument("--deltas", default="0.85,0.90,0.95,0.99")
    ap.add_argument("--ref-delta", type=float, default=0.99)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--samples", type=int, default=1500)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    deltas = [float(t) for t in a.deltas.split(",") if t]
    seeds = [int(t) for t in a.seeds.split(",") if t]
    os.makedirs(a.work, exist_ok=True)
    log = os.path.join(a.work, "run.log")
    open(log, "w").close()
    xf = os.path.join(a.work, "xpcsfit")
    shutil.copy2(a.xf, xf)

    h5 = os.path.join(a.work, "laminar.h5")
    with open(os.path.join(ROOT, "configs", "demo_laminar.yaml")) as f:
        sim_cfg = yaml.safe_load(f)
    sim_cfg["experimental_data"]["file_path"] = h5
    sim_cfg["analyzer_parameters"]["end_frame"] = a.frames
    sim_path = os.path.join(a.work, "simulate.yaml")
    with open(sim_path, "w") as f:
        yaml.safe_dump(sim_cfg, f, sort_keys=False)
    if os.path.exists(h5):
        os.remove(h5)
    run([xf, "simulate", "--config", sim_path, "--phi", "-60,-5,0,45,90", "--out", h5,
         "--noise", "0.002", "--seed", "1", "--frames", str(a.frames)], log)

    cfg = dict(sim_cfg)
    cfg["initial_parameters"] = {"parameter_names": THETA,
                                 "values": [1000.0, -0.5, 0.0, 0.01, 0.0, 0.0, 0.0]}
    cfg["optimization"] = {
        "nlsq": {"max_iterations": 200, "anti_degeneracy": {"per_angle_mode": "auto"}},
        "cmc": {"seed": 42, "route": "nuts", "sharding": {"num_shards": 1},
                "per_shard_mcmc": {"num_chains": a.chains, "num_warmup": a.warmup,
                                   "num_samples": a.samples}}}
    cfg_path = os.path.join(a.work, "fit.yaml")
    with open(cfg_path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    nl = os.path.join(a.work, "nl")
    run([xf, "nlsq", "--config", cfg_path, "--out", nl, "--no-plots", "--force",
         "--threads", str(a.threads)], log)
    with open(os.path.join(nl, "nlsq", "parameters.json")) as f:
        pn = json.load(f)
    print("nlsq: " + ", ".join(f"{n} {pn['parameters'][n]['value']:.5g} +/- "
                               f"{pn['parameters'][n].get('uncertainty') or float('nan'):.3g}"
                               for n in THETA))

    runs = []
    n_iter = a.chains * (a.warmup + a.samples)
    n_draws = a.chains * a.samples
    all_d = sorted(set(deltas + [a.ref_delta]), key=lambda d: (d != a.ref_delta, d))
    for d in all_d:
        for s in seeds:
            out = os.path.join(a.work, f"ta{d!r}_seed{s}")
            c0 = cpu_children()
            t0 = time.perf_counter()
            run([xf, "cmc", "--config", cfg_path, "--nlsq", os.path.join(nl, "nlsq"), "--out",
                 out, "--no-plots", "--force", "--threads", str(a.threads),
                 "--set", f"optimization.cmc.seed={s}",
                 "--set", f"optimization.cmc.per_shard_mcmc.target_accept_prob={d!r}"], log)
            wall = time.perf_counter() - t0
            cpu = cpu_children() - c0
            with open(os.path.join(out, "cmc", "parameters.json")) as f:
                pj = json.load(f)
            sh = pj["shard_diagnostics"][0]
            rate = float(sh.get("divergence_rate") or 0.0)
            rec = {"target_set": d, "target_used": pj["sampler"]["target_accept_prob"],
                   "seed": s, "divergences": int(round(rate * n_draws)),
                   "divergence_rate": rate, "step_size": sh["step_size"],
                   "gradients_per_iteration": sh["gradient_evaluations"] / n_iter,
                   "max_depth_fraction": sh.get("max_depth_fraction"),
                   "rhat_max": sh.get("rhat_max"), "ess_bulk_min": sh.get("ess_bulk_min"),
                   "sampling_s": float(pj["timing_s"]["sampling"]), "wall_s": wall,
                   "cpu_s": cpu, "quality": pj.get("quality"),
                   "mean": {n: pj["parameters"][n]["mean"] for n in THETA},
                   "sd": {n: pj["parameters"][n]["std"] for n in THETA},
                   "q05": {n: pj["parameters"][n].get("q05") for n in THETA},
                   "q95": {n: pj["parameters"][n].get("q95") for n in THETA}}
            runs.append(rec)
            print(f"target {d} (used {rec['target_used']}), seed {s}: divergences "
                  f"{rec['divergences']}, step {rec['step_size']:.3g}, "
                  f"{rec['gradients_per_iteration']:.2f} grad/it, sampling "
                  f"{rec['sampling_s']:.1f} s, CPU {cpu:.1f} s, min ESS "
                  f"{rec['ess_bulk_min']:.0f}", flush=True)

    ref = [r for r in runs if r["target_set"] == a.ref_delta]
    ref_mean = {n: float(np.mean([r["mean"][n] for r in ref])) for n in THETA}
    # pooled sd: within-run variances plus the spread of the run means
    ref_sd = {n: float(np.sqrt(np.mean([r["sd"][n] ** 2 for r in ref]) +
                               np.var([r["mean"][n] for r in ref]))) for n in THETA}
    print()
    print(f"reference: target {a.ref_delta}, {len(ref)} seeds pooled: " +
          ", ".join(f"{n} {ref_mean[n]:.5g} ± {ref_sd[n]:.3g}" for n in THETA))
    print(f"{'target':>7}{'used':>6}{'seed':>5}{'div':>5}{'step':>7}{'grad/it':>8}"
          f"{'samp s':>8}{'CPU s':>7}{'max|Δ|':>8}{'sd ratio':>13}")
    for r in runs:
        r["diff_in_ref_sd"] = {n: (r["mean"][n] - ref_mean[n]) / ref_sd[n] for n in THETA}
        r["sd_ratio"] = {n: r["sd"][n] / ref_sd[n] for n in THETA}
        mx = max(abs(v) for v in r["diff_in_ref_sd"].values())
        print(f"{r['target_set']:>7.3g}{r['target_used']:>6.3g}{r['seed']:>5}"
              f"{r['divergences']:>5}{r['step_size']:>7.3f}{r['gradients_per_iteration']:>8.2f}"
              f"{r['sampling_s']:>8.1f}{r['cpu_s']:>7.1f}{mx:>8.3f}"
              f"{min(r['sd_ratio'].values()):>7.3f}-{max(r['sd_ratio'].values()):.3f}")
    with open(os.path.join(a.work, "laminar.json"), "w") as f:
        json.dump({"frames": a.frames, "angles": [-60, -5, 0, 45, 90], "truth": TRUTH,
                   "chains": a.chains, "warmup": a.warmup, "samples": a.samples,
                   "threads": a.threads, "ref_delta": a.ref_delta, "ref_mean": ref_mean,
                   "ref_sd": ref_sd, "nlsq": pn["parameters"], "runs": runs}, f, indent=1)
    print(f"wrote {os.path.join(a.work, 'laminar.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
