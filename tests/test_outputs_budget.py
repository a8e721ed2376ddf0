#!/usr/bin/env python3
"""The lean default outputs (issue 25, adr/0059, docs/outputs.md "Output budget"): on a
small simulated laminar problem (5 angles x 120 frames) a default `nlsq` run writes no
surfaces and stays inside the stated byte budget per angle (results.h5, each angle PNG,
report.html); the surfaces are written only with --surfaces or `output.surfaces: full`
(--no-surfaces wins over the config); with more than 10 angles the default draws the
pages of the overview's 10 angles (`plotting.angle_pages: all`, and `xpcsfit plot DIR`,
every angle); `xpcsfit plot DIR` redraws a result without
surfaces from the data file and the model, the same PNG bytes as drawn at fit time; and
`xpcsfit plot` redraws a CMC folder's angle pages and corner.png (the same bytes) and
overview.png, for a consensus and an importance-route posterior. Sizes
are deterministic (the same bytes every run), so the budget is a plain comparison."""
import glob
import os
import shutil
import subprocess
import sys

import h5py

from small_configs import static_template
from tally import check, summary
from waits import RUN_GUARD_S

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_outputs_budget")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

N_PHI, N = 5, 120
# the budget of docs/outputs.md "Output budget", bytes
H5_FIXED, H5_PER_ANGLE, H5_PER_FRAME = 48 << 10, 1 << 10, 48  # results.h5, no surfaces
PNG_PER_ANGLE = 400 << 10  # one c2_phi page (at most 245 x 245 display cells a map)
REPORT_MAX = 2 << 20  # report.html, whatever the angles
SURFACE_BYTES_PER_CELL = 12  # float32 data, fit, residual before compression

CONFIG = """analysis_mode: laminar_flow
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.001
  start_frame: 3
  end_frame: {end}
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [{values}]
{extra}"""
TRUTH = "1000, -1.3, 5.0, 0.01, -0.2, 0.0005, 1.0"


def run(*args):
    return subprocess.run([XF, *args], capture_output=True, text=True, cwd=TMP, timeout=RUN_GUARD_S)


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def pngs(d):
    return {os.path.basename(p): open(p, "rb").read()
            for p in sorted(glob.glob(os.path.join(d, "plots", "*.png")))}


def has_surfaces(d):
    with h5py.File(os.path.join(d, "results.h5"), "r") as h:
        found = ["/data/c2" in h, "/nlsq/c2_fit" in h, "/nlsq/residuals" in h]
    check(all(found) or not any(found), f"{d}: all surfaces or none: {found}")
    return all(found)


