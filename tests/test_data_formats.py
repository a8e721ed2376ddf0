"""test_data_formats.py — `xpcsfit validate --json` on APS files written by h5py in the
layouts other writers produce (spec/data.md), against numpy's reading of the same data."""
import os
import subprocess
import sys

import h5py
import numpy as np

from aps_fixtures import (binary, check, close, expected_means, link_within, lower,
                          module_tests, run, run_tests, smooth_map, tmp_dir, upper, validate,
                          write_aps_old, write_aps_u, write_config)
from waits import RUN_GUARD_S

T = tmp_dir()
N = 20


def path(name):
    return os.path.join(T, name)


def test_lower_float32_lzf_rings_gap_mapping():
    """2 q rings × 3 φ; lower triangles in float32 with LZF; processed_bins has a gap
    and a non-identity index mapping; lists (M, 1)."""
    q_list = [0.004, 0.006]
    phi_list = [-60.0, 0.0, 200.0]  # 200 → -160
    # flat cells 0..5 = (q0: -60, 0, 200), (q1: -60, 0, 200). Bins 1-5 and 7 exist (6
    # was masked); the mapping sends bin b to its flat cell, bin 3 to a cell that does
    # not exist (skipped with a warning).
    bins = [1, 2, 3, 4, 5, 7]
    mapping = [5, 3, 99, 4, 0, 99, 1]
    # bin1 → (q1, 200), bin2 → (q1, -60), bin4 → (q1, 0), bin5 → (q0, -60), bin7 → (q0, 0)
    full = [smooth_map(N, s) for s in range(6)]
    f32 = [np.asarray(m, dtype=np.float32).astype(float) for m in full]
    fn = path("u_lower.h5")
    write_aps_u(fn, [lower(m) for m in full], q_list, phi_list, bins, mapping=mapping,
                map_dtype="<f4", lzf=True, list_shape="col")
    cfg = path("u_lower.yaml")
    write_config(cfg, q=0.0061)
    got, err = validate(cfg, fn)
    check(got["layout"] == "aps-u", "layout")
    check(got["q"] == 0.006, "q ring %r" % got["q"])
    check(got["q_rings"] == 2, "q_rings")
    check("skipped: 3" in err, "skip warning for bin 3: " + err)
    close(got["angles"], [-160, -60, 0], what="angles")
    check(got["map_numbers"] == [1, 2, 4], "map numbers %r" % got["map_numbers"])
    want = [expected_means(f32[k]) for k in (0, 1, 3)]
    close(got["fitted_mean"], [w[0] for w in want], rel=1e-12, what="fitted means")
    close(got["diagonal_mean"], [w[1] for w in want], rel=1e-12, what="diag means")
    check(got["points_per_angle"] == (N - 1) * (N - 2) // 2, "points")
    check(got["points_total"] == 3 * (N - 1) * (N - 2) // 2, "points total")
    write_config(cfg, q=0.0039)
    got, err = validate(cfg, fn)
    check(got["q"] == 0.004, "q ring 0")
    close(got["angles"], [-60, 0], what="ring 0 angles")
    check(got["map_numbers"] == [5, 6], "ring 0 map numbers %r" % got["map_numbers"])
    close(got["fitted_mean"], [expected_means(f32[k])[0] for k in (4, 5)], what="ring 0")


def test_full_symmetric_bigendian_file_dt():
    """Full symmetric maps, big-endian float64, (1, M) lists, dt from the file."""
    full = [smooth_map(N, 10 + s) for s in range(2)]
    fn = path("u_full.h5")
    write_aps_u(fn, full, [0.01], [10.0, -10.0], [1, 2], map_dtype=">f8", list_shape="row",
                frame_time=0.001, stride=2, avg=3)
    cfg = path("u_full.yaml")
    write_config(cfg, dt=None, start=2, end=15)
    got, err = validate(cfg, fn)
    close(got["angles"], [-10, 10], what="angles")
    check(got["map_numbers"] == [2, 1], "map numbers")
    close([got["dt_s"]], [0.006], rel=1e-15, what="dt from file")
    check(got["dt_source"].startswith("file: frame_time"), got["dt_source"])
    check(got["start_frame"] == 2 and got["end_frame"] == 15 and got["n_frames"] == 14,
          "frame window")
    want = [expected_means(full[k], 2, 15) for k in (1, 0)]  # never doubled
    close(got["fitted_mean"], [w[0] for w in want], what="fitted means")
    close(got["diagonal_mean"], [w[1] for w in want], what="diag means")
    # config dt 5 % off the file's: warning with both values, config wins
    write_config(cfg, dt=0.0063)
    got, err = validate(cfg, fn)
    check(got["dt_s"] == 0.0063 and got["dt_source"] == "config", "config dt")
    check("0.0063" in err and "0.006" in err and "warning" in err, "dt warning: " + err)


def test_nonsymmetric_full_map_warns():
    m = smooth_map(N, 3)
    m[5, 2] += 0.5  # lower differs from upper
    fn = path("u_nonsym.h5")
    write_aps_u(fn, [m], [0.01], [0.0], [1])
    cfg = path("nonsym.yaml")
    write_config(cfg)
    got, err = validate(cfg, fn)
    check("not symmetric" in err and "c2_00001" in err, "asymmetry warning: " + err)
    up = np.triu(m) + np.triu(m, 1).T
    close(got["fitted_mean"], [expected_means(up)[0]], what="upper triangle used")


def declared_map_file(fn, rows, stored):
    """A small file declaring one rows × rows map (chunked 64 × 64) of which only the
    top-left corner `stored` is written; the rest is the fill value 0."""
    with h5py.File(fn, "w") as f:
        f["/xpcs/qmap/dynamic_v_list_dim0"] = np.array([0.01])
        f["/xpcs/qmap/dynamic_v_list_dim1"] = np.array([0.0])
        f["/xpcs/qmap/dynamic_num_pts"] = np.array([1, 1], dtype="<i4")
        f["/xpcs/twotime/processed_bins"] = np.array([1], dtype="<i4")
        m = f.create_dataset("/xpcs/twotime/correlation_map/c2_00001", shape=(rows, rows),
                             dtype="<f8", chunks=(64, 64))
        k = stored.shape[0]
        m[0:k, 0:k] = stored
        f["/entry/instrument/detector_1/frame_time"] = np.float64(0.1)


def peak_rss_mb(args):
    """Exit code and peak resident memory (MB) of `xpcsfit args`, measured in a fresh
    Python process so that no earlier child counts."""
    probe = ("import resource, subprocess, sys\n"
             "r = subprocess.run(sys.argv[1:], capture_output=True)\n"
             "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", probe, binary()] + args, capture_output=True,
                         text=True, timeout=RUN_GUARD_S).stdout.split()
    return int(out[0]), int(out[1]) / 1024.0


def test_window_of_declared_huge_map():
    """Issue 9: only the frame window is read (a hyperslab), so a 40 000² or 3·10⁹²
    declared map with a 40-frame window costs what the window costs. Memory, not time,
    is asserted: the whole 40 000² map would take 12.8 GB."""
    m = smooth_map(128, 7)
    up = upper(m)
    want = expected_means(m, 2, 40)
    cfg = path("declared.yaml")
    write_config(cfg, dt=None, start=2, end=40)
    for rows in (40000, 3000000000):
        fn = path("declared_%d.h5" % rows)
        declared_map_file(fn, rows, up)
        check(os.path.getsize(fn) < 1 << 20, "file is small")
        got, err = validate(cfg, fn)
        check(got["n_frames"] == 39 and got["start_frame"] == 2, "window %r" % got)
        close(got["fitted_mean"], [want[0]], what="fitted mean, %d rows" % rows)
        close(got["diagonal_mean"], [want[1]], what="diagonal mean, %d rows" % rows)
        rc, mb = peak_rss_mb(["validate", "--config", cfg, "--data", fn])
        check(rc == 0 and mb < 200, "validate exit %d, peak %.0f MB" % (rc, mb))


def test_window_block_matches_whole_map():
    """The window is read as a block (the window and one frame each side); every storage
    (upper, lower, full) and every window position gives what the whole map gives."""
    full = [smooth_map(N, 30 + s) for s in range(3)]
    stored = [upper(full[0]), lower(full[1]), full[2]]
    fn = path("u_block.h5")
    write_aps_u(fn, stored, [0.01], [0.0, 30.0, 60.0], [1, 2, 3])
    cfg = path("u_block.yaml")
    for start, end in ((1, N), (1, 5), (3, 12), (N - 4, N), (2, N - 1)):
        write_config(cfg, start=start, end=end)
        got, err = validate(cfg, fn)
        want = [expected_means(m, start, end) for m in full]
        close(got["fitted_mean"], [w[0] for w in want], what="fitted %d-%d" % (start, end))
        close(got["diagonal_mean"], [w[1] for w in want], what="diag %d-%d" % (start, end))


def test_fixed_and_variable_length_map_names():
    """map_names as h5py S3 ("phi" with no NUL), space-padded S6, variable-length and
    fixed-length UTF-8 strings are all [q, phi] (issue 9: S3 was read as "ph" and a valid
    file refused)."""
    kinds = {
        "s3": np.array([b"q", b"phi"], dtype="S3"),
        "space": np.array([b"q     ", b"phi   "], dtype="S6"),
        "vlen": np.array(["q", "phi"], dtype=h5py.string_dtype()),
        "utf8": np.array([b"q", b"phi"], dtype=h5py.string_dtype("utf-8", 3)),
    }
    cfg = path("names.yaml")
    write_config(cfg)
    for name, names in kinds.items():
        fn = path("names_%s.h5" % name)
        write_aps_u(fn, [upper(smooth_map(N, 1))], [0.01], [0.0], [1],
                    extra=lambda f: f.create_dataset("/xpcs/qmap/map_names", data=names))
        got, err = validate(cfg, fn)
        check(got["layout"] == "aps-u", "%s map_names accepted" % name)


def test_soft_links_within_the_file():
    """Soft links that stay in the file are followed (ADR 0016, ADR 0051): a map, the q
    list and stride_frame moved elsewhere in the file and linked back read as before,
    the stride through two soft links included (its 4 enters dt)."""
    full = [smooth_map(N, 30 + s) for s in range(2)]
    fn = path("u_soft.h5")
    write_aps_u(fn, [upper(m) for m in full], [0.01], [0.0, 90.0], [1, 2], frame_time=0.01,
                stride=4, avg=1)
    link_within(fn, "/xpcs/twotime/correlation_map/c2_00002", "/kept/map_b")
    link_within(fn, "/xpcs/qmap/dynamic_v_list_dim0", "/kept/q")
    link_within(fn, "/xpcs/twotime/config/stride_frame", "/kept/stride_frame")
    link_within(fn, "/kept/stride_frame", "/kept/deeper/stride_frame")
    cfg = path("soft.yaml")
    write_config(cfg, dt=None)
    got, err = validate(cfg, fn)
    close([got["dt_s"]], [0.04], rel=1e-15, what="dt through two soft links")
    close(got["angles"], [0, 90], what="angles")
    close(got["fitted_mean"], [expected_means(m)[0] for m in full], what="means")


def test_file_held_by_writer():
    """A file an HDF5 writer keeps open is named as locked (exit 1); with
    HDF5_USE_FILE_LOCKING=FALSE it is read (ADR 0014)."""
    fn = path("held.h5")
    write_aps_u(fn, [upper(smooth_map(N, 2))], [0.01], [0.0], [1])
    cfg = path("held.yaml")
    write_config(cfg)
    with h5py.File(fn, "a"):
        rc, out, err = run(["validate", "--config", cfg, "--data", fn])
        check(rc == 1 and "locked by another program" in err, "locked: %d %s" % (rc, err))
        got, err = validate(cfg, fn, env={"HDF5_USE_FILE_LOCKING": "FALSE"})
        check(got["layout"] == "aps-u", "read with locking off")


def test_out_of_range_bin_skipped():
    full = [smooth_map(N, 20 + s) for s in range(3)]
    fn = path("u_skip.h5")
    # bin 9 lies outside the 1 × 2 grid (no mapping: flat = bin − 1 = 8)
    write_aps_u(fn, [upper(m) for m in full], [0.01], [0.0, 90.0], [1, 9, 2])
    cfg = path("skip.yaml")
    write_config(cfg)
    got, err = validate(cfg, fn)
    check("warning" in err and "skipped" in err and "9" in err, "skip warning: " + err)
    close(got["angles"], [0, 90], what="angles")
    check(got["map_numbers"] == [1, 3], "map numbers %r" % got["map_numbers"])
    close(got["fitted_mean"], [expected_means(full[0])[0], expected_means(full[2])[0]],
          what="means")


def test_legacy_natural_key_order():
    """c2_1, c2_2, c2_10 pair with bins 1, 2, 3 (natural order, not string order);
    (M,) lists; exposure_period × stride × avg; lower triangle; int maps."""
    full = [smooth_map(N, 30 + s) for s in range(3)]
    fn = path("old_keys.h5")
    write_aps_old(fn, [upper(full[0]), lower(full[2]), upper(full[1])], [0.005] * 3,
                  [30.0, 60.0, 90.0], keys=["c2_1", "c2_10", "c2_2"], exposure_period=0.5,
                  stride=2, avg=1, list_shape="1d")
    cfg = path("old.yaml")
    write_config(cfg, q=None, dt=None, end=-1)
    got, err = validate(cfg, fn)
    check(got["layout"] == "aps-old", "layout")
    check(got["q_target"] is None and got["q"] == 0.005, "single ring without q")
    close(got["angles"], [30, 60, 90], what="angles")
    close([got["dt_s"]], [1.0], what="exposure_period × stride × avg")
    check("exposure_period" in got["dt_source"], got["dt_source"])
    close(got["fitted_mean"], [expected_means(full[k])[0] for k in range(3)], what="order")


def test_legacy_integer_maps_row_lists():
    m = np.rint(smooth_map(N, 40) * 1000)
    fn = path("old_int.h5")
    write_aps_old(fn, [upper(m)], [0.01], [-45.0], map_dtype=">i4", list_shape="row")
    cfg = path("old_int.yaml")
    write_config(cfg)
    got, _ = validate(cfg, fn)
    close(got["fitted_mean"], [expected_means(m)[0]], what="int maps")


def test_phi_filtering():
    full = [smooth_map(N, 50 + s) for s in range(5)]
    phis = [-175.0, -90.0, 0.0, 90.0, 178.0]
    fn = path("u_phi.h5")
    write_aps_u(fn, [upper(m) for m in full], [0.01], phis, [1, 2, 3, 4, 5])
    cfg = path("phi.yaml")
    write_config(cfg, phi_ranges=[(170, -170)])  # wrapped through ±180
    got, _ = validate(cfg, fn)
    close(got["angles"], [-175, 178], what="wrapped range")
    check(got["angles_in_ring"] == 5, "angles in ring")
    write_config(cfg, phi_ranges=[(-10, 10), (440, 460)])  # 440..460 = 80..100
    got, _ = validate(cfg, fn)
    close(got["angles"], [0, 90], what="two ranges")
    check(got["map_numbers"] == [3, 4], "map numbers")
    write_config(cfg, phi_ranges=[(-180, 180)])  # 360° wide
    got, _ = validate(cfg, fn)
    check(len(got["angles"]) == 5, "360° range keeps all")
    write_config(cfg, phi_ranges=[(20, 30)], fallback=True)
    got, err = validate(cfg, fn)
    check(len(got["angles"]) == 5 and "fallback_to_all_angles" in err, "fallback: " + err)
    write_config(cfg, phi_ranges=[(20, 30)], fallback=False)
    rc, out, err = run(["validate", "--config", cfg, "--data", fn])
    check(rc == 1 and "no map left" in err and "-175, -90, 0, 90, 178" in err,
          "no angle left: %d %s" % (rc, err))


def test_frame_clamping():
    m = smooth_map(N, 60)
    fn = path("u_frames.h5")
    write_aps_u(fn, [upper(m)], [0.01], [0.0], [1])
    cfg = path("frames.yaml")
    write_config(cfg, start=0, end=500)
    got, err = validate(cfg, fn)
    check(got["start_frame"] == 1 and got["end_frame"] == N, "clamped window")
    check(err.count("warning") == 2 and "clamped" in err, "clamp warnings: " + err)


def test_text_output():
    fn = path("u_frames.h5")
    cfg = path("frames_text.yaml")
    write_config(cfg, data=fn, start=3, end=10)
    rc, out, err = run(["validate", "--config", cfg])
    check(rc == 0, "rc %d %s" % (rc, err))
    keys = [line.split(":", 1)[0] for line in out.strip().splitlines()]
    for k in ("file", "layout", "q_target", "q", "q_rings", "angles", "angles_in_ring",
              "frames_stored", "start_frame", "end_frame", "n_frames", "dt_s", "dt_source",
              "points_per_angle", "points_total", "mode"):
        check(k in keys, "key %s missing from %r" % (k, keys))
    check("n_frames: 8\n" in out and "points_total: 21\n" in out, out)


def main():
    return run_tests(module_tests(globals()))


if __name__ == "__main__":
    sys.exit(main())
