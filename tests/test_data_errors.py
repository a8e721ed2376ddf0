"""test_data_errors.py — every bad-input class of spec/data.md: exit code 1 (2 for
config-side problems), one line "xpcsfit: error: <what>, <where>" naming the dataset or
file, no HDF5 error stack, and nothing written (simulate leaves no file)."""
import os
import shutil
import sys

import h5py
import numpy as np

from aps_fixtures import (check, expect_validate_error, module_tests, run, run_tests,
                          smooth_map, tmp_dir, upper, write_aps_old, write_aps_u,
                          write_config)

T = tmp_dir()
N = 12


def path(name):
    return os.path.join(T, name)


CFG = path("err.yaml")


def expect_error(data, code, *needles, cfg=CFG, env=None):
    return expect_validate_error(T, cfg, data, code, *needles, env=env)


def good_u(name, n_maps=2, **kw):
    fn = path(name)
    maps = kw.pop("maps", [upper(smooth_map(N, s)) for s in range(n_maps)])
    phi = kw.pop("phi", [float(10 * k) for k in range(len(maps))])
    bins = kw.pop("bins", list(range(1, len(maps) + 1)))
    write_aps_u(fn, maps, [0.01], phi, bins, **kw)
    return fn


def test_missing_file():
    expect_error(path("nope.h5"), 1, "not found", "nope.h5")


def test_not_hdf5():
    fn = path("text.h5")
    with open(fn, "w") as f:
        f.write("just text\n" * 100)
    expect_error(fn, 1, "not an HDF5 file", "text.h5")


