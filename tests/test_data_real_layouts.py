"""test_data_real_layouts.py — `xpcsfit validate` on APS 8-ID-I files laid out as the
beamline's tools write them (tests/helpers/aps_fixtures.py write_aps_u_real and
write_aps_old_real): the copied qmap group with masked cells and small unsigned index
types, correlator config and g2 groups beside the maps, legacy files whose maps cover a
subset of the qmap's bins (/xpcs/qphi_bin_to_process), multi-tau-only results and
partitions that are not q × φ. Reference values come from numpy on the same arrays."""
import os
import sys

import numpy as np

from aps_fixtures import (check, close, expect_validate_error, expected_means,
                          module_tests, run, run_tests, smooth_map, tmp_dir, upper,
                          validate, write_aps_old_real, write_aps_u_real, write_config)

T = tmp_dir()
N = 100  # 100 × 100 = 10000 elements: LZF-compressed like the correlator's maps
Q = [0.003, 0.005, 0.007]
PHI = [0.0, 90.0, 180.0, 270.0]  # 270 → -90


def path(name):
    return os.path.join(T, name)


def f32(m):
    return np.asarray(m, dtype=np.float32).astype(float)


def expect_error(cfg, data, code, *needles):
    expect_validate_error(T, cfg, data, code, *needles)


def test_aps_u_beamline_file():
    """3 q × 4 φ grid, cells 1 and 6 hold no pixel (the index mapping skips them, uint8),
    the correlator processed labels 3…8 only; config/g2/multitau groups, an external
    link to a G2 file that was not copied, float32 LZF maps."""
    mapping = [c for c in range(12) if c not in (1, 6)]
    bins = [3, 4, 5, 6, 7, 8]
    full = [smooth_map(N, 100 + k) for k in range(len(bins))]
    fn = path("u_real.hdf")
    write_aps_u_real(fn, [upper(m) for m in full], Q, PHI, bins, mapping,
                     frame_time=0.002, stride=2, avg=5)
    cfg = path("u_real.yaml")
    write_config(cfg, q=0.0051, dt=None)
    got, err = validate(cfg, fn)
    # label b → cell mapping[b-1]; ring q=0.005 holds cells 4, 5, 7 (φ 0, 90, 270)
    # = labels 4, 5, 6 = maps 2, 3, 4
    check(got["layout"] == "aps-u" and got["q"] == 0.005, "ring: %r" % got)
    check(got["q_rings"] == 3, "rings %r" % got["q_rings"])
    close(got["angles"], [-90, 0, 90], what="angles")
    check(got["map_numbers"] == [4, 2, 3], "map numbers %r" % got["map_numbers"])
    close([got["dt_s"]], [0.02], rel=1e-15, what="frame_time × stride × avg")
    want = [expected_means(f32(full[k])) for k in (3, 1, 2)]
    close(got["fitted_mean"], [w[0] for w in want], what="fitted means")
    close(got["diagonal_mean"], [w[1] for w in want], what="diagonal means")
    check("warning" not in err, "no warning expected: " + err)


def legacy_grid():
    """q and φ of each of the 12 dynamic bins of a legacy qmap (bin b at index b-1)."""
    dq = [q for q in Q for _ in PHI]
    dphi = [p for _ in Q for p in PHI]
    return dq, dphi


def test_legacy_maps_of_a_subset_of_bins():
    """dqlist/dphilist list all 12 bins of the qmap, the maps cover bins 5…8 only
    (/xpcs/qphi_bin_to_process), keys g2_00001… count the maps."""
    dq, dphi = legacy_grid()
    full = [smooth_map(N, 200 + k) for k in range(4)]
    fn = path("old_subset.hdf")
    # MATLAB-written maps read back transposed: lower triangles
    write_aps_old_real(fn, [m.T * np.tri(N) for m in full], dq, dphi,
                       qphi_bins=[5, 6, 7, 8], exposure_period=0.01, stride=3, avg=1)
    cfg = path("old_subset.yaml")
    write_config(cfg, q=0.005, dt=None)
    got, err = validate(cfg, fn)
    check(got["layout"] == "aps-old" and got["q"] == 0.005, "ring %r" % got)
    close(got["angles"], [-90, 0, 90, 180], what="angles")
    check(got["map_numbers"] == [4, 1, 2, 3], "map numbers %r" % got["map_numbers"])
    close([got["dt_s"]], [0.03], rel=1e-15, what="exposure_period × stride × avg")
    want = [expected_means(f32(full[k])) for k in (3, 0, 1, 2)]
    close(got["fitted_mean"], [w[0] for w in want], what="fitted means")
    # a q ring the maps do not cover: its bins are in the lists but have no map. The
    # nearest ring among the maps is 29 % away: refused, naming it (adr/0031)
    write_config(cfg, q=0.007, dt=None)
    expect_error(cfg, fn, 1, "wavevector_q = 0.007", "nearest q ring",
                 "(0.005 1/A", "within 5%")
    # within 5 % of the ring: the nearest ring among the maps, not the lists
    write_config(cfg, q=0.0051, dt=None)
    got, _ = validate(cfg, fn)
    check(got["q"] == 0.005, "nearest q among the maps, not the lists: %r" % got["q"])


