"""make_h5_seeds.py — small HDF5 seed files for the fuzz_h5 target, in the real APS
layouts tests/helpers/aps_fixtures.py writes (APS-U as the correlator writes it, legacy
MATLAB/boost_corr files, triangles, float32/big-endian, LZF, index mappings, several q
rings), each a few KB so the fuzzer mutates structure rather than map values.

usage: python3 tests/fuzz/make_h5_seeds.py OUT_DIR"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "helpers"))
import aps_fixtures as fx  # noqa: E402


def main(out):
    os.makedirs(out, exist_ok=True)
    n = 8
    maps = [fx.smooth_map(n, s) for s in range(4)]
    p = lambda name: os.path.join(out, name)  # noqa: E731
    fx.write_aps_u(p("u_upper.h5"), [fx.upper(m) for m in maps[:2]], [0.01], [0.0, 90.0],
                   [1, 2], frame_time=0.1)
    fx.write_aps_u(p("u_lower_f32_be.h5"), [fx.lower(m) for m in maps[:2]], [0.01],
                   [-45.0, 45.0], [1, 2], map_dtype=">f4", list_shape="row")
    fx.write_aps_u(p("u_full_lzf.h5"), maps[:2], [0.01], [0.0, 90.0], [1, 2], lzf=True,
                   stride=2, avg=1, frame_time=0.05)
    fx.write_aps_u(p("u_mapping_2q.h5"), [fx.upper(m) for m in maps], [0.01, 0.02],
                   [0.0, 90.0], [1, 2, 3, 4], mapping=[0, 1, 2, 3], list_shape="col")
    fx.write_aps_u_real(p("u_real.h5"), [fx.upper(m) for m in maps[:2]], [0.01],
                        [0.0, 90.0], [1, 2], mapping=[0, 1], frame_time=0.1,
                        multitau=False)
    fx.write_aps_old(p("old_row.h5"), [fx.upper(m) for m in maps[:2]], [0.01, 0.01],
                     [0.0, 90.0], exposure_period=0.1, stride=1, avg=1)
    fx.write_aps_old_real(p("old_real.h5"), [fx.upper(m) for m in maps[:2]],
                          [0.01, 0.01], [0.0, 90.0], qphi_bins=[1, 2])


if __name__ == "__main__":
    main(sys.argv[1])
