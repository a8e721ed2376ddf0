#!/usr/bin/env python3
"""The result directory as a Python user reads it (spec/cli.md "Result directory"):
simulate a small static file, fit it with the CLI, then read results.h5 with h5py and
parameters.json with json: every dataset self-describing, surfaces float32 (n_phi, N, N)
chunked per angle with shuffle + gzip 1, residuals = data - fit with NaN exactly where
nothing is fitted, JSON numbers equal to the HDF5 values bit for bit, no NaN tokens in
the JSON, byte-identical results.h5 from two runs (--surfaces), `xpcsfit plot` redraws;
a result without surfaces (the default) redraws from the data file (--data when it
moved) and says so plainly when the file is gone (adr/0059)."""
import glob
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_results_h5py")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
from tally import check, summary


def run(*args):
    return subprocess.run([XF, *args], capture_output=True, text=True, cwd=TMP)


CONFIG = """analysis_mode: static
experimental_data:
  file_path: sim.h5
analyzer_parameters:
  dt: 0.01
  end_frame: 50
  scattering: {wavevector_q: 0.02}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [1500, -0.5, 10.0]
"""
with open(os.path.join(TMP, "c.yaml"), "w") as f:
    f.write(CONFIG)
r = run("simulate", "--config", "c.yaml", "--phi", "-20,0,30", "--out", "sim.h5")
if r.returncode != 0:
    sys.exit("simulate failed: " + r.stderr)
r1 = run("nlsq", "--config", "c.yaml", "--out", "out1", "--surfaces")
r2 = run("nlsq", "--config", "c.yaml", "--out", "out2", "--no-plots", "--surfaces")
if r1.returncode != 0 or r2.returncode != 0:
    sys.exit("nlsq failed: " + r1.stderr[-2000:] + r2.stderr[-2000:])
D = os.path.join(TMP, "out1", "nlsq")
N, NPHI = 50, 3

with h5py.File(os.path.join(D, "results.h5"), "r") as h:
    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            check("units" in obj.attrs, f"{name} has a units attribute")
            check("description" in obj.attrs and len(obj.attrs["description"]) > 5,
                  f"{name} has a description")
    h.visititems(visit)
    check(np.allclose(h["/data/phi_deg"][()], [-20, 0, 30]), "phi_deg")
    t = h["/data/t"][()]
    check(t.shape == (N,) and t[1] == 0.01 and t[0] == 0.0, "t in seconds, length N")
    check(h["/data/t"].attrs["units"] in (b"s", "s"), "t units s")
    check(h["/data/q"][()] == 0.02, "q")
    names = [n.decode() if isinstance(n, bytes) else n for n in h["/nlsq/parameter_names"][()]]
    check(names[:3] == ["D0", "alpha", "D_offset"], f"parameter names {names}")
    p = len(names)
    check(h["/nlsq/values"].shape == (p,), "values shape")
    check(h["/nlsq/covariance"].shape == (p, p), "covariance shape")
    for k in ("per_angle_contrast", "per_angle_offset", "per_angle_contrast_uncertainty",
              "per_angle_offset_uncertainty"):
        check(h["/nlsq/" + k].shape == (NPHI,), k + " shape")
    for k in ("chi_squared", "reduced_chi_squared", "n_points", "n_free_parameters",
              "iterations"):
        check(h["/nlsq/" + k].shape == (), k + " is a scalar")
    check(int(h["/nlsq/n_points"][()]) == NPHI * (N - 1) * (N - 2) // 2, "n_points")
    status = h["/nlsq"].attrs["status"]
    status = status.decode() if isinstance(status, bytes) else status
    check(status in ("converged", "max_iterations", "ridge", "failed"), "status attribute")
    check("stop_reason" in h["/nlsq"].attrs, "stop_reason attribute")
    surf = {}
    for path in ("/data/c2", "/nlsq/c2_fit", "/nlsq/residuals"):
        ds = h[path]
        check(ds.shape == (NPHI, N, N), path + " shape")
        check(ds.dtype == np.float32, path + " float32")
        check(ds.chunks == (1, N, N), path + " chunked per angle")
        check(ds.compression == "gzip" and ds.compression_opts == 1, path + " gzip 1")
        check(ds.shuffle, path + " shuffle")
        surf[path] = ds[()]
    data, fit, res = surf["/data/c2"], surf["/nlsq/c2_fit"], surf["/nlsq/residuals"]
    check(np.array_equal(data, np.swapaxes(data, 1, 2)), "data symmetric")
    mask = np.zeros((N, N), bool)
    mask[0, :] = mask[:, 0] = True
    mask[np.arange(N), np.arange(N)] = True
    check(np.all(np.isnan(res[:, mask])), "residual NaN at row/col 0 and the diagonal")
    check(not np.any(np.isnan(res[:, ~mask])), "residual finite where fitted")
    diff = (data.astype(np.float64) - fit.astype(np.float64))[:, ~mask]
    check(np.allclose(res[:, ~mask], diff, atol=1e-6), "residual = data - fit")
    values = h["/nlsq/values"][()]
    unc = h["/nlsq/uncertainties"][()]
    contrast = h["/nlsq/per_angle_contrast"][()]

text = open(os.path.join(D, "parameters.json")).read()
check("NaN" not in text and "Infinity" not in text, "no NaN/Infinity tokens in JSON")
js = json.loads(text)
check(js["method"] == "nlsq" and js["analysis_mode"] == "static", "method/mode")
check(js["convergence_status"] in ("converged", "max_iter", "failed"), "convergence_status")
for k, name in enumerate(names[:3]):
    check(js["parameters"][name]["value"] == values[k], f"{name} value bitwise equal")
    u = js["parameters"][name]["uncertainty"]
    check((u is None and np.isnan(unc[k])) or u == unc[k], f"{name} uncertainty")
check(js["per_angle"]["contrast"] == list(contrast), "per-angle contrast bitwise equal")
check(abs(js["parameters"]["contrast"]["value"] - contrast.mean()) < 1e-15,
      "parameters.contrast = mean over angles")
check(js["covariance"]["names"] == names, "covariance names")
check(len(js["covariance"]["matrix"]) == p, "covariance matrix rows")
for k in ("load", "fit", "total"):
    check(isinstance(js["timing_s"][k], float), "timing " + k)
check(js["data"]["n_frames"] == N and js["data"]["n_phi"] == NPHI, "data block")

pngs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(D, "plots", "*.png")))
check(pngs == ["c2_phi_000_-020.00deg.png", "c2_phi_001_+000.00deg.png",
               "c2_phi_002_+030.00deg.png", "overview.png"], f"plot files {pngs}")
