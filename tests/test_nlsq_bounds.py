#!/usr/bin/env python3
"""A point on a bound must earn "converged" (issue 24 item 11, adr/0046).

Laminar flow, per_angle_mode individual, 4 angles (0, 45, 90, 135 deg) x 300 frames,
truth D0 800, alpha -1, D_offset 3, gamma_dot_t0 5e-3, beta 0.5, gamma_dot_t_offset 0,
phi0 -7.5, contrast 0.3, offset 1, noise 0.002 (simulate's defaults), seed 1. Fitted from
several random starts inside the bounds (drawn by validation/nlsq_bounds/random_starts.py,
numpy seed 2024). The reference is the lowest chi2 any fit of the file reached; TOL_NOISE
noise units (chi2/(n - p)) of it count as the optimum.
  - every fit either reaches the optimum or is not reported `converged`;
  - starts whose single path (start_search off) ended on the corner D0 = 100, alpha = 2
    (D_offset ~9000, chi2 3.3x the optimum; before adr/0046 they ended there, `failed`)
    and the issue's corner start (D0 100, alpha 2, D_offset 2599, gamma_dot_t0 0.00303)
    now reach the optimum and are `converged`, via restarts from inside the bounds;
  - when those restarts find a lower chi2 but the iteration budget is spent, the status
    is not `converged` (exit 1) and the quality says "not at an optimum";
  - a fit with nothing on a bound runs no restart (search.bound_restart_rounds 0);
  - the restarts give the same bits on 1 and 2 virtual devices;
  - dt 0.05 s (a 15 s window): the default search from random start #2 reported a worse
    basin `converged` (3.9e5 noise units above the optimum) because the first screened
    path, stalled next to the optimum, was dropped (inf - inf); it must now reach the
    optimum or not say converged.
  - dt 0.05 s, wrong flow-angle basin (adr/0053): the random starts #5, #6, #8, #9, #12,
    #23, #31, #32, #38 ended `converged`, quality good, at phi0 +7.2 (truth -7.5; chi2
    3.9e5 noise units above the optimum): each must reach the optimum or not say
    converged, and the phi0 profile must have found and kept the lower basin;
  - control: a fit that ends at the optimum runs the profile (search.phi0_profiles 1),
    refits nothing and gives the same bits as with start_search.phi0_profile false; the
    static mode runs no profile; the profile's refit gives the same bits on 1 and 2
    virtual devices;
  - a lower basin that the iteration budget cannot reach: not converged (exit 1), the
    quality says "not at an optimum: a refit from the flow-angle basin".
  - dt 0.1 s (a 30 s window): random starts #0 and #2 ended next to the optimum with
    stop reason `stalled` and were `failed` (the polish's stall stop ended them while
    they were still closing in); #0 had ended `converged` in the mirror basin before
    adr/0053. With the polish free of the stall stop (adr/0054) they, and #5, reach the
    optimum, `converged`.
Environment: XF_BINARY, XF_TMP."""
import json
import os
import shutil
import subprocess
import sys

from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_nlsq_bounds")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