def test_legacy_keys_numbered_by_bin():
    """Keys carry the bin number (g2_00005…) and qphi_bin_to_process is not sorted:
    key number = bin number."""
    dq, dphi = legacy_grid()
    full = [smooth_map(N, 300 + k) for k in range(3)]
    fn = path("old_bykey.hdf")
    write_aps_old_real(fn, [upper(m) for m in full], dq, dphi, qphi_bins=[10, 2, 9],
                       keys=["g2_00002", "g2_00009", "g2_00010"])
    cfg = path("old_bykey.yaml")
    write_config(cfg, q=0.007)
    got, _ = validate(cfg, fn)
    # bins 9, 10 = (q 0.007, φ 0), (q 0.007, φ 90) = keys g2_00009, g2_00010 = maps 2, 3
    close(got["angles"], [0, 90], what="angles")
    check(got["map_numbers"] == [2, 3], "map numbers %r" % got["map_numbers"])
    close(got["fitted_mean"], [expected_means(f32(full[k]))[0] for k in (1, 2)],
          what="fitted means")


def test_legacy_bin_outside_the_lists_is_skipped():
    dq, dphi = legacy_grid()
    full = [smooth_map(N, 400 + k) for k in range(2)]
    fn = path("old_skip.hdf")
    write_aps_old_real(fn, [upper(m) for m in full], dq, dphi, qphi_bins=[1, 40])
    cfg = path("old_skip.yaml")
    write_config(cfg, q=0.003)
    got, err = validate(cfg, fn)
    check("skipped: 40" in err and "qphi_bin_to_process" in err, "skip warning: " + err)
    check(got["map_numbers"] == [1], "map numbers %r" % got["map_numbers"])


def test_legacy_bins_list_of_wrong_length():
    dq, dphi = legacy_grid()
    fn = path("old_badlen.hdf")
    write_aps_old_real(fn, [upper(smooth_map(N, 5))] * 2, dq, dphi, qphi_bins=[1, 2, 3])
    cfg = path("err.yaml")
    write_config(cfg)
    expect_error(cfg, fn, 1, "/xpcs/qphi_bin_to_process lists 3 bins",
                 "/exchange/C2T_all holds 2 maps", "old_badlen.hdf")


def test_multitau_only_results():
    """Multi-tau results share the qmap / dqlist of two-time ones: say there is no
    two-time map rather than 'unknown layout'."""
    cfg = path("err.yaml")
    write_config(cfg)
    fn = path("u_multitau.hdf")
    write_aps_u_real(fn, [upper(smooth_map(8, 1))], Q, PHI, [1], list(range(12)),
                     twotime=False)
    expect_error(cfg, fn, 1, "no two-time correlation maps", "multi-tau",
                 "/xpcs/twotime/correlation_map", "u_multitau.hdf")
    fn = path("old_multitau.hdf")
    dq, dphi = legacy_grid()
    write_aps_old_real(fn, [], dq, dphi, qphi_bins=[1], analysis_type="Multitau",
                       two_time=False)
    expect_error(cfg, fn, 1, "no two-time correlation maps", "Multitau",
                 "/exchange/C2T_all", "old_multitau.hdf")


def test_partition_not_q_phi():
    """A qmap partitioned in x × y (the mask tool allows it): the lists are pixel
    positions, not q and φ."""
    fn = path("u_xy.hdf")
    write_aps_u_real(fn, [upper(smooth_map(8, 1))], [10.0, 20.0], [5.0], [1], [0, 1],
                     map_names=("x", "y"))
    cfg = path("err.yaml")
    write_config(cfg)
    expect_error(cfg, fn, 1, "/xpcs/qmap/map_names", "x, y", "q, phi", "u_xy.hdf")


def main():
    return run_tests(module_tests(globals()))


if __name__ == "__main__":
    sys.exit(main())
