#!/usr/bin/env python3
"""The exact posterior of a static one-ring hard case by numerical integration, stored as
its reference in tests/configs/hard/<case>.ref.json (issue 34). No sampler: the number is
as good as the grid, and two grids say how good.

    /usr/bin/python3 validation/hard/quadrature.py CASE [--xf build/xpcsfit] [--write]
    /usr/bin/python3 validation/hard/quadrature.py --config CFG --data FILE.h5 [--xf ...]

The posterior is that of docs/cmc.md for one shard: c2 ~ Normal(offset_a + contrast_a·g1²,
σ) over the fitted points of every angle a; TruncatedNormal priors on D0, α, D_offset from
the config's bounds; contrast_a ~ N(0.5, 0.25), offset_a ~ N(1, 0.25) (the default
bounds' middle and quarter width, model.md; their truncation at [0, 1] and [0.5, 1.5] lies
> 25 posterior sds away and is left out); σ ~ HalfNormal(1.5·noise). g1 is
tests/helpers/xpcs_reference.py's transcription of model.md, written from the spec, not
from the C code. The integral, coordinate by coordinate:

- contrast_a and offset_a: enter linearly, so for fixed (D0, α, D_offset, σ) their
  Gaussian integral is exact (per angle a 2 × 2 system from Σg1⁴, Σg1², Σg1²·c2, Σc2);
  the same system gives their conditional mean and variance, hence their moments;
- σ: 33 nodes over ±8 of its conditional sd (1/√(2N) in log σ) about √(SSR/N);
- D_offset given (D0, α): a uniform grid over ±ZW conditional sds about its conditional
  mode (found by parabolic steps on the profile), clipped to the bounds (trapezoid rule);
- α given D0: the same, about the profile mode over D_offset;
- D0: a uniform grid in log D0 between the points where the profile falls 30 below its
  maximum (or a bound).
Quantiles: D0 from the cumulative integral over its grid; α and D_offset from fine
histograms of the nodes' masses. The run is repeated on a grid twice as fine and wide
(ZW 6 → 8); the largest change of a mean (in sds) and of an sd (relative) is stored as
the reference's own error.

Only what the static hard cases need: `analysis_mode: static`, one q ring, per-angle
individual scaling (the default on these files), no NLSQ-informed priors.
"""
import argparse
import json
import os
import platform
import resource
import sys
import time

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "helpers"))
import cases  # noqa: E402
import xpcs_reference as xr  # noqa: E402

SCALING_PRIOR = ((0.5, 0.25), (1.0, 0.25))  # contrast, offset: (mu, sigma)
SIGMA_Z = np.linspace(-8.0, 8.0, 33)