for png in pngs:
    with open(os.path.join(D, "plots", png), "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", png + " is a PNG")
check(not glob.glob(os.path.join(TMP, "**", "*.tmp.*"), recursive=True),
      "no temporary files left")
check(os.path.exists(os.path.join(D, "run.log")), "run.log written")
check(not os.path.exists(os.path.join(TMP, "out2", "nlsq", "plots")), "--no-plots")

with open(os.path.join(D, "results.h5"), "rb") as a, \
        open(os.path.join(TMP, "out2", "nlsq", "results.h5"), "rb") as b:
    check(a.read() == b.read(), "two runs give byte-identical results.h5")

shutil.rmtree(os.path.join(D, "plots"))
r = run("plot", D)
check(r.returncode == 0, "xpcsfit plot: " + r.stderr)
check(len(glob.glob(os.path.join(D, "plots", "*.png"))) == 4, "plot redraws 4 PNGs")

r = run("nlsq", "--config", "c.yaml", "--out", "out3", "--no-surfaces", "--no-plots")
check(r.returncode == 0, "nlsq --no-surfaces")
with h5py.File(os.path.join(TMP, "out3", "nlsq", "results.h5"), "r") as h:
    check("c2" not in h["/data"] and "c2_fit" not in h["/nlsq"], "surfaces skipped")
D3 = os.path.join(TMP, "out3", "nlsq")
r = run("plot", D3)
check(r.returncode == 0 and len(glob.glob(os.path.join(D3, "plots", "*.png"))) == 4,
      "plot without surfaces redraws from the data file: " + r.stderr)
os.rename(os.path.join(TMP, "sim.h5"), os.path.join(TMP, "moved.h5"))
r = run("plot", D3)
check(r.returncode == 1 and "--data FILE.h5" in r.stderr and "sim.h5" in r.stderr and
      r.stderr.startswith("xpcsfit: error: ") and len(r.stderr.splitlines()) == 1,
      "plot without surfaces nor data file: " + r.stderr)
r = run("plot", D3, "--data", "moved.h5")
check(r.returncode == 0, "plot --data: " + r.stderr)
r = run("plot")
check(r.returncode == 2, "plot without a folder is a usage error")

sys.exit(summary())
