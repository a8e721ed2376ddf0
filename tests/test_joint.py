"""test_joint.py — `nlsq --joint` (adr/0066): one fit over four simulated q rings with a
shared truth recovers it with sds below the best single ring's (the ratio per parameter is
printed); every ring agrees with the others' joint fit; a ring planted at 1.5x D0 is the
only one flagged (quality marginal, console, run.log, parameters.json); the bits do not
depend on --threads; the config key optimization.rings: joint does what --joint does;
two rings that disagree are reported with no ring named; batch fits the rings jointly
with optimization.rings: joint. The joint folder has the plots and surfaces of a one-ring
folder (adr/0068): angle pages for every ring, named by ring then angle, capped per ring;
the surfaces and NeXus g2 fit at each slot's ring q (checked against the NumPy model);
`xpcsfit plot` redraws the same bytes; a one-ring folder keeps its layout."""
import json
import os
import shutil

import glob

import h5py
import numpy as np

import xpcs_reference as xr
from aps_fixtures import check, run, run_tests, tmp_dir

T = os.path.join(tmp_dir(), "joint")
RINGS = [0.003, 0.0054, 0.008, 0.01]
PHI = [-10.0, 0.0, 45.0, 90.0]
N = 60
TRUTH = {"D0": 3000.0, "alpha": -1.2, "D_offset": 0.0}
PHYS = ["D0", "alpha", "D_offset"]


def cfg(name, extra=()):
    path = os.path.join(T, name + ".yaml")
    lines = ["analysis_mode: static", "analyzer_parameters:", "  dt: 0.001",
             "  end_frame: %d" % N, "  scattering: {wavevector_q: all}",
             "initial_parameters: {parameter_names: [D0, alpha, D_offset], "
             "values: [3000, -1.2, 0]}"] + list(extra)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def simulate(out, *extra, rings=RINGS):
    rc, _, err = run(["simulate", "--config", cfg("sim"), "--phi",
                      ",".join("%g" % p for p in PHI), "--q",
                      ",".join("%g" % q for q in rings), "--out", out, "--force",
                      "--noise", "0.01", "--seed", "3"] + list(extra))
    check(rc == 0, "simulate: %s" % err)


SHARED = os.path.join(T, "shared.h5")
PLANTED = os.path.join(T, "planted.h5")
# a ring at q 0.0003 barely decays over the 60 frames: it informs no physical parameter
# and its contrast and offset are nearly one (c2 ≈ offset + contrast)
LOWQ = os.path.join(T, "lowq.h5")
LOWQ_RINGS = [0.0003, 0.0054, 0.008]


def setup():
    shutil.rmtree(T, ignore_errors=True)
    os.makedirs(T)
    simulate(SHARED)
    simulate(LOWQ, rings=LOWQ_RINGS)
    # ring 2 (q 0.008) at 1.5x D0: the same file simulated at 4500, its maps spliced in
    # (maps are ring-major, 4 per ring; the noise is keyed by the map, so only D0 differs)
    other = os.path.join(T, "d0x15.h5")
    simulate(other, "--initial", "D0=4500")
    shutil.copy(SHARED, PLANTED)
    with h5py.File(PLANTED, "r+") as a, h5py.File(other, "r") as b:
        for m in range(2 * len(PHI) + 1, 3 * len(PHI) + 1):
            key = "xpcs/twotime/correlation_map/c2_%05d" % m
            a[key][...] = b[key][()]


def joint(name, data, *extra, config=None):
    out = os.path.join(T, name)
    args = ["nlsq", "--config", config or cfg("fit"), "--data", data, "--out", out,
            "--force"] + list(extra)
    if config is None:
        args.append("--joint")
    rc, stdout, err = run(args)
    check(rc == 0, "nlsq --joint %s: %d %s" % (name, rc, err))
    with open(os.path.join(out, "nlsq_joint", "parameters.json")) as f:
        return json.load(f), stdout, err, out


