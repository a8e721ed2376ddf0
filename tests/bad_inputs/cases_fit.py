"""cases_fit.py — degenerate fits (adr/0020-degenerate-fits.md): inputs that pass the
loader but leave nothing to fit, or make χ² overflow. Each ends with exit 1 and one line
that names the angle, the frames or the parameter at fault — never "converged" with
±0 uncertainties, never a message that blames the config for a data problem."""
import os

import numpy as np

import aps_fixtures as fx
from corpus import expect_nothing_written

N = 20


def good_maps():
    return [fx.smooth_map(N, 1), fx.smooth_map(N, 2)]


def fit_case(maps=None, dt=0.1, q=0.01, q_file=0.01, frame_time=None, extra=""):
    """A make() that writes a two-angle APS-U file and a static config, then fits."""
    def make(d):
        m = good_maps() if maps is None else maps()
        fx.write_aps_u(os.path.join(d, "data.h5"), [fx.upper(x) for x in m], [q_file],
                       [0.0, 90.0], [1, 2], frame_time=frame_time)
        with open(os.path.join(d, "cfg.yaml"), "w") as f:
            f.write("analysis_mode: static\n"
                    "experimental_data: {file_path: data.h5}\n"
                    "analyzer_parameters:\n"
                    + ("  dt: %r\n" % dt if dt is not None else "")
                    + "  scattering: {wavevector_q: %r}\n" % q + extra)
        return ["nlsq", "--config", "cfg.yaml", "--out", "out", "--no-plots",
                "--threads", "1"]
    return make


def zeros():
    return [np.zeros((N, N)), np.zeros((N, N))]


def one_constant():
    m = good_maps()
    m[1] = np.full((N, N), 1.05)
    return m


def outlier():
    m = good_maps()
    m[1][5, 9] = m[1][9, 5] = 1e200  # stored rows 6 and 10 (1-based)
    return m


def noise_free_make(d):
    with open(os.path.join(d, "cfg.yaml"), "w") as f:
        f.write("analysis_mode: static\n"
                "experimental_data: {file_path: data.h5}\n"
                "analyzer_parameters: {dt: 0.1, start_frame: 1, end_frame: 30, "
                "scattering: {wavevector_q: 0.01}}\n"
                "initial_parameters:\n"
                "  parameter_names: [D0, alpha, D_offset]\n"
                "  values: [1000.0, -0.5, 0.0]\n"
                "  fixed_parameters: {D_offset: 0.0}\n")
    import subprocess
    from corpus import binary
    subprocess.run([binary(), "simulate", "--config", "cfg.yaml", "--phi", "0,90",
                    "--out", "data.h5", "--noise", "0"], cwd=d, check=True,
                   capture_output=True)
    return ["nlsq", "--config", "cfg.yaml", "--out", "out", "--no-plots", "--threads", "1"]


def no_uncertainty(scratch, rc, out, err):
    import json
    with open(os.path.join(scratch, "out", "nlsq", "parameters.json")) as f:
        p = json.load(f)
    if p["status"] == "converged":
        raise AssertionError("noise-free fit reported converged")
    zero = [k for k, v in p["parameters"].items() if v["uncertainty"] == 0.0]
    if zero or any(v["uncertainty"] is not None for v in p["parameters"].values()):
        raise AssertionError("uncertainties given without a noise level: %s" % p["parameters"])


def marked_failed(scratch, rc, out, err):
    """Results written, but marked failed, and no uncertainty of 0 claimed."""
    import json
    with open(os.path.join(scratch, "out", "nlsq", "parameters.json")) as f:
        p = json.load(f)
    if p["status"] == "converged":
        raise AssertionError("reported converged")
    zero = [k for k, v in p["parameters"].items() if v["uncertainty"] == 0.0]
    if zero:
        raise AssertionError("uncertainty 0 claimed for %s" % zero)


def ridge_make(d):
    """alpha = 0 in the data, D0, alpha and D_offset free: only D0 + D_offset is seen."""
    with open(os.path.join(d, "cfg.yaml"), "w") as f:
        f.write("analysis_mode: static\n"
                "experimental_data: {file_path: data.h5}\n"
                "analyzer_parameters: {dt: 0.1, start_frame: 1, end_frame: 120, "
                "scattering: {wavevector_q: 0.0054}}\n"
                "initial_parameters:\n"
                "  parameter_names: [D0, alpha, D_offset]\n"
                "  values: [2000.0, 0.0, 1000.0]\n")
    import subprocess
    from corpus import binary
    subprocess.run([binary(), "simulate", "--config", "cfg.yaml", "--phi", "0",
                    "--out", "data.h5", "--noise", "0.01"], cwd=d, check=True,
                   capture_output=True)
    return ["nlsq", "--config", "cfg.yaml", "--out", "out", "--no-plots", "--threads", "1"]


