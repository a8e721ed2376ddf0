#!/usr/bin/env python3
"""summarize.py PARAMETERS.JSON [REFERENCE.JSON]: status, route, sampler cost, each
parameter's mean/sd, R-hat, bulk ESS, divergences; with a reference, |d mean|/sd and the
sd ratio (adr/0079)."""
import json, sys

p = json.load(open(sys.argv[1]))
print("status", p["status"], "quality", p["quality"].get("overall"), "route",
      p.get("posterior_route", {}).get("route"))
sh = (p.get("shard_diagnostics") or [{}])[0]
print("grad_evals", p["sampler"].get("gradient_evaluations"), "divergences", sh.get("divergences"),
      "max_depth_frac", sh.get("max_depth_fraction"), "step", sh.get("step_size"),
      "timing", {k: round(v, 2) for k, v in p["timing_s"].items()})
pd = p["posterior_diagnostics"]["parameters"]
ref = json.load(open(sys.argv[2]))["parameters"] if len(sys.argv) > 2 else None
for k, v in p["parameters"].items():
    if v.get("mean") is None or isinstance(v["mean"], list):
        continue
    d = pd.get(k, {})
    line = f"  {k:10s} mean {v['mean']:.6g} sd {v['std']:.4g} rhat {d.get('r_hat')} ess {d.get('ess_bulk')}"
    if ref and ref.get(k, {}).get("mean") is not None:
        r = ref[k]
        line += f" | dmean/sd {(v['mean'] - r['mean']) / r['std']:+.3f} sd_ratio {v['std'] / r['std']:.3f}"
    print(line)
