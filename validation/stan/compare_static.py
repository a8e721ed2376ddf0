#!/usr/bin/python3
"""compare_static.py — Stan as the reference sampler for xpcsfit's NUTS (cmc, one shard).

What it measures: the same one-shard static posterior (static_shard.stan, written from
shared/spec/model.md and cmc.md) sampled by Stan (rstan NUTS, with each metric of --metric
in turn: diag_e and dense_e by default) and, with --xpcsfit, by `xpcsfit cmc` with
num_shards: 1 (dense metric). For every parameter it reports the posterior mean and sd of
each, xpcsfit's difference in Stan sds and sd ratio, the bulk ESS of every sampler from
rstan::monitor (monitor_draws.R on xpcsfit's draws), bulk ESS per second of sampling wall
time (warmup + draws, compilation excluded) and the ratio of ESS/s (xpcsfit / the better
Stan metric), also per CPU second; plus Stan's divergences, R-hat, step size, leapfrog
steps and compile time. Before sampling it checks the
Stan model's c2 against tests/helpers/xpcs_reference.py (model_c2_full) at a few
parameter sets, floors included.

Data: `xpcsfit simulate`, one angle, 50 frames (1 176 fitted points), q = 0.01 1/A,
dt = 0.1 s, truth D0 = 4000, alpha = -0.5, D_offset = 2000, contrast 0.3, offset 1.0,
noise 0.002. That truth is chosen so that the correlation decays to g1^2 ~ 0.08 inside
the window and D0, alpha, D_offset are all identified (NLSQ relative sds 2-4 %,
|corr| ~ 0.96-0.98); truths with small D_offset (e.g. 2000, 0.3, 50) leave D_offset
unidentified (sd ~ 4x its value, |corr| > 0.99) and alpha = 0 makes D0 and D_offset
exactly degenerate.

sigma's prior scale is xpcsfit's rule, 1.5 x 1.4826 x MAD of the NLSQ residuals at the
fitted points (from `xpcsfit nlsq`; with --xpcsfit, the sigma_prior_scale xpcsfit reports),
so both samplers target exactly the same posterior. Priors and bounds: model.md defaults.

Run with Debian's /usr/bin/python3 (numpy, h5py, yaml) after scripts/install-stan.sh.
Prints tables and writes every number to --out (JSON). With --xf-adapt-delta (a list;
'default' leaves the binary's shipped target acceptance) and --xf-seeds (a list of
optimization.cmc.seed) it runs xpcsfit once per pair against the one Stan run, with
divergences, step size, gradient evaluations, CPU time, 5 %/95 % points and bulk ESS per
run (adr/0041); --stan-reuse DIR takes Stan's results from an earlier --work DIR; --truth
gives another data set. Without --assert it exits 0 unless something crashes; with it,
1 when a run is off (means, sds, divergences; limits --max-mean-diff, --max-sd-rel,
--max-divergences). Not part of `make test` (the slow test cmc_stan_defaults runs it).
Results: docs/validation.md, "CMC against Stan".
"""
import argparse
import csv
import json
import os
import resource
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))
import xpcs_reference as xr  # noqa: E402

THETA = ["D0", "alpha", "D_offset"]
# Stan's names -> xpcsfit's names (one angle: index 000)
NAMES = [("D0", "D0"), ("alpha", "alpha"), ("D_offset", "D_offset"),
         ("contrast[1]", "contrast_000"), ("offset[1]", "offset_000"), ("sigma", "sigma")]


def run(cmd, log):
    """Run a command, its output appended to log; raise with the log's tail on failure."""
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        with open(log) as f:
            tail = f.read()[-3000:]
        raise RuntimeError(f"{cmd[0]} {cmd[1] if len(cmd) > 1 else ''} failed "
                           f"(exit {r.returncode}); log {log}:\n{tail}")


# ------------------------------------------------------------------ R dump writers

def r_num(x):
    if isinstance(x, (int, np.integer)):
        return f"{int(x)}L"
    return repr(float(x))


def r_val(v):
    """A Python scalar or 1-D array as R code; arrays keep their dimension (length-1 too)."""
    if np.ndim(v) == 0:
        return r_num(v.item() if hasattr(v, "item") else v)
    a = np.asarray(v)
    conv = (lambda x: f"{int(x)}L") if a.dtype.kind in "iu" else (lambda x: repr(float(x)))
    return f"structure(c({', '.join(conv(x) for x in a.ravel())}), .Dim = c({a.size}L))"


def write_rdump(path, d):
    with open(path, "w") as f:
        for k, v in d.items():
            f.write(f"{k} <- {r_val(v)}\n")


def r_list(d):
    return "list(" + ", ".join(f"{k} = {r_val(v)}" for k, v in d.items()) + ")"


# ------------------------------------------------------------------ pieces