def test_recovery_and_sd_ratio():
    p, stdout, _, _ = joint("shared", SHARED)
    rings = p["rings"]
    check(rings["n_rings"] == 4 and rings["flagged_q"] == [], "no ring flagged: %s" % stdout)
    check(p["quality"]["overall"] == "good", "quality good")
    check("rings agree" in stdout, "console says the rings agree")
    for name in PHYS:
        v = p["parameters"][name]
        z = abs(v["value"] - TRUTH[name]) / v["uncertainty"]
        check(z < 3, "%s: %g +/- %g, %.1f sd from the truth" % (name, v["value"],
                                                              v["uncertainty"], z))
        best = min(r["own_fit"][name]["uncertainty"] for r in rings["rings"])
        ratio = v["uncertainty"] / best
        print("sd ratio %s: joint %.4g / best single ring %.4g = %.2f"
              % (name, v["uncertainty"], best, ratio))
        check(ratio < 1.0, "%s: joint sd not below the best ring's" % name)
        shares = [r["information_share"][name] for r in rings["rings"]]
        check(abs(sum(shares) - 1) < 1e-9 and min(shares) > 0, "%s shares %s" % (name, shares))
    chi2 = sum(r["chi_squared"] for r in rings["rings"])
    check(abs(chi2 - rings["chi_squared_joint"]) < 1e-6 * chi2,
          "per-ring chi2 sum %r vs joint %r" % (chi2, rings["chi_squared_joint"]))
    for r in rings["rings"]:
        check(r["leave_one_out"]["max_sd_from_others"] < 3, "ring %g agrees" % r["q"])
        check(r["informs_physical_parameters"] and r["leave_one_out"]["not_compared"] == "",
              "ring %g informs and is compared" % r["q"])


def test_uninformative_ring():
    """Issue 26: a ring whose data inform no physical parameter (q 0.0003: g1 barely
    decays in the window) does not poison the joint fit: converged, exit 0, D0 and alpha
    within 3 sd; the ring is named (console, stderr, quality, parameters.json), its own
    fit (ridge) is not compared in the leave-one-out check; the other rings unchanged."""
    p, stdout, err, out = joint("lowq", LOWQ, "--no-plots")
    check(p["status"] == "converged", "joint status %s: %s" % (p["status"],
                                                               p["quality"]["reasons"]))
    check(p["quality"]["overall"] == "marginal", "quality %s" % p["quality"]["overall"])
    for name in ("D0", "alpha"):
        v = p["parameters"][name]
        z = abs(v["value"] - TRUTH[name]) / v["uncertainty"]
        check(z < 3, "%s: %g +/- %g, %.1f sd from the truth" % (name, v["value"],
                                                              v["uncertainty"], z))
    rings = p["rings"]["rings"]
    low, rest = rings[0], rings[1:]
    check(low["q"] == 0.0003 and not low["informs_physical_parameters"]
          and low["largest_information_share"] < 0.01, "low ring %s" % low)
    check(low["contrast_offset_correlation"] > 0.99, "contrast/offset told apart? %s" % low)
    check(low["own_fit"]["status"] in ("ridge", "failed"), "own fit %s" % low["own_fit"])
    loo = low["leave_one_out"]
    check(loo["not_compared"] and loo["max_sd_from_others"] is None and not loo["flagged"],
          "low ring compared as a measurement: %s" % loo)
    named = "ring q 0.0003 1/A informs no physical parameter"
    check(any(named in r for r in p["quality"]["reasons"]), p["quality"]["reasons"])
    check(named in err and "wavevector_q" in err, "stderr: %s" % err)
    check("not compared" in stdout, "console: %s" % stdout)
    with open(os.path.join(out, "nlsq_joint", "run.log")) as f:
        check(named in f.read(), "run.log names the ring")
    with open(os.path.join(out, "nlsq_joint", "report.html")) as f:
        html = f.read()
    check("not compared; own fit" in html and "informs no physical parameter" in html,
          "report.html names the ring")
    check(p["rings"]["flagged_q"] == [], "flagged %s" % p["rings"]["flagged_q"])
    for r in rest:
        check(r["informs_physical_parameters"] and r["own_fit"]["status"] == "converged"
              and r["leave_one_out"]["not_compared"] == ""
              and not r["leave_one_out"]["flagged"], "ring %g: %s" % (r["q"], r))
    # two usable rings are left: they can only be said to agree or disagree
    check(p["rings"]["pair_sd_apart"] < 3, "pair %s" % p["rings"].get("pair_sd_apart"))
    # per-ring mode: that ring alone stays failed (honest, exit 1), and says what to do
    per = os.path.join(T, "lowq_per_ring")
    rc, _, err = run(["nlsq", "--config", cfg("fit"), "--data", LOWQ, "--out", per,
                      "--force", "--no-plots"])
    check(rc == 1 and "--joint fits the rings together" in err, "per ring: %d %s" % (rc, err))
    for q, ok in (("0.0003", False), ("0.0054", True), ("0.008", True)):
        with open(os.path.join(per, "nlsq", "q_" + q, "parameters.json")) as f:
            st = json.load(f)["status"]
        check((st == "converged") == ok, "per ring q %s: %s" % (q, st))


