#!/usr/bin/env python3
"""A one-angle static file whose D0 the prior decides over decades (small static replicate
43 of validation/fallback/replicates.py: 1 angle x 80 frames, alpha 0.073, D_offset 0):
near alpha = 0 the posterior is a funnel (alpha's width shrinks as 1/D0) along the
D0 + D_offset ridge. The chains with the scaling integrated out sample it in the slope
coordinates over e-folds of D0 (adr/0088); with the old cap on the slope piece NUTS ran
613 s, 6.4 M passes, R-hat 1.26 and gave no posterior. Asserted at the defaults (`fit`,
route auto, which refuses the approximation and runs NUTS): converged, R-hat < 1.01, no
divergence, no transition at the maximum tree depth, under 600 k gradient passes (the fix
takes ~160 k), D0's posterior spread over the prior's decades (sd > 5 000). ~15 s CPU."""
import json
import os
import shutil
import subprocess
import sys

from small_configs import STATIC_FREE
from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cmc_slope_wide_cli")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)


def main():
    data = os.path.join(TMP, "funnel.h5")
    cfg = os.path.join(TMP, "funnel.yaml")
    with open(cfg, "w") as f:
        f.write(STATIC_FREE.format(data=data, frames=80, d0=399.78657732402263,
                                   alpha=0.0731757249696971, d_offset=0.0))
    r = subprocess.run([XF, "simulate", "--config", cfg, "--phi", "0", "--out", data,
                        "--noise", "0.002", "--seed", "44", "--frames", "80", "--force", "-q"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"simulate: {r.stderr[-300:]}")
    out = os.path.join(TMP, "fit")
    r = subprocess.run([XF, "fit", "--config", cfg, "--out", out, "--no-plots", "-q",
                        "--threads", "2"], capture_output=True, text=True)
    check(r.returncode == 0, f"fit: exit {r.returncode}: {r.stderr[-300:]}")
    if r.returncode != 0:
        return summary()
    with open(os.path.join(out, "cmc", "parameters.json")) as f:
        p = json.load(f)
    check(p["posterior_route"]["route"] == "nuts", f"route {p['posterior_route']['route']}")
    check(p["status"] == "converged", f"status {p['status']}: {p['quality']}")
    sh = p["shard_diagnostics"][0] if p["shard_diagnostics"] else {}
    print(f"R-hat {sh.get('rhat_max')}, ESS {sh.get('ess_bulk_min')}, divergences "
          f"{sh.get('divergence_rate')}, max depth {sh.get('max_depth_fraction')}, passes "
          f"{sh.get('gradient_evaluations')}, step {sh.get('step_size')}; D0 "
          f"{p['parameters']['D0']['mean']:.0f} +- {p['parameters']['D0']['std']:.0f}")
    check(sh.get("rhat_max", 9) < 1.01, "R-hat below 1.01")
    check(sh.get("divergence_rate", 1) == 0, "no divergence")
    check(sh.get("max_depth_fraction", 1) == 0, "no transition at the maximum depth")
    check(sh.get("gradient_evaluations", 1e9) < 600_000, "under 600 k gradient passes")
    check(p["parameters"]["D0"]["std"] > 5000, "D0 spread over the prior's decades")
    return summary()


sys.exit(main())
