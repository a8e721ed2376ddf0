#!/usr/bin/env python3
"""End-to-end checks of `xpcsfit cmc` and `xpcsfit fit` as a user runs them (spec/cli.md,
spec/cmc.md): simulate a small static file, sample it on a few shards, read the result
files back with h5py/json. Determinism across --threads; resume after SIGKILL and after
Ctrl-C; bad config values and mismatching --nlsq folders refused with one line and exit 2;
NLSQ run first without --nlsq; the parameters.json schema; a run whose shards are all
excluded (status failed, exit 1, results still written); a run whose self-check says the
consensus is not the full-data posterior (quality marginal, exit 0)."""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cmc_cli")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

DATA = os.path.join(TMP, "s.h5")
# D_offset fixed: 2 sampled physical parameters + 3 contrasts + 3 offsets + sigma
CONFIG = """analysis_mode: static
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.1
  end_frame: {frames}
  scattering: {{wavevector_q: 0.0054}}
{extra_top}initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {{D_offset: 0}}
optimization:
  cmc:
    seed: 7
    sharding: {{num_shards: {shards}}}
    per_shard_mcmc: {{num_warmup: {warmup}, num_samples: {samples}, num_chains: {chains}{mcmc}}}
{cmc}"""
from same_result import same_array
from tally import check, summary
from waits import RUN_GUARD_S


def write_config(name, shards=3, warmup=100, samples=100, chains=2, mcmc="", cmc="", frames=50,
                 data=DATA, extra_top=""):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(CONFIG.format(data=data, frames=frames, shards=shards, warmup=warmup,
                              samples=samples, chains=chains, mcmc=mcmc, cmc=cmc, extra_top=extra_top))
    return path


def run(*args, cwd=None):
    return subprocess.run([XF, *args], capture_output=True, text=True, cwd=cwd, timeout=RUN_GUARD_S)


def out(name):
    return os.path.join(TMP, name)


def datasets(path):
    """Every dataset of an HDF5 file: name -> array."""
    found = {}
    with h5py.File(path, "r") as h:
        h.visititems(lambda n, o: found.__setitem__(n, o[()])
                     if isinstance(o, h5py.Dataset) else None)
    return found


def same_arrays(a, b, what):
    """The posterior arrays (/cmc/...) of two results.h5, byte for byte."""
    da, db = datasets(a), datasets(b)
    check(sorted(da) == sorted(db), f"{what}: dataset lists differ")
    for name in da:
        if name.startswith("cmc/") and name in db:
            check(same_array(da[name], db[name]), f"{what}: /{name} differs")
    for name in ("cmc/draws", "cmc/shard_draws", "cmc/summary"):
        check(name in da, f"{what}: /{name} missing")


def without_timing(p):
    p = dict(p)
    p.pop("timing_s", None)
    return p


def params(d):
    with open(os.path.join(d, "parameters.json")) as f:
        return json.load(f)


def no_result(d, what):
    """Nothing that looks like a final result in d (a cmc/ or nlsq/ folder)."""
    for name in ("parameters.json", "results.h5", "run.log"):
        check(not os.path.exists(os.path.join(d, name)), f"{what}: {name} left in {d}")


def shard_files(cmc_dir):
    return sorted(glob.glob(os.path.join(cmc_dir, "shards", "shard_*.bin")))


# what a run prints before sampling (docs/cli.md "Constants and their sources"); a check
# that fails inside the sampler's set-up comes after them
CONSTANTS = ("xpcsfit: q = ", "xpcsfit: dt = ", "xpcsfit: gap = ", "xpcsfit: angles = ")


def one_error_line(r, *words, code=2, what=""):
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith(CONSTANTS)]
    check(r.returncode == code, f"{what}: exit {r.returncode}, want {code}: {r.stderr}")
    check(len(lines) == 1 and lines[0].startswith("xpcsfit: error:"),
          f"{what}: not one error line: {r.stderr!r}")
    for w in words:
        check(w in r.stderr, f"{what}: '{w}' not in {r.stderr!r}")