def test_planted_ring_only_one_flagged():
    p, stdout, err, out = joint("planted", PLANTED)
    rings = p["rings"]
    check(rings["flagged_q"] == [0.008], "flagged %s" % rings["flagged_q"])
    zs = [r["leave_one_out"]["max_sd_from_others"] for r in rings["rings"]]
    print("planted: sd from the others per ring %s" % ["%.1f" % z for z in zs])
    check(p["quality"]["overall"] == "marginal", "quality marginal")
    check(any("0.008" in r for r in p["quality"]["reasons"]), "reason names the ring")
    check("FLAGGED" in stdout and "0.008 1/A disagrees" in err, "console: %s" % stdout)
    with open(os.path.join(out, "nlsq_joint", "run.log")) as f:
        check("ring q 0.008 1/A disagrees" in f.read(), "run.log names the ring")


def test_threads_bitwise():
    keep = ("parameters", "chi_squared", "per_angle", "covariance", "rings")
    got = []
    for t in ("1", "2"):
        p, _, _, _ = joint("threads%s" % t, PLANTED, "--threads", t)
        got.append(json.dumps({k: p[k] for k in keep}, sort_keys=True))
    check(got[0] == got[1], "--threads 1 and 2 differ")


def test_config_key():
    key = cfg("fit_key", ["optimization: {rings: joint}"])
    a, _, _, _ = joint("key", SHARED, config=key)
    b, _, _, _ = joint("flag", SHARED)
    check(a["parameters"] == b["parameters"], "optimization.rings: joint == --joint")


def test_two_rings_disagree_none_flagged():
    """Two rings can disagree but not say which is off: marginal, no ring flagged."""
    two = cfg("fit_two", ["optimization: {rings: joint}"])
    with open(two) as f:
        text = f.read().replace("wavevector_q: all", "wavevector_q: [0.003, 0.008]")
    with open(two, "w") as f:
        f.write(text)
    p, stdout, err, _ = joint("two", PLANTED, config=two)
    rings = p["rings"]
    check(rings["n_rings"] == 2 and rings["flagged_q"] == [], "none flagged")
    check(rings["pair_sd_apart"] > 3 and rings["pair_parameter"] == "D0", str(rings))
    check(p["quality"]["overall"] == "marginal", "quality marginal")
    check("two rings disagree" in err and "rings agree" not in stdout, err)


def test_batch_joint():
    """batch with optimization.rings: joint: the file's joint fit in its folder's
    nlsq_joint/ (tests/test_batch_rings.py checks the summary and --resume)."""
    out = os.path.join(T, "batch")
    rc, _, err = run(["batch", "--config", cfg("fit_b", ["optimization: {rings: joint}"]),
                      "--out", out, "--force", "--no-plots", SHARED])
    check(rc == 0, "batch: %d %s" % (rc, err))
    check(os.path.isfile(os.path.join(out, "shared", "nlsq_joint", "parameters.json")),
          "the joint folder")
    check(not os.path.exists(os.path.join(out, "shared", "nlsq")), "no per-ring folder")


