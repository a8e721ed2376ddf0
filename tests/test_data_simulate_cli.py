"""test_data_simulate_cli.py — `xpcsfit simulate` writes the APS layouts of data.md
(checked key by key with h5py), reproducibly, and `validate` reads them back."""
import os
import sys

import h5py
import numpy as np

from aps_fixtures import check, close, run, run_tests, tmp_dir, validate

T = tmp_dir()
CFG = os.path.join(T, "sim.yaml")


def write_cfg():
    with open(CFG, "w") as f:
        f.write("analysis_mode: laminar_flow\n"
                "analyzer_parameters:\n  dt: 0.002\n  end_frame: 40\n"
                "  scattering: {wavevector_q: 0.0054}\n"
                "initial_parameters:\n"
                "  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta,"
                " gamma_dot_t_offset, phi0]\n"
                "  values: [1000, -0.5, 5, 0.01, 0, 0, 0]\n")


def simulate(out, *extra):
    rc, stdout, err = run(["simulate", "--config", CFG, "--phi", "90,0,-45", "--out", out,
                           "--force"]
                          + list(extra))
    check(rc == 0, "simulate: %d %s" % (rc, err))
    check(stdout.count("\n") == 1 and out in stdout, "one line naming the file: " + stdout)
    return stdout


def test_aps_u():
    out = os.path.join(T, "sim_u.h5")
    simulate(out, "--noise", "0", "--lzf", "--contrast", "0.2", "--offset", "1.05")
    with h5py.File(out, "r") as f:
        close(f["/xpcs/qmap/dynamic_v_list_dim0"][()], [0.0054], what="q list")
        close(f["/xpcs/qmap/dynamic_v_list_dim1"][()], [90, 0, -45], what="phi list")
        check(list(f["/xpcs/qmap/dynamic_num_pts"][()]) == [1, 3], "num_pts")
        check(list(f["/xpcs/qmap/dynamic_index_mapping"][()]) == [0, 1, 2], "mapping")
        check(list(f["/xpcs/twotime/processed_bins"][()]) == [1, 2, 3], "bins")
        check(f["/entry/instrument/detector_1/frame_time"][()] == 0.002, "frame_time")
        check(f["/xpcs/twotime/config/stride_frame"][()] == 1, "stride")
        check(f["/xpcs/twotime/config/avg_frame"][()] == 1, "avg")
        check("/entry/instrument/bluesky/metadata" in f, "bluesky group")
        m = f["/xpcs/twotime/correlation_map/c2_00002"]
        check(m.dtype == np.float64 and m.shape == (40, 40), "map dtype/shape")
        check(m.compression == "lzf", "LZF")
        a = m[()]
        check(np.all(np.tril(a, -1) == 0) and np.all(a[np.triu_indices(40)] > 1.0), "upper triangle")
        # φ = 0 map with noise 0: the diagonal is contrast + offset
        close(np.diag(a), np.full(40, 1.25), rel=1e-9, what="diagonal")
    got, _ = validate(CFG, out)
    close(got["angles"], [-45, 0, 90], what="angles")
    check(got["map_numbers"] == [3, 2, 1], "map numbers")
    check(got["dt_source"] == "config" and got["n_frames"] == 40, "dt/frames")


def test_aps_old_and_reproducible():
    a = os.path.join(T, "sim_old_a.h5")
    b = os.path.join(T, "sim_old_b.h5")
    simulate(a, "--layout", "aps-old", "--frames", "25", "--seed", "3")
    simulate(b, "--layout", "aps-old", "--frames", "25", "--seed", "3")
    check(open(a, "rb").read() == open(b, "rb").read(), "same inputs, same bytes")
    with h5py.File(a, "r") as f:
        check(f["/xpcs/Version"][()] == b"1.0", "Version")
        check(f["/xpcs/dqlist"].shape == (1, 3) and f["/xpcs/dphilist"].shape == (1, 3),
              "(1, M) lists")
        check(sorted(f["/exchange/C2T_all"].keys()) == ["C2T_00001", "C2T_00002",
                                                        "C2T_00003"], "keys")
        check(f["/measurement/instrument/detector/exposure_period"][()][0, 0] == 0.002,
              "exposure_period")
        m = f["/exchange/C2T_all/C2T_00001"][()]
        check(m.shape == (25, 25) and np.all(np.tril(m, -1) == 0), "upper 25×25")
    c = os.path.join(T, "sim_old_c.h5")
    simulate(c, "--layout", "aps-old", "--frames", "25", "--seed", "4")
    check(open(a, "rb").read() != open(c, "rb").read(), "another seed, other noise")
    cfg2 = os.path.join(T, "sim_nodt.yaml")
    with open(CFG) as f:
        text = f.read().replace("  dt: 0.002\n", "")
    with open(cfg2, "w") as f:
        f.write(text)
    got, _ = validate(cfg2, a)
    check(got["layout"] == "aps-old" and got["dt_s"] == 0.002, "dt from exposure_period")


def main():
    write_cfg()
    return run_tests([test_aps_u, test_aps_old_and_reproducible])

if __name__ == "__main__":
    sys.exit(main())
