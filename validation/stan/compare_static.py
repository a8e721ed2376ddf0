#!/usr/bin/python3
"""compare_static.py — Stan as the reference sampler for xpcsfit's NUTS (cmc, one shard).

What it measures: the same one-shard static posterior (static_shard.stan, written from
shared/spec/model.md and cmc.md) sampled by Stan (rstan, default NUTS with a diagonal
metric unless --metric says otherwise) and, with --xpcsfit, by `xpcsfit cmc` with
num_shards: 1. For every parameter it reports the posterior mean and sd of each, their
difference in Stan sds, the bulk ESS, bulk ESS per second of sampling wall time
(warmup + draws, compilation excluded) and the ratio of ESS/s (xpcsfit / Stan); plus
Stan's divergences, R-hat, step size and compile time. Before sampling it checks the
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
Asserts nothing: prints a table and writes every number to --out (JSON); exits 0 unless
something crashes. The xpcsfit side is off until `xpcsfit cmc` exists (--xpcsfit).
"""
import argparse
import csv
import json
import os
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
            "cmc": {"seed": 42, "per_angle_mode": "individual",
                    "sharding": {"num_shards": 1},
                    "per_shard_mcmc": {"num_warmup": truth["warmup"],
                                       "num_samples": truth["samples"],
                                       "num_chains": truth["chains"],
                                       "target_accept_prob": truth["adapt_delta"]}}},
    }
    path = os.path.join(work, "static.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    if os.path.exists(h5):
        os.remove(h5)
    run([xf, "simulate", "--config", path, "--phi", "0", "--out", h5,
         "--noise", repr(truth["noise"]), "--seed", "1", "--frames", str(truth["frames"]),
         "--contrast", repr(truth["contrast"]), "--offset", repr(truth["offset"])], log)
    return path, h5


def nlsq(xf, cfg, work, threads, log):
    """xpcsfit nlsq; return its parameters.json and 1.5 x 1.4826 x MAD of the residuals."""
    out = os.path.join(work, "xf")
    shutil.rmtree(os.path.join(out, "nlsq"), ignore_errors=True)
    run([xf, "nlsq", "--config", cfg, "--out", out, "--no-plots", "--threads", str(threads)],
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


def xpcsfit_cmc(xf, cfg, out, threads, log):
    """xpcsfit cmc warm-started from the NLSQ result; return D/cmc/parameters.json."""
    t0 = time.perf_counter()
    run([xf, "cmc", "--config", cfg, "--nlsq", os.path.join(out, "nlsq"), "--out", out,
         "--threads", str(threads)], log)
    wall = time.perf_counter() - t0
    with open(os.path.join(out, "cmc", "parameters.json")) as f:
        pj = json.load(f)
    pj["_wall_s"] = wall
    return pj


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
                    help="parallel Stan chains and xpcsfit --threads")
    ap.add_argument("--metric", default="diag_e", choices=["diag_e", "dense_e"],
                    help="Stan's metric (xpcsfit's default is dense)")
    a = ap.parse_args()
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
             "chains": a.chains, "warmup": a.warmup, "samples": a.samples,
             "adapt_delta": a.adapt_delta}
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
    if a.xpcsfit:
        cmc = xpcsfit_cmc(xf, cfg, xfout, a.cores, log)
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
    run(["Rscript", os.path.join(HERE, "run_stan.R"), os.path.join(HERE, "static_shard.stan"),
         os.path.join(sdir, "data.R"), os.path.join(sdir, "inits.R"), sdir, str(a.chains),
         str(a.warmup), str(a.samples), str(a.seed), repr(a.adapt_delta), str(a.cores),
         a.metric], log)
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

    timing = read_csv(os.path.join(sdir, "timing.csv"))[0]
    chains = read_csv(os.path.join(sdir, "chains.csv"))
    summ = {r["name"]: r for r in read_csv(os.path.join(sdir, "summary.csv"))}
    wall = float(timing["sampling_wall_s"])
    chain_s = sum(float(c["warmup_s"]) + float(c["sample_s"]) for c in chains)
    div = sum(int(float(c["divergences"])) for c in chains)
    draws = read_csv(os.path.join(sdir, "draws.csv"))
    dmat = np.array([[float(r[n]) for n in THETA] for r in draws])
    pcorr = np.corrcoef(dmat.T)
    print(f"stan: compile {float(timing['compile_s']):.1f} s, sampling {wall:.2f} s wall "
          f"({a.chains} chains x ({a.warmup} + {a.samples}), {a.cores} cores, {a.metric}); "
          f"sum of per-chain times {chain_s:.2f} s; Rscript total {rscript_s:.1f} s")
    print("stan: divergences %d, max-treedepth hits %d, step sizes %s, E-BFMI %s" % (
        div, sum(int(float(c["max_treedepth_hits"])) for c in chains),
        ", ".join(f"{float(c['stepsize']):.3g}" for c in chains),
        ", ".join(f"{float(c['bfmi']):.2f}" for c in chains)))
    print("stan posterior correlations D0-alpha %.3f, D0-D_offset %.3f, alpha-D_offset %.3f" %
          (pcorr[0, 1], pcorr[0, 2], pcorr[1, 2]))

    # Adapted diagonal inverse metric (chain 1) against the draws' variance in Stan's
    # unconstrained space: Stan regularises the metric towards 1e-3 (a fixed absolute
    # amount), which dominates parameters whose u-space sd is far below 0.03.
    metric_ratio = None
    with open(os.path.join(sdir, "adaptation.txt")) as f:
        adapt_txt = f.read()
    if a.metric == "diag_e":
        lines = adapt_txt.splitlines()
        k = next(n for n, ln in enumerate(lines) if "inverse mass matrix" in ln)
        inv_m = np.array([float(x) for x in lines[k + 1].strip("# \n").split(",")])
        bl = np.r_[data["theta_lo"], data["contrast_lo"], data["offset_lo"]]
        bh = np.r_[data["theta_hi"], data["contrast_hi"], data["offset_hi"]]
        allx = np.array([[float(r[n]) for n in [sn for sn, _ in NAMES]] for r in draws])
        pr = (allx[:, :5] - bl) / (bh - bl)
        u = np.c_[np.log(pr / (1 - pr)), np.log(allx[:, 5])]
        metric_ratio = dict(zip([xn for _, xn in NAMES], (inv_m / u.var(axis=0)).tolist()))
        print("stan: adapted inverse metric / u-space posterior variance: " +
              ", ".join(f"{n} {v:.3g}" for n, v in metric_ratio.items()))

    # xpcsfit side (when run): summaries by xpcsfit's names.
    xs = {}
    xf_time = None
    if cmc is not None:
        sh = cmc["shard_diagnostics"][0]
        xf_time = float(cmc.get("timing_s", {}).get("sampling") or sh.get("sampling_s"))
        ess = sh.get("ess_bulk", {})
        for n in THETA:
            xs[n] = {"mean": cmc["parameters"][n]["mean"], "sd": cmc["parameters"][n]["std"],
                     "ess_bulk": ess.get(n)}
        pa = cmc["per_angle"]
        for n in ("contrast", "offset"):
            xs[f"{n}_000"] = {"mean": pa[n][0], "sd": pa[f"{n}_std"][0],
                              "ess_bulk": next((ess[k] for k in (f"{n}_000", f"{n}[0]", f"{n}_0", n)
                                                if k in ess), None)}
        xs["sigma"] = {"mean": sh.get("sigma_mean"), "sd": None,
                       "ess_bulk": next((ess[k] for k in ("sigma", "sigma_0", "sigma_000")
                                         if k in ess), None)}

    rows = []
    print()
    print(f"{'parameter':<13}{'truth':>10}{'Stan mean ± sd':>26}{'xpcsfit mean ± sd':>26}"
          f"{'Δ/sd_Stan':>10}{'ESS Stan':>9}{'ESS/s':>8}{'ESS xf':>8}{'ESS/s':>8}{'ratio':>7}")
    tr = {"D0": truth["D0"], "alpha": truth["alpha"], "D_offset": truth["D_offset"],
          "contrast_000": truth["contrast"], "offset_000": truth["offset"], "sigma": truth["noise"]}
    for sn, xn in NAMES:
        s = summ[sn]
        sm, ssd, sess = float(s["mean"]), float(s["sd"]), float(s["Bulk_ESS"])
        row = {"name": xn, "stan_name": sn, "truth": tr[xn], "stan_mean": sm, "stan_sd": ssd,
               "stan_q05": float(s["q05"]), "stan_q50": float(s["q50"]),
               "stan_q95": float(s["q95"]), "stan_rhat": float(s["Rhat"]),
               "stan_ess_bulk": sess, "stan_ess_tail": float(s["Tail_ESS"]),
               "stan_ess_bulk_per_s": sess / wall, "stan_ess_bulk_per_chain_s": sess / chain_s}
        x = xs.get(xn)
        xtxt, dtxt, etxt, rtxt, xes = "-", "-", "-", "-", "-"
        if x is not None and x["mean"] is not None:
            row.update({"xpcsfit_mean": x["mean"], "xpcsfit_sd": x["sd"],
                        "diff_in_stan_sd": (x["mean"] - sm) / ssd})
            xtxt = f"{x['mean']:.6g} ± {x['sd']:.3g}" if x["sd"] is not None else f"{x['mean']:.6g}"
            dtxt = f"{row['diff_in_stan_sd']:+.2f}"
            if x["ess_bulk"] is not None and xf_time:
                row.update({"xpcsfit_ess_bulk": x["ess_bulk"],
                            "xpcsfit_ess_bulk_per_s": x["ess_bulk"] / xf_time,
                            "ess_per_s_ratio": (x["ess_bulk"] / xf_time) / (sess / wall)})
                xes = f"{x['ess_bulk']:.0f}"
                etxt = f"{row['xpcsfit_ess_bulk_per_s']:.0f}"
                rtxt = f"{row['ess_per_s_ratio']:.2f}"
        rows.append(row)
        print(f"{xn:<13}{tr[xn]:>10.6g}{f'{sm:.6g} ± {ssd:.3g}':>26}{xtxt:>26}{dtxt:>10}"
              f"{sess:>9.0f}{sess / wall:>8.0f}{xes:>8}{etxt:>8}{rtxt:>7}")
    print("ESS/s: bulk ESS / sampling wall time (warmup + draws, all chains); "
          "ratio = xpcsfit / Stan")

    result = {
        "what": "one-shard static posterior: Stan (reference) vs xpcsfit cmc",
        "truth": truth, "data": {"file": h5, "q": ds.q, "n_frames": ds.n_frames,
                                 "n_points": ds.n_points, "phi_deg": ds.phi.tolist()},
        "nlsq": {"values": dict(zip(THETA, th_nlsq)), "uncertainties": dict(zip(THETA, un_nlsq)),
                 "contrast": con_nlsq, "offset": off_nlsq, "correlation": corr.tolist(),
                 "noise_1.4826MAD": noise, "n_residuals": nres},
        "sigma_prior_scale": sigma_scale,
        "model_check": check_out,
        "stan": {"rstan_chains": a.chains, "warmup": a.warmup, "samples": a.samples,
                 "adapt_delta": a.adapt_delta, "seed": a.seed, "cores": a.cores,
                 "metric": a.metric, "compile_s": float(timing["compile_s"]),
                 "sampling_wall_s": wall, "sum_chain_s": chain_s, "divergences": div,
                 "chains": chains, "posterior_correlation_theta": pcorr.tolist(),
                 "inverse_metric_over_u_variance": metric_ratio, "adaptation": adapt_txt},
        "xpcsfit": None if cmc is None else {
            "sampling_s": xf_time, "wall_s": cmc.get("_wall_s"),
            "shard_diagnostics": cmc.get("shard_diagnostics"), "timing_s": cmc.get("timing_s")},
        "rows": rows,
    }
    with open(out_json, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {out_json} (log {log})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