def pngs(d):
    return {os.path.basename(f): open(f, "rb").read()
            for f in sorted(glob.glob(os.path.join(d, "plots", "*.png")))}


def test_joint_plots_per_ring():
    """Angle pages of every ring (4 angles each: all paged), the overview; results.h5
    records each slot's q; its NeXus g2 fit is finite."""
    out = os.path.join(T, "shared", "nlsq_joint")
    names = sorted(pngs(out))
    for k, q in enumerate(RINGS):
        mine = [n for n in names if n.startswith("c2_ring%03d_q%g_phi_" % (k, q))]
        check(len(mine) == len(PHI), "ring %g: %d pages %s" % (q, len(mine), names))
    check("overview.png" in names, "overview.png")
    angle = [n for n in names if n.startswith("c2_")]
    check(angle == sorted(angle) and len(angle) == len(RINGS) * len(PHI),
          "pages sort by ring then angle: %s" % angle)
    with h5py.File(os.path.join(out, "results.h5"), "r") as h:
        check(list(h["/data/slot_q"][()]) == [q for q in RINGS for _ in PHI],
              "/data/slot_q %s" % h["/data/slot_q"][()])
        g2 = h["/entry/g2/g2_fit"][()]
        check(np.isfinite(g2).all() and h["/entry/g2/q"][()] == RINGS[0],
              "NeXus g2 fit finite at ring 0's q")
    with open(os.path.join(out, "run.log")) as f:
        check("no plots or surfaces" not in f.read(), "run.log: no refusal line")


def numpy_slot(h, s, n):
    """The NumPy model of slot s at the joint estimate and its ring's q (N x N)."""
    values = h["/nlsq/values"][()]
    q = h["/data/slot_q"][s]
    return xr.model_c2_full("static", q, h["/data/dt"][()],
                            h["/nlsq/stator_rotor_gap"][()], [h["/data/phi_deg"][s]], n,
                            list(values[:3]), h["/nlsq/per_angle_contrast"][s],
                            h["/nlsq/per_angle_offset"][s])[0]


def test_joint_surfaces_match_numpy():
    """--surfaces: one slot of each ring equals the NumPy model at its ring's q to float32
    (and not at ring 0's q); the NeXus g2 fit is the lag mean of slot 0's model."""
    _, _, _, out = joint("surf", SHARED, "--surfaces")
    with h5py.File(os.path.join(out, "nlsq_joint", "results.h5"), "r") as h:
        fit = h["/nlsq/c2_fit"]
        n = fit.shape[1]
        worst = 0.0
        for k in range(len(RINGS)):
            s = k * len(PHI) + 2
            want = numpy_slot(h, s, n)
            off = ~np.eye(n, dtype=bool)
            off[0, :] = off[:, 0] = False
            worst = max(worst, np.abs(fit[s][off] - want[off]).max())
            if k > 0:
                at_q0 = xr.model_c2_full("static", RINGS[0], h["/data/dt"][()], 0.0,
                                         [h["/data/phi_deg"][s]], n,
                                         list(h["/nlsq/values"][:3]),
                                         h["/nlsq/per_angle_contrast"][s],
                                         h["/nlsq/per_angle_offset"][s])[0]
                check(np.abs(fit[s][off] - at_q0[off]).max() > 1e-4,
                      "ring %d's surface differs from ring 0's q" % k)
        print("joint surfaces vs NumPy: worst %.3g" % worst)
        # the surfaces are stored as float32: half an ulp of c2 ~ 1.3
        check(worst < 2e-7, "surfaces at each ring's q: worst %.3g" % worst)
        m = numpy_slot(h, 0, n)
        g2 = [np.mean([m[i, i + lag] for i in range(1, n - lag)]) for lag in range(1, n - 1)]
        got = h["/entry/g2/g2_fit"][()]
        check(np.abs(got - g2).max() < 1e-10, "NeXus g2 fit = NumPy lag mean")
    # the redraw from the stored surfaces: the same pages; the maps are the float32
    # surfaces (as for one ring, their pixels may differ), the overview the same bytes
    before = pngs(os.path.join(out, "nlsq_joint"))
    rc, _, err = run(["plot", os.path.join(out, "nlsq_joint")])
    after = pngs(os.path.join(out, "nlsq_joint"))
    check(rc == 0 and sorted(after) == sorted(before), "plot from surfaces: %d %s" % (rc, err))
    check(after["overview.png"] == before["overview.png"], "overview redrawn byte for byte")