def test_determinism(nlsq, shards=3):
    """1, 2 and 3 virtual devices: the same posterior bytes and parameters.json numbers.
    With shards=1 (the exact posterior) every pass is spread over the devices, so this also
    pins the fixed-order block sums of the pooled pass."""
    cfg = write_config(f"det{shards}.yaml", shards=shards)
    dirs = []
    for t in ("1", "2", "3"):
        d = out(("det" if shards == 3 else f"det_k{shards}_") + t)
        r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", d, "--threads", t,
                "--no-plots")
        check(r.returncode == 0, f"cmc --threads {t}: exit {r.returncode}: {r.stderr}")
        check(f"{t} virtual devices" in r.stderr, f"--threads {t} announced")
        dirs.append(os.path.join(d, "cmc"))
    for d in dirs[1:]:
        same_arrays(os.path.join(dirs[0], "results.h5"), os.path.join(d, "results.h5"),
                    f"threads 1 vs {d[-5]}")
        check(without_timing(params(dirs[0])) == without_timing(params(d)),
              f"parameters.json differs between 1 and {d[-5]} threads (timing aside)")
    return dirs[0]


def test_noise_estimate(nlsq, cmc_dir):
    """The σ prior's noise scale is 1.4826·MAD of each shard's residuals at NLSQ's own
    point (cmc.md): for Gaussian noise it matches NLSQ's residual sd. A start moved away
    from NLSQ (an earlier version pushed every value 1 % of the width inside its bounds:
    D0 8000 in [1, 1e6] to 10 000) made it several times too large."""
    sd = params(nlsq)["residual_sd"]
    for s in params(cmc_dir)["shard_diagnostics"]:
        check(abs(s["noise"] / sd - 1.0) < 0.15,
              f"shard {s['id']}: noise {s['noise']:.4g} vs NLSQ residual sd {sd:.4g}")


def test_start_off_bounds():
    """Laminar data with γ̇0 = 0.002, bounds [1e-6, 0.5]: the chains start at NLSQ's γ̇0 and
    σ's noise scale matches NLSQ's residual sd. The earlier start clamped every value to
    1 % of the width from its bounds (γ̇0 to 0.005), far from the mode, and the noise
    estimate taken there was many times too large (44× on 6 × 80 frames)."""
    data = os.path.join(TMP, "lam_small_gdot.h5")
    cfg = os.path.join(TMP, "lam_small_gdot.yaml")
    with open(cfg, "w") as f:
        f.write(f"""analysis_mode: laminar_flow
experimental_data: {{file_path: {data}}}
analyzer_parameters:
  dt: 0.001
  end_frame: 60
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [1200, -1.2, 10, 0.002, -0.25, 0.0004, 2.0]
optimization:
  nlsq: {{anti_degeneracy: {{per_angle_mode: auto}}}}
  cmc:
    sharding: {{num_shards: 1}}
    per_shard_mcmc: {{num_chains: 2, num_warmup: 60, num_samples: 40}}
""")
    r = run("simulate", "--config", cfg, "--phi", "-60,0,45,90", "--out", data, "--noise",
            "0.001", "--seed", "2")
    check(r.returncode == 0, f"simulate: {r.stderr}")
    d = out("start_off_bounds")
    r = run("fit", "--config", cfg, "--out", d, "--no-plots")
    check(r.returncode in (0, 1), f"fit: exit {r.returncode}: {r.stderr}")
    nlsq = params(os.path.join(d, "nlsq"))
    noise = params(os.path.join(d, "cmc"))["shard_diagnostics"][0]["noise"]
    check(abs(noise / nlsq["residual_sd"] - 1.0) < 0.15,
          f"noise {noise:.4g} vs NLSQ residual sd {nlsq['residual_sd']:.4g}")


