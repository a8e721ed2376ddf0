#!/usr/bin/env python3
"""Command-line overrides as a user gives them (docs/cli.md "Overrides", adr/0030): each
option applied (parameters.json "overrides", run.log), repeated --initial, --phi
selecting angles, --nlsq-result starting from an earlier fit, homodyne's aliases, batch;
plot --config drawing the angles --phi selects; --strict in simulate and plot --config;
the q tolerance and the gap default (adr/0031); the constants printed with their
sources; residual sd instead of a reduced χ² when σ is not given; the per-angle mode
used. The refusals (exit 2 naming the option) are in bad_inputs/cases_overrides.py."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers"))
from tally import check, summary  # noqa: E402
from waits import RUN_GUARD_S  # noqa: E402

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_overrides_cli")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

CONFIG = """analysis_mode: static
experimental_data:
  file_path: data.h5
analyzer_parameters:
  dt: 0.1
  end_frame: 40
  scattering: {wavevector_q: 0.0054}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {D_offset: 0}
"""


def run(*args, rc=0):
    p = subprocess.run([XF] + [str(a) for a in args], cwd=TMP, capture_output=True,
                       text=True, timeout=RUN_GUARD_S)
    check(p.returncode == rc, f"{' '.join(map(str, args))}: rc {p.returncode}, want {rc}: "
                              f"{p.stderr.strip()[-400:]}")
    return p


def params(out):
    with open(os.path.join(TMP, out, "nlsq", "parameters.json")) as f:
        return json.load(f)


def runlog(out):
    with open(os.path.join(TMP, out, "nlsq", "run.log")) as f:
        return f.read()


with open(os.path.join(TMP, "c.yaml"), "w") as f:
    f.write(CONFIG)
run("simulate", "--config", "c.yaml", "--phi", "0,45,90,135", "--out", "data.h5",
    "--initial", "D0=5000")
FIT = ["nlsq", "--config", "c.yaml", "--no-plots", "--threads", "1"]

# 1. every override applied, recorded in parameters.json and run.log, printed once
p = run(*FIT, "--out", "o1", "--initial", "D0=9000", "--initial", "D0=6000",
        "--max-iterations", "40", "--phi", "-10:10", "--phi", "80:100",
        "--set", "optimization.nlsq.xtol=1e-9", "--fix", "D_offset=0")
pj = params("o1")
ov = pj.get("overrides", [])
opts = [o["option"] for o in ov]
check(opts.count("--initial") == 2, f"two --initial records: {ov}")
check({"option": "--max-iterations", "key": "optimization.nlsq.max_iterations",
       "value": "40"} in ov, f"--max-iterations record: {ov}")
check({"option": "--set", "key": "optimization.nlsq.xtol", "value": "1e-9"} in ov,
      f"--set record: {ov}")
check({"option": "--fix", "key": "initial_parameters.fixed_parameters.D_offset",
       "value": "0"} in ov, f"--fix record: {ov}")
check(sum(o["key"] == "phi_filtering.target_ranges" for o in ov) == 2, f"--phi records: {ov}")
check(p.stderr.count("override --initial: initial_parameters.values[D0] = 6000") == 1,
      "each override printed once on stderr")
log = runlog("o1")
check("override --max-iterations: optimization.nlsq.max_iterations = 40" in log,
      "override in run.log")
check(sorted(pj["per_angle"]["phi_deg"] if "phi_deg" in pj.get("per_angle", {}) else
             pj["data"].get("phi_deg", [])) in ([0.0, 90.0], []),
      "--phi kept the angles 0 and 90")
check(pj["data"].get("n_phi", 2) == 2, f"--phi -10:10 --phi 80:100 keeps 2 angles: {pj['data']}")

# --phi selects the angles (validate), the last --initial wins, aliases
v = json.loads(run("validate", "--config", "c.yaml", "--json", "--phi", "40:50",
                   "--phi", "130:140").stdout)
check(v["angles"] == [45.0, 135.0], f"--phi 40:50 --phi 130:140: angles {v['angles']}")
check("override --phi" in v["angles_source"], f"angles source names --phi: {v}")
v = json.loads(run("validate", "--config", "c.yaml", "--json", "--laminar-flow").stdout)
check(v["mode"] == "laminar_flow", "--laminar-flow is --mode laminar_flow")
check(v["gap_source"].startswith("default"), f"gap default named: {v['gap_source']}")
p = run("validate", "--config", "c.yaml", "--mode", "laminar_flow")
check("stator_rotor_gap is not set" in p.stderr and "2e+06" in p.stderr,
      "laminar_flow without a gap: a warning naming the default")
v = json.loads(run("validate", "--config", "c.yaml", "--json", "--laminar-flow",
                   "--static-mode").stdout)
check(v["mode"] == "static", "--static-mode after --laminar-flow: the last wins")
run(*FIT, "--output-dir", "o2", "--initial", "D0=5500")
check(os.path.exists(os.path.join(TMP, "o2", "nlsq", "parameters.json")),
      "--output-dir is --out")

# 2. constants with their sources
v = run("validate", "--config", "c.yaml", "--set", "dt=0.1").stdout
for key in ("q_source: file: the ring nearest", "dt_source:", "gap_A: 2000000",
            "gap_source: not used in static mode", "angles_source: file: all 4"):
    check(key in v, f"validate prints '{key}'")
check("q_source: file: the ring nearest analyzer_parameters.scattering.wavevector_q 0.0054"
      " (config)" in v, "q source: config")
err = p = run(*FIT, "--out", "o3", "--set", "q=0.0055").stderr
check("q = 0.0054 1/A (file: the ring nearest" in err and "override --set 0.0055" in err,
      f"nlsq prints q with its source (a q within 5%): {err[:600]}")
check("dt = 0.1 s (config" in err and "angles = 0, 45, 90, 135 deg" in err,
      "nlsq prints dt and the angles with their sources")

# 3. σ not given: residual sd, no reduced χ²; σ given: reduced χ²; per-angle mode used
out = run(*FIT, "--out", "o4").stdout
check("reduced chi2" not in out and "residual sd:" in out,
      f"sigma not given: residual sd, no reduced chi2: {out}")
check("per-angle scaling: individual (config: auto)" in out, f"per-angle mode used: {out}")
out = run(*FIT, "--out", "o5", "--set", "optimization.nlsq.sigma=0.002",
          "--set", "optimization.nlsq.anti_degeneracy.enable=true").stdout
check("reduced chi2" in out and "residual sd" not in out, f"sigma given: reduced chi2: {out}")
pj = params("o5")
check(pj["per_angle_mode"] == "shared" and pj["per_angle_mode_config"] == "auto",
      f"auto over 4 angles recorded as shared: {pj['per_angle_mode']}")
check(params("o4")["per_angle_mode"] == "individual", "static: individual recorded")
check(params("o4")["overrides"] == [], "no overrides: an empty list")

# 4. --nlsq-result starts from the earlier fit
far = run(*FIT, "--out", "o6", "--initial", "D0=30000", "--initial", "alpha=-0.9",
          "--set", "optimization.nlsq.start_search.enable=false")
p6 = params("o6")
run(*FIT, "--out", "o7", "--nlsq-result", "o6",
    "--set", "optimization.nlsq.start_search.enable=false")
p7 = params("o7")
starts = {o["key"]: float(o["value"]) for o in p7["overrides"] if o["option"] == "--nlsq-result"}
check(abs(starts.get("initial_parameters.values[D0]", 0) - p6["parameters"]["D0"]["value"])
      <= 1e-9 * p6["parameters"]["D0"]["value"], f"start recorded from o6: {starts}")
check(p7["iterations"] < p6["iterations"],
      f"from the earlier result: {p7['iterations']} < {p6['iterations']} iterations")
run(*FIT, "--out", "o8", "--nlsq-result", os.path.join(TMP, "o6", "nlsq"))
check(os.path.exists(os.path.join(TMP, "o8", "nlsq", "parameters.json")),
      "--nlsq-result accepts DIR/nlsq too")

# 5. batch: the overrides apply to every file
shutil.copy(os.path.join(TMP, "data.h5"), os.path.join(TMP, "b1.h5"))
run("batch", "--config", "c.yaml", "--output-dir", "ob", "b1.h5", "--no-plots",
    "--threads", "1", "--initial", "D0=5100")
with open(os.path.join(TMP, "ob", "b1", "nlsq", "parameters.json")) as f:
    pb = json.load(f)
check({"option": "--initial", "key": "initial_parameters.values[D0]", "value": "5100"}
      in pb["overrides"], f"batch --initial recorded: {pb['overrides']}")

# 6. plot --config: the overrides choose the data drawn as they choose the data fitted
run("plot", "--config", "c.yaml", "--out", "op", "--phi", "40:50", "--phi", "130:140")
pages = sorted(f for f in os.listdir(os.path.join(TMP, "op", "data_plots"))
               if f.startswith("c2_phi_"))
check(len(pages) == 2 and "+045.00deg" in pages[0] and "+135.00deg" in pages[1],
      f"plot --config --phi draws the selected angles: {pages}")
p = run("plot", "op", "--phi", "40:50", rc=2)
check("need --config" in p.stderr and not os.path.exists(os.path.join(TMP, "op", "plots")),
      f"plot DIR refuses overrides: {p.stderr}")

# 7. --strict on every subcommand that reads a config, simulate and plot --config too
with open(os.path.join(TMP, "extra.yaml"), "w") as f:
    f.write(CONFIG + "plotting:\n  color_scheme: viridis\n")
p = run("simulate", "--config", "extra.yaml", "--phi", "0", "--out", "strict.h5", "--strict",
        rc=2)
check("plotting.color_scheme" in p.stderr and not os.path.exists(os.path.join(TMP, "strict.h5")),
      f"simulate --strict names the key, writes nothing: {p.stderr}")
p = run("plot", "--config", "extra.yaml", "--out", "ops", "--strict", rc=2)
check("plotting.color_scheme" in p.stderr and
      not os.path.exists(os.path.join(TMP, "ops", "data_plots")),
      f"plot --config --strict names the key, draws nothing: {p.stderr}")
run("plot", "--config", "extra.yaml", "--out", "ops2")  # without --strict: drawn

sys.exit(summary())