TOL_NOISE = 1.0
NAMES = ["D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"]
TRUTH = [800.0, -1.0, 3.0, 0.005, 0.5, 0.0, -7.5]
CONFIG = """analysis_mode: laminar_flow
experimental_data: {{file_path: {data}}}
analyzer_parameters:
  dt: {dt}
  end_frame: 300
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [800, -1, 3, 0.005, 0.5, 0, -7.5]
optimization:
  nlsq:
    anti_degeneracy: {{per_angle_mode: individual}}
"""
# random starts #22, #31, #39 of random_starts.py (dt 0.001): their single paths ended on
# the corner D0 = 100, alpha = 2 before adr/0046
CORNER_STARTS = {
    "random22": [61826.8, 1.31686, 63057.2, 0.000819248, 1.89585, 0.0678641, 2.53556],
    "random31": [6884.23, 0.98737, 92497.8, 0.00598195, 0.304604, 0.0300043, -2.12913],
    "random39": [105.512, 1.25819, 4053.82, 0.00390953, -0.906322, 0.00587619, -9.30638],
    "issue": [100.0, 2.0, 2599.0, 0.00303, 0.5, 0.0, 0.0],
}
# random starts #0..#3 for the default search (dt 0.001); #2 also at dt 0.05
SEARCH_STARTS = {
    "random0": [10653.5, -1.14271, -38109.6, 0.035986, 1.98321, -0.0715536, -8.42549],
    "random1": [348.716, -0.561412, -66076.2, 0.00226632, 0.46723, -0.0789229, 1.31462],
    "random2": [103.25, -0.139523, 95124.4, 0.0359682, 0.387289, -0.0349301, -5.87312],
    "random3": [2129.01, -0.887834, 74991.6, 1.63975e-05, -0.90302, 0.0614364, -4.63269],
}
DT05_START = SEARCH_STARTS["random2"]
# random starts of random_starts.py at dt 0.05 that ended converged at phi0 +7.2 (the
# mirror basin) before adr/0053
BASIN_STARTS = {
    "random5": [2895.57, -0.127924, 92986, 0.131514, -1.68386, -0.0509591, -6.30426],
    "random6": [52050.5, 0.215328, -25668.2, 0.0565398, -0.60491, 0.0363308, -5.43299],
    "random8": [1003.62, -0.297609, -59614, 0.000756641, 0.341549, -0.01594, -1.93106],
    "random9": [67893.5, -1.80715, -34785.2, 0.000906513, 0.393817, -0.091541, -5.17486],
    "random12": [605.547, -0.254566, -73036.2, 0.0101334, -1.59776, -0.0440965, -5.62959],
    "random23": [46497.7, -1.64991, -56462.3, 0.148505, -1.27924, -0.0833387, -2.20038],
    "random31": [6884.23, 0.98737, 92497.8, 0.00598195, 0.304604, 0.0300043, -2.12913],
    "random32": [4209.7, -0.2248, 10661.8, 0.00464272, 0.618263, 0.0690295, -6.64474],
    "random38": [49580.3, -0.322746, 41243.5, 0.00341541, 0.436019, -0.00613091, -2.41096],
}
NO_PROFILE = ["--set", "optimization.nlsq.start_search.phi0_profile=false"]
SINGLE = ["--set", "optimization.nlsq.start_search.enable=false"]


