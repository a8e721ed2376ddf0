"""make_h5_seeds.py — small HDF5 seed files for the fuzz_h5 target, in the real APS
layouts tests/helpers/aps_fixtures.py writes (APS-U as the correlator writes it, legacy
MATLAB/boost_corr files, triangles, float32/big-endian, LZF, index mappings, several q
rings), each a few KB so the fuzzer mutates structure rather than map values; and files
with links (ADR 0051: to another file, within the file, to nothing) so that the link
walk of src/data/h5util.c is fuzzed too.

usage: python3 tests/fuzz/make_h5_seeds.py OUT_DIR"""
import os
import sys

import h5py
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
    link_seeds(p, maps)


def link_seeds(p, maps):
    """APS-U files whose stride_frame, parent group or map is a link: external (to an
    other.h5 that is not there), soft within the file, soft to nothing, soft through an
    external link."""
    def base(name):
        fx.write_aps_u(p(name), [fx.upper(m) for m in maps[:2]], [0.01], [0.0, 90.0],
                       [1, 2], frame_time=0.1, stride=2, avg=1)
        return p(name)
    stride = "/xpcs/twotime/config/stride_frame"
    with h5py.File(base("u_link_external.h5"), "a") as f:
        del f[stride]
        f[stride] = h5py.ExternalLink("other.h5", stride)
    with h5py.File(base("u_link_parent_external.h5"), "a") as f:
        del f["/xpcs/twotime/config"]
        f["/xpcs/twotime/config"] = h5py.ExternalLink("other.h5", "/config")
    fx.link_within(base("u_link_soft.h5"), stride, "/kept/stride_frame")
    fx.link_within(p("u_link_soft.h5"), "/xpcs/twotime/correlation_map/c2_00002",
                   "/kept/c2_b")
    fx.link_within(base("u_link_soft_nothing.h5"), stride, "/gone", move=False)
    with h5py.File(base("u_link_soft_external.h5"), "a") as f:
        f["/split"] = h5py.ExternalLink("other.h5", "/split")
        del f[stride]
        f[stride] = h5py.SoftLink("/split/stride_frame")


if __name__ == "__main__":
    main(sys.argv[1])
