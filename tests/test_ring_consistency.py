"""test_ring_consistency.py — the ring consistency check of `nlsq --joint` names the ring
that is off, and only it (issue 33 item 12, adr/0074).

Four laminar rings (q 0.003, 0.0045, 0.006, 0.0075 1/A; 4 angles x 100 frames, dt 0.003 s,
one truth: D0 20000, alpha -0.3, D_offset 100, gamma_dot_t0 0.002, beta -0.2,
gamma_dot_t_offset 0.0002, phi0 1; noise 0.002, seed 3). One ring at a time is replaced by
the same ring simulated with D0 x 1.5, alpha - 0.2 or gamma_dot_t0 x 1.5 (the maps are
ring-major and the noise is keyed by the map, so only the planted parameter differs): in
each of the 12 files exactly that ring is flagged (parameters.json, the warning, the quality
reason) and every other ring stays unflagged (the joint fit itself may end on a ridge there,
exit 1: the rings do not share the parameters). Before adr/0074 the per-parameter sd distance
of a ring's own fit from the joint fit of the others flagged the wrong rings in 10 of the 12
(e.g. the issue's file, q 0.006 at 1.5 x D0: q 0.0075 then q 0.0045, by phi0). Files with
the one truth (seeds 1, 2, 3): no ring flagged, and every ring's chi-square increase is
finite with 7 degrees of freedom (the free physical parameters; the scaling is per ring)."""
import json
import os
import shutil

import h5py

from aps_fixtures import check, run, run_tests, tmp_dir

T = os.path.join(tmp_dir(), "ring_consistency")
RINGS = [0.003, 0.0045, 0.006, 0.0075]
PHI = [-10.0, 0.0, 45.0, 90.0]
FRAMES = 100
TRUTH = dict(D0=20000.0, alpha=-0.3, D_offset=100.0, gamma_dot_t0=0.002, beta=-0.2,
             gamma_dot_t_offset=0.0002, phi0=1.0)
PLANTS = {"D0": 1.5 * TRUTH["D0"], "alpha": TRUTH["alpha"] - 0.2,
          "gamma_dot_t0": 1.5 * TRUTH["gamma_dot_t0"]}


def config():
    path = os.path.join(T, "fit.yaml")
    with open(path, "w") as f:
        f.write("analysis_mode: laminar_flow\n"
                "analyzer_parameters:\n  dt: 0.003\n  end_frame: %d\n"
                "  scattering: {wavevector_q: all}\n"
                "  geometry: {stator_rotor_gap: 2000000}\n"
                "initial_parameters:\n  parameter_names: [%s]\n  values: [%s]\n"
                % (FRAMES, ", ".join(TRUTH), ", ".join(repr(v) for v in TRUTH.values())))
    return path


def simulate(out, seed, *extra):
    rc, _, err = run(["simulate", "--config", config(), "--phi",
                      ",".join("%g" % p for p in PHI), "--q",
                      ",".join("%g" % q for q in RINGS), "--out", out, "--force",
                      "--noise", "0.002", "--seed", str(seed)] + list(extra))
    check(rc == 0, "simulate %s: %s" % (out, err))


def plant(base, odd, pos, out):
    """base with ring pos's maps taken from odd"""
    shutil.copy(base, out)
    with h5py.File(out, "r+") as a, h5py.File(odd, "r") as b:
        for m in range(pos * len(PHI) + 1, (pos + 1) * len(PHI) + 1):
            key = "xpcs/twotime/correlation_map/c2_%05d" % m
            a[key][...] = b[key][()]


def joint(name, data, codes=(0,)):
    out = os.path.join(T, "out_" + name)
    rc, stdout, err = run(["nlsq", "--config", config(), "--data", data, "--out", out,
                           "--force", "--joint", "--no-plots", "--no-surfaces"])
    check(rc in codes, "nlsq --joint %s: %d %s" % (name, rc, err))
    with open(os.path.join(out, "nlsq_joint", "parameters.json")) as f:
        return json.load(f), err


def setup():
    shutil.rmtree(T, ignore_errors=True)
    os.makedirs(T)
    for seed in (1, 2, 3):
        simulate(os.path.join(T, "shared%d.h5" % seed), seed)
    for name, value in PLANTS.items():
        simulate(os.path.join(T, "odd_%s.h5" % name), 3, "--initial", "%s=%r" % (name, value))


def test_planted_ring_named_alone():
    misses = []
    for name in PLANTS:
        for pos, q in enumerate(RINGS):
            data = os.path.join(T, "p%d_%s.h5" % (pos, name))
            plant(os.path.join(T, "shared3.h5"), os.path.join(T, "odd_%s.h5" % name), pos,
                  data)
            # the joint fit of rings that do not share their parameters may itself end
            # failed or on a ridge (exit 1): the check is written all the same
            p, err = joint("p%d_%s" % (pos, name), data, codes=(0, 1))
            rings = p["rings"]
            stats = ["%.3g" % (r["leave_one_out"].get("chi2_increase_noise_units") or -1)
                     for r in rings["rings"]]
            print("%s planted in ring q %g: flagged %s, chi2 increase per ring %s"
                  % (name, q, rings["flagged_q"], stats))
            named = [r for r in RINGS if "ring q %g 1/A disagrees" % r in err]
            reasons = [r for r in RINGS
                       if any("ring q %g 1/A disagrees" % r in s for s in p["quality"]["reasons"])]
            if rings["flagged_q"] != [q] or named != [q] or reasons != [q]:
                misses.append("%s at q %g: flagged %s, warned %s, reasons %s"
                              % (name, q, rings["flagged_q"], named, reasons))
            odd = rings["rings"][pos]["leave_one_out"]
            if not (odd["flagged"] and odd["flagged_in_round"] == 1
                    and odd.get("p_value", 1) < 1e-6):
                misses.append("%s at q %g: %s" % (name, q, odd))
    check(not misses, "; ".join(misses))


def test_one_truth_nothing_flagged():
    for seed in (1, 2, 3):
        p, err = joint("shared%d" % seed, os.path.join(T, "shared%d.h5" % seed))
        rings = p["rings"]
        loo = [r["leave_one_out"] for r in rings["rings"]]
        print("seed %d: chi2 increase per ring %s" % (
            seed, ["%.2f (df %d, p %.3g)" % (c["chi2_increase_noise_units"], c["df"],
                                             c["p_value"]) for c in loo]))
        check(rings["flagged_q"] == [] and "disagrees" not in err,
              "seed %d: flagged %s %s" % (seed, rings["flagged_q"], err))
        check(p["quality"]["overall"] == "good", "seed %d: quality %s" % (
            seed, p["quality"]["overall"]))
        check(rings["flag_false_alarm_rate"] == 1e-4, str(rings["flag_false_alarm_rate"]))
        for c in loo:
            check(c["df"] == 7 and 0 <= c["chi2_increase_noise_units"] < 40
                  and 0 < c["p_value"] <= 1, "seed %d: %s" % (seed, c))


if __name__ == "__main__":
    setup()
    raise SystemExit(run_tests([test_planted_ring_named_alone,
                                test_one_truth_nothing_flagged]))
