#!/usr/bin/env python3
"""The exact posterior's route over MPI ranks (adr/0045): the importance route on the
same file under `mpirun -np R xpcsfit-mpi cmc` for R = 1, 2, 4 (one thread each;
oversubscribed on a 2-core machine), wall times and whether the results are the bytes
of one process; then weak scaling: a file whose point count grows with R (23 angles,
frames chosen so that points ∝ R). Prints numbers; exits 1 only when bytes differ.
Environment: XF_BINARY, XF_MPI_BINARY, XF_TMP. Options: --frames (the R = 1 file)."""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np

CONFIG = """analysis_mode: laminar_flow
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.001
  start_frame: 1
  end_frame: {frames}
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [{values}]
optimization:
  nlsq:
    anti_degeneracy: {{per_angle_mode: auto}}
"""
TRUTH = "1000, -1.3, 5.0, 0.01, -0.2, 0.0005, 1.0"


def dataset_bytes(o):
    """a dataset's content as bytes: numbers as stored; strings by their text (a
    variable-length string array reads as Python objects, whose tobytes() would be the
    objects' addresses, different in every process)"""
    a = np.asarray(o[()])
    return repr(a.tolist()).encode() if a.dtype.kind == "O" else a.tobytes()


def arrays(d):
    out = {}
    with h5py.File(os.path.join(d, "results.h5"), "r") as h:
        h.visititems(lambda n, o: out.__setitem__(n, dataset_bytes(o))
                     if isinstance(o, h5py.Dataset) else None)
    return out


def prepare(xf, tmp, frames):
    data = os.path.join(tmp, f"mpi_23x{frames}.h5")
    cfg = os.path.join(tmp, f"mpi_23x{frames}.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=data, frames=frames, values=TRUTH))
    phis = ",".join(f"{-90 + 180 * a / 23:.4f}" for a in range(23))
    if not os.path.exists(data):
        subprocess.run([xf, "simulate", "--config", cfg, "--phi", phis, "--out", data,
                        "--noise", "0.001", "--lzf"], check=True, capture_output=True)
    nl = os.path.join(tmp, f"mpi_nlsq_{frames}")
    if not os.path.exists(os.path.join(nl, "nlsq", "parameters.json")):
        subprocess.run([xf, "nlsq", "--config", cfg, "--out", nl, "--no-plots", "--force"],
                       check=True, capture_output=True)
    return cfg, os.path.join(nl, "nlsq")


def run(mpirun, xf_mpi, ranks, cfg, nlsq, out):
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    t0 = time.perf_counter()
    r = subprocess.run([mpirun, "--oversubscribe", "-np", str(ranks), xf_mpi, "cmc",
                        "--config", cfg, "--nlsq", nlsq, "--out", out, "--threads", "1",
                        "--no-plots"], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{ranks} ranks: exit {r.returncode}\n{r.stderr[-1500:]}")
    with open(os.path.join(out, "cmc", "parameters.json")) as f:
        p = json.load(f)
    return wall, p["posterior_route"]["route"], p["timing_s"]["importance_route"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=250)
    a = ap.parse_args()
    xf, xf_mpi = os.environ["XF_BINARY"], os.environ["XF_MPI_BINARY"]
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("mpirun not found: skipped")
        return 0
    tmp = os.environ.get("XF_TMP", "/tmp/xpcsfit_bench")
    os.makedirs(tmp, exist_ok=True)
    print(f"load average before: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    cfg, nlsq = prepare(xf, tmp, a.frames)
    ref, bad = None, 0
    print(f"strong scaling, 23 x {a.frames} frames, 1 thread a rank:")
    for ranks in (1, 2, 4):
        out = os.path.join(tmp, f"mpi_strong_{ranks}")
        wall, route, t_route = run(mpirun, xf_mpi, ranks, cfg, nlsq, out)
        got = arrays(os.path.join(out, "cmc"))
        same = ref is None or got == ref
        ref = ref or got
        bad += not same
        print(f"  {ranks} ranks: {wall:.1f} s wall (route {route}, {t_route:.1f} s), "
              f"results.h5 arrays {'identical to 1 rank' if same else 'DIFFER'}")
    print("weak scaling (points ~ ranks), 1 thread a rank:")
    for ranks in (1, 2, 4):
        frames = int(round(1 + (a.frames - 1) * math.sqrt(ranks)))
        cfg, nlsq = prepare(xf, tmp, frames)
        wall, route, t_route = run(mpirun, xf_mpi, ranks, cfg, nlsq,
                                   os.path.join(tmp, f"mpi_weak_{ranks}"))
        print(f"  {ranks} ranks, 23 x {frames} frames: {wall:.1f} s wall "
              f"(route {route}, {t_route:.1f} s)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