def test_schema(cmc_dir):
    """parameters.json and results.h5 of a converged run (spec/cli.md, cmc schema)."""
    p = params(cmc_dir)
    for key in ("method", "analysis_mode", "status", "convergence_status", "parameters",
                "per_angle", "shards", "consensus_check", "quality", "timing_s"):
        check(key in p, f"parameters.json lacks {key}")
    check(p["method"] == "cmc" and p["analysis_mode"] == "static", "method, mode")
    check(p["status"] == "converged" and p["convergence_status"] == "converged",
          f"status {p['status']}/{p['convergence_status']}")
    for name in ("D0", "alpha"):
        e = p["parameters"][name]
        check(set(("mean", "std", "median", "q05", "q95")) <= set(e), f"{name} keys {e}")
        check(e["q05"] < e["median"] < e["q95"] and e["std"] > 0, f"{name} summary {e}")
    check(abs(p["parameters"]["D0"]["mean"] - 8000) < 5 * p["parameters"]["D0"]["std"],
          f"D0 {p['parameters']['D0']} vs truth 8000")
    check(p["parameters"]["D_offset"].get("fixed") is True, "D_offset fixed")
    # NLSQ's field names (adr/0062): value/uncertainty, mean/std kept as their aliases
    for name, e in list(p["parameters"].items()) + list(p["scaling_parameters"].items()):
        if e.get("fixed"):
            check(set(("value", "uncertainty")) <= set(e) and e["uncertainty"] is None,
                  f"fixed {name}: value and a null uncertainty, as NLSQ: {e}")
            continue
        check(e["value"] == e["mean"] and e["uncertainty"] == e["std"],
              f"{name}: value/uncertainty are the posterior mean/std: {e}")
    units = p.get("parameter_units", {})
    check(units.get("D0") == "angstrom^2/s^(1+alpha)" and units.get("alpha") == "1"
          and units.get("D_offset") == "angstrom^2/s" and units.get("contrast") == "1",
          f"parameter_units: {units}")
    check(set(p["parameters"]) | set(p["scaling_parameters"]) == set(units),
          f"a unit for every parameter: {sorted(units)}")
    pa = p["per_angle"]
    for key in ("phi_deg", "contrast", "contrast_std", "offset", "offset_std",
                "contrast_uncertainty", "offset_uncertainty"):
        check(key in pa and len(pa[key]) == 3, f"per_angle.{key}")
    check(pa["contrast_uncertainty"] == pa["contrast_std"], "per_angle aliases")
    # homodyne's names: the mean over angles, std = RMS of the per-angle sds
    for k in ("contrast", "offset"):
        e = p["parameters"][k]
        check(abs(e["mean"] - np.mean(pa[k])) < 1e-12, f"parameters.{k}.mean")
        check(abs(e["std"] - np.sqrt(np.mean(np.square(pa[k + "_std"])))) < 1e-12,
              f"parameters.{k}.std")
    check(abs(p["parameters"]["contrast"]["mean"] - 0.3) < 0.01, "contrast near 0.3")
    s = p["shards"]
    check(s["planned"] == 3 and s["kept"] == 3 and s["excluded"] == [], f"shards {s}")
    for key in ("max_rhat", "min_ess_bulk", "min_ess_tail", "mean_divergence_rate"):
        check(isinstance(s.get(key), (int, float)), f"shards.{key}")
    check(len(p["shard_diagnostics"]) == 3, "per-shard diagnostics")
    # spec/cmc.md: the PSIS self-check runs whenever K > 1 (null only when K = 1). It is
    # src/cmc/check.c with optimization.cmc.combination.check_draws (being written when
    # this test was: without it consensus_check is null here and this check fails).
    c = p["consensus_check"]
    check(isinstance(c, dict) and set(("khat", "M", "seed", "consensus_summaries")) <= set(c),
          f"consensus_check for K = 3 shards: {c!r} (src/cmc: self-check not run)")
    if isinstance(c, dict):
        # adr/0039: M starts at check_draws (4000) and doubles until stable, up to 32000;
        # all three checks reported, with what was published
        check(c["M_first"] == 4000 and c["M"] in (4000, 8000, 16000, 32000)
              and c["khat"] < 0.7, f"consensus_check M {c['M']} k-hat {c['khat']}")
        for key in ("is_ess", "is_ess_per_M", "is_ess_per_M_gaussian", "axis_check",
                    "passed", "proposal", "published", "verdict", "M_stable"):
            check(key in c, f"consensus_check.{key} missing")
        check(c["proposal"] == {"family": "multivariate_t", "nu": 5, "scale": 1.5},
              f"proposal {c.get('proposal')}")
        check(abs(c["is_ess_per_M"] - c["is_ess"] / c["M"]) < 1e-12, "IS-ESS/M")
        passed = c["passed"]["khat"] and c["passed"]["is_ess"] and c["passed"]["axis"]
        check(c["corrected"] == passed and
              c["published"] == ("importance_weighted" if passed else "consensus"),
              f"corrected {c['corrected']} but passed {c['passed']}")
        check((c["verdict"] is None) == passed, f"verdict {c['verdict']}")
    q = p["quality"]
    check(q["overall"] in ("good", "marginal", "poor") and isinstance(q["reasons"], list),
          f"quality {q}")
    with h5py.File(os.path.join(cmc_dir, "results.h5"), "r") as h:
        names = [n.decode() if isinstance(n, bytes) else n for n in h["/cmc/parameter_names"]]
        check(names[:3] == ["D0", "alpha", "D_offset"] and len(names) == 9, f"names {names}")
        h5units = [u.decode() if isinstance(u, bytes) else u
                   for u in h["/cmc/parameter_units"]] if "/cmc/parameter_units" in h else []
        check(h5units == [units.get(n) for n in names], f"/cmc/parameter_units {h5units}")
        check(h["/cmc/draws"].shape == (200, 9), f"draws {h['/cmc/draws'].shape}")
        check(h["/cmc/shard_draws"].shape == (3, 2, 100, 9),
              f"shard_draws {h['/cmc/shard_draws'].shape}")
        draws = h["/cmc/draws"][()]
        check(np.all(draws[:, 2] == 0.0), "fixed D_offset constant in the draws")
        src = h["/cmc/draws"].attrs["source"]
        src = src.decode() if isinstance(src, bytes) else src
        if isinstance(c, dict) and c["corrected"]:
            # the published draws are the corrected posterior: a resample of the
            # self-check's points; the plain consensus kept under its own name
            check(src.startswith("importance_resampled"), f"draws source {src}")
            check(h["/cmc/consensus/draws"].shape == (200, 9), "consensus draws kept")
            cs = h["/cmc/consensus/summary"][()]
            check(cs[0, 0] == c["consensus_summaries"]["D0"]["mean"],
                  "consensus summary == consensus_check.consensus_summaries")
            ck = h["/cmc/consensus_check"]
            check(ck["u"].shape[0] == c["M"] and ck["log_weights"].shape == (c["M"],),
                  "self-check points and weights")
            # every resampled draw is one of the points (physical values from u)
            lw = ck["log_weights"][()]
            check(abs(np.exp(lw).sum() - 1) < 1e-9, "normalised weights")
        else:
            check(src.startswith("consensus"), f"draws source {src}")
        summ = h["/cmc/summary"][()]
        check(np.allclose(summ[0, 0], p["parameters"]["D0"]["mean"], rtol=0, atol=0),
              "results.h5 summary == parameters.json")
        check(h["/cmc"].attrs["status"] in ("converged", b"converged"), "status attribute")
        for k in ("phi_deg", "t", "q"):
            check("/data/" + k in h, f"/data/{k}")


