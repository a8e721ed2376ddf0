#!/usr/bin/env python3
"""The posterior on a real GPU (label gpu, adr/0130): `cmc --device gpu` against
`--device cpu` from one NLSQ result on a simulated static file large enough that its NUTS
chains run in turn (the device's evaluators): every summary of the importance route within
1e-10 relative, of exact NUTS within 1e-9, parameters.json saying where the passes ran.
Without a device (`xpcsfit-gpu validate` exits 3) it is skipped (77)."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers"))
from tally import check, summary  # noqa: E402

XF = os.environ["XF_BINARY"]
XF_GPU = os.path.join(os.path.dirname(XF), "xpcsfit-gpu")
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_gpu_posterior")
probe = subprocess.run([XF_GPU, "validate", "--frames", "100"], capture_output=True, text=True)
if probe.returncode == 3:
    print(f"skipped: {probe.stderr.strip()}")
    sys.exit(77)
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
with open(os.path.join(TMP, "c.yaml"), "w") as f:
    f.write("""analysis_mode: static
experimental_data:
  file_path: data.h5
analyzer_parameters:
  dt: 0.1
  end_frame: 400
  scattering: {wavevector_q: 0.0054}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {D_offset: 0}
""")


def run(*cmd):
    p = subprocess.run([str(a) for a in cmd], cwd=TMP, capture_output=True, text=True,
                       timeout=900)
    check(p.returncode == 0, f"{' '.join(map(str, cmd))}: rc {p.returncode} {p.stderr[-400:]}")
    return p


def summaries(out):
    with open(os.path.join(TMP, out, "cmc", "parameters.json")) as f:
        doc = json.load(f)
    got = {}
    for group in ("parameters", "scaling_parameters"):
        for name, v in doc[group].items():
            for k in ("value", "uncertainty", "median", "q05", "q95"):
                if isinstance(v.get(k), float):
                    got[f"{name}/{k}"] = v[k]
    return got, doc["posterior_route"].get("device")


run(XF, "simulate", "--config", "c.yaml", "--phi", "0,45,90", "--out", "data.h5")
run(XF, "nlsq", "--config", "c.yaml", "--no-plots", "--no-surfaces", "--out", "n")
CMC = [XF, "cmc", "--config", "c.yaml", "--no-plots", "--threads", "1", "--nlsq", "n"]
NUTS = ["--set", "optimization.cmc.route=nuts",
        "--set", "optimization.cmc.per_shard_mcmc.num_warmup=100",
        "--set", "optimization.cmc.per_shard_mcmc.num_samples=200"]
for how, extra, bound in (("importance", [], 1e-10), ("nuts", NUTS, 1e-9)):
    run(*CMC, "--out", f"cpu_{how}", *extra)
    run(*CMC, "--out", f"gpu_{how}", "--device", "gpu", *extra)
    ref, _ = summaries(f"cpu_{how}")
    got, dev = summaries(f"gpu_{how}")
    worst = max(abs(got[k] - v) / max(abs(v), 1e-300) for k, v in ref.items())
    check(set(got) == set(ref) and worst <= bound,
          f"{how}: the CPU's summaries within {bound:g} on the GPU, worst {worst:.3g}")
    check(dev and dev["asked"] == "gpu" and any("on the GPU" in d for d in dev["decisions"]),
          f"{how}: parameters.json says the passes ran on the GPU: {dev}")
sys.exit(summary())
