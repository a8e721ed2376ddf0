#!/usr/bin/env python3
"""The result files as other tools open them (adr/0060, adr/0061; docs/outputs.md):

- results.h5 is NeXus: the root an NXroot whose "default" chain (root -> NXentry ->
  NXdata) ends at a plot whose signal and axes are datasets of one length; the fit groups
  have NX_class too. Every axis of every dataset has an HDF5 dimension scale, so the
  netCDF library (netCDF4-python, xarray) names every dimension: no phony_dim_N in any
  group of the NLSQ and the CMC file.
- posterior.nc (CMC) is ArviZ InferenceData in netCDF-4, read here with the netCDF
  library through xarray: posterior variables with dims (chain, draw) in physical units,
  equal to /cmc/draws and to parameters.json's means; sample_stats; observed_data; the
  summary's R-hat, bulk/tail ESS and MCSE equal to an independent NumPy implementation
  of Vehtari et al. (2021) on the written draws (R-hat to 1e-9, ESS and MCSE to 1e-6
  relative), and the same numbers in parameters.json and results.h5. Three layouts: the
  consensus of 3 shards' chains (self-check off), exact NUTS (2 chains), and the
  importance route's resampled draws (one chain).
- /cmc/shard_draws_physical (float32) is the logit-space /cmc/shard_draws mapped through
  lower + (upper - lower) * sigmoid(u), and sigma = exp(log sigma), to float32's 7
  digits."""
import json
import os
import shutil
import subprocess
import sys

import h5py
import netCDF4
import numpy as np
import xarray as xr
from scipy import stats

from tally import check, summary
from waits import RUN_GUARD_S

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_result_formats")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
DATA = os.path.join(TMP, "s.h5")
CONFIG = """analysis_mode: static
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.1
  end_frame: 40
  scattering: {{wavevector_q: 0.0054}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {{D_offset: 0}}
optimization:
  cmc:
    seed: 7
{extra}    sharding: {{num_shards: {shards}}}
    per_shard_mcmc: {{num_warmup: 150, num_samples: 60, num_chains: 2}}
"""


def run(*args):
    return subprocess.run([XF, *args], capture_output=True, text=True, timeout=RUN_GUARD_S)


def config(name, shards=3, extra=""):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(CONFIG.format(data=DATA, shards=shards, extra=extra))
    return path


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


# ---- results.h5: NeXus and dimension scales ------------------------------------------

def check_nexus(path, process):
    with h5py.File(path, "r") as h:
        check(text(h.attrs.get("NX_class")) == "NXroot", f"{path}: root NX_class")
        entry = h[text(h.attrs["default"])]
        check(text(entry.attrs.get("NX_class")) == "NXentry", f"{path}: default is NXentry")
        plot = entry[text(entry.attrs["default"])]
        check(text(plot.attrs.get("NX_class")) == "NXdata", f"{path}: entry default NXdata")
        signal = plot[text(plot.attrs["signal"])]
        axis = plot[text(plot.attrs["axes"])]
        check(isinstance(signal, h5py.Dataset) and isinstance(axis, h5py.Dataset)
              and signal.shape == axis.shape and signal.shape[0] > 10,
              f"{path}: signal {signal.shape} and axis {axis.shape}")
        aux = [text(a) for a in plot.attrs.get("auxiliary_signals", [])]
        check(aux and all(plot[a].shape == signal.shape for a in aux),
              f"{path}: auxiliary signals {aux}")
        # the plot is the data and the fit: close to each other, both finite
        d, f = signal[()], plot[aux[0]][()]
        check(np.all(np.isfinite(d)) and np.all(np.isfinite(f))
              and np.max(np.abs(d - f)) < 0.02, f"{path}: g2 data vs fit {np.max(np.abs(d - f))}")
        check(text(h[process].attrs.get("NX_class")) == "NXprocess", f"{path}: {process}")
        check(text(h["data"].attrs.get("NX_class")) == "NXcollection", f"{path}: /data")


