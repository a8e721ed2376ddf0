#!/usr/bin/env python3
"""Long exact NUTS reference of a hard posterior case (issue 34), stored in
tests/configs/hard/<case>.ref.json. Usage (from anywhere; long: run under nice):

    nice -n 15 /usr/bin/python3 validation/hard/reference.py CASE [--xf build/xpcsfit]
        [--samples 4000] [--warmup 1000] [--chains 4] [--seeds 1] [--work DIR]
        [--skip-before]

Steps: simulate the case (validation/hard/cases.py), run the default `xpcsfit fit`
(--threads 1) — its route, k-hat, rounds, wall and CPU seconds are the "before" numbers —
then `xpcsfit cmc --nlsq <fit>/nlsq` with optimization.cmc.route: nuts, CHAINS x SAMPLES
after WARMUP, once per seed (optimization.cmc.seed 1000 + i); the seeds' draws are pooled
(mean, sd, 5 %/95 % quantiles from the pooled /cmc/draws). Checks and records the largest
R-hat and the smallest bulk ESS per seed (the goal: R-hat <= 1.01, pooled bulk ESS >= 4000).
"""
import argparse
import json
import os
import platform
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402


def nuts_run(xf, name, data, nlsq_dir, out, a, seed):
    args = [xf, "cmc", "--config", cases.config_path(name), "--data", data, "--nlsq",
            nlsq_dir, "--out", out, "--force", "--no-plots", "--threads", str(a.threads),
            "--set", "optimization.cmc.route=nuts",
            "--set", "optimization.cmc.seed=%d" % seed,
            "--set", "optimization.cmc.per_shard_mcmc.num_chains=%d" % a.chains,
            "--set", "optimization.cmc.per_shard_mcmc.num_warmup=%d" % a.warmup,
            "--set", "optimization.cmc.per_shard_mcmc.num_samples=%d" % a.samples]
    for kv in a.set:
        args += ["--set", kv]
    if cases.is_joint(name):
        args.append("--joint")
    r, wall, cpu = cases.timed(args)
    if r.returncode != 0:
        raise RuntimeError("cmc nuts seed %d: exit %d: %s" % (seed, r.returncode,
                                                                r.stderr[-3000:]))
    return os.path.join(out, cases.result_sub(name, "cmc")), wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(cases.CASES))
    ap.add_argument("--xf", default=os.path.join(cases.ROOT, "build", "xpcsfit"))
    ap.add_argument("--samples", type=int, default=4000)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work", default="/tmp/xf_hard_reference")
    ap.add_argument("--skip-before", action="store_true",
                    help="keep the before numbers already in the JSON")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an extra config override of the NUTS runs (e.g. "
                    "optimization.cmc.per_shard_mcmc.target_accept_prob=0.95), recorded")
    ap.add_argument("--no-before", action="store_true",
                    help="no default fit: only `nlsq` (the reference's start); no before numbers")
    a = ap.parse_args()
    name = a.case
    xf = os.path.abspath(a.xf)
    work = os.path.join(a.work, name)
    os.makedirs(work, exist_ok=True)
    data = cases.make_data(xf, name, work)
    ref_path = os.path.join(cases.HARD, name + ".ref.json")
    old = {}
    if os.path.exists(ref_path):
        with open(ref_path) as f:
            old = json.load(f)

    fit_dir = os.path.join(work, "fit")
    args = [xf, "fit", "--config", cases.config_path(name), "--data", data, "--out", fit_dir,
            "--force", "--no-plots", "--threads", "1"]
    if cases.is_joint(name):
        args.append("--joint")
    have_nlsq = os.path.exists(os.path.join(fit_dir, cases.result_sub(name, "nlsq"),
                                            "parameters.json"))
    if a.skip_before and "before" in old and have_nlsq:
        before = old["before"]
    elif a.no_before or (a.skip_before and "before" in old):
        # only the NLSQ start of the reference; the stored before numbers are kept
        args[1] = "nlsq"
        r, wall, cpu = cases.timed(args)
        if r.returncode not in (0, 1):
            raise RuntimeError("nlsq: exit %d: %s" % (r.returncode, r.stderr[-3000:]))
        before = old.get("before") or {"note": "not measured (--no-before)"}
    else:
        r, wall, cpu = cases.timed(args)
        if r.returncode not in (0, 1):
            raise RuntimeError("fit: exit %d: %s" % (r.returncode, r.stderr[-3000:]))
        c = cases.load_params(os.path.join(fit_dir, cases.result_sub(name, "cmc")))
        n = cases.load_params(os.path.join(fit_dir, cases.result_sub(name, "nlsq")))
        before = cases.route_summary(c)
        before.update({"fit_exit": r.returncode, "fit_wall_s": round(wall, 1),
                       "fit_cpu_s": round(cpu, 1), "threads": 1,
                       "nlsq_time_s": n.get("timing_s") or n.get("time_s"),
                       "commit": cases.git_commit()})
        print("before: %s" % json.dumps(before), flush=True)
    nlsq_dir = os.path.join(fit_dir, cases.result_sub(name, "nlsq"))

    pooled, per_seed, names = [], [], None
    for i in range(a.seeds):
        seed = 1000 + i
        cdir, wall, cpu = nuts_run(xf, name, data, nlsq_dir, os.path.join(work, "nuts%d" % i),
                                   a, seed)
        p = cases.load_params(cdir)
        diag = (p.get("posterior_diagnostics") or {}).get("parameters") or {}
        sh = p.get("shards") or {}
        rh = [v["r_hat"] for v in diag.values() if v.get("r_hat") is not None]
        ess = [v["ess_bulk"] for v in diag.values() if v.get("ess_bulk") is not None]
        import h5py
        with h5py.File(os.path.join(cdir, "results.h5"), "r") as f:
            d = f["cmc/draws"][()]
            names = [x.decode() if isinstance(x, bytes) else str(x)
                     for x in f["cmc/parameter_names"][()]]
        pooled.append(d)
        rec = {"seed": seed, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
               "route": (p.get("posterior_route") or {}).get("route"),
               "quality": (p.get("quality") or {}).get("overall"),
               "max_rhat": max(rh) if rh else sh.get("max_rhat"),
               "min_ess_bulk": min(ess) if ess else sh.get("min_ess_bulk"),
               "divergence_rate": sh.get("mean_divergence_rate"),
               "sigma": sigma_of(p)}
        per_seed.append(rec)
        print("nuts seed %d: %s" % (seed, json.dumps(rec)), flush=True)
    d = np.concatenate(pooled)
    post = {}
    for j, n in enumerate(names):
        x = d[:, j]
        if np.all(x == x[0]):
            continue  # fixed
        post[n] = {"mean": float(np.mean(x)), "sd": float(np.std(x, ddof=1)),
                   "q05": float(np.quantile(x, 0.05)), "q95": float(np.quantile(x, 0.95)),
                   "skewness": float(np.mean(((x - x.mean()) / x.std()) ** 3))}
    ess_pooled = sum(r["min_ess_bulk"] or 0 for r in per_seed)
    ok = all((r["max_rhat"] or 9) <= 1.01 for r in per_seed) and ess_pooled >= 4000
    out = {"case": name, "config": os.path.relpath(cases.config_path(name), cases.ROOT),
           "simulate": cases.CASES[name][1], "joint": cases.is_joint(name),
           "reference": {"route": "nuts", "chains": a.chains, "warmup": a.warmup,
                         "samples": a.samples, "seeds": [r["seed"] for r in per_seed],
                         "threads": a.threads, "overrides": a.set,
                         "draws_pooled": int(d.shape[0]),
                         "min_ess_bulk_pooled": ess_pooled,
                         "cpu_s": round(sum(r["cpu_s"] for r in per_seed), 1),
                         "wall_s": round(sum(r["wall_s"] for r in per_seed), 1),
                         "runs": per_seed, "meets_rhat_ess_goal": ok,
                         "commit": cases.git_commit(), "machine": platform.node()},
           "posterior": post, "before": before}
    with open(ref_path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote %s (R-hat/ESS goal %s)" % (ref_path, "met" if ok else "NOT met"))


def sigma_of(p):
    """The noise sd σ's posterior mean and sd (the one shard's, or the route's)."""
    sg = (p.get("posterior_route") or {}).get("sigma")
    if isinstance(sg, dict) and sg.get("mean") is not None:
        return {"mean": sg["mean"], "sd": sg.get("std")}
    sd = p.get("shard_diagnostics") or []
    if sd:
        return {"mean": sd[0].get("sigma_mean"), "sd": sd[0].get("sigma_sd")}
    return None


if __name__ == "__main__":
    main()