class Posterior:
    def __init__(self, cfg_path, data_path):
        with open(cfg_path) as f:
            cfg = yaml.safe_load(f)
        if cfg.get("analysis_mode") != "static":
            raise SystemExit("quadrature: only analysis_mode static (%s)" % cfg_path)
        az = cfg["analyzer_parameters"]
        self.dt = float(az["dt"])
        q = float(az["scattering"]["wavevector_q"])
        ds = xr.read_aps_u(data_path, q, int(az.get("start_frame", 1)),
                           int(az.get("end_frame", -1)))
        self.ds = ds
        self.tt = xr.floored_times(ds.n_frames, self.dt)
        self.w = 0.5 * ds.q ** 2 * self.dt
        self.y = ds.values
        self.n_ang, self.n_pair = self.y.shape
        self.n = self.y.size
        self.sy, self.syy = self.y.sum(1), (self.y * self.y).sum(1)
        # model.md: missing bounds are the defaults; a missing prior is the bounds' middle
        # and a quarter of their width
        spans = {n: {"min": xr.DEFAULT_BOUNDS[n][0], "max": xr.DEFAULT_BOUNDS[n][1]}
                 for n in ("D0", "alpha", "D_offset")}
        for b in (cfg.get("parameter_space") or {}).get("bounds") or []:
            spans.setdefault(b["name"], {}).update(b)
        self.bounds = {}
        for name, b in spans.items():
            lo, hi = float(b["min"]), float(b["max"])
            self.bounds[name] = (lo, hi, float(b.get("prior_mu", 0.5 * (lo + hi))),
                                 float(b.get("prior_sigma", 0.25 * (hi - lo))))
        self.noise_scale = None  # set from the mode's residuals

    def log_prior(self, name, x):
        lo, hi, m, s = self.bounds[name]
        x = np.asarray(x, dtype=np.float64)
        return np.where((x >= lo) & (x <= hi), -0.5 * ((x - m) / s) ** 2, -np.inf)

    def sums(self, d0, alpha, offs):
        """Σg1², Σg1⁴ (per D_offset) and Σg1²·c2 per angle, g1 at (d0, alpha, offs[k])."""
        f = d0 * self.tt[None, :] ** alpha + offs[:, None]
        f = np.where(f <= xr.RATE_FLOOR, xr.RATE_FLOOR, f)
        c = np.zeros_like(f)
        c[:, 1:] = np.cumsum(0.5 * (f[:, :-1] + f[:, 1:]), axis=1)
        d = c[:, self.ds.i] - c[:, self.ds.j]
        g1 = np.exp(np.clip(-self.w * np.sqrt(d * d + xr.I_SMOOTH), xr.LOG_CLIP, 0.0))
        g2 = np.square(np.where(g1 < xr.G1_FLOOR, xr.G1_FLOOR, g1))
        return g2.sum(1), (g2 * g2).sum(1), g2 @ self.y.T

    def ssr(self, s1, s2, sy):
        """the least-squares residual sum of squares over every angle's (contrast, offset)"""
        det = s2 * self.n_pair - s1 * s1
        out = np.zeros_like(s1)
        for a in range(self.n_ang):
            con = (self.n_pair * sy[:, a] - s1 * self.sy[a]) / det
            off = (s2 * self.sy[a] - s1 * sy[:, a]) / det
            out += self.syy[a] - con * sy[:, a] - off * self.sy[a]
        # g1² (nearly) the same at every pair leaves contrast and offset unidentified:
        # such points (far outside the posterior) count as impossible, not as a fit
        ok = np.isfinite(out) & (det > 1e-9 * s2 * self.n_pair) & (out > 0)
        return np.where(ok, out, np.inf)

    def profile(self, d0, alpha, offs, sigma0):
        """log posterior with the scaling profiled out at a fixed σ: for the mode search"""
        offs = np.atleast_1d(np.asarray(offs, dtype=np.float64))
        s = self.ssr(*self.sums(d0, alpha, offs))
        return (-s / (2 * sigma0 * sigma0) + self.log_prior("D_offset", offs)
                + self.log_prior("alpha", alpha) + self.log_prior("D0", d0))

    def exact(self, d0, alpha, offs):
        """log p(D0, α, D_offset | c2) up to a constant, the scaling and σ integrated out,
        at every offs; with the scaling's conditional first and second moments
        (4, n_ang, len(offs)): E[contrast], E[contrast²], E[offset], E[offset²]."""
        s1, s2, sy = self.sums(d0, alpha, offs)
        ssr = self.ssr(s1, s2, sy)
        ok = np.isfinite(ssr)
        ssr = np.where(ok, ssr, 1.0)
        sd_log = 1.0 / np.sqrt(2.0 * self.n)
        ls = 0.5 * np.log(ssr / self.n)[:, None] + SIGMA_Z[None, :] * sd_log
        sg = np.exp(ls)
        is2 = 1.0 / (sg * sg)
        (mc, sc), (mo, so) = SCALING_PRIOR
        pc, po = 1.0 / (sc * sc), 1.0 / (so * so)
        a11 = s2[:, None] * is2 + pc
        a12 = s1[:, None] * is2
        a22 = self.n_pair * is2 + po
        det = a11 * a22 - a12 * a12
        # N log σ from the likelihood, log |A|/2 per angle, the HalfNormal prior and the
        # Jacobian of the log σ grid (+ log σ)
        lp = (-self.n * ls - 0.5 * self.n_ang * np.log(det)
              - 0.5 * (sg / self.noise_scale) ** 2 + ls)
        mom = np.zeros((4, self.n_ang) + sg.shape)
        for a in range(self.n_ang):
            b1 = sy[:, a][:, None] * is2 + pc * mc
            b2 = self.sy[a] * is2 + po * mo
            m1 = (a22 * b1 - a12 * b2) / det
            m2 = (a11 * b2 - a12 * b1) / det
            lp += -0.5 * self.syy[a] * is2 + 0.5 * (b1 * m1 + b2 * m2)
            mom[0, a], mom[1, a] = m1, m1 * m1 + a22 / det
            mom[2, a], mom[3, a] = m2, m2 * m2 + a11 / det
        top = lp.max(1, keepdims=True)
        wts = np.exp(lp - top)
        z = wts.sum(1)
        lz = np.log(z) + top[:, 0]
        em = (mom * wts[None, None]).sum(-1) / z[None, None]
        lz = np.where(ok, lz, -np.inf)
        return (lz + self.log_prior("D0", d0) + self.log_prior("alpha", alpha)
                + self.log_prior("D_offset", offs)), em