def test_truncated():
    fn = good_u("trunc_src.h5")
    data = open(fn, "rb").read()
    bad = path("truncated.h5")
    with open(bad, "wb") as f:
        f.write(data[: len(data) // 2])
    expect_error(bad, 1, "truncated or damaged", "truncated.h5")


def test_unknown_layout():
    fn = path("unknown.h5")
    with h5py.File(fn, "w") as f:
        f.create_dataset("/foo/bar", data=np.zeros(3))
        f.create_group("/xpcs")
    expect_error(fn, 1, "unknown file layout", "/xpcs/qmap/dynamic_v_list_dim0",
                 "/exchange/C2T_all", "top-level keys: /foo, /xpcs")


def test_missing_dataset():
    fn = good_u("no_bins.h5")
    with h5py.File(fn, "a") as f:
        del f["/xpcs/twotime/processed_bins"]
    expect_error(fn, 1, "missing dataset /xpcs/twotime/processed_bins", "no_bins.h5")
    fn = good_u("no_dim1.h5")
    with h5py.File(fn, "a") as f:
        del f["/xpcs/qmap/dynamic_v_list_dim1"]
    expect_error(fn, 1, "missing dataset /xpcs/qmap/dynamic_v_list_dim1")


def test_map_missing():
    fn = good_u("map_gone.h5", n_maps=3)
    with h5py.File(fn, "a") as f:
        g = f["/xpcs/twotime/correlation_map"]
        g.move("c2_00002", "c2_00009")
    expect_error(fn, 1, "missing dataset /xpcs/twotime/correlation_map/c2_00002")


def test_unequal_maps():
    maps = [upper(smooth_map(N, 1)), upper(smooth_map(N + 1, 2))]
    expect_error(good_u("unequal.h5", maps=maps), 1, "unequal shape", "c2_00002")


def test_non_square():
    maps = [np.ones((N, N + 2))]
    expect_error(good_u("nonsquare.h5", maps=maps), 1, "not square", "c2_00001")


def test_too_small():
    maps = [upper(smooth_map(2, 1))]
    expect_error(good_u("small.h5", maps=maps), 1, "smaller than the 3 × 3", "c2_00001")


def test_no_map_after_phi_selection():
    fn = good_u("phisel.h5")
    cfg = path("phisel.yaml")
    write_config(cfg, phi_ranges=[(100, 120)])
    expect_error(fn, 1, "no map left", "available: 0, 10", cfg=cfg)


def test_too_few_frames():
    fn = good_u("frames.h5")
    cfg = path("frames.yaml")
    write_config(cfg, start=N - 1)
    expect_error(fn, 1, "fewer than 3 frames", cfg=cfg)
    write_config(cfg, start=N + 5)
    expect_error(fn, 1, "beyond the %d stored frames" % N, cfg=cfg)


def test_nan_in_fitted_points():
    m = upper(smooth_map(N, 5))
    m[2, 6] = np.nan
    m[3, 4] = np.inf
    fn = good_u("nan.h5", maps=[upper(smooth_map(N, 4)), m])
    expect_error(fn, 1, "2 NaN or Inf", "c2_00002", "nan.h5")


def test_nan_elsewhere_is_a_warning():
    m = upper(smooth_map(N, 5))
    m[4, 4] = np.nan   # diagonal
    m[0, 7] = np.nan   # t = 0 row
    fn = good_u("nan_ok.h5", maps=[m])
    rc, out, err = run(["validate", "--config", CFG, "--data", fn])
    check(rc == 0, "rc %d: %s" % (rc, err))
    check("warning" in err and "2 NaN or Inf" in err and "c2_00001" in err, err)


def test_list_length_mismatch():
    fn = good_u("binlen.h5", n_maps=3, bins=[1, 2])
    expect_error(fn, 1, "processed_bins lists 2 bins but", "holds 3 maps")
    fn = path("old_len.h5")
    write_aps_old(fn, [upper(smooth_map(N, k)) for k in range(3)], [0.01] * 2, [0.0, 1.0],
                  keys=["C2T_00001", "C2T_00002", "C2T_00003"][:3])
    expect_error(fn, 1, "/xpcs/dqlist and /xpcs/dphilist list 2 bins", "holds 3 maps")
    fn = path("old_qphi.h5")
    write_aps_old(fn, [upper(smooth_map(N, 1))], [0.01], [0.0, 5.0])
    expect_error(fn, 1, "/xpcs/dqlist has 1 entries but /xpcs/dphilist has 2")


def test_num_pts_mismatch():
    fn = good_u("numpts.h5", num_pts=[1, 5])
    expect_error(fn, 1, "dynamic_num_pts", "disagrees", "dynamic_v_list_dim1")


def test_bad_list_shape():
    fn = good_u("list2d.h5")
    with h5py.File(fn, "a") as f:
        del f["/xpcs/qmap/dynamic_v_list_dim0"]
        f["/xpcs/qmap/dynamic_v_list_dim0"] = np.ones((2, 2))
    expect_error(fn, 1, "/xpcs/qmap/dynamic_v_list_dim0", "1-D list")


def test_dt_from_file_not_positive():
    fn = good_u("dt0.h5", frame_time=0.0)
    cfg = path("nodt.yaml")
    write_config(cfg, dt=None)
    expect_error(fn, 1, "dt from the file is 0", "dt0.h5", cfg=cfg)
    # neither config nor file: config error
    fn = good_u("nodt.h5")
    expect_error(fn, 2, "analyzer_parameters.dt is not set", "frame_time", cfg=cfg)


def test_mixed_prefixes_and_duplicate_phi():
    fn = path("mixed.h5")
    write_aps_old(fn, [upper(smooth_map(N, k)) for k in range(2)], [0.01] * 2, [0.0, 1.0],
                  keys=["c2_00001", "C2T_00002"])
    expect_error(fn, 1, "mixed prefixes", "c2_00001", "C2T_00002")
    fn = good_u("dupphi.h5", phi=[10.0, 370.0])
    expect_error(fn, 1, "same φ = 10", "c2_00001", "c2_00002")


def test_missing_lzf_filter():
    fn = good_u("lzf.h5", lzf=True)
    empty = path("no_plugins")
    os.makedirs(empty, exist_ok=True)
    expect_error(fn, 1, "LZF compression filter (HDF5 filter 32000) is not available: "
                 "install Debian package hdf5-plugin-lzf", "c2_00001",
                 env={"HDF5_PLUGIN_PATH": empty})
    # and with the plugin it reads
    rc, out, err = run(["validate", "--config", CFG, "--data", fn])
    check(rc == 0, "LZF file with the plugin: %d %s" % (rc, err))
    # simulate --lzf without the filter: error, nothing written
    sim_cfg = path("sim.yaml")
    write_config(sim_cfg, end=10)
    out_h5 = path("sim_lzf.h5")
    rc, out, err = run(["simulate", "--config", sim_cfg, "--phi", "0", "--out", out_h5,
                        "--lzf"], env={"HDF5_PLUGIN_PATH": empty})
    check(rc == 1 and "hdf5-plugin-lzf" in err, "simulate lzf: %d %s" % (rc, err))
    check(not [f for f in os.listdir(T) if f.startswith("sim_lzf")], "file left behind")
    shutil.rmtree(empty)


def test_simulate_usage_errors():
    sim_cfg = path("sim.yaml")
    write_config(sim_cfg, end=10)
    out_h5 = path("sim_usage.h5")
    for args, needle in ((["--phi", "0,x"], "--phi"), (["--layout", "hdf4"], "--layout"),
                         (["--frames", "2"], "--frames"), (["--noise", "-1"], "--noise"),
                         (["--bogus"], "unknown")):
        rc, out, err = run(["simulate", "--config", sim_cfg, "--out", out_h5] +
                           (["--phi", "0"] if args[0] != "--phi" else []) + args)
        check(rc == 2 and needle in err, "%r: %d %s" % (args, rc, err))
    rc, out, err = run(["simulate", "--config", sim_cfg, "--phi", "0"])
    check(rc == 2 and "--out" in err, err)
    write_config(sim_cfg)  # no end_frame and no --frames
    rc, out, err = run(["simulate", "--config", sim_cfg, "--phi", "0", "--out", out_h5])
    check(rc == 2 and "--frames" in err, err)
    check(not os.path.exists(out_h5), "file written on a usage error")
    rc, out, err = run(["simulate", "--help"])
    check(rc == 0 and "--layout" in out, "help")


def test_validate_usage_errors():
    rc, out, err = run(["validate"])
    check(rc == 2 and "--config is required" in err, err)
    rc, out, err = run(["validate", "--config", path("missing.yaml")])
    check(rc == 2, "missing config: %d %s" % (rc, err))
    cfg = path("nodata.yaml")
    write_config(cfg)
    rc, out, err = run(["validate", "--config", cfg])
    check(rc == 2 and "no data file" in err, err)


def test_no_q_with_two_rings():
    fn = path("rings.h5")
    write_aps_u(fn, [upper(smooth_map(N, k)) for k in range(2)], [0.01, 0.02], [0.0],
                [1, 2])
    cfg = path("noq.yaml")
    write_config(cfg, q=None)
    expect_error(fn, 2, "wavevector_q is not set", "2 q rings", cfg=cfg)


def main():
    write_config(CFG)
    return run_tests(module_tests(globals()))


if __name__ == "__main__":
    sys.exit(main())
