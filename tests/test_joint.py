"""test_joint.py — `nlsq --joint` (adr/0066): one fit over four simulated q rings with a
shared truth recovers it with sds below the best single ring's (the ratio per parameter is
printed); every ring agrees with the others' joint fit; a ring planted at 1.5x D0 is the
only one flagged (quality marginal, console, run.log, parameters.json); the bits do not
depend on --threads; the config key optimization.rings: joint does what --joint does;
two rings that disagree are reported with no ring named; batch fits the rings jointly
with optimization.rings: joint."""
import json
import os
import shutil

import h5py

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


def simulate(out, *extra):
    rc, _, err = run(["simulate", "--config", cfg("sim"), "--phi",
                      ",".join("%g" % p for p in PHI), "--q",
                      ",".join("%g" % q for q in RINGS), "--out", out, "--force",
                      "--noise", "0.01", "--seed", "3"] + list(extra))
    check(rc == 0, "simulate: %s" % err)


SHARED = os.path.join(T, "shared.h5")
PLANTED = os.path.join(T, "planted.h5")


def setup():
    shutil.rmtree(T, ignore_errors=True)
    os.makedirs(T)
    simulate(SHARED)
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


if __name__ == "__main__":
    setup()
    raise SystemExit(run_tests([test_recovery_and_sd_ratio, test_planted_ring_only_one_flagged,
                                test_threads_bitwise, test_config_key,
                                test_two_rings_disagree_none_flagged,
                                test_batch_joint]))