def mode1d(fn, guess, step, lo, hi, smin):
    """The maximum of a unimodal fn (vectorised) near guess by parabolas through
    neighbouring grid points: (mode, conditional sd, value)."""
    step = max(step, smin)
    for _ in range(80):
        xs = np.unique(np.clip(guess + step * np.arange(-3, 4), lo, hi))
        v = fn(xs)
        k = int(np.argmax(v))
        if (k == 0 and xs[0] > lo) or (k == len(xs) - 1 and xs[-1] < hi):
            guess, step = xs[k], 2 * step
            continue
        if len(xs) < 3 or k == 0 or k == len(xs) - 1:
            return float(xs[k]), step, float(v[k])  # at a bound
        x0, x1, x2 = xs[k - 1:k + 2]
        f0, f1, f2 = v[k - 1:k + 2]
        if not np.all(np.isfinite([f0, f1, f2])):  # a cliff next to the maximum: closer
            if step <= smin:
                return float(x1), step, float(f1)
            guess, step = x1, max(smin, step / 4)
            continue
        d1, d2 = (f1 - f0) / (x1 - x0), (f2 - f1) / (x2 - x1)
        a = (d2 - d1) / (x2 - x0)
        if not a < 0:
            return float(xs[k]), step, float(v[k])
        m = -(d1 - a * (x0 + x1)) / (2 * a)
        sd = 1.0 / np.sqrt(-2 * a)
        if abs(m - guess) < 0.1 * sd and abs(step / sd - 1) < 0.5:
            return float(m), float(sd), float(fn(np.array([m]))[0])
        guess, step = m, max(smin, float(np.clip(sd, step / 4, step * 4)))
    return float(guess), step, float(fn(np.array([guess]))[0])


def nodes(mode, sd, lo, hi, n, zw):
    return np.linspace(max(lo, mode - zw * sd), min(hi, mode + zw * sd), n)


def trap_weights(x):
    w = np.zeros_like(x)
    if len(x) > 1:
        h = np.diff(x)
        w[:-1] += 0.5 * h
        w[1:] += 0.5 * h
    return w