def main():
    data = os.path.join(TMP, "lam.h5")
    end = 2 + N  # frames 3 .. N + 2: a window that does not start at the first frame
    r = run("simulate", "--config", write("truth.yaml", CONFIG.format(
        data=data, end=end, values=TRUTH, extra="")), "--phi", "-60,-20,10,45,80",
        "--out", data, "--noise", "0.001", "--seed", "5")
    if r.returncode != 0:
        sys.exit("simulate failed: " + r.stderr)
    cfg = write("fit.yaml", CONFIG.format(data=data, end=end, values=TRUTH, extra=""))

    # 1. the default run: no surfaces, every file inside the budget
    r = run("nlsq", "--config", cfg, "--out", "out")
    check(r.returncode == 0, f"nlsq: {r.stderr[-800:]}")
    d = os.path.join(TMP, "out", "nlsq")
    check(not has_surfaces(d), "no surfaces by default")
    h5 = os.path.getsize(os.path.join(d, "results.h5"))
    check(h5 <= H5_FIXED + N_PHI * H5_PER_ANGLE + N * H5_PER_FRAME,
          f"results.h5 {h5} B > {H5_FIXED} + {N_PHI} x {H5_PER_ANGLE} + {N} x {H5_PER_FRAME}")
    drawn = pngs(d)
    angle_pages = [n for n in drawn if n.startswith("c2_phi_")]
    check(len(angle_pages) == N_PHI and "overview.png" in drawn, f"pages {sorted(drawn)}")
    for name in angle_pages:
        check(len(drawn[name]) <= PNG_PER_ANGLE, f"{name}: {len(drawn[name])} B")
    report = os.path.getsize(os.path.join(d, "report.html"))
    check(report <= REPORT_MAX, f"report.html {report} B")
    # the report embeds no angle page: it grows by a link per angle
    page = open(os.path.join(d, "report.html"), encoding="utf-8").read()
    check(page.count("data:image/png;base64,") == 1, "only overview.png embedded")
    check(report < len(drawn["overview.png"]) * 4 // 3 + (64 << 10),
          f"report.html {report} B: the overview's base64 and text only")
    with h5py.File(os.path.join(d, "results.h5"), "r") as h:
        check(h["/data/first_frame"][()] == 3, "first_frame recorded")
        check(h["/nlsq/stator_rotor_gap"][()] == 2000000, "gap recorded")
        check(h["/nlsq"].attrs["shear_model"] in (b"homodyne", "homodyne"), "shear model")

    # 2. plot DIR without surfaces: the data reloaded, the model recomputed, the same bytes
    shutil.rmtree(os.path.join(d, "plots"))
    r = run("plot", d)
    check(r.returncode == 0, f"plot DIR without surfaces: {r.stderr}")
    redrawn = pngs(d)
    check(sorted(redrawn) == sorted(drawn), f"redrawn pages {sorted(redrawn)}")
    for name, png in drawn.items():
        check(redrawn.get(name) == png, f"{name}: redrawn bytes differ from the fit's")

    # 3. surfaces on request: --surfaces, output.surfaces: full; --no-surfaces wins
    r = run("nlsq", "--config", cfg, "--out", "surf", "--surfaces", "--no-plots")
    ds = os.path.join(TMP, "surf", "nlsq")
    check(r.returncode == 0 and has_surfaces(ds), f"--surfaces: {r.stderr[-400:]}")
    surf_h5 = os.path.getsize(os.path.join(ds, "results.h5"))
    check(surf_h5 - h5 <= N_PHI * N * N * SURFACE_BYTES_PER_CELL,
          f"surfaces take {surf_h5 - h5} B for {N_PHI * N * N} cells")
    full = write("full.yaml", CONFIG.format(data=data, end=end, values=TRUTH,
                                            extra="output: {surfaces: full}\n"))
    r = run("nlsq", "--config", full, "--out", "cfg_full", "--no-plots")
    check(r.returncode == 0 and has_surfaces(os.path.join(TMP, "cfg_full", "nlsq")),
          f"output.surfaces: full: {r.stderr[-400:]}")
    r = run("nlsq", "--config", full, "--out", "cfg_none", "--no-plots", "--no-surfaces")
    check(r.returncode == 0 and not has_surfaces(os.path.join(TMP, "cfg_none", "nlsq")),
          "--no-surfaces wins over output.surfaces: full")
    bad = write("bad.yaml", CONFIG.format(data=data, end=end, values=TRUTH,
                                          extra="output: {surfaces: some}\n"))
    r = run("nlsq", "--config", bad, "--out", "bad")
    check(r.returncode == 2 and "output.surfaces" in r.stderr and "none" in r.stderr
          and len(r.stderr.strip().splitlines()) == 1, f"bad output.surfaces: {r.stderr}")
    check(not os.path.exists(os.path.join(TMP, "bad")), "nothing written for a bad config")
    # plot DIR of a --surfaces result still reads them (no data file needed)
    os.rename(data, data + ".moved")
    r = run("plot", ds)
    check(r.returncode == 0 and len(pngs(ds)) == N_PHI + 1, f"plot from surfaces: {r.stderr}")
    r = run("plot", d)
    check(r.returncode == 1 and "--data FILE.h5" in r.stderr, f"data gone: {r.stderr}")
    r = run("plot", d, "--data", data + ".moved")
    check(r.returncode == 0 and pngs(d) == drawn, f"plot --data: {r.stderr}")
    os.rename(data + ".moved", data)

    # 1b. pages like `make demo`'s (5 angles x 400 frames, noise 0.002): the residual maps
    #     are noise at every display cell, the worst case for the encoder; each page
    #     inside the budget (they were 410-425 KB, issue 33 item 16)
    demo = os.path.join(TMP, "demo.h5")
    r = run("simulate", "--config", write("demo_truth.yaml", CONFIG.format(
        data=demo, end=402, values=TRUTH, extra="")), "--phi", "-60,-5,0,45,90",
        "--out", demo, "--noise", "0.002", "--seed", "1")
    check(r.returncode == 0, f"simulate demo-like: {r.stderr}")
    r = run("nlsq", "--config", write("demo_fit.yaml", CONFIG.format(
        data=demo, end=402, values=TRUTH, extra="")), "--out", "demo")
    demo_pages = {n: b for n, b in pngs(os.path.join(TMP, "demo", "nlsq")).items()
                  if n.startswith("c2_phi_")}
    check(r.returncode == 0 and len(demo_pages) == 5, f"demo-like fit: {r.stderr[-400:]}")
    for name, png in demo_pages.items():
        check(len(png) <= PNG_PER_ANGLE, f"demo-like {name}: {len(png)} B > {PNG_PER_ANGLE}")

    # 3b. more angles than the overview shows (12 > 10): the default draws the pages of the
    #     overview's 10 angles (first and last included), plotting.angle_pages: all every
    #     one, `xpcsfit plot DIR` every one; the report links the pages there are
    phis = ",".join(str(-80 + 14 * k) for k in range(12))
    many = os.path.join(TMP, "many.h5")
    r = run("simulate", "--config", write("many_truth.yaml", CONFIG.format(
        data=many, end=42, values=TRUTH, extra="")), "--phi", phis, "--out", many,
        "--noise", "0.001")
    check(r.returncode == 0, f"simulate 12 angles: {r.stderr}")
    mcfg = write("many.yaml", CONFIG.format(data=many, end=42, values=TRUTH, extra=""))
    r = run("nlsq", "--config", mcfg, "--out", "many")
    dm = os.path.join(TMP, "many", "nlsq")
    pages = sorted(n for n in pngs(dm) if n.startswith("c2_phi_"))
    check(r.returncode == 0 and len(pages) == 10, f"default: 10 angle pages, {pages}")
    check(pages[0].startswith("c2_phi_000_") and pages[-1].startswith("c2_phi_011_"),
          f"first and last angle drawn: {pages}")
    page = open(os.path.join(dm, "report.html"), encoding="utf-8").read()
    check(page.count('<a href="plots/c2_phi_') == 10, "the report links the 10 pages")
    allcfg = write("many_all.yaml", CONFIG.format(data=many, end=42, values=TRUTH,
                                                  extra="plotting: {angle_pages: all}\n"))
    r = run("nlsq", "--config", allcfg, "--out", "many_all")
    da = os.path.join(TMP, "many_all", "nlsq")
    every = pngs(da)
    check(r.returncode == 0 and len([n for n in every if n.startswith("c2_phi_")]) == 12,
          f"angle_pages: all: {sorted(every)}")
    default_pages = pngs(dm)
    for name in pages:  # the pages both draw are the same bytes
        check(every.get(name) == default_pages[name], f"{name}: all vs auto")
    r = run("plot", dm)
    redrawn = pngs(dm)
    check(r.returncode == 0 and sorted(redrawn) == sorted(every) and
          all(redrawn[n] == every[n] for n in every), f"plot DIR draws every angle: {r.stderr}")

    # 4. CMC folders (static; 2 shards: the consensus, corrected by the self-check; 1
    #    shard: the importance route): plot redraws the angle pages and corner.png (the
    #    run's bytes) and overview.png
    r = run("simulate", "--config", write("static.yaml", static_template(40, 3, 2).format(
        data="st.h5")), "--phi", "0,45,90", "--out", "st.h5", "--seed", "2")
    check(r.returncode == 0, f"simulate static: {r.stderr}")
    for shards in (2, 1):
        scfg = write(f"static{shards}.yaml",
                     static_template(40, 3, shards).format(data="st.h5"))
        out = f"cmc{shards}"
        r = run("fit", "--config", scfg, "--out", out)
        check(r.returncode == 0, f"fit, {shards} shards: {r.stderr[-800:]}")
        dc = os.path.join(TMP, out, "cmc")
        before = pngs(dc)
        redrawn_pages = [n for n in before if n.startswith("c2_phi_")] + ["corner.png"]
        for name in redrawn_pages + ["overview.png"]:
            os.remove(os.path.join(dc, "plots", name))
        r = run("plot", dc)
        check(r.returncode == 0, f"plot cmc folder, {shards} shards: {r.stderr}")
        after = pngs(dc)
        check(sorted(after) == sorted(before), f"cmc pages {sorted(after)} vs {sorted(before)}")
        for name in redrawn_pages:
            check(after.get(name) == before[name], f"cmc {shards} {name}: bytes differ")
    # fit's NLSQ step: no surfaces by default (checked above through plot), --surfaces
    check(not has_surfaces(os.path.join(TMP, "cmc1", "nlsq")), "fit: no surfaces by default")
    r = run("fit", "--config", scfg, "--out", "fit_surf", "--surfaces", "--no-plots")
    check(r.returncode == 0 and has_surfaces(os.path.join(TMP, "fit_surf", "nlsq")),
          f"fit --surfaces: {r.stderr[-400:]}")
    r = run("plot", "cmc2")  # the parent: nlsq/ and cmc/ both
    check(r.returncode == 0 and "cmc2/nlsq/plots" in r.stderr and
          "cmc2/cmc/plots" in r.stderr, f"plot of the parent: {r.stderr}")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