def simulate(xf, work, truth, log):
    """Write the config and the simulated file; return the config path."""
    h5 = os.path.join(work, "static.h5")
    cfg = {
        "analysis_mode": "static",
        "experimental_data": {"file_path": h5},
        "analyzer_parameters": {"dt": truth["dt"], "start_frame": 1,
                                "end_frame": truth["frames"],
                                "scattering": {"wavevector_q": truth["q"]}},
        "initial_parameters": {"parameter_names": THETA,
                               "values": [truth[n] for n in THETA]},
        "optimization": {
            "nlsq": {"anti_degeneracy": {"per_angle_mode": "individual"}},
            "cmc": {"seed": 42, "per_angle_mode": "individual", "route": "nuts",
                    "sharding": {"num_shards": 1},
                    "per_shard_mcmc": {"num_warmup": truth["warmup"],
                                       "num_samples": truth["samples"],
                                       "num_chains": truth["chains"]}}},
    }
    # No target_accept_prob here: each `xpcsfit cmc` run sets it with --set, or (for
    # --xf-adapt-delta default) leaves the binary's shipped default in force.
    path = os.path.join(work, "static.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    if os.path.exists(h5):
        os.remove(h5)
    run([xf, "simulate", "--config", path, "--phi", "0", "--out", h5,
         "--noise", repr(truth["noise"]), "--seed", str(truth.get("noise_seed", 1)), "--frames", str(truth["frames"]),
         "--contrast", repr(truth["contrast"]), "--offset", repr(truth["offset"])], log)
    return path, h5


def nlsq(xf, cfg, work, threads, log):
    """xpcsfit nlsq; return its parameters.json and 1.5 x 1.4826 x MAD of the residuals."""
    out = os.path.join(work, "xf")
    shutil.rmtree(os.path.join(out, "nlsq"), ignore_errors=True)
    # --surfaces: /nlsq/residuals (σ's start below) is written only with it (adr/0059)
    run([xf, "nlsq", "--config", cfg, "--out", out, "--no-plots", "--surfaces", "--threads",
         str(threads)],
        log)
    with open(os.path.join(out, "nlsq", "parameters.json")) as f:
        pj = json.load(f)
    with h5py.File(os.path.join(out, "nlsq", "results.h5"), "r") as f:
        res = np.asarray(f["/nlsq/residuals"][()], dtype=np.float64)
    n = res.shape[1]
    i, j = xr.fitted_pairs(n)
    r = res[:, i, j].ravel()                      # data - fit at the fitted points
    r = r[np.isfinite(r)]
    mad = float(np.median(np.abs(r - np.median(r))))
    noise = 1.4826 * mad
    return pj, out, noise, 1.5 * noise, r.size


def cpu_children():
    """CPU seconds (user + system) of the finished child processes so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def xpcsfit_cmc(xf, cfg, nlsq_out, out, threads, log, delta=None, seed=42):
    """xpcsfit cmc warm-started from the NLSQ result in nlsq_out, into out; delta None:
    the binary's default target acceptance (nothing set). Return out/cmc/parameters.json
    with the command's wall and CPU seconds (_wall_s, _cpu_s: the whole command, start-up,
    combination and output included)."""
    shutil.rmtree(os.path.join(out, "cmc"), ignore_errors=True)
    sets = ["--set", f"optimization.cmc.seed={int(seed)}"]
    if delta is not None:
        sets += ["--set", f"optimization.cmc.per_shard_mcmc.target_accept_prob={delta!r}"]
    c0 = cpu_children()
    t0 = time.perf_counter()
    run([xf, "cmc", "--config", cfg, "--nlsq", os.path.join(nlsq_out, "nlsq"), "--out", out,
         "--threads", str(threads), "--no-plots", "--force"] + sets, log)
    wall = time.perf_counter() - t0
    with open(os.path.join(out, "cmc", "parameters.json")) as f:
        pj = json.load(f)
    pj["_wall_s"] = wall
    pj["_cpu_s"] = cpu_children() - c0
    return pj


def xpcsfit_monitor(out, names, work, log):
    """rstan::monitor of xpcsfit's shard-0 draws (monitor_draws.R): bulk ESS with Stan's
    own estimator. The draws are in the sampler's space (logit within the bounds, log
    sigma); rank-normalised bulk ESS and R-hat do not change under such monotone maps."""
    with h5py.File(os.path.join(out, "cmc", "results.h5"), "r") as f:
        d = np.asarray(f["/cmc/shard_draws"][0], dtype=np.float64)  # chains x draws x p
    path = os.path.join(work, "xf_draws.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["chain", "iter"] + names)
        for c in range(d.shape[0]):
            for g in range(d.shape[1]):
                w.writerow([c + 1, g + 1] + [repr(float(x)) for x in d[c, g]])
    summ = os.path.join(work, "xf_monitor.csv")
    run(["Rscript", os.path.join(HERE, "monitor_draws.R"), path, summ], log)
    return {r["name"]: r for r in read_csv(summ)}


def stan_data(ds, dt, sigma_scale):
    lo = {n: xr.DEFAULT_BOUNDS[n][0] for n in list(THETA) + ["contrast", "offset"]}
    hi = {n: xr.DEFAULT_BOUNDS[n][1] for n in list(THETA) + ["contrast", "offset"]}
    mu = {n: 0.5 * (lo[n] + hi[n]) for n in lo}           # model.md: middle of the bounds
    sd = {n: 0.25 * (hi[n] - lo[n]) for n in lo}          # and a quarter of the width
    nphi, npair = ds.values.shape
    return {
        "N": int(ds.n_frames), "q": float(ds.q), "dt": float(dt), "n_phi": int(nphi),
        "M": int(nphi * npair),
        "ii": np.tile(ds.i, nphi).astype(np.int64),        # 0-based frame indices
        "jj": np.tile(ds.j, nphi).astype(np.int64),
        "angle": np.repeat(np.arange(1, nphi + 1), npair).astype(np.int64),
        "c2": ds.values.ravel(),
        "theta_lo": np.array([lo[n] for n in THETA]), "theta_hi": np.array([hi[n] for n in THETA]),
        "theta_mu": np.array([mu[n] for n in THETA]), "theta_sd": np.array([sd[n] for n in THETA]),
        "contrast_lo": lo["contrast"], "contrast_hi": hi["contrast"],
        "contrast_mu": mu["contrast"], "contrast_sd": sd["contrast"],
        "offset_lo": lo["offset"], "offset_hi": hi["offset"],
        "offset_mu": mu["offset"], "offset_sd": sd["offset"],
        "sigma_scale": float(sigma_scale), "emit_c2": 0,
    }


def param_set(th, con, off, sigma, nphi):
    return {"D0": th[0], "alpha": th[1], "D_offset": th[2],
            "contrast": np.full(nphi, con, dtype=float), "offset": np.full(nphi, off, dtype=float),
            "sigma": sigma}


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def stan_result(mdir, metric, data, a):
    """One metric's Stan run (run_stan.R's files in mdir): print its diagnostics, return
    its timing, summary and diagnostics."""
    timing = read_csv(os.path.join(mdir, "timing.csv"))[0]
    chains = read_csv(os.path.join(mdir, "chains.csv"))
    summ = {r["name"]: r for r in read_csv(os.path.join(mdir, "summary.csv"))}
    wall = float(timing["sampling_wall_s"])
    chain_s = sum(float(c["warmup_s"]) + float(c["sample_s"]) for c in chains)
    div = sum(int(float(c["divergences"])) for c in chains)
    draws = read_csv(os.path.join(mdir, "draws.csv"))
    dmat = np.array([[float(r[n]) for n in THETA] for r in draws])
    pcorr = np.corrcoef(dmat.T)
    print(f"stan {metric}: sampling {wall:.2f} s wall ({a.chains} chains x ({a.warmup} + "
          f"{a.samples}), {a.cores} in parallel); per-chain CPU times summed {chain_s:.2f} s")
    print("stan %s: divergences %d, max-treedepth hits %d, step sizes %s, leapfrog steps per "
          "draw %s, E-BFMI %s, R-hat max %.4f" % (
              metric, div, sum(int(float(c["max_treedepth_hits"])) for c in chains),
              ", ".join(f"{float(c['stepsize']):.3g}" for c in chains),
              ", ".join(f"{float(c['mean_leapfrog']):.0f}" for c in chains),
              ", ".join(f"{float(c['bfmi']):.2f}" for c in chains),
              max(float(r["Rhat"]) for r in summ.values())))
    print("stan %s: posterior correlations D0-alpha %.3f, D0-D_offset %.3f, alpha-D_offset %.3f"
          % (metric, pcorr[0, 1], pcorr[0, 2], pcorr[1, 2]))

    # Adapted diagonal inverse metric (chain 1) against the draws' variance in Stan's
    # unconstrained space: Stan regularises the metric towards 1e-3 (a fixed absolute
    # amount), which dominates parameters whose u-space sd is far below 0.03.
    metric_ratio = None
    with open(os.path.join(mdir, "adaptation.txt")) as f:
        adapt_txt = f.read()
    if metric == "diag_e":
        lines = adapt_txt.splitlines()
        k = next(n for n, ln in enumerate(lines) if "inverse mass matrix" in ln)
        inv_m = np.array([float(x) for x in lines[k + 1].strip("# \n").split(",")])
        bl = np.r_[data["theta_lo"], data["contrast_lo"], data["offset_lo"]]
        bh = np.r_[data["theta_hi"], data["contrast_hi"], data["offset_hi"]]
        allx = np.array([[float(r[n]) for n in [sn for sn, _ in NAMES]] for r in draws])
        pr = (allx[:, :5] - bl) / (bh - bl)
        u = np.c_[np.log(pr / (1 - pr)), np.log(allx[:, 5])]
        metric_ratio = dict(zip([xn for _, xn in NAMES], (inv_m / u.var(axis=0)).tolist()))
        print("stan diag_e: adapted inverse metric / u-space posterior variance: " +
              ", ".join(f"{n} {v:.3g}" for n, v in metric_ratio.items()))
    return {"timing": timing, "wall_s": wall, "cpu_s": chain_s, "divergences": div,
            "chains": chains, "summary": summ, "posterior_correlation_theta": pcorr.tolist(),
            "inverse_metric_over_u_variance": metric_ratio, "adaptation": adapt_txt}


def xpcsfit_summary(cmc, out, names, work, log):
    """Per parameter of one xpcsfit run: mean, sd, q05, q95 (from the draws: /cmc/draws,
    K = 1, and exp of the log-sigma column of /cmc/shard_draws; numpy's default quantile
    is R's type 7, as rstan::monitor's), bulk ESS (xpcsfit's own and rstan::monitor's),
    R-hat."""
    sh = cmc["shard_diagnostics"][0]
    ess = sh.get("ess_bulk", {})
    mon = xpcsfit_monitor(out, names, work, log)
    with h5py.File(os.path.join(out, "cmc", "results.h5"), "r") as f:
        dn = [x.decode() if isinstance(x, bytes) else str(x)
              for x in f["/cmc/parameter_names"][()]]
        dr = np.asarray(f["/cmc/draws"][()], dtype=np.float64)
        sig = np.exp(np.asarray(f["/cmc/shard_draws"][0], dtype=np.float64)[..., -1]).ravel()
    xs = {}
    for n in THETA:
        xs[n] = {"mean": cmc["parameters"][n]["mean"], "sd": cmc["parameters"][n]["std"]}
    pa = cmc["per_angle"]
    for n in ("contrast", "offset"):
        xs[f"{n}_000"] = {"mean": pa[n][0], "sd": pa[f"{n}_std"][0]}
    xs["sigma"] = {"mean": sh.get("sigma_mean"), "sd": sh.get("sigma_sd")}
    for n in names:
        col = sig if n == "sigma" else dr[:, dn.index(n)]
        xs[n]["q05"], xs[n]["q95"] = (float(v) for v in np.quantile(col, [0.05, 0.95]))
        xs[n]["ess_bulk_own"] = ess.get(n)
        xs[n]["ess_bulk"] = float(mon[n]["Bulk_ESS"])
        xs[n]["rhat"] = float(mon[n]["Rhat"])
    return xs


def compare_run(xs, ref):
    """One xpcsfit run against one Stan metric's summary (by Stan's names)."""
    par = {}
    for sn, xn in NAMES:
        s = ref[sn]
        ssd = float(s["sd"])
        x = xs[xn]
        par[xn] = {"mean": x["mean"], "sd": x["sd"], "q05": x["q05"], "q95": x["q95"],
                   "ess_bulk": x["ess_bulk"], "rhat": x["rhat"],
                   "stan_mean": float(s["mean"]), "stan_sd": ssd,
                   "stan_q05": float(s["q05"]), "stan_q95": float(s["q95"]),
                   "diff_in_sd": (x["mean"] - float(s["mean"])) / ssd,
                   "sd_ratio": x["sd"] / ssd,
                   "q05_diff_in_sd": (x["q05"] - float(s["q05"])) / ssd,
                   "q95_diff_in_sd": (x["q95"] - float(s["q95"])) / ssd}
    return par


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xf", default=os.environ.get("XF_BINARY",
                                                   os.path.join(ROOT, "build", "xpcsfit")))
    ap.add_argument("--work", default="/tmp/xf_stan")
    ap.add_argument("--out", default=None, help="JSON output (default WORK/compare.json)")
    ap.add_argument("--xpcsfit", action="store_true",
                    help="also run `xpcsfit cmc` (num_shards: 1) and compare")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--samples", type=int, default=1500)
    ap.add_argument("--adapt-delta", type=float, default=0.85)
    ap.add_argument("--seed", type=int, default=20240601, help="Stan's seed")
    ap.add_argument("--cores", type=int, default=min(4, os.cpu_count() or 1),
                    help="parallel Stan chains and xpcsfit --threads (1: both run one "
                    "chain at a time on one core)")
    ap.add_argument("--metric", default="diag_e,dense_e",
                    help="Stan's metric(s), comma-separated, sampled in turn: diag_e, dense_e "
                    "(xpcsfit's default is dense; the ratio is against the best)")
    ap.add_argument("--model-cache", default=None,
                    help="compiled Stan model kept here and reused while the model text is "
                    "the same (default WORK/static_shard_model.rds; '' to compile every run)")
    ap.add_argument("--xf-adapt-delta", default=None,
                    help="xpcsfit's target acceptance(s), comma-separated, each run in turn "
                    "(default: --adapt-delta); 'default' sets nothing, so the binary's "
                    "shipped optimization.cmc default applies")
    ap.add_argument("--xf-seeds", default="42",
                    help="xpcsfit's optimization.cmc.seed(s), comma-separated: every "
                    "target acceptance is run with each (default 42)")
    ap.add_argument("--stan-reuse", default=None, metavar="DIR",
                    help="take Stan's results from an earlier run's --work DIR (same data, "
                    "settings and metrics; checked) instead of sampling again")
    ap.add_argument("--assert", dest="check", action="store_true",
                    help="exit 1 unless every xpcsfit run matches the reference Stan metric "
                    "(dense_e when run): |mean diff| <= --max-mean-diff Stan sds, "
                    "|sd ratio - 1| <= --max-sd-rel, post-warmup divergences <= "
                    "--max-divergences")
    ap.add_argument("--truth", default="",
                    help="another data set: NAME=VALUE,... over the defaults (q, dt, frames, "
                    "D0, alpha, D_offset, contrast, offset, noise, noise_seed)")
    ap.add_argument("--max-mean-diff", type=float, default=0.1)
    ap.add_argument("--max-sd-rel", type=float, default=0.05)
    ap.add_argument("--max-divergences", type=int, default=0)
    a = ap.parse_args()
    xf_deltas = []
    for t in (a.xf_adapt_delta or repr(a.adapt_delta)).split(","):
        t = t.strip()
        if t == "default":
            xf_deltas.append(None)
        elif t:
            v = float(t)
            if not 0.0 < v < 1.0:
                ap.error("--xf-adapt-delta: values in (0, 1) or 'default'")
            xf_deltas.append(v)
    xf_seeds = [int(t) for t in a.xf_seeds.split(",") if t.strip()]
    if a.check and not a.xpcsfit:
        ap.error("--assert needs --xpcsfit")
    metrics = [m for m in a.metric.split(",") if m]
    if not metrics or any(m not in ("diag_e", "dense_e") for m in metrics):
        ap.error("--metric: diag_e, dense_e or both (comma-separated)")
    cache = os.path.join(a.work, "static_shard_model.rds") if a.model_cache is None \
        else a.model_cache
    os.makedirs(a.work, exist_ok=True)
    out_json = a.out or os.path.join(a.work, "compare.json")
    log = os.path.join(a.work, "run.log")
    open(log, "w").close()

    # A private copy of the binary: the build directory may be rebuilt meanwhile.
    # If the build is missing right now, reuse an earlier private copy.
    xf = os.path.join(a.work, "xpcsfit")
    if os.path.exists(a.xf):
        shutil.copy2(a.xf, xf)
    elif os.path.exists(xf):
        print(f"note: {a.xf} missing, reusing the earlier copy {xf}")
    else:
        raise FileNotFoundError(f"no xpcsfit binary at {a.xf} (set XF_BINARY or --xf)")

    truth = {"q": 0.01, "dt": 0.1, "frames": 50, "D0": 4000.0, "alpha": -0.5,
             "D_offset": 2000.0, "contrast": 0.3, "offset": 1.0, "noise": 0.002,
             "chains": a.chains, "warmup": a.warmup, "samples": a.samples}
    for kv in (t for t in a.truth.split(",") if t.strip()):
        k, _, v = kv.partition("=")
        k = k.strip()
        if k not in truth and k != "noise_seed" or k in ("chains", "warmup", "samples"):
            ap.error(f"--truth: unknown name {k}")
        truth[k] = int(v) if k in ("frames", "noise_seed") else float(v)
    cfg, h5 = simulate(xf, a.work, truth, log)
    ds = xr.read_aps_u(h5, q_target=truth["q"], start_frame=1, end_frame=truth["frames"])
    print(f"data: {h5}: q {ds.q}, {ds.phi.size} angle(s), {ds.n_frames} frames, "
          f"{ds.n_points} fitted points")

    pj, xfout, noise, sigma_scale, nres = nlsq(xf, cfg, a.work, a.cores, log)
    p = pj["parameters"]
    th_nlsq = [p[n]["value"] for n in THETA]
    un_nlsq = [p[n]["uncertainty"] for n in THETA]
    con_nlsq, off_nlsq = pj["per_angle"]["contrast"][0], pj["per_angle"]["offset"][0]
    cov = np.array(pj["covariance"]["matrix"])
    sd = np.sqrt(np.diag(cov))
    corr = cov / np.outer(sd, sd)
    print("nlsq: " + ", ".join(f"{n} {v:.6g} +/- {u:.3g}" for n, v, u in
                               zip(THETA, th_nlsq, un_nlsq)))
    print("nlsq correlations D0-alpha %.3f, D0-D_offset %.3f, alpha-D_offset %.3f" %
          (corr[0, 1], corr[0, 2], corr[1, 2]))
    print(f"sigma prior: noise = 1.4826 MAD = {noise:.6g} over {nres} residuals, "
          f"scale 1.5 x noise = {sigma_scale:.6g}")

    cmc = None
    runs = []          # (target acceptance or None, seed, output dir, parameters.json)
    if a.xpcsfit:
        for d in xf_deltas:
            for sd_ in xf_seeds:
                rout = os.path.join(a.work, "xf_runs",
                                    f"ta{'default' if d is None else repr(d)}_seed{sd_}")
                os.makedirs(rout, exist_ok=True)
                pj_ = xpcsfit_cmc(xf, cfg, xfout, rout, a.cores, log, d, sd_)
                runs.append((d, sd_, rout, pj_))
                sh_ = pj_["shard_diagnostics"][0]
                print(f"xpcsfit cmc target_accept_prob "
                      f"{pj_['sampler'].get('target_accept_prob')} "
                      f"({'binary default' if d is None else 'set'}), seed {sd_}: "
                      f"divergence rate {sh_.get('divergence_rate')}, step "
                      f"{sh_.get('step_size', float('nan')):.3g}, "
                      f"{sh_.get('gradient_evaluations')} gradient evaluations, "
                      f"{pj_['_wall_s']:.2f} s wall")
        cmc = runs[0][3]
        sh = cmc["shard_diagnostics"][0]
        if sh.get("sigma_prior_scale"):
            print(f"xpcsfit sigma_prior_scale {sh['sigma_prior_scale']:.6g} (ours "
                  f"{sigma_scale:.6g}); Stan uses xpcsfit's")
            sigma_scale = float(sh["sigma_prior_scale"])

    # Stan inputs: data, per-chain inits (NLSQ point + 0.5 NLSQ sd jitter, inside the
    # bounds), and the check sets (truth, model.md case-A-like, rate floor, g1 floor;
    # strictly inside the bounds: Stan cannot start on a bound).
    data = stan_data(ds, truth["dt"], sigma_scale)
    sdir = os.path.join(a.work, "stan")
    shutil.rmtree(sdir, ignore_errors=True)
    os.makedirs(sdir)
    write_rdump(os.path.join(sdir, "data.R"), data)
    rng = np.random.default_rng(a.seed)
    lo = data["theta_lo"] + 0.01 * (data["theta_hi"] - data["theta_lo"])
    hi = data["theta_hi"] - 0.01 * (data["theta_hi"] - data["theta_lo"])
    inits = []
    for _ in range(a.chains):
        th = np.clip(np.array(th_nlsq) + 0.5 * np.array(un_nlsq) * rng.standard_normal(3), lo, hi)
        inits.append(param_set(th, con_nlsq, off_nlsq, noise, ds.phi.size))
    checks = [
        ([truth[n] for n in THETA], truth["contrast"], truth["offset"]),
        ([1000.0, 0.5, 10.0], 0.5, 1.0),
        ([500.0, -1.5, -800.0], 0.2, 1.1),      # D_k floored at 1e-10 late in the window
        ([9e4, 1.9, 9e4], 0.9, 0.6),           # g1 floored at 1e-10 for long lags
    ]
    with open(os.path.join(sdir, "inits.R"), "w") as f:
        f.write("inits <- list(" + ", ".join(r_list(s) for s in inits) + ")\n")
        f.write("checks <- list(" + ", ".join(
            r_list(param_set(th, c, o, noise, ds.phi.size)) for th, c, o in checks) + ")\n")

    t0 = time.perf_counter()
    if a.stan_reuse:
        # Stan's files of an earlier run: the same data, inits and settings, or refuse.
        old = os.path.join(a.stan_reuse, "stan")
        for fn in ("data.R", "inits.R"):
            with open(os.path.join(old, fn)) as f1, open(os.path.join(sdir, fn)) as f2:
                if f1.read() != f2.read():
                    raise RuntimeError(f"--stan-reuse {a.stan_reuse}: {fn} differs")
        with open(os.path.join(a.stan_reuse, "compare.json")) as f:
            prev = json.load(f)["stan"]
        for k in ("chains", "warmup", "samples", "adapt_delta", "seed"):
            if prev[k] != getattr(a, k):
                raise RuntimeError(f"--stan-reuse {a.stan_reuse}: {k} {prev[k]} there, "
                                   f"{getattr(a, k)} here")
        for m in metrics:
            if not os.path.isdir(os.path.join(old, m)):
                raise RuntimeError(f"--stan-reuse {a.stan_reuse}: no {m} run there")
        shutil.rmtree(sdir)
        shutil.copytree(old, sdir)
        print(f"stan: reusing {old} (adapt_delta {a.adapt_delta})")
    else:
        run(["Rscript", os.path.join(HERE, "run_stan.R"),
             os.path.join(HERE, "static_shard.stan"),
             os.path.join(sdir, "data.R"), os.path.join(sdir, "inits.R"), sdir, str(a.chains),
             str(a.warmup), str(a.samples), str(a.seed), repr(a.adapt_delta), str(a.cores),
             ",".join(metrics)] + ([cache] if cache else []), log)
    rscript_s = time.perf_counter() - t0

    # Model check against the NumPy transcription.
    chk = read_csv(os.path.join(sdir, "check_c2.csv"))
    check_out = []
    for k, (th, c, o) in enumerate(checks):
        stan_c2 = np.array([float(r[f"set{k + 1}"]) for r in chk])
        ref = xr.model_c2_full("static", ds.q, truth["dt"], 2e6, ds.phi, ds.n_frames, th, c, o)
        ref_pts = ref[data["angle"] - 1, data["ii"], data["jj"]]
        dmax = float(np.max(np.abs(stan_c2 - ref_pts)))
        check_out.append({"theta": th, "contrast": c, "offset": o, "max_abs_diff": dmax,
                          "c2_range": [float(ref_pts.min()), float(ref_pts.max())]})
        print(f"model check {k + 1}: theta {th}, contrast {c}, offset {o}: "
              f"max |c2_stan - c2_reference| = {dmax:.3g} over {stan_c2.size} points "
              f"(c2 in [{ref_pts.min():.6g}, {ref_pts.max():.6g}])")

    stan = {}
    for m in metrics:
        stan[m] = stan_result(os.path.join(sdir, m), m, data, a)
    compile_s = float(next(iter(stan.values()))["timing"]["compile_s"])
    cached = int(float(next(iter(stan.values()))["timing"]["compile_cached"]))
    print(f"stan: compile {compile_s:.1f} s" + (" (cached model; that compile's time)"
                                                if cached else "") +
          f"; Rscript total {rscript_s:.1f} s")

    # xpcsfit side (when run): summaries by xpcsfit's names; its bulk ESS both as xpcsfit
    # reports it and from rstan::monitor on its draws.
    xs = {}
    xf_time = xf_cpu = None
    if cmc is not None:
        sh = cmc["shard_diagnostics"][0]
        xf_time = float(cmc.get("timing_s", {}).get("sampling") or sh.get("sampling_s"))
        xf_cpu = cmc["_cpu_s"]
        names = [xn for _, xn in NAMES]
        xs = xpcsfit_summary(cmc, runs[0][2], names, a.work, log)
        print(f"xpcsfit: sampling {xf_time:.3f} s wall (timing_s.sampling; {a.chains} chains "
              f"in turn, each likelihood pass on {a.cores} thread(s)); whole `xpcsfit cmc` "
              f"{cmc['_wall_s']:.3f} s wall, {xf_cpu:.3f} s CPU; step size "
              f"{sh.get('step_size', float('nan')):.3g}, {sh.get('gradient_evaluations')} "
              f"gradient evaluations ({sh.get('gradient_evaluations', 0) / (a.chains * (a.warmup + a.samples)):.1f} "
              f"per iteration), divergence rate {sh.get('divergence_rate')}, "
              f"E-BFMI min {sh.get('ebfmi_min', float('nan')):.2f}, R-hat max "
              f"{sh.get('rhat_max', float('nan')):.4f}")

    tr = {"D0": truth["D0"], "alpha": truth["alpha"], "D_offset": truth["D_offset"],
          "contrast_000": truth["contrast"], "offset_000": truth["offset"], "sigma": truth["noise"]}
    rows = []
    for sn, xn in NAMES:
        row = {"name": xn, "stan_name": sn, "truth": tr[xn]}
        for m in metrics:
            s = stan[m]["summary"][sn]
            sm, ssd, sess = float(s["mean"]), float(s["sd"]), float(s["Bulk_ESS"])
            row[m] = {"mean": sm, "sd": ssd, "q05": float(s["q05"]), "q50": float(s["q50"]),
                      "q95": float(s["q95"]), "rhat": float(s["Rhat"]), "ess_bulk": sess,
                      "ess_tail": float(s["Tail_ESS"]),
                      "ess_bulk_per_s": sess / stan[m]["wall_s"],
                      "ess_bulk_per_cpu_s": sess / stan[m]["cpu_s"]}
        x = xs.get(xn)
        if x is not None:
            row["xpcsfit"] = dict(x)
            row["xpcsfit"]["ess_bulk_per_s"] = x["ess_bulk"] / xf_time
            row["xpcsfit"]["ess_bulk_per_cpu_s"] = x["ess_bulk"] / xf_cpu
            for m in metrics:
                row[m]["xpcsfit_diff_in_sd"] = (x["mean"] - row[m]["mean"]) / row[m]["sd"]
                row[m]["xpcsfit_sd_ratio"] = (x["sd"] / row[m]["sd"]
                                              if x["sd"] is not None else None)
        rows.append(row)

    # Stan's best metric: the larger smallest bulk ESS per wall second over the parameters.
    min_rate = {m: min(r[m]["ess_bulk_per_s"] for r in rows) for m in metrics}
    best = max(metrics, key=lambda m: min_rate[m])

    print()
    print("Posterior: mean ± sd; Δ = (xpcsfit − Stan) mean in Stan sds; sd ratio = "
          "xpcsfit sd / Stan sd")
    hdr = f"{'parameter':<13}{'truth':>8}"
    for m in metrics:
        hdr += f"{'Stan ' + m:>25}"
    hdr += f"{'xpcsfit':>25}"
    if cmc is not None:
        for m in metrics:
            hdr += f"{'Δ ' + m[:-2]:>9}{'sd ' + m[:-2]:>9}"
    print(hdr)
    for r in rows:
        ln = f"{r['name']:<13}{r['truth']:>8.6g}"
        for m in metrics:
            ln += f"{r[m]['mean']:>14.6g} ± {r[m]['sd']:<8.3g}"
        x = r.get("xpcsfit")
        ln += f"{x['mean']:>14.6g} ± {x['sd']:<8.3g}" if x else f"{'-':>25}"
        if x:
            for m in metrics:
                ln += f"{r[m]['xpcsfit_diff_in_sd']:>+9.3f}{r[m]['xpcsfit_sd_ratio']:>9.3f}"
        print(ln)

    print()
    print(f"Efficiency: bulk ESS (rstan::monitor for all; xpcsfit's own estimate in "
          f"brackets) and bulk ESS per second of sampling wall time; ratio = xpcsfit / "
          f"Stan {best} (the better Stan metric here)")
    hdr = f"{'parameter':<13}"
    for m in metrics:
        hdr += f"{'ESS ' + m[:-2]:>10}{'/s':>8}"
    hdr += f"{'ESS xpcsfit':>20}{'/s':>9}{'ratio':>8}{'ratio CPU':>10}"
    print(hdr)
    for r in rows:
        ln = f"{r['name']:<13}"
        for m in metrics:
            ln += f"{r[m]['ess_bulk']:>10.0f}{r[m]['ess_bulk_per_s']:>8.2f}"
        x = r.get("xpcsfit")
        if x:
            own = f"({x['ess_bulk_own']:.0f})" if x.get("ess_bulk_own") is not None else ""
            ratio = x["ess_bulk_per_s"] / r[best]["ess_bulk_per_s"]
            ratio_cpu = x["ess_bulk_per_cpu_s"] / r[best]["ess_bulk_per_cpu_s"]
            r["ratio_vs_best"] = ratio
            r["ratio_cpu_vs_best"] = ratio_cpu
            ln += f"{x['ess_bulk']:>12.0f}{own:>8}{x['ess_bulk_per_s']:>9.0f}{ratio:>8.0f}" \
                  f"{ratio_cpu:>10.0f}"
        print(ln)
    summary = {"best_stan_metric": best}
    ln = f"{'min':<13}"
    for m in metrics:
        e = min(r[m]["ess_bulk"] for r in rows)
        ln += f"{e:>10.0f}{min_rate[m]:>8.2f}"
    if cmc is not None:
        e = min(r["xpcsfit"]["ess_bulk"] for r in rows)
        xr_ = e / xf_time
        ratio = xr_ / min_rate[best]
        ratio_cpu = (e / xf_cpu) / min(r[best]["ess_bulk_per_cpu_s"] for r in rows)
        summary.update({"xpcsfit_min_ess_bulk_per_s": xr_, "stan_min_ess_bulk_per_s": min_rate[best],
                        "ratio_min_ess_per_s": ratio, "ratio_min_ess_per_cpu_s": ratio_cpu})
        ln += f"{e:>12.0f}{'':>8}{xr_:>9.0f}{ratio:>8.0f}{ratio_cpu:>10.0f}"
    print(ln)
    print("time basis: Stan = wall time of sampling() (warmup + draws, all chains, compile "
          "excluded); xpcsfit = timing_s.sampling (warmup + draws, all chains). 'ratio CPU' "
          "uses CPU seconds instead: Stan's per-chain clock() times summed, xpcsfit's whole "
          "cmc command (start-up and output included)")
    print("times (s):  " + "; ".join(
        f"Stan {m}: wall {stan[m]['wall_s']:.1f}, CPU {stan[m]['cpu_s']:.1f}" for m in metrics) +
        (f"; xpcsfit: sampling wall {xf_time:.3f}, command wall {cmc['_wall_s']:.3f}, "
         f"command CPU {xf_cpu:.3f}" if cmc is not None else "") +
        f"; Stan compile {compile_s:.1f}")

    # Every xpcsfit run (each target acceptance x seed) against the reference Stan metric.
    ref_m = "dense_e" if "dense_e" in metrics else metrics[0]
    run_out = []
    failures = []
    if runs:
        names = [xn for _, xn in NAMES]
        n_iter = a.chains * (a.warmup + a.samples)
        n_draws = a.chains * a.samples
        print()
        print(f"xpcsfit runs against Stan {ref_m} (adapt_delta {a.adapt_delta}): div = "
              f"post-warmup divergences of {n_draws} draws; Δ in Stan sds; sd ratio min-max; "
              f"q05/q95 max |Δ| in Stan sds; grad/it = gradient evaluations per iteration "
              f"(warmup included)")
        print(f"{'target':>8}{'seed':>6}{'div':>5}{'rate %':>8}{'step':>7}{'grad/it':>8}"
              f"{'samp s':>8}{'CPU s':>7}{'minESS':>8}{'max|Δ|':>8}{'sd ratio':>13}"
              f"{'q05':>6}{'q95':>6}  D0 q95 (Stan)")
        for k, (d, sd_, rout, pj_) in enumerate(runs):
            x_ = xs if k == 0 else xpcsfit_summary(pj_, rout, names, a.work, log)
            par = compare_run(x_, stan[ref_m]["summary"])
            sh_ = pj_["shard_diagnostics"][0]
            rate = float(sh_.get("divergence_rate") or 0.0)
            ndiv = int(round(rate * n_draws))
            grads = int(sh_.get("gradient_evaluations") or 0)
            samp = float(pj_.get("timing_s", {}).get("sampling") or sh_.get("sampling_s"))
            ta = pj_["sampler"].get("target_accept_prob")
            rec = {"target_accept_prob_set": d, "target_accept_prob": ta, "seed": sd_,
                   "divergences": ndiv, "divergence_rate": rate,
                   "step_size": sh_.get("step_size"), "gradient_evaluations": grads,
                   "gradients_per_iteration": grads / n_iter, "sampling_s": samp,
                   "wall_s": pj_["_wall_s"], "cpu_s": pj_["_cpu_s"],
                   "max_depth_fraction": sh_.get("max_depth_fraction"),
                   "ebfmi_min": sh_.get("ebfmi_min"),
                   "quality": pj_.get("quality"),
                   "min_ess_bulk": min(p["ess_bulk"] for p in par.values()),
                   "max_abs_diff_in_sd": max(abs(p["diff_in_sd"]) for p in par.values()),
                   "sd_ratio_min": min(p["sd_ratio"] for p in par.values()),
                   "sd_ratio_max": max(p["sd_ratio"] for p in par.values()),
                   "max_abs_q05_diff_in_sd": max(abs(p["q05_diff_in_sd"]) for p in par.values()),
                   "max_abs_q95_diff_in_sd": max(abs(p["q95_diff_in_sd"]) for p in par.values()),
                   "parameters": par}
            run_out.append(rec)
            print(f"{ta:>8.3g}{sd_:>6}{ndiv:>5}{100 * rate:>8.2f}{rec['step_size']:>7.3f}"
                  f"{rec['gradients_per_iteration']:>8.2f}{samp:>8.2f}{pj_['_cpu_s']:>7.2f}"
                  f"{rec['min_ess_bulk']:>8.0f}{rec['max_abs_diff_in_sd']:>8.3f}"
                  f"{rec['sd_ratio_min']:>7.3f}-{rec['sd_ratio_max']:.3f}"
                  f"{rec['max_abs_q05_diff_in_sd']:>6.2f}{rec['max_abs_q95_diff_in_sd']:>6.2f}"
                  f"  {par['D0']['q95']:.0f} ({par['D0']['stan_q95']:.0f})")
            if a.check:
                what = f"target {ta} seed {sd_}"
                for n, p in par.items():
                    if abs(p["diff_in_sd"]) > a.max_mean_diff:
                        failures.append(f"{what}: {n} mean {p['mean']:.6g} vs Stan "
                                        f"{p['stan_mean']:.6g}: {p['diff_in_sd']:+.3f} sd "
                                        f"(limit {a.max_mean_diff})")
                    if abs(p["sd_ratio"] - 1.0) > a.max_sd_rel:
                        failures.append(f"{what}: {n} sd {p['sd']:.4g} vs Stan "
                                        f"{p['stan_sd']:.4g}: ratio {p['sd_ratio']:.3f} "
                                        f"(limit ±{a.max_sd_rel})")
                if ndiv > a.max_divergences:
                    failures.append(f"{what}: {ndiv} post-warmup divergences (limit "
                                    f"{a.max_divergences})")
        if len(xf_deltas) * len(xf_seeds) > 1:
            print()
            print("per target acceptance, over the seeds: divergences (total), mean rate %, "
                  "max |Δ| (worst), sd ratio range, grad/it (mean), sampling s (mean)")
            for d in xf_deltas:
                rr = [r for r in run_out if r["target_accept_prob_set"] == d]
                print(f"{rr[0]['target_accept_prob']:>8.3g}{sum(r['divergences'] for r in rr):>6}"
                      f"{100 * np.mean([r['divergence_rate'] for r in rr]):>8.3f}"
                      f"{max(r['max_abs_diff_in_sd'] for r in rr):>8.3f}"
                      f"{min(r['sd_ratio_min'] for r in rr):>8.3f}-"
                      f"{max(r['sd_ratio_max'] for r in rr):.3f}"
                      f"{np.mean([r['gradients_per_iteration'] for r in rr]):>8.2f}"
                      f"{np.mean([r['sampling_s'] for r in rr]):>8.2f}")

    result = {
        "what": "one-shard static posterior: Stan (reference) vs xpcsfit cmc",
        "truth": truth, "data": {"file": h5, "q": ds.q, "n_frames": ds.n_frames,
                                 "n_points": ds.n_points, "phi_deg": ds.phi.tolist()},
        "nlsq": {"values": dict(zip(THETA, th_nlsq)), "uncertainties": dict(zip(THETA, un_nlsq)),
                 "contrast": con_nlsq, "offset": off_nlsq, "correlation": corr.tolist(),
                 "noise_1.4826MAD": noise, "n_residuals": nres},
        "sigma_prior_scale": sigma_scale,
        "model_check": check_out,
        "cores": a.cores,
        "stan": {"chains": a.chains, "warmup": a.warmup, "samples": a.samples,
                 "adapt_delta": a.adapt_delta, "seed": a.seed, "compile_s": compile_s,
                 "compile_cached": cached,
                 "metrics": {m: {k: v for k, v in stan[m].items() if k != "summary"}
                             for m in metrics}},
        "xpcsfit": None if cmc is None else {
            "sampling_s": xf_time, "wall_s": cmc.get("_wall_s"), "cpu_s": xf_cpu,
            "threads": a.cores, "shard_diagnostics": cmc.get("shard_diagnostics"),
            "sampler": cmc.get("sampler"), "timing_s": cmc.get("timing_s")},
        "summary": summary,
        "rows": rows,
        "reference_metric": ref_m,
        "xpcsfit_runs": run_out,
        "assert": None if not a.check else {
            "max_mean_diff": a.max_mean_diff, "max_sd_rel": a.max_sd_rel,
            "max_divergences": a.max_divergences, "failures": failures},
    }
    with open(out_json, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {out_json} (log {log})")
    if a.check:
        if failures:
            print(f"FAIL: {len(failures)} check(s) against Stan {ref_m}:")
            for m_ in failures:
                print("  " + m_)
            return 1
        print(f"PASS: every run within {a.max_mean_diff} Stan sd in means, "
              f"{100 * a.max_sd_rel:g} % in sds, <= {a.max_divergences} divergences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