def test_plot_redraws_joint_same_bytes():
    """`xpcsfit plot DIR/nlsq_joint` reloads each ring at its q: the same PNG bytes."""
    d = os.path.join(T, "shared", "nlsq_joint")
    before = pngs(d)
    for f in glob.glob(os.path.join(d, "plots", "*.png")):
        os.remove(f)
    rc, _, err = run(["plot", d])
    check(rc == 0, "plot nlsq_joint: %d %s" % (rc, err))
    after = pngs(d)
    check(sorted(after) == sorted(before), "same pages: %s" % sorted(after))
    for name in before:
        check(after[name] == before[name], "%s redrawn byte for byte" % name)


def test_angle_page_cap_per_ring():
    """12 angles on each of 2 rings: the default pages are each ring's 10 lag-panel
    angles (adr/0059 per ring); plotting.angle_pages: all pages every slot."""
    phi = ",".join("%g" % (15.0 * k - 80.0) for k in range(12))
    data = os.path.join(T, "twelve.h5")
    rc, _, err = run(["simulate", "--config", cfg("sim12"), "--phi", phi, "--q",
                      "0.0054,0.008", "--out", data, "--force", "--noise", "0.01",
                      "--seed", "5"])
    check(rc == 0, "simulate: %s" % err)
    _, _, _, out = joint("twelve", data)
    names = [n for n in pngs(os.path.join(out, "nlsq_joint")) if n.startswith("c2_")]
    for k in range(2):
        mine = [n for n in names if n.startswith("c2_ring%03d_" % k)]
        check(len(mine) == 10, "ring %d: %d pages (10 expected)" % (k, len(mine)))
        check(any("_phi_000_" in n for n in mine) and any("_phi_011_" in n for n in mine),
              "ring %d: first and last angle paged" % k)
    every = cfg("fit_all", ["plotting: {angle_pages: all}"])
    _, _, _, out = joint("twelve_all", data, "--joint", config=every)
    names = [n for n in pngs(os.path.join(out, "nlsq_joint")) if n.startswith("c2_")]
    check(len(names) == 24, "angle_pages: all: %d pages" % len(names))


def test_one_ring_layout_unchanged():
    """One ring: the page names, no /data/slot_q, no NeXus q (byte identity against the
    previous binary was checked by hand, adr/0068)."""
    one = cfg("fit_one")
    with open(one) as f:
        text = f.read().replace("wavevector_q: all", "wavevector_q: 0.0054")
    with open(one, "w") as f:
        f.write(text)
    out = os.path.join(T, "one")
    rc, _, err = run(["nlsq", "--config", one, "--data", SHARED, "--out", out, "--force"])
    check(rc == 0, "one ring: %d %s" % (rc, err))
    names = sorted(pngs(os.path.join(out, "nlsq")))
    check(names == ["c2_phi_%03d_%+07.2fdeg.png" % (a, p) for a, p in enumerate(PHI)]
          + ["overview.png"], "one-ring pages %s" % names)
    with h5py.File(os.path.join(out, "nlsq", "results.h5"), "r") as h:
        check("slot_q" not in h["/data"] and "q" not in h["/entry/g2"],
              "no per-slot q for one ring")


if __name__ == "__main__":
    setup()
    raise SystemExit(run_tests([test_recovery_and_sd_ratio, test_planted_ring_only_one_flagged,
                                test_uninformative_ring,
                                test_threads_bitwise, test_config_key,
                                test_two_rings_disagree_none_flagged,
                                test_batch_joint, test_joint_plots_per_ring,
                                test_joint_surfaces_match_numpy,
                                test_plot_redraws_joint_same_bytes,
                                test_angle_page_cap_per_ring,
                                test_one_ring_layout_unchanged]))