def phony_dims(path):
    """Every variable of every group with a phony dimension, read by the netCDF library."""
    found = []

    def walk(g, where):
        for name, v in g.variables.items():
            if any(d.startswith("phony_dim") for d in v.dimensions):
                found.append(f"{where}/{name}{v.dimensions}")
        for name, sub in g.groups.items():
            walk(sub, f"{where}/{name}")

    with netCDF4.Dataset(path) as nc:
        walk(nc, "")
    return found


def check_dims(path, groups):
    bad = phony_dims(path)
    check(not bad, f"{path}: phony dimensions {bad[:5]} ({len(bad)})")
    for g, want in groups.items():
        with xr.open_dataset(path, group=g) as ds:
            check(set(want) <= set(ds.dims), f"{path} {g}: dims {dict(ds.dims)} lack {want}")
            for name, var in ds.variables.items():
                check(not any(d.startswith("phony_dim") for d in var.dims),
                      f"{path} {g}/{name}: {var.dims}")


# ---- an independent R-hat / ESS / MCSE (Vehtari et al. 2021) ------------------------

def split(x):
    n = x.shape[1] // 2
    return np.concatenate([x[:, :n], x[:, x.shape[1] - n:]], axis=0)


def z_scale(x):
    r = stats.rankdata(x, method="average").reshape(x.shape)
    return stats.norm.ppf((r - 0.375) / (x.size + 0.25))


def autocov(c):
    """biased autocovariance of one chain at lags 0..n-1, by direct sums"""
    d = c - c.mean()
    n = len(d)
    return np.array([np.dot(d[:n - t], d[t:]) / n for t in range(n)])


def ess_plain(x):
    """ESS of chains x (m, n) as given (the caller splits), Geyer's initial monotone
    sequence as ArviZ's _ess writes it"""
    m, n = x.shape
    acov = np.array([autocov(c) for c in x])
    mean_var = acov[:, 0].mean() * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n + (x.mean(axis=1).var(ddof=1) if m > 1 else 0.0)
    rho = np.zeros(n)
    even, odd = 1.0, 1.0 - (mean_var - acov[:, 1].mean()) / var_plus
    rho[0], rho[1] = even, odd
    t = 1
    while t < n - 3 and even + odd > 0.0:
        even = 1.0 - (mean_var - acov[:, t + 1].mean()) / var_plus
        odd = 1.0 - (mean_var - acov[:, t + 2].mean()) / var_plus
        if even + odd >= 0:
            rho[t + 1], rho[t + 2] = even, odd
        t += 2
    max_t = t - 2
    if even > 0:
        rho[max_t + 1] = even
    t = 1
    while t <= max_t - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = rho[t + 2] = (rho[t - 1] + rho[t]) / 2.0
        t += 2
    total = m * n
    tau = -1.0 + 2.0 * rho[:max_t + 1].sum() + rho[max_t + 1:max_t + 2].sum()
    return total / max(tau, 1.0 / np.log10(total))


def rhat_plain(x):
    m, n = x.shape
    w = x.var(axis=1, ddof=1).mean()
    b_over_n = x.mean(axis=1).var(ddof=1)
    return np.sqrt(((n - 1.0) / n * w + b_over_n) / w)


def reference(x):
    """x (chains, draws): r_hat, ess_bulk, ess_tail, mcse_mean, mcse_sd"""
    s = split(x)
    folded = split(np.abs(x - np.median(x)))
    r_hat = max(rhat_plain(z_scale(s)), rhat_plain(z_scale(folded)))
    ess_bulk = ess_plain(z_scale(s))
    q05, q95 = np.quantile(x, [0.05, 0.95])
    ess_tail = min(ess_plain((s <= q05).astype(float)), ess_plain((s <= q95).astype(float)))
    mcse_mean = x.std(ddof=1) / np.sqrt(ess_plain(s))
    d2 = (x - x.mean()) ** 2
    mcse_sd = np.sqrt(d2.var(ddof=1) / ess_plain(split(d2)) / (4.0 * d2.mean()))
    return dict(r_hat=r_hat, ess_bulk=ess_bulk, ess_tail=ess_tail, mcse_mean=mcse_mean,
                mcse_sd=mcse_sd)


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


