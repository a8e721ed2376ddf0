"""test_data_rings.py — several q rings (adr/0063): `simulate --q` writes one file of
several rings with a shared truth in both APS layouts; wavevector_q all / list / range
select the right rings, each read back with the right angles and maps (phi_filtering
within every ring); a single value (or a one-value list) behaves exactly as before;
`validate` lists the rings (text and --json); batch fits every selected ring of a file
(tests/test_batch_rings.py) and fits a range that comes down to one ring as that ring's
single value."""
import json
import os

import h5py
import numpy as np

from aps_fixtures import check, close, run, run_tests, tmp_dir

T = tmp_dir()
RINGS = [0.003, 0.0054, 0.008]
PHI = [-10.0, 0.0, 45.0, 90.0]
N = 24


def cfg(name, q, phi_ranges=None):
    """A static config at q (anything YAML flow: a number, 'all', a list, a mapping)."""
    path = os.path.join(T, name + ".yaml")
    lines = ["analysis_mode: static", "analyzer_parameters:", "  dt: 0.001",
             "  end_frame: %d" % N, "  scattering: {wavevector_q: %s}" % q,
             "initial_parameters: {parameter_names: [D0, alpha, D_offset], "
             "values: [3000, -1.2, 0]}"]
    if phi_ranges:
        lines += ["phi_filtering:", "  enabled: true", "  target_ranges:"]
        lines += ["    - {min_angle: %r, max_angle: %r}" % r for r in phi_ranges]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def simulate(out, q, *extra, config_q="0.0054"):
    args = ["simulate", "--config", cfg("sim", config_q), "--phi",
            ",".join("%g" % p for p in PHI), "--out", out, "--force"]
    if q:
        args += ["--q", ",".join("%g" % v for v in q)]
    rc, stdout, err = run(args + list(extra))
    check(rc == 0, "simulate: %d %s" % (rc, err))
    return stdout


def validate_json(config, data, *extra):
    rc, out, err = run(["validate", "--config", config, "--data", data, "--json"]
                       + list(extra))
    check(rc == 0, "validate: %d %s" % (rc, err))
    return json.loads(out)


MULTI = os.path.join(T, "rings_u.h5")
MULTI_OLD = os.path.join(T, "rings_old.h5")


def setup():
    simulate(MULTI, RINGS, "--noise", "0.002", "--seed", "5")
    simulate(MULTI_OLD, RINGS, "--noise", "0.002", "--seed", "5", "--layout", "aps-old")


def test_layout_written():
    with h5py.File(MULTI, "r") as f:
        close(f["/xpcs/qmap/dynamic_v_list_dim0"][()], RINGS, what="q list")
        close(f["/xpcs/qmap/dynamic_v_list_dim1"][()], PHI, what="phi list")
        close(f["/xpcs/qmap/dynamic_num_pts"][()], [3, 4], what="num_pts")
        check(len(f["/xpcs/twotime/correlation_map"]) == 12, "12 maps")
    with h5py.File(MULTI_OLD, "r") as f:
        close(f["/xpcs/dqlist"][()].ravel(), np.repeat(RINGS, 4), what="dqlist")
        close(f["/xpcs/dphilist"][()].ravel(), PHI * 3, what="dphilist")


def test_shared_truth():
    """Without noise, ring r of the multi-ring file is the single-ring file at q_r, map
    for map; with noise, ring 0 draws the streams of a single-ring file (same bytes)."""
    clean = os.path.join(T, "clean.h5")
    simulate(clean, RINGS, "--noise", "0")
    for r, q in enumerate(RINGS):
        one = os.path.join(T, "one_%d.h5" % r)
        simulate(one, [q], "--noise", "0")
        with h5py.File(clean, "r") as f, h5py.File(one, "r") as g:
            for a in range(len(PHI)):
                m = f["/xpcs/twotime/correlation_map/c2_%05d" % (r * len(PHI) + a + 1)][()]
                s = g["/xpcs/twotime/correlation_map/c2_%05d" % (a + 1)][()]
                check(np.array_equal(m, s), "ring %g angle %g: same truth" % (q, PHI[a]))
    single = os.path.join(T, "single_003.h5")
    simulate(single, None, "--noise", "0.002", "--seed", "5", config_q="0.003")
    with h5py.File(MULTI, "r") as f, h5py.File(single, "r") as g:
        for a in range(len(PHI)):
            p = "/xpcs/twotime/correlation_map/c2_%05d" % (a + 1)
            check(np.array_equal(f[p][()], g[p][()]), "ring 0 noise = single-ring noise")


