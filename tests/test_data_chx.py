"""test_data_chx.py — the real CHX two-time matrix, committed in both layouts
(data/chx_350_aps_u.h5, data/chx_350_aps_old.h5 from scripts/convert_chx.py), loads and
validates with configs/chx_static.yaml, and holds exactly the .npy's values."""
import os
import sys

import h5py
import numpy as np

from aps_fixtures import check, close, expected_means, run, validate

ROOT = os.environ["XF_SOURCE_DIR"]


def main():
    c2 = np.load(os.path.join(ROOT, "data", "chx_two_time_350.npy"))
    cfg = os.path.join(ROOT, "configs", "chx_static.yaml")
    fit_mean, diag_mean = expected_means(c2)
    for name, layout in (("chx_350_aps_u.h5", "aps-u"), ("chx_350_aps_old.h5", "aps-old")):
        fn = os.path.join(ROOT, "data", name)
        with h5py.File(fn, "r") as f:
            key = ("/xpcs/twotime/correlation_map/c2_00001" if layout == "aps-u"
                   else "/exchange/C2T_all/C2T_00001")
            stored = f[key][()]
        check(np.array_equal(stored, np.triu(c2)), "%s stores the upper triangle" % name)
        got, err = validate(cfg, fn)
        check(got["layout"] == layout, "layout of %s" % name)
        check(got["q"] == 0.005 and got["dt_s"] == 1.0, "q and dt")
        check(got["n_frames"] == 350 and got["points_total"] == 349 * 348 // 2, "size")
        close(got["angles"], [0], what="angles")
        close(got["fitted_mean"], [fit_mean], rel=1e-13, what="fitted mean of " + name)
        close(got["diagonal_mean"], [diag_mean], rel=1e-13, what="diag mean of " + name)
        check("warning" not in err, "no warning expected: " + err)
    # the config's relative file_path resolves from the repository root
    os.chdir(ROOT)
    rc, out, err = run(["validate", "--config", cfg])
    check(rc == 0 and "layout: aps-u" in out, "config's own file_path: %d %s" % (rc, err))
    print("ok   chx in both layouts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