def marked_ridge(scratch, rc, out, err):
    """Results written, status ridge, the identified combination in parameters.json."""
    import json
    with open(os.path.join(scratch, "out", "nlsq", "parameters.json")) as f:
        p = json.load(f)
    ident = p["quality"].get("identified") or {}
    combos = [c["combination"] for c in ident.get("combinations", [])]
    if p["status"] != "ridge" or combos != ["D0 + D_offset"]:
        raise AssertionError("status %s, identified %s" % (p["status"], ident))


K = "Fits"
CASES = [
    {"name": "fit_all_zero_maps", "klass": K, "make": fit_case(maps=zeros), "rc": 1,
     "needles": ["has no variance", "c2_00001", "φ = 0", "equals 0", "data.h5"],
     "fix": "The maps hold only zeros: check the file (a failed correlation run writes "
            "zeros) or the map selection.",
     "check": expect_nothing_written()},
    {"name": "fit_constant_map", "klass": K, "make": fit_case(maps=one_constant), "rc": 1,
     "needles": ["has no variance", "φ = 90", "equals 1.05", "data.h5"],
     "fix": "A constant map has no correlation: check the file, or leave the angle out "
            "with phi_filtering.",
     "check": expect_nothing_written()},
    {"name": "fit_offset_bounds_exclude_data", "klass": K,
     "make": fit_case(extra="parameter_space:\n  bounds:\n"
                            "    - {name: offset, min: 10, max: 20}\n"),
     "rc": 1, "needles": ["the bounds exclude the data", "φ = 0°", "offset in [10, 20]"],
     "fix": "Widen the offset (or contrast) bounds in parameter_space.bounds to include "
            "the level of the data.",
     "check": expect_nothing_written()},
    {"name": "fit_frame_time_1e308", "klass": K, "make": fit_case(dt=1e308), "rc": 2,
     "needles": ["analyzer_parameters.dt", "1e+308", "1e-12 to 86400", "cfg.yaml:4"],
     "fix": "Give the real frame time (analyzer_parameters.dt, in seconds).",
     "check": expect_nothing_written()},
    {"name": "fit_frame_time_1e308_in_file", "klass": K,
     "make": fit_case(dt=None, frame_time=1e308), "rc": 1,
     "needles": ["dt from the file is 1e+308 s", "set analyzer_parameters.dt", "data.h5"],
     "fix": "The file's frame_time is wrong: set analyzer_parameters.dt in the config.",
     "check": expect_nothing_written()},
    {"name": "fit_frame_time_tiny", "klass": K, "make": fit_case(dt=1e-300), "rc": 2,
     "needles": ["analyzer_parameters.dt", "1e-300", "1e-12 to 86400"],
     "fix": "Give the real frame time (analyzer_parameters.dt, in seconds).",
     "check": expect_nothing_written()},
    {"name": "fit_q_tiny", "klass": K, "make": fit_case(q=1e-30, q_file=1e-30), "rc": 1,
     "needles": ["did not converge", "not informed by the data: D0"],
     "fix": "q in the file (and the config) must be in 1/Å; a q this small shows no "
            "decay in any frame window.",
     "check": marked_failed},
    {"name": "fit_d0_bounds_decay_within_a_frame", "klass": K,
     "make": fit_case(extra="parameter_space:\n  bounds:\n"
                            "    - {name: D0, min: 1.0e+15, max: 1.0e+16}\n"),
     "rc": 1, "needles": ["no information to fit", "D0 = 1e+15"],
     "fix": "The D0 bounds only allow correlations that decay within one frame: widen "
            "them towards slower dynamics.",
     "check": expect_nothing_written()},
    {"name": "fit_data_value_1e200", "klass": K, "make": fit_case(maps=outlier), "rc": 1,
     "needles": ["value 1e+200", "(t1, t2) = (6, 10)", "φ = 90", "|C2| <= 1e+12"],
     "fix": "One stored value is absurd: check that point of the file (a detector or "
            "correlator fault).",
     "check": expect_nothing_written()},
    {"name": "fit_sigma_tiny", "klass": K,
     "make": fit_case(extra="optimization:\n  nlsq: {sigma: 1.0e-300}\n"), "rc": 1,
     "needles": ["σ = 1e-300"],
     "fix": "optimization.nlsq.sigma is the noise of one c2 point (about 1e-3); leave "
            "it null to estimate it from the residuals.",
     "check": expect_nothing_written()},
    {"name": "fit_noise_free_data", "klass": K, "make": noise_free_make, "rc": 1,
     "needles": ["did not converge", "the residuals vanish"],
     "fix": "Noise-free (simulated) data give no noise level: set optimization.nlsq.sigma "
            "to get uncertainties.",
     "check": no_uncertainty},
    {"name": "fit_ridge", "klass": K, "make": ridge_make, "rc": 1,
     "needles": ["converged to a ridge", "the data identify D0 + D_offset = ",
                 "not D0, D_offset one by one", "--fix D_offset=0",
                 "results are marked ridge (not usable)"],
     "fix": "The data pin down only the combination named (here D0 + D_offset, as at "
            "alpha = 0 D0*t^alpha and D_offset are the same function): apply the fix "
            "named (--fix D_offset=0) and fit again (adr/0047).",
     "check": marked_ridge},
]