def ring_means(data, q):
    """fitted_mean per angle of the single-ring validate at q."""
    got = validate_json(cfg("one", q), data)
    check(abs(got["q"] - q) < 1e-12, "ring %g selected, got %g" % (q, got["q"]))
    return got


def test_recovery():
    """Every ring comes back with its q, its angles and its own maps, in both layouts."""
    for data in (MULTI, MULTI_OLD):
        means = [ring_means(data, q)["fitted_mean"] for q in RINGS]
        got = validate_json(cfg("all", "all"), data)
        check(got["q_selection"] == "all" and got["q_rings_selected"] == 3, "all: 3 rings")
        for r, ring in enumerate(got["rings"]):
            close(ring["q"], RINGS[r], what="ring q")
            check(ring["selected"], "ring selected")
            close(ring["angles"], sorted(PHI), what="angles of ring %d" % r)
            check(ring["points"] == len(PHI) * (N - 1) * (N - 2) // 2, "points per ring")
        # the rings differ (different q, same truth): decay is faster at larger q
        check(means[0] != means[1] != means[2], "rings hold their own maps")
    with h5py.File(MULTI, "r") as f:  # ring 2, angle 90 (the 12th map) read as stored
        m = f["/xpcs/twotime/correlation_map/c2_00012"][()]
    m = m + m.T - np.diag(np.diag(m))
    fitted = np.mean([m[i, j] for i in range(1, N) for j in range(i + 1, N)])
    close(ring_means(MULTI, 0.008)["fitted_mean"][-1], fitted, rel=1e-9, what="ring 0.008 φ 90")


def selected_q(got):
    return [r["q"] for r in got["rings"] if r["selected"]]


def test_list_and_range():
    close(selected_q(validate_json(cfg("list", [0.0031, 0.0079]), MULTI)), [0.003, 0.008],
          what="list: each value's nearest ring")
    close(selected_q(validate_json(cfg("list_order", [0.008, 0.0056, 0.003]), MULTI)), RINGS,
          what="list in any order: rings ascending")
    close(selected_q(validate_json(cfg("range", "{min: 0.004, max: 0.009}"), MULTI)),
          [0.0054, 0.008], what="range")
    close(selected_q(validate_json(cfg("range_edges", "{min: 0.003, max: 0.0054}"), MULTI)),
          [0.003, 0.0054], what="range, ends included")
    rc, out, err = run(["validate", "--config", cfg("dup", [0.003, 0.00301]), "--data", MULTI])
    check(rc == 0 and err.count("selected once") == 1 and out.count(", selected: ") == 1,
          "two values of one ring: one ring with one warning (once, though the file is "
          "read twice): %s" % err)
    # a choice of one ring is validated as that ring (with its plan), as nlsq fits it
    got = validate_json(cfg("range_one", "{min: 0.005, max: 0.006}"), MULTI)
    check(got["q"] == 0.0054 and "a range" in got["q_source"] and "parameters" in got,
          "range of one ring: the one-ring view")


def test_phi_filter_every_ring():
    got = validate_json(cfg("filt", "all", phi_ranges=[(-15.0, 5.0)]), MULTI)
    for ring in got["rings"]:
        close(ring["angles"], [-10.0, 0.0], what="filtered angles of ring %g" % ring["q"])


def test_single_value_unchanged():
    """A one-value list is the single value: the same validate output, byte for byte."""
    a = run(["validate", "--config", cfg("v1", 0.0054), "--data", MULTI, "--json"])
    b = run(["validate", "--config", cfg("v2", [0.0054]), "--data", MULTI, "--json"])
    check(a[0] == 0 and a[1] == b[1], "one-value list = value")
    got = json.loads(a[1])
    check(got["q_target"] == 0.0054 and got["q_rings"] == 3, "single value: q_target")
    check([r["selected"] for r in got["rings"]] == [False, True, False], "rings listed")


def test_validate_text():
    rc, out, err = run(["validate", "--config", cfg("txt", "all"), "--data", MULTI])
    check(rc == 0, "validate text: " + err)
    lines = [l for l in out.splitlines() if l.startswith("ring: ")]
    check(len(lines) == 3 and all("selected: 4 angles" in l for l in lines), out)
    check("q_selection: all" in out and "fitting: per ring" in out, out)
    check("points_total: %d" % (3 * 4 * (N - 1) * (N - 2) // 2) in out, "points_total")


PACKED = N * (N + 1) // 2  # packed triangle of the window, per angle
POINTS = 4 * (N - 1) * (N - 2) // 2  # fitted points of a 4-angle ring


def test_validate_plan_per_ring():
    """Several rings, per ring: the plan of each ring as its own fit builds it (angles after
    phi_filtering, points of the frame window, per-angle mode, parameters, maps' memory)."""
    got = validate_json(cfg("plan", "all"), MULTI)
    plan = got["plan"]
    check(isinstance(plan, list) and len(plan) == 3, "a plan per ring: %r" % plan)
    for ring, q in zip(plan, RINGS):
        check(ring["q"] == q and ring["angles"] == 4 and ring["points"] == POINTS
              and ring["n_frames"] == N, "ring %g: %r" % (q, ring))
        check(ring["per_angle_mode"] == "individual" and ring["parameters_total"] == 11
              and ring["parameters_free"] == 11 and ring["per_angle_coefficients"] == 8,
              "ring %g parameters" % q)
        check(ring["maps_bytes"] == 4 * PACKED * 8, "ring %g memory" % q)
        check([p["name"] for p in ring["parameters"]][:3] == ["D0", "alpha", "D_offset"],
              "ring %g table" % q)
    check(got["maps_bytes_peak"] == 4 * PACKED * 8, "peak: one ring at a time")
    # phi_filtering and the frame window in every ring's plan
    path = cfg("plan_filt", "[0.003, 0.008]", phi_ranges=[(-15.0, 5.0)])
    got = validate_json(path, MULTI, "--set", "analyzer_parameters.end_frame=20")
    for ring in got["plan"]:
        check(ring["angles"] == 2 and ring["points"] == 2 * 19 * 18 // 2
              and ring["parameters_total"] == 3 + 4, "filtered ring plan: %r" % ring)
    rc, out, err = run(["validate", "--config", cfg("plan_txt", "all"), "--data", MULTI])
    lines = [l for l in out.splitlines() if l.startswith("plan_ring: ")]
    check(rc == 0 and len(lines) == 3 and "plan_ring: q 0.0054, 4 angles, %d frames, %d "
          "points, per_angle_mode individual" % (N, POINTS) in out, out)
    check("plan: per ring, 3 rings" in out, out)


def test_validate_plan_joint():
    """optimization.rings: joint: the joint problem's totals (points, contrast/offset
    coefficients per ring, memory of every ring) and its parameter table."""
    got = validate_json(cfg("plan_j", "all"), MULTI, "--set", "optimization.rings=joint")
    plan = got["plan"]
    check(got["fitting"] == "joint" and plan["rings"] == 3 and plan["angle_slots"] == 12
          and plan["points"] == 3 * POINTS, "joint totals: %r" % plan)
    check(plan["contrast_offset_coefficients"] == 24
          and plan["contrast_offset_coefficients_per_ring"] == [8, 8, 8]
          and plan["parameters_total"] == 27 and len(plan["parameters"]) == 27,
          "joint parameters")
    check(plan["maps_bytes"] == 3 * 4 * PACKED * 8, "joint memory: every ring")
    got = validate_json(cfg("plan_j2", "all"), MULTI, "--set", "optimization.rings=joint",
                        "--set", "optimization.nlsq.anti_degeneracy.enable=true", "--set",
                        "optimization.nlsq.anti_degeneracy.per_angle_mode=auto")
    check(got["plan"]["contrast_offset_coefficients_per_ring"] == [2, 2, 2]
          and got["plan"]["per_angle_mode"] == "shared", "auto: one pair per ring")
    rc, out, err = run(["validate", "--config", cfg("plan_jt", "all"), "--data", MULTI,
                        "--set", "optimization.rings=joint"])
    check(rc == 0 and "plan: joint, 3 rings in one fit, 12 angle slots" in out
          and "24 contrast/offset coefficients (per ring: 8, 8, 8)" in out
          and "parameters: 27 free of 27" in out, out)


def empty_ring_file():
    """APS-U file whose qmap declares rings 0.003, 0.0054 and 0.008; no bin of 0.0054."""
    from aps_fixtures import smooth_map, upper, write_aps_u
    path = os.path.join(T, "empty_ring.h5")
    maps = [upper(smooth_map(N, s)) for s in range(4)]
    write_aps_u(path, maps, RINGS, [0.0, 45.0], [1, 2, 5, 6], frame_time=0.001)
    return path


def test_all_skips_ring_without_maps():
    """wavevector_q: all (or a range) over a qmap ring that no processed bin holds: the
    ring is skipped with one warning naming it, and validate lists it as without maps."""
    data = empty_ring_file()
    rc, out, err = run(["validate", "--config", cfg("empty_all", "all"), "--data", data,
                        "--json"])
    check(rc == 0, "validate: %d %s" % (rc, err))
    got = json.loads(out)
    check([(r["q"], r["has_maps"], r["selected"]) for r in got["rings"]]
          == [(0.003, True, True), (0.0054, False, False), (0.008, True, True)],
          "rings: %r" % got["rings"])
    check(got["q_rings"] == 2 and len(got["plan"]) == 2, "two rings with maps, planned")
    check(err.count("q = 0.0054 ring of the qmap has no map") == 1
          and "skipped" in err, "one warning naming the ring: " + err)
    rc, out, err = run(["validate", "--config", cfg("empty_rng", "{min: 0.004, max: 0.009}"),
                        "--data", data])
    check(rc == 0 and "ring: q 0.0054, no maps (no processed bin), not selectable" in out
          and err.count("wavevector_q range: the q = 0.0054 ring") == 1, out + err)


def test_batch_fits_several():
    """batch fits every selected ring of the file into its folder's nlsq/q_<q>/ (adr/0065
    addendum; the layout and --resume: tests/test_batch_rings.py)."""
    out = os.path.join(T, "batch_all")
    rc, stdout, err = run(["batch", "--config", cfg("fit_all", "all"), "--out", out, "--force",
                           "--no-plots", MULTI])
    check(rc == 0, "exit 0: %d %s" % (rc, err))
    top = os.path.join(out, "rings_u", "nlsq")
    check(len([n for n in os.listdir(top) if n.startswith("q_")]) == 3, "a folder per ring")
    check(os.path.isfile(os.path.join(top, "rings.csv")), "the file's ring table")


def test_range_of_one_ring_fits_it():
    """A range holding one ring fits exactly as that ring's single value."""
    res = []
    for name, q in (("fit_one", 0.0054), ("fit_rng", "{min: 0.005, max: 0.006}")):
        out = os.path.join(T, name)
        rc, stdout, err = run(["nlsq", "--config", cfg(name, q), "--data", MULTI, "--out",
                               out, "--no-plots", "--force"])
        check(rc == 0, "nlsq %s: %s" % (name, err))
        with open(os.path.join(out, "nlsq", "parameters.json")) as f:
            p = json.load(f)
        keep = ("parameters", "chi_squared", "per_angle", "covariance", "iterations")
        res.append(json.dumps({k: p[k] for k in keep}, sort_keys=True))
    check(res[0] == res[1], "same parameters")


def test_simulate_refuses_all():
    rc, out, err = run(["simulate", "--config", cfg("sim_all", "all"), "--phi", "0",
                        "--out", os.path.join(T, "x.h5"), "--force"])
    check(rc == 2 and "not all or a range" in err, "simulate all: %s" % err)


def test_simulate_config_list():
    out = os.path.join(T, "cfg_list.h5")
    stdout = simulate(out, None, "--noise", "0", config_q="[0.003, 0.0054, 0.008]")
    check("3 q rings 0.003 to 0.008" in stdout, stdout)
    with h5py.File(out, "r") as f:
        close(f["/xpcs/qmap/dynamic_v_list_dim0"][()], RINGS, what="q list from the config")


if __name__ == "__main__":
    setup()
    raise SystemExit(run_tests([test_layout_written, test_shared_truth, test_recovery,
                                test_list_and_range, test_phi_filter_every_ring,
                                test_single_value_unchanged, test_validate_text,
                                test_validate_plan_per_ring, test_validate_plan_joint,
                                test_all_skips_ring_without_maps,
                                test_batch_fits_several, test_range_of_one_ring_fits_it,
                                test_simulate_refuses_all, test_simulate_config_list]))