def integrate(post, start, n_in, zw, n_d0):
    """The moments and quantiles of the posterior on one grid (see the docstring)."""
    bd = post.bounds
    sigma0 = start["sigma"]
    state = {"off": (start["D_offset"], 20.0), "al": (start["alpha"], 0.02)}
    # Along the ridge the data fix the rate D(t) = D0·t^α + D_offset and its slope near
    # the window's middle t_ref: from NLSQ's, each search also tries the start these
    # predict (α·D0·t_ref^(α−1) = slope, D_offset = level − D0·t_ref^α) and keeps the
    # better of it and the neighbour's mode. Continuation alone loses the modes far up a
    # ridge that only the prior ends (α ≈ slope / D0 moves many of its sds per node).
    t_ref = float(np.exp(np.mean(np.log(post.tt[1:]))))
    level = start["D0"] * t_ref ** start["alpha"] + start["D_offset"]
    slope = start["alpha"] * start["D0"] * t_ref ** (start["alpha"] - 1.0)

    def predicted_alpha(d0):
        a = np.float64(start["alpha"])
        with np.errstate(all="ignore"):
            for _ in range(50):
                a = slope * t_ref / (d0 * t_ref ** a)
        return float(a) if np.isfinite(a) and bd["alpha"][0] < a < bd["alpha"][1] else None

    def better_start(fn, guesses):
        guesses = [g for g in guesses if g is not None]
        v = [fn(np.array([g]))[0] for g in guesses]
        return guesses[int(np.argmax(v))]

    def off_mode(d0, al):
        lo, hi = bd["D_offset"][:2]
        fn = lambda o: post.profile(d0, al, o, sigma0)  # noqa: E731
        pred = float(np.clip(level - d0 * t_ref ** al, lo, hi))
        m, sd, v = mode1d(fn, better_start(fn, [state["off"][0], pred]), state["off"][1], lo,
                          hi, 1e-8 * (hi - lo))
        state["off"] = (m, sd)
        return m, sd, v

    def alpha_mode(d0):
        lo, hi = bd["alpha"][:2]
        f = lambda als: np.array([off_mode(d0, a)[2] for a in als])  # noqa: E731
        pa = predicted_alpha(d0)
        g = better_start(f, [state["al"][0], pa])
        step = state["al"][1]
        if pa is not None and g == pa and state["al"][0] != 0.0:
            step *= abs(pa / state["al"][0])  # α's width shrinks with it along the ridge
        m, sd, v = mode1d(f, g, step, lo, hi, 1e-9 * (hi - lo))
        state["al"] = (m, sd)
        return m, sd, v

    lo_l, hi_l = np.log(bd["D0"][0]), np.log(bd["D0"][1])
    # D0 at a log node, kept inside its bounds (exp(log(1e5)) is 1e5 + 1 ulp)
    node_d0 = lambda l: float(np.clip(np.exp(l), *bd["D0"][:2]))  # noqa: E731
    prof = lambda lds: np.array([alpha_mode(node_d0(l))[2] for l in lds])  # noqa: E731
    lm, _, vmax = mode1d(prof, np.log(start["D0"]), 0.1, lo_l, hi_l, 1e-4)
    at_mode = dict(state)
    ends = []
    for side in (-1, 1):
        state.update(at_mode)
        l = lm
        while True:
            l = float(np.clip(l + side * 0.05, lo_l, hi_l))
            if l in (lo_l, hi_l) or prof([l])[0] < vmax - 30:
                ends.append(l)
                break
    lds = np.linspace(ends[0], ends[1], n_d0)
    # from the mode outwards, each node starting from its done neighbour's modes
    order = np.argsort(np.abs(lds - lm))
    keep = {}
    for idx in order:
        done = list(keep)
        if done:
            state.update(keep[min(done, key=lambda j: abs(j - idx))]["state"])
        else:
            state.update(at_mode)
        d0 = node_d0(lds[idx])
        am, asd, _ = alpha_mode(d0)
        als = nodes(am, asd, bd["alpha"][0], bd["alpha"][1], n_in, zw)
        rows = []
        for al in als:
            om, osd, _ = off_mode(d0, al)
            offs = nodes(om, osd, bd["D_offset"][0], bd["D_offset"][1], n_in, zw)
            lp, em = post.exact(d0, al, offs)
            rows.append((al, offs, lp, em))
        keep[idx] = {"state": {"off": state["off"], "al": (am, asd)}, "rows": rows}
    top = max(np.max(r[2]) for v in keep.values() for r in v["rows"])
    # weights of every node: trapezoid in log D0 (× D0), α, D_offset
    wd = trap_weights(lds) * np.exp(lds)
    pts = []  # (weight, d0, alpha, offs-vector masses) per (D0, α) row
    for idx in range(n_d0):
        rows = keep[idx]["rows"]
        wa = trap_weights(np.array([r[0] for r in rows]))
        for k, (al, offs, lp, em) in enumerate(rows):
            m = np.exp(lp - top) * trap_weights(offs) * wa[k] * wd[idx]
            pts.append((node_d0(lds[idx]), al, offs, m, em))
    z = sum(p[3].sum() for p in pts)
    out = {}
    d0_mass = {}
    for p in pts:
        d0_mass[p[0]] = d0_mass.get(p[0], 0.0) + p[3].sum() / z
    out["_d0_marginal"] = sorted(d0_mass.items())  # (D0 node, its mass): for inspection
    for name, get in (("D0", lambda p: np.full(len(p[2]), p[0])),
                      ("alpha", lambda p: np.full(len(p[2]), p[1])),
                      ("D_offset", lambda p: p[2])):
        m1 = sum((p[3] * get(p)).sum() for p in pts) / z
        m2 = sum((p[3] * (get(p) - m1) ** 2).sum() for p in pts) / z
        m3 = sum((p[3] * (get(p) - m1) ** 3).sum() for p in pts) / z
        x = np.concatenate([get(p) for p in pts])
        w = np.concatenate([p[3] for p in pts]) / z
        o = np.argsort(x, kind="stable")
        c = np.cumsum(w[o]) - 0.5 * w[o]  # the mid-mass of each node
        out[name] = {"mean": float(m1), "sd": float(np.sqrt(m2)),
                     "q05": float(np.interp(0.05, c, x[o])),
                     "q95": float(np.interp(0.95, c, x[o])),
                     "skewness": float(m3 / m2 ** 1.5)}
    # D0's quantiles from its density in log D0, linear between the nodes (the nodes as
    # point masses put them off by up to half a node: 5 % at 80 nodes over 5 e-folds)
    dens = np.array([d0_mass[node_d0(l)] for l in lds]) / trap_weights(lds)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(lds))])
    cdf /= cdf[-1]
    for q in ("q05", "q95"):
        out["D0"][q] = float(np.exp(np.interp(float(q[1:]) / 100, cdf, lds)))
    for a in range(post.n_ang):
        for j, name in ((0, "contrast_%03d" % a), (2, "offset_%03d" % a)):
            e1 = sum((p[3] * p[4][j, a]).sum() for p in pts) / z
            e2 = sum((p[3] * p[4][j + 1, a]).sum() for p in pts) / z
            out[name] = {"mean": float(e1), "sd": float(np.sqrt(e2 - e1 * e1))}
    return out, {"n_inner": n_in, "half_width_sd": zw, "n_log_d0": n_d0,
                 "d0_range": [float(np.exp(ends[0])), float(np.exp(ends[1]))]}