def simulate(name, dt):
    data = os.path.join(TMP, f"{name}.h5")
    cfg = os.path.join(TMP, f"{name}.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=data, dt=dt))
    r = subprocess.run([XF, "simulate", "--config", cfg, "--phi", "0,45,90,135", "--out", data,
                        "--frames", "300", "--seed", "1"], capture_output=True, text=True)
    check(r.returncode == 0, f"{name}: simulate exit {r.returncode}: {r.stderr}")
    return cfg


def fit(cfg, label, start, extra=(), threads="1"):
    out = os.path.join(TMP, f"{label}_t{threads}")
    args = [XF, "nlsq", "--config", cfg, "--out", out, "--no-plots", "--no-surfaces",
            "--threads", threads] + list(extra)
    for name, v in zip(NAMES, start):
        args += ["--initial", f"{name}={v!r}"]
    r = subprocess.run(args, capture_output=True, text=True)
    pj = os.path.join(out, "nlsq", "parameters.json")
    check(r.returncode in (0, 1) and os.path.exists(pj),
          f"{label}: nlsq exit {r.returncode}: {r.stderr[-400:]}")
    if not os.path.exists(pj):
        return None
    p = json.load(open(pj))
    p["rc"] = r.returncode
    return p


def gap_noise(p, best):
    s2 = best / (p["n_points"] - p["n_free_parameters"])
    return (p["chi_squared"] - best) / s2


def optimum_or_not_converged(label, p, best):
    gap = gap_noise(p, best)
    print(f"{label}: {p['status']} chi2 {p['chi_squared']:.10g} gap {gap:.3g} noise units, "
          f"at bounds {p['parameters_at_bounds']}, search {p['search'].get('chosen_start')}")
    check(gap <= TOL_NOISE or p["status"] != "converged",
          f"{label}: says converged {gap:.3g} noise units above the optimum")
    return gap


def file_fast():
    cfg = simulate("dt001", 0.001)
    fits = {"truth": fit(cfg, "truth", TRUTH)}
    for label, start in CORNER_STARTS.items():
        fits[label] = fit(cfg, label, start, SINGLE)
    for label, start in SEARCH_STARTS.items():
        fits[label] = fit(cfg, label, start)
    if any(p is None for p in fits.values()):
        return
    best = min(p["chi_squared"] for p in fits.values())
    check(gap_noise(fits["truth"], best) <= TOL_NOISE and fits["truth"]["status"] == "converged",
          "the fit from the truth is the converged optimum")
    check(fits["truth"]["search"].get("bound_restart_rounds") == 0,
          "nothing on a bound: no restart runs (the check costs nothing)")
    for label, p in fits.items():
        gap = optimum_or_not_converged(label, p, best)
        if label in CORNER_STARTS:
            check(gap <= TOL_NOISE and p["status"] == "converged" and p["rc"] == 0,
                  f"{label}: the corner start reaches the optimum via the bound restarts")
            check(p["search"].get("bound_restarts_improved", 0) >= 1,
                  f"{label}: a restart from inside the bounds found the lower chi2")
    # the restarts are deterministic: the same bits on 2 virtual devices
    p2 = fit(cfg, "random39", CORNER_STARTS["random39"], SINGLE, threads="2")
    if p2:
        check(p2["chi_squared"] == fits["random39"]["chi_squared"] and
              p2["parameters"] == fits["random39"]["parameters"],
              "bound restarts: the same bits on 1 and 2 virtual devices")
    # the budget spent before the restarts can be refined on all the data (subsample
    # smaller than the data): not converged, exit 1, "not at an optimum"
    na = fit(cfg, "budget", CORNER_STARTS["random39"],
             SINGLE + ["--set", "optimization.nlsq.start_search.subsample_points=16384"])
    # (adr/0070: since a step that crosses a bound is solved again with that parameter
    # on it, this start reaches the optimum within the default budget, 204 iterations
    # where it once spent all 1000: converged is then right, and the budget is cut to
    # three quarters of that to keep the restarts from being refined)
    if na and gap_noise(na, best) <= TOL_NOISE and na["status"] == "converged":
        check(na["rc"] == 0, "budget: at the optimum, converged, exit 0")
        cut = ["--set", f"optimization.nlsq.max_iterations={na['iterations'] * 3 // 4}"]
        na = fit(cfg, "budget_cut", CORNER_STARTS["random39"],
                 SINGLE + ["--set", "optimization.nlsq.start_search.subsample_points=16384"]
                 + cut)
    if na:
        print("budget:", na["status"], na["chi_squared"], na["quality"]["reasons"][:2])
        check(na["status"] != "converged" and na["rc"] == 1,
              "budget spent: the point on the bound is not converged (exit 1)")
        check(any(r.startswith("not at an optimum") for r in na["quality"]["reasons"]),
              "budget spent: the quality says 'not at an optimum'")


def file_long_window():
    cfg = simulate("dt05", 0.05)
    truth = fit(cfg, "dt05_truth", TRUTH)
    p = fit(cfg, "dt05_random2", DT05_START)
    if truth and p:
        best = min(truth["chi_squared"], p["chi_squared"])
        check(gap_noise(truth, best) <= TOL_NOISE, "dt 0.05: the truth start reaches the optimum")
        optimum_or_not_converged("dt05_random2", p, best)
    if truth:
        wrong_basin(cfg, truth)


def wrong_basin(cfg, truth):
    fits = {label: fit(cfg, "dt05_" + label, start) for label, start in BASIN_STARTS.items()}
    if any(p is None for p in fits.values()):
        return
    best = min([truth["chi_squared"]] + [p["chi_squared"] for p in fits.values()])
    profiled = 0
    for label, p in fits.items():
        gap = optimum_or_not_converged("dt05_" + label, p, best)
        # adr/0070: with bound-aware steps some of these starts reach the optimum's
        # basin directly; the rest must get there through the phi0 profile
        check(gap <= TOL_NOISE and p["status"] == "converged",
              f"dt05_{label}: the fit reaches the optimum")
        profiled += p["search"].get("phi0_basins_improved") == 1
    check(profiled >= 1, "the phi0 profile found the basin of the optimum at least once")
    p2 = fit(cfg, "dt05_random5", BASIN_STARTS["random5"], threads="2")
    if p2:
        check(p2["chi_squared"] == fits["random5"]["chi_squared"] and
              p2["parameters"] == fits["random5"]["parameters"],
              "phi0 profile and refit: the same bits on 1 and 2 virtual devices")
    # control: nothing better found, nothing changed (the same bits without the profile)
    s = truth["search"]
    check(s.get("phi0_profiles") == 1 and s.get("phi0_basins_tried") == 0,
          f"dt 0.05 truth: one profile, no refit ({s})")
    off = fit(cfg, "dt05_truth_noprofile", TRUTH, NO_PROFILE)
    if off:
        check(off["chi_squared"] == truth["chi_squared"] and
              off["parameters"] == truth["parameters"] and off["status"] == truth["status"],
              "dt 0.05 truth: the same bits with and without the phi0 profile")
        check(off["search"].get("phi0_profiles") == 0, "phi0_profile false: no profile")
    # the lower basin shows on the subsample but the budget is spent: not converged
    # (adr/0070: from a start that still needs the profile, at the default subsample;
    # random6 at 16384 points once did, it now reaches the optimum without the profile)
    start = next((BASIN_STARTS[label] for label, p in fits.items()
                  if p["search"].get("phi0_basins_improved") == 1), BASIN_STARTS["random6"])
    sub = []
    first = fit(cfg, "dt05_budget_probe", start, sub + NO_PROFILE)
    if first:
        cut = ["--set", f"optimization.nlsq.max_iterations={first['iterations']}"]
        na = fit(cfg, "dt05_budget", start, sub + cut)
        if na and gap_noise(na, best) <= TOL_NOISE and na["status"] == "converged":
            # adr/0070: this start now reaches the optimum without the profile
            print("dt05_budget: at the optimum:", na["status"], na["chi_squared"])
            check(na["rc"] == 0, "dt05_budget: at the optimum, converged, exit 0")
        elif na:
            print("dt05_budget:", na["status"], na["chi_squared"], na["quality"]["reasons"][:2])
            check(na["status"] != "converged" and na["rc"] == 1,
                  "budget spent before the lower phi0 basin: not converged (exit 1)")
            # the basin's refit may get part of the way (then it is the end point,
            # not converged) or not at all (then the reason names the basin)
            check(any(r.startswith("not at an optimum: a refit from the flow-angle basin")
                      or r.startswith("the optimiser stopped")
                      for r in na["quality"]["reasons"]),
                  "budget spent: the quality names the flow-angle basin or the stop")


def file_stall_window():
    cfg = simulate("dt1", 0.1)
    truth = fit(cfg, "dt1_truth", TRUTH)
    fits = {"random0": fit(cfg, "dt1_random0", SEARCH_STARTS["random0"]),
            "random5": fit(cfg, "dt1_random5", BASIN_STARTS["random5"]),
            "random2": fit(cfg, "dt1_random2", SEARCH_STARTS["random2"])}
    if truth is None or any(p is None for p in fits.values()):
        return
    best = min([truth["chi_squared"]] + [p["chi_squared"] for p in fits.values()])
    for label, p in fits.items():
        gap = optimum_or_not_converged("dt1_" + label, p, best)
        check(gap <= TOL_NOISE and p["status"] == "converged" and p["rc"] == 0 and
              p["quality"]["checks"]["distance_to_optimum_se"] <= 0.1,
              f"dt1_{label}: reaches the optimum, converged "
              f"({p['status']}, {p['stop_reason']}, {p['quality']['reasons'][:2]})")


def static_no_profile():
    cfg = os.path.join(TMP, "static.yaml")
    data = os.path.join(TMP, "dt001.h5")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=data, dt=0.001).replace("laminar_flow", "static")
                .replace("[D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]",
                         "[D0, alpha, D_offset]").replace("[800, -1, 3, 0.005, 0.5, 0, -7.5]",
                                                          "[800, -1, 3]"))
    p = fit(cfg, "static", TRUTH[:3])
    if p:
        check(p["search"].get("phi0_profiles") == 0, "static: no phi0 profile")


file_fast()
file_long_window()
file_stall_window()
static_no_profile()
sys.exit(summary())