def test_resume(nlsq):
    """SIGKILL after some shards: no final result; --resume reuses them and gives the
    bytes of an uninterrupted run. Ctrl-C: exit 130, finished shards kept."""
    cfg = write_config("resume.yaml", shards=6, warmup=300, samples=300)
    ref = out("resume_ref")
    r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", ref, "--threads", "1",
            "--no-plots")
    check(r.returncode == 0, f"uninterrupted run: {r.stderr}")
    ref_cmc = os.path.join(ref, "cmc")

    for sig, name in ((signal.SIGKILL, "killed"), (signal.SIGINT, "interrupted")):
        d = out("resume_" + name)
        cmc = os.path.join(d, "cmc")
        proc = subprocess.Popen([XF, "cmc", "--config", cfg, "--nlsq", nlsq, "--out", d,
                                 "--threads", "1", "--no-plots"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # the state: two shards stored (600 s: a guard against a hang, not a measure)
        t0 = time.monotonic()
        while len(shard_files(cmc)) < 2 and proc.poll() is None and time.monotonic() - t0 < 600:
            time.sleep(0.005)
        proc.send_signal(sig)
        err = proc.stderr.read()
        proc.wait()
        kept = shard_files(cmc)
        check(1 <= len(kept) < 6, f"{name}: {len(kept)} of 6 shards finished at the signal")
        if sig == signal.SIGINT:
            check(proc.returncode == 130, f"Ctrl-C exit {proc.returncode}: {err}")
            check("interrupted" in err and "--resume" in err, f"Ctrl-C message: {err}")
        else:
            check(proc.returncode == -signal.SIGKILL, f"kill: {proc.returncode}")
        no_result(cmc, name)
        r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", d, "--threads", "2",
                "--no-plots", "--resume")
        check(r.returncode == 0, f"{name}: --resume exit {r.returncode}: {r.stderr}")
        check(f"resumed {len(kept)} of 6 shards" in r.stderr,
              f"{name}: resume count ({len(kept)}) not said: {r.stderr}")
        same_arrays(os.path.join(ref_cmc, "results.h5"), os.path.join(cmc, "results.h5"),
                    f"{name} + --resume vs uninterrupted")
        check(without_timing(params(ref_cmc)) == without_timing(params(cmc)),
              f"{name} + --resume: parameters.json differs")

    # --resume with other settings: only shards whose inputs match are reused
    d = out("resume_killed")
    cfg2 = write_config("resume2.yaml", shards=6, warmup=300, samples=300,
                        cmc="    validation: {max_per_shard_rhat: 1.5}\n")
    r = run("cmc", "--config", cfg2, "--nlsq", nlsq, "--out", d, "--threads", "2",
            "--no-plots", "--resume")
    # the exclusion rules are applied after sampling: every shard is reused
    check(r.returncode == 0 and "resumed 6 of 6 shards" in r.stderr,
          f"other validation settings reuse every shard: {r.stderr}")
    cfg3 = write_config("resume3.yaml", shards=6, warmup=300, samples=200)
    r = run("cmc", "--config", cfg3, "--nlsq", nlsq, "--out", d, "--threads", "2",
            "--no-plots", "--resume")
    check(r.returncode == 0 and "resumed 0 of 6 shards" in r.stderr,
          f"other sampler settings reuse nothing: {r.stderr}")


def test_bad_config(nlsq):
    """A known CMC key with a bad value: one line naming the key, exit 2, nothing written."""
    cases = [
        (dict(shards=-3), "optimization.cmc.sharding.num_shards"),
        (dict(shards=0), "optimization.cmc.sharding.num_shards"),
        (dict(shards="many"), "optimization.cmc.sharding.num_shards"),
        (dict(chains=0), "optimization.cmc.per_shard_mcmc.num_chains"),
        (dict(warmup=0), "optimization.cmc.per_shard_mcmc.num_warmup"),
        (dict(samples=-5), "optimization.cmc.per_shard_mcmc.num_samples"),
        (dict(mcmc=", target_accept_prob: 1.5"),
         "optimization.cmc.per_shard_mcmc.target_accept_prob"),
        (dict(mcmc=", max_tree_depth: 0"), "optimization.cmc.per_shard_mcmc.max_tree_depth"),
        (dict(mcmc=", dense_mass: maybe"), "optimization.cmc.per_shard_mcmc.dense_mass"),
        (dict(cmc="    combination: {method: nonsense}\n"),
         "optimization.cmc.combination.method"),
        (dict(cmc="    combination: {min_success_rate: 0}\n"),
         "optimization.cmc.combination.min_success_rate"),
        (dict(cmc="    combination: {check_draws: -1}\n"),
         "optimization.cmc.combination.check_draws"),
        (dict(cmc="    validation: {max_divergence_rate: -1}\n"),
         "optimization.cmc.validation.max_divergence_rate"),
        (dict(cmc="    validation: {max_per_shard_rhat: 0.5}\n"),
         "optimization.cmc.validation.max_per_shard_rhat"),
        (dict(cmc="    validation: {nlsq_prior_width_factor: 0}\n"),
         "optimization.cmc.validation.nlsq_prior_width_factor"),
        (dict(cmc="    per_angle_mode: fourier\n"), "optimization.cmc.per_angle_mode"),
        (dict(shards="auto, max_points_per_shard: 0"),
         "optimization.cmc.sharding.max_points_per_shard"),
        (dict(cmc="    seed: -1\n"), "optimization.cmc.seed"),
    ]
    for k, (kw, key) in enumerate(cases):
        cfg = write_config(f"bad{k}.yaml", **kw)
        if "seed: -1" in kw.get("cmc", ""):  # replace the seed, not a duplicate key
            with open(cfg) as f:
                text = f.read().replace("    seed: 7\n", "")
            with open(cfg, "w") as f:
                f.write(text)
        d = out(f"bad{k}")
        r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", d)
        one_error_line(r, key, "not allowed", what=key)
        check(not os.path.exists(d), f"{key}: {d} created")
        r = run("fit", "--config", cfg, "--out", d)
        check(r.returncode == 2 and key in r.stderr and not os.path.exists(d),
              f"fit with a bad {key}: {r.returncode} {r.stderr}")
    # more shards than the data have frame pairs (50 frames: 1 176 pairs): refused before
    # anything is sampled or written, not run as hundreds of one-pair shards
    cfg = write_config("too_many_shards.yaml", shards=5000)
    d = out("too_many_shards")
    r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", d)
    one_error_line(r, "optimization.cmc.sharding.num_shards", "frame pairs",
                   what="num_shards above the frame pairs")
    check(not os.path.exists(os.path.join(d, "cmc")), f"num_shards 5000: {d}/cmc created")
    # the documented key check_draws is read, not warned about as unknown
    cfg = write_config("check_draws.yaml", cmc="    combination: {check_draws: 500}\n")
    r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", out("check_draws"), "--no-plots")
    check(r.returncode == 0 and "unknown config key" not in r.stderr,
          f"combination.check_draws: {r.stderr}")


def test_bad_nlsq(nlsq, sim):
    """--nlsq of other data, mode, angles or frames, a missing or non-NLSQ folder: one line,
    exit 2, nothing written."""
    base = write_config("base.yaml")
    other = out("other.h5")
    r = sim(write_config("other_sim.yaml", data=other), other, "5")
    cases = []
    # another file (same shape: only the file tells them apart)
    r = run("nlsq", "--config", write_config("o.yaml", data=other), "--out", out("n_other"),
            "--no-plots", "--no-surfaces")
    check(r.returncode == 0, f"nlsq on the other file: {r.stderr}")
    cases.append((out("n_other"), "another data file"))
    # another analysis mode on the same file
    lam = out("lam.yaml")
    with open(lam, "w") as f:
        f.write(f"""analysis_mode: laminar_flow
experimental_data: {{file_path: {DATA}}}
analyzer_parameters:
  dt: 0.1
  end_frame: 50
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [8000, -0.1, 0, 0.001, 0, 0, 0]
optimization:
  nlsq: {{max_iterations: 3, start_search: {{enable: false}}}}
""")
    r = run("nlsq", "--config", lam, "--out", out("n_lam"), "--no-plots", "--no-surfaces")
    check(r.returncode in (0, 1), f"laminar nlsq: {r.stderr}")
    cases.append((out("n_lam"), "another analysis_mode"))
    # other angles: 2 of the 3 selected
    phi = write_config("phi.yaml", extra_top="phi_filtering:\n  enabled: true\n"
                       "  target_ranges: [{min_angle: -5, max_angle: 65}]\n")
    r = run("nlsq", "--config", phi, "--out", out("n_phi"), "--no-plots", "--no-surfaces")
    check(r.returncode == 0, f"nlsq on 2 angles: {r.stderr}")
    cases.append((out("n_phi"), "other angles"))
    # another frame window
    r = run("nlsq", "--config", write_config("f.yaml", frames=40), "--out", out("n_frames"),
            "--no-plots", "--no-surfaces")
    check(r.returncode == 0, f"nlsq on 40 frames: {r.stderr}")
    cases.append((out("n_frames"), "another frame window"))
    for k, (d, why) in enumerate(cases):
        o = out(f"bad_nlsq{k}")
        r = run("cmc", "--config", base, "--nlsq", d, "--out", o)
        one_error_line(r, why, "--nlsq", what=f"--nlsq {why}")
        check(not os.path.exists(o), f"--nlsq {why}: {o} created")
    # a folder that does not exist, one without parameters.json, a CMC result
    for d, why in ((out("nowhere"), "cannot read the NLSQ result"),
                   (TMP, "cannot read the NLSQ result"),
                   (os.path.join(out("det1"), "cmc"), "not an xpcsfit NLSQ result")):
        o = out("bad_nlsq_dir")
        r = run("cmc", "--config", base, "--nlsq", d, "--out", o)
        one_error_line(r, why, what=f"--nlsq {d}")
        check(not os.path.exists(o), f"--nlsq {d}: {o} created")
    # usage errors
    for args, what in ((["fit", "--config", base, "--nlsq", nlsq], "fit --nlsq"),
                       (["cmc", "--config", base, "--threads", "0"], "--threads 0"),
                       (["cmc", "--config", base, "--bogus"], "unknown option"),
                       (["cmc", "--nlsq", nlsq], "no --config"),
                       (["cmc", "--config", out("nope.yaml")], "missing config")):
        r = run(*args, "--out", out("usage"))
        one_error_line(r, what=what)
        check(not os.path.exists(out("usage")), f"{what}: output written")
    # the same file named relative to another directory is the same file
    rel = os.path.join(TMP, "rel")
    os.makedirs(rel)
    with open(os.path.join(rel, "rel.yaml"), "w") as f:
        f.write(open(base).read().replace(DATA, "../s.h5"))
    r = run("nlsq", "--config", "rel.yaml", "--out", "n", "--no-plots", "--no-surfaces",
            cwd=rel)
    check(r.returncode == 0, f"nlsq with a relative data path: {r.stderr}")
    r = run("cmc", "--config", os.path.join(rel, "rel.yaml"), "--nlsq", os.path.join(rel, "n"),
            "--out", out("rel_cmc"), "--no-plots")
    check(r.returncode == 0, f"--nlsq fitted from another directory: {r.stderr}")


def test_nlsq_first(nlsq):
    """cmc without --nlsq fits NLSQ first (and says so); it starts from exactly what
    --nlsq of that result gives. fit writes both folders."""
    cfg = write_config("first.yaml")
    d = out("first")
    r = run("cmc", "--config", cfg, "--out", d, "--no-plots")
    check(r.returncode == 0, f"cmc without --nlsq: {r.stderr}")
    check("fitting NLSQ first" in r.stderr, "says NLSQ runs first")
    check(os.path.exists(os.path.join(d, "nlsq", "parameters.json")), "nlsq/ written")
    check(params(os.path.join(d, "cmc"))["status"] == "converged", "cmc/ written")
    same_arrays(os.path.join(d, "cmc", "results.h5"),
                os.path.join(out("det1"), "cmc", "results.h5"), "NLSQ first vs --nlsq DIR")
    d = out("fit")
    r = run("fit", "--config", cfg, "--out", d, "--no-plots", "--threads", "2")
    check(r.returncode == 0, f"fit: {r.stderr}")
    for m in ("nlsq", "cmc"):
        for f in ("parameters.json", "results.h5", "run.log"):
            check(os.path.exists(os.path.join(d, m, f)), f"fit wrote {m}/{f}")
    check(params(os.path.join(d, "cmc"))["method"] == "cmc", "fit: cmc result")
    # fit --resume: NLSQ fitted again (the same bytes), every shard reused
    r = run("fit", "--config", cfg, "--out", d, "--no-plots", "--resume")
    check(r.returncode == 0 and "resumed 3 of 3 shards" in r.stderr, f"fit --resume: {r.stderr}")
    same_arrays(os.path.join(d, "cmc", "results.h5"),
                os.path.join(out("det1"), "cmc", "results.h5"), "fit --resume vs cmc --nlsq")
    # plots: trace/rank/pair and the per-angle maps
    d = out("plots")
    r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", d)
    check(r.returncode == 0, f"cmc with plots: {r.stderr}")
    pngs = glob.glob(os.path.join(d, "cmc", "plots", "*.png"))
    check(len(pngs) >= 1, f"cmc plots: {pngs}")


def test_failed(nlsq):
    """Every shard excluded (R-hat can never be <= 1.0000001): status failed, exit 1,
    results written and marked; summaries null, not garbage."""
    cfg = write_config("failed.yaml", cmc="    validation: {max_per_shard_rhat: 1.0000001}\n")
    d = out("failed")
    r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", d, "--no-plots")
    cmc = os.path.join(d, "cmc")
    check(r.returncode == 1, f"all shards excluded: exit {r.returncode}: {r.stderr}")
    check("marked failed" in r.stderr and r.stderr.strip().splitlines()[-1].startswith(
        "xpcsfit: error:"), f"failed run message: {r.stderr}")
    check("+/-" not in r.stdout and "nan" not in r.stdout,
          f"no posterior numbers printed without draws: {r.stdout}")
    p = params(cmc)
    check(p["status"] == "failed" and p["convergence_status"] == "failed", f"status {p['status']}")
    check(p["quality"]["overall"] == "poor" and p["quality"]["reasons"], "quality poor")
    s = p["shards"]
    check(s["kept"] == 0 and len(s["excluded"]) == 3, f"shards {s}")
    check(all("max_per_shard_rhat" in e["reason"] for e in s["excluded"]), f"reasons {s}")
    for name in ("D0", "alpha"):
        e = p["parameters"][name]
        check(all(e[k] is None for k in ("mean", "std", "median", "q05", "q95")),
              f"{name} without draws: {e}")
    check(all(v is None for v in p["per_angle"]["contrast"]), "per-angle without draws")
    with h5py.File(os.path.join(cmc, "results.h5"), "r") as h:
        check(h["/cmc"].attrs["status"] in ("failed", b"failed"), "results.h5 marked failed")
        check(h["/cmc/draws"].shape[0] == 0, "no combined draws")
        check(h["/cmc/shard_draws"].shape == (3, 2, 100, 9), "the shards' draws kept")
        check(np.all(np.isnan(h["/cmc/summary"][()][:2])), "summary NaN without draws")
    # too few shards kept for min_success_rate: failed too (1 of 3 can never be >= 0.9
    # when the other two are excluded; here: every shard kept, rate 1.0 asked: converged)
    cfg = write_config("rate.yaml", cmc="    combination: {min_success_rate: 1.0}\n")
    r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", out("rate"), "--no-plots")
    check(r.returncode == 0, f"min_success_rate 1.0 with every shard kept: {r.stderr}")


def test_marginal():
    """The self-check says the consensus is not the full-data posterior (k-hat > 0.7):
    quality marginal with the reason, a warning on stderr and in run.log, the plain
    consensus summaries kept (corrected false), and still exit 0, status converged.

    Why k-hat is high: at q = 100 1/A the diffusion factor is clipped to exp(-700) for
    every pair, so c2 = offset + noise and the data say nothing about D0, alpha, D_offset
    or the contrast; their posterior is their prior, truncated by the bounds at 1.6-3 sd.
    In u-space (logit of the bounded value) that prior is far from Gaussian (exponential
    tails from the Jacobian), and each of the 8 shards samples it to the power 1/8, tails
    e^(-|u|/8), further still: the product of the shards' Gaussian summaries is not the
    prior, and the importance ratios prior / combined Gaussian are heavy-tailed
    (measured with seeds 1-8: k-hat 1.40-1.99; 4 shards gave 0.61-0.90, too close to
    0.7). Two seconds."""
    data = out("ridge.h5")
    cfg = out("ridge.yaml")
    with open(cfg, "w") as f:
        f.write(f"""analysis_mode: static
experimental_data: {{file_path: {data}}}
analyzer_parameters:
  dt: 0.1
  end_frame: 30
  scattering: {{wavevector_q: 100}}
parameter_space:
  bounds:
    - {{name: D0, min: 500, max: 1500, prior_mu: 900, prior_sigma: 250}}
    - {{name: alpha, min: -0.5, max: 0.5, prior_mu: 0, prior_sigma: 0.2}}
    - {{name: D_offset, min: -50, max: 50, prior_mu: 10, prior_sigma: 20}}
    - {{name: contrast, min: 0, max: 1, prior_mu: 0.3, prior_sigma: 0.1}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [900, 0, 10]
optimization:
  nlsq: {{start_search: {{enable: false}}}}
  cmc:
    seed: 7
    sharding: {{num_shards: 8}}
    per_shard_mcmc: {{num_warmup: 200, num_samples: 500, num_chains: 4}}
""")
    r = run("simulate", "--config", cfg, "--phi", "0", "--out", data, "--noise", "0.01",
            "--seed", "3")
    check(r.returncode == 0, f"simulate (q = 100): {r.stderr}")
    d = out("marginal")
    # NLSQ first: it fails (D0 does not change the model), CMC starts from it anyway
    r = run("cmc", "--config", cfg, "--out", d, "--no-plots")
    cmc = os.path.join(d, "cmc")
    check(r.returncode == 0, f"k-hat > 0.7: exit {r.returncode}, want 0: {r.stderr}")
    warning = "does not match the full-data posterior"
    check(warning in r.stderr, f"k-hat > 0.7: no warning on stderr: {r.stderr}")
    with open(os.path.join(cmc, "run.log")) as f:
        check(warning in f.read(), "k-hat > 0.7: no warning in run.log")
    p = params(cmc)
    check(p["status"] == "converged", f"k-hat > 0.7: status {p['status']}")
    c = p["consensus_check"]
    check(isinstance(c, dict) and c["khat"] > 0.7 and c["corrected"] is False,
          f"consensus_check {c.get('khat')} {c.get('corrected')}" if isinstance(c, dict)
          else f"consensus_check {c!r}")
    q = p["quality"]
    check(q["overall"] == "marginal", f"k-hat > 0.7: quality {q['overall']}")
    check(any(warning in s and "num_shards: 1" in s for s in q["reasons"]),
          f"k-hat > 0.7: no reason naming the remedy in {q['reasons']}")
    if isinstance(c, dict):
        print(f"marginal: k-hat {c['khat']:.3f}")


def main():
    t_start = time.time()

    def sim(cfg, path, seed):
        r = run("simulate", "--config", cfg, "--phi", "0,60,120", "--out", path,
                "--noise", "0.002", "--seed", seed)
        check(r.returncode == 0, f"simulate: {r.stderr}")
        return r

    sim(write_config("truth.yaml"), DATA, "1")
    r = run("nlsq", "--config", write_config("nlsq.yaml"), "--out", out("n"), "--no-plots",
            "--no-surfaces")
    check(r.returncode == 0, f"nlsq: {r.stderr}")
    nlsq = os.path.join(out("n"), "nlsq")
    def determinism_schema_noise():
        cmc_dir = test_determinism(nlsq)
        test_schema(cmc_dir)
        test_noise_estimate(nlsq, cmc_dir)

    for name, fn in (("determinism", determinism_schema_noise),
                     ("determinism, num_shards 1", lambda: test_determinism(nlsq, 1)),
                     ("start off the bounds", test_start_off_bounds),
                     ("resume", lambda: test_resume(nlsq)),
                     ("bad config", lambda: test_bad_config(nlsq)),
                     ("bad --nlsq", lambda: test_bad_nlsq(nlsq, sim)),
                     ("nlsq first", lambda: test_nlsq_first(nlsq)),
                     ("failed", lambda: test_failed(nlsq)),
                     ("marginal", test_marginal)):
        t0 = time.time()
        fn()
        print(f"{name}: {time.time() - t0:.1f} s")
    print(f"all parts: {time.time() - t_start:.1f} s")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
