#!/usr/bin/python3
"""convert_chx.py — write the real CHX two-time matrix (data/chx_two_time_350.npy) into
both APS 8-ID-I layouts, as the realistic-noise test case of the static model.

The matrix has neither q nor dt: frame units are used (dt = 1 s per frame) and
q = 0.005 1/Å, so that D0 lands inside the default bounds. One angle, φ = 0. Only the
upper triangle is stored (as the correlator does); APS-U maps are LZF-compressed.
Object time tracking is off, so running this again gives the same bytes.

usage: /usr/bin/python3 scripts/convert_chx.py   (from the repository root)
"""
import os
import sys

import h5py
import numpy as np

Q_PER_A = 0.005
DT_S = 1.0
PHI_DEG = 0.0


def ds(f, name, data, **kw):
    return f.create_dataset(name, data=data, track_times=False, **kw)


def group(f, name):
    return f.create_group(name, track_order=False)


def write_aps_u(path, c2_upper):
    n = c2_upper.shape[0]
    with h5py.File(path, "w", libver="earliest") as f:
        for g in ("/xpcs", "/xpcs/qmap", "/xpcs/twotime", "/xpcs/twotime/correlation_map",
                  "/xpcs/twotime/config", "/entry", "/entry/instrument",
                  "/entry/instrument/detector_1", "/entry/instrument/bluesky",
                  "/entry/instrument/bluesky/metadata"):
            group(f, g)
        ds(f, "/xpcs/qmap/dynamic_v_list_dim0", np.array([Q_PER_A]))
        ds(f, "/xpcs/qmap/dynamic_v_list_dim1", np.array([PHI_DEG]))
        ds(f, "/xpcs/qmap/dynamic_num_pts", np.array([1, 1], dtype="<i8"))
        ds(f, "/xpcs/qmap/dynamic_index_mapping", np.array([0], dtype="<i8"))
        ds(f, "/xpcs/twotime/processed_bins", np.array([1], dtype="<i8"))
        ds(f, "/xpcs/twotime/correlation_map/c2_00001", c2_upper, compression="lzf",
           chunks=(min(n, 64), n))
        ds(f, "/xpcs/twotime/config/stride_frame", np.int64(1))
        ds(f, "/xpcs/twotime/config/avg_frame", np.int64(1))
        ds(f, "/entry/instrument/detector_1/frame_time", np.float64(DT_S))
        f["/entry/instrument/bluesky/metadata"].attrs["source"] = np.bytes_(
            "NSLS-II CHX two-time matrix (BSD-3, Brookhaven National Laboratory), "
            "frame units")


def write_aps_old(path, c2_upper):
    with h5py.File(path, "w", libver="earliest") as f:
        for g in ("/xpcs", "/exchange", "/exchange/C2T_all", "/measurement",
                  "/measurement/instrument", "/measurement/instrument/detector"):
            group(f, g)
        ds(f, "/xpcs/Version", np.bytes_("1.0"))
        ds(f, "/xpcs/dqlist", np.array([[Q_PER_A]]))
        ds(f, "/xpcs/dphilist", np.array([[PHI_DEG]]))
        ds(f, "/exchange/C2T_all/C2T_00001", c2_upper)
        ds(f, "/xpcs/stride_frames", np.ones((1, 1), dtype="<i8"))
        ds(f, "/xpcs/avg_frames", np.ones((1, 1), dtype="<i8"))
        ds(f, "/measurement/instrument/detector/exposure_period", np.full((1, 1), DT_S))


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    data = os.path.join(root, "data")
    c2 = np.load(os.path.join(data, "chx_two_time_350.npy"))
    if c2.shape != (350, 350) or not np.allclose(c2, c2.T):
        sys.exit("convert_chx: expected a 350 × 350 symmetric matrix")
    c2_upper = np.triu(c2).astype("<f8")
    write_aps_u(os.path.join(data, "chx_350_aps_u.h5"), c2_upper)
    write_aps_old(os.path.join(data, "chx_350_aps_old.h5"), c2_upper)
    print("wrote data/chx_350_aps_u.h5 and data/chx_350_aps_old.h5")


if __name__ == "__main__":
    main()