def start_point(post, nlsq_params):
    """The NLSQ values as the mode search's start; σ and the HalfNormal's noise from the
    residuals there (noise = 1.4826·MAD, as docs/cmc.md)."""
    v = {k: nlsq_params[k]["value"] for k in ("D0", "alpha", "D_offset")}
    s1, s2, sy = post.sums(v["D0"], v["alpha"], np.array([v["D_offset"]]))
    det = s2 * post.n_pair - s1 * s1
    res = []
    g2 = None
    f = v["D0"] * post.tt ** v["alpha"] + v["D_offset"]
    f = np.where(f <= xr.RATE_FLOOR, xr.RATE_FLOOR, f)
    c = np.concatenate([[0.0], np.cumsum(0.5 * (f[:-1] + f[1:]))])
    d = c[post.ds.i] - c[post.ds.j]
    g2 = np.exp(np.clip(-post.w * np.sqrt(d * d + xr.I_SMOOTH), xr.LOG_CLIP, 0.0)) ** 2
    for a in range(post.n_ang):
        con = (post.n_pair * sy[0, a] - s1[0] * post.sy[a]) / det[0]
        off = (s2[0] * post.sy[a] - s1[0] * sy[0, a]) / det[0]
        res.append(post.y[a] - off - con * g2)
    r = np.concatenate(res)
    noise = 1.4826 * np.median(np.abs(r - np.median(r)))
    post.noise_scale = 1.5 * noise
    v["sigma"] = float(np.sqrt(np.mean(r * r)))
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", nargs="?", choices=sorted(cases.CASES))
    ap.add_argument("--config", help="instead of a case: any static one-ring config ...")
    ap.add_argument("--data", help="... and its data file")
    ap.add_argument("--xf", default=os.path.join(cases.ROOT, "build", "xpcsfit"))
    ap.add_argument("--work", default="/tmp/xf_hard_quadrature")
    ap.add_argument("--write", action="store_true",
                    help="store the result as the case's reference posterior")
    a = ap.parse_args()
    if bool(a.case) == bool(a.config and a.data) or (a.write and not a.case):
        ap.error("give a CASE (optionally --write), or --config and --data")
    name = a.case or os.path.splitext(os.path.basename(a.data))[0]
    work = os.path.join(a.work, name)
    os.makedirs(work, exist_ok=True)
    cfg = cases.config_path(a.case) if a.case else a.config
    data = cases.make_data(a.xf, a.case, work) if a.case else a.data
    nl = os.path.join(work, "nlsq")
    r, _, _ = cases.timed([a.xf, "nlsq", "--config", cfg, "--data", data, "--out", work,
                           "--force", "--no-plots"])
    if r.returncode not in (0, 1) or not os.path.exists(os.path.join(nl, "parameters.json")):
        raise SystemExit("nlsq: exit %d: %s" % (r.returncode, r.stderr[-2000:]))
    post = Posterior(cfg, data)
    start = start_point(post, cases.load_params(nl)["parameters"])
    c0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    coarse, gc = integrate(post, start, 17, 6.0, 40)
    fine, gf = integrate(post, start, 33, 8.0, 80)
    wall = time.monotonic() - t0
    c1 = resource.getrusage(resource.RUSAGE_SELF)
    for r in (coarse, fine):
        r.pop("_d0_marginal")
    dmean = max(abs(fine[k]["mean"] - coarse[k]["mean"]) / fine[k]["sd"] for k in fine)
    dsd = max(abs(fine[k]["sd"] / coarse[k]["sd"] - 1) for k in fine)
    dq = max(abs(fine[k][q] - coarse[k][q]) / fine[k]["sd"]
             for k in fine for q in ("q05", "q95") if q in fine[k])
    print("%s: %d points; grids %s and %s; coarse vs fine: means within %.2g sd, sds within "
          "%.2g (relative), quantiles within %.2g sd; %.0f s" % (name, post.n, gc, gf, dmean,
                                                                dsd, dq, wall))
    for k, v in fine.items():
        print("  %-14s %s" % (k, "  ".join("%s %.6g" % kv for kv in v.items())))
    if not a.write:
        return
    path = os.path.join(cases.HARD, a.case + ".ref.json")
    with open(path) as f:
        ref = json.load(f)
    old = ref.get("posterior") or ref.get("posterior_provisional")
    ref["reference"] = {
        "method": "quadrature", "script": "validation/hard/quadrature.py",
        "grids": [gc, gf], "coarse_vs_fine": {"max_dmean_sd": dmean, "max_dsd_rel": dsd,
                           "max_dquantile_sd": dq},
        "cpu_s": round((c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime), 1),
        "wall_s": round(wall, 1), "commit": cases.git_commit(), "machine": platform.node(),
        "note": "exact up to the grid: coarse_vs_fine is its error; the NUTS reference "
                "before (provisional, divergent at the D_offset wall) is kept as "
                "posterior_nuts_provisional"}
    if old and "posterior_provisional" in ref:
        ref["posterior_nuts_provisional"] = ref.pop("posterior_provisional")
    ref["posterior"] = fine
    ref.pop("note", None)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    print("written", path)


if __name__ == "__main__":
    main()