# ---- posterior.nc -------------------------------------------------------------------

def check_posterior(cmc_dir, layout, chains, what):
    path = os.path.join(cmc_dir, "posterior.nc")
    check(os.path.exists(path), f"{what}: no posterior.nc")
    check(not [f for f in os.listdir(cmc_dir) if ".tmp" in f], f"{what}: temporary file left")
    with open(os.path.join(cmc_dir, "parameters.json")) as f:
        p = json.load(f)
    post = xr.open_dataset(path, group="posterior")
    summ = xr.open_dataset(path, group="summary")
    sst = xr.open_dataset(path, group="sample_stats")
    obs = xr.open_dataset(path, group="observed_data")
    check(post.attrs.get("layout") == layout, f"{what}: layout {post.attrs.get('layout')}")
    check(post.sizes.get("chain") == chains, f"{what}: {post.sizes.get('chain')} chains")
    pd_json = p["posterior_diagnostics"]
    check(pd_json["layout"] == layout and pd_json["chains"] == chains,
          f"{what}: parameters.json posterior_diagnostics {pd_json['layout']}")
    with h5py.File(os.path.join(cmc_dir, "results.h5"), "r") as h:
        names = [text(n) for n in h["cmc/parameter_names"][()]]
        draws = h["cmc/draws"][()]
        h5diag = {k: h["cmc/posterior_diagnostics"][k][()]
                  for k in ("r_hat", "ess_bulk", "ess_tail", "mcse_mean", "mcse_sd")}
        fixed = h["cmc/fixed"][()]
    free = [n for n, fx in zip(names, fixed) if not fx]
    check(sorted(post.data_vars) == sorted(free), f"{what}: variables {list(post.data_vars)}")
    check("D_offset" not in post.data_vars and "D_offset" in post.attrs["fixed_parameters"],
          f"{what}: the fixed parameter")
    check(post["D0"].attrs.get("units") == "angstrom^2/s^(1+alpha)",
          f"{what}: D0 units {post['D0'].attrs.get('units')}")
    worst = {}
    for k, name in enumerate(names):
        if name not in free:
            continue
        v = post[name]
        check(v.dims == ("chain", "draw"), f"{what} {name}: dims {v.dims}")
        x = v.values
        check(np.array_equal(x.reshape(-1), draws[:, k]),
              f"{what} {name}: not /cmc/draws in chain-major order")
        entry = p["parameters"].get(name) or p["scaling_parameters"].get(name)
        jmean = entry.get("mean", entry.get("value"))
        jsd = entry.get("std", entry.get("sd", entry.get("uncertainty")))
        # consensus/NUTS publish the draws' own mean; the resampled ones a PSIS-weighted
        # mean, which the resample matches within a few Monte Carlo errors
        tol = 1e-9 * abs(jmean) if layout != "resampled" else 4 * float(
            summ["mcse_mean"].sel(parameter=name)) + 0.05 * jsd
        check(abs(x.mean() - jmean) <= tol, f"{what} {name}: mean {x.mean()} vs json {jmean}")
        check(close(float(summ["mean"].sel(parameter=name)), jmean, 1e-12),
              f"{what} {name}: summary mean")
        ref = reference(x)
        for key, rel in (("r_hat", 1e-9), ("ess_bulk", 1e-6), ("ess_tail", 1e-6),
                         ("mcse_mean", 1e-6), ("mcse_sd", 1e-6)):
            got = float(summ[key].sel(parameter=name))
            worst[key] = max(worst.get(key, 0.0), abs(got - ref[key]) / abs(ref[key]))
            check(close(got, ref[key], rel), f"{what} {name}: {key} {got} vs NumPy {ref[key]}")
            check(close(pd_json["parameters"][name][key], got, 1e-12),
                  f"{what} {name}: parameters.json {key}")
            check(close(h5diag[key][k], got, 1e-12), f"{what} {name}: results.h5 {key}")
    print(f"{what}: largest relative gap to the NumPy reference: "
          + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    check(sst.sizes.get("chain") == chains and sst.sizes.get("draw") == post.sizes["draw"]
          or layout == "resampled", f"{what}: sample_stats dims {dict(sst.sizes)}")
    if layout == "nuts_chains":
        for name in ("lp", "energy", "acceptance_rate", "step_size", "tree_depth", "n_steps",
                     "diverging"):
            check(name in sst and sst[name].dims == ("chain", "draw"),
                  f"{what}: sample_stats {name}")
        check(sst["diverging"].dtype == bool, f"{what}: diverging {sst['diverging'].dtype}")
    if layout == "consensus_chains":
        check("diverging" in sst and sst["diverging"].dtype == bool, f"{what}: diverging")
    if layout == "resampled":
        check("importance_ess" in sst.attrs and "resampling" in sst.attrs,
              f"{what}: resampling attributes {list(sst.attrs)}")
    check(obs["phi_deg"].size == 3 and obs.attrs.get("source_file") == DATA,
          f"{what}: observed_data {dict(obs.sizes)} {obs.attrs.get('source_file')}")
    for ds in (post, summ, sst, obs):
        ds.close()


def check_shard_physical(cmc_dir):
    with h5py.File(os.path.join(cmc_dir, "results.h5"), "r") as h:
        u = h["cmc/shard_draws"][()]
        x = h["cmc/shard_draws_physical"][()]
        coords = [text(c) for c in h["cmc/coordinate"][()]]
    check(u.shape == x.shape and coords[-1] == "log_sigma", f"shard draws {u.shape} {x.shape}")
    # float32 (7 digits): sigma = exp(log sigma), D0 = lower + width * sigmoid(u)
    check(np.allclose(x[..., -1], np.exp(u[..., -1]), rtol=2e-7, atol=0),
          "sigma = exp(log sigma)")
    d0 = coords.index("D0")
    s = 1.0 / (1.0 + np.exp(-u[..., d0].ravel()))
    xd = x[..., d0].ravel().astype(float)
    width, lower = np.polyfit(s, xd, 1)
    gap = np.max(np.abs(lower + width * s - xd) / np.abs(xd))
    check(x.dtype == np.float32 and gap < 2e-7,
          f"D0 physical draws are not one logistic map of the logits: {gap:.2e}")


def main():
    r = run("simulate", "--config", config("truth.yaml"), "--phi", "0,60,120", "--out", DATA,
            "--noise", "0.002", "--seed", "1")
    check(r.returncode == 0, f"simulate: {r.stderr}")
    r = run("nlsq", "--config", config("nlsq.yaml"), "--out", os.path.join(TMP, "n"),
            "--no-plots", "--surfaces")  # the surfaces' dimensions are checked too
    check(r.returncode == 0, f"nlsq: {r.stderr}")
    nlsq = os.path.join(TMP, "n", "nlsq")
    h5 = os.path.join(nlsq, "results.h5")
    check_nexus(h5, "nlsq")
    check_dims(h5, {"data": ["phi_deg", "t"], "nlsq": ["phi_deg", "parameter_names"],
                    "entry/g2": ["lag"]})
    runs = (("consensus", config("k3.yaml", 3, "    combination: {check_draws: 0}\n"),
             "consensus_chains", 2),
            ("nuts", config("k1.yaml", 1, "    route: nuts\n"), "nuts_chains", 2),
            ("importance", config("k1auto.yaml", 1), "resampled", 1))
    for what, cfg, layout, chains in runs:
        d = os.path.join(TMP, what)
        r = run("cmc", "--config", cfg, "--nlsq", nlsq, "--out", d, "--no-plots")
        check(r.returncode == 0, f"cmc {what}: exit {r.returncode}: {r.stderr}")
        cmc_dir = os.path.join(d, "cmc")
        check_posterior(cmc_dir, layout, chains, what)
        cmc_h5 = os.path.join(cmc_dir, "results.h5")
        check_nexus(cmc_h5, "cmc")
        check_dims(cmc_h5, {"cmc": ["parameter_names", "draw", "phi_deg", "statistic"],
                            "cmc/posterior_diagnostics": ["parameter_names"]})
        if what == "consensus":
            check_shard_physical(cmc_dir)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
