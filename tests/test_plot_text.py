#!/usr/bin/env python3
"""The plots a person reads (issue 33 item 15, adr/0077): with XF_PLOT_TEXT_LOG=path every
string a page draws is logged with the pixels its ink covers (measured by drawing it
alone in PLplot, src/plot/pltext.c), and the frames of its panels. On laminar fits at 1, 3
and 23 angles (every angle page), on a 7-parameter laminar posterior (corner, traces,
ranks, forest, overview), on the data pages of `plot --config` and on a joint fit, every
page is checked:
  - every PNG of plots/ logged its page, with text on it;
  - every string lies inside the page (a title line clipped at both edges lost "D0 =");
  - no two strings of a page overlap, tick labels keep a gap between them ("0.01150.01");
  - no string sits on a panel's frame (the corner's ρ did), each is inside or outside;
  - no unit "1" is printed (alpha, beta have none); report.html says "dimensionless";
  - the joint report's per-angle rows name their ring's q.
Small problems (40 frames, short chains): the checks are about layout, not numbers."""
import collections
import glob
import os
import re
import shutil
import subprocess
import sys

from tally import check, summary
from waits import RUN_GUARD_S

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_plot_text")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

CONFIG = """analysis_mode: laminar_flow
experimental_data:
  file_path: {data}
analyzer_parameters:
  dt: 0.001
  end_frame: 40
  scattering: {{wavevector_q: 0.0054}}
  geometry: {{stator_rotor_gap: 2000000}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset, gamma_dot_t0, beta, gamma_dot_t_offset, phi0]
  values: [1000, -1.3, 5.0, 0.01, -0.2, 0.0005, 1.0]
plotting: {{angle_pages: all}}
optimization:
  cmc:
    seed: 3
    sharding: {{num_shards: 2}}
    per_shard_mcmc: {{num_warmup: 60, num_samples: 60, num_chains: 2}}
    # chains this short rarely pass the checks: keep the shards, the pages are the point
    validation: {{max_per_shard_rhat: 100, max_divergence_rate: 1}}
    combination: {{min_success_rate: 0.01}}
"""
GAP_TICK_PX = 3.0  # tick labels side by side keep at least this much between them
SLACK_PX = 1.0  # measured ink vs. computed reference points: a pixel of rounding


def run(*args, log=None):
    env = dict(os.environ)
    env.pop("XF_PLOT_TEXT_LOG", None)
    if log:
        env["XF_PLOT_TEXT_LOG"] = log
    return subprocess.run([XF, *args], capture_output=True, text=True, cwd=TMP, env=env,
                          timeout=RUN_GUARD_S)


def read_log(path):
    """{page: (width, height, [(kind, x0, x1, y0, y1, text)])}, the last drawing of each"""
    pages = collections.OrderedDict()
    if not os.path.exists(path):
        return pages
    for line in open(path, encoding="utf-8"):
        f = line.rstrip("\n").split("\t")
        if len(f) < 8:
            continue
        page, kind, x0, x1, y0, y1, text = f[0], f[1], *map(float, f[2:6]), f[7]
        if kind == "page":
            pages[page] = (x1, y1, [])
        elif page in pages:
            pages[page][2].append((kind, x0, x1, y0, y1, text))
    return pages


def overlap(a, b, grow=0.0):
    ox = min(a[2], b[2]) - max(a[1], b[1]) + 2 * grow
    oy = min(a[4], b[4]) - max(a[3], b[3]) + 2 * grow
    return ox > SLACK_PX and oy > SLACK_PX


def on_frame(t, f):
    """t touches frame f's edge lines: it meets the frame's rectangle but is not inside
    it with a margin"""
    m = 2.0
    meets = t[1] < f[2] + m and t[2] > f[1] - m and t[3] < f[4] + m and t[4] > f[3] - m
    inside = t[1] > f[1] + m and t[2] < f[2] - m and t[3] > f[3] + m and t[4] < f[4] - m
    return meets and not inside


def check_pages(what, log, plots_dir):
    pages = read_log(log)
    pngs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(plots_dir, "*.png")))
    check(pngs and all(p in pages for p in pngs),
          f"{what}: every page logged its text: {[p for p in pngs if p not in pages]}")
    for page in pngs:
        if page not in pages:
            continue
        w, h, items = pages[page]
        texts = [i for i in items if i[0] in ("text", "tick")]
        frames = [i for i in items if i[0] == "frame"]
        check(texts, f"{what} {page}: no text logged")
        for t in texts:
            check(t[1] >= -SLACK_PX and t[3] >= -SLACK_PX and t[2] <= w + SLACK_PX and
                  t[4] <= h + SLACK_PX,
                  f"{what} {page}: off the page ({t[1]:.0f}..{t[2]:.0f} x {t[3]:.0f}.."
                  f"{t[4]:.0f} of {w:.0f} x {h:.0f}): {t[5]!r}")
            check(not re.search(r" = .*\s{2,}1$", t[5]),  # "alpha = -1.3 ± 0.1   1"
                  f"{what} {page}: a unit \"1\": {t[5]!r}")
            for f in frames:
                check(not on_frame(t, f), f"{what} {page}: on a frame: {t[5]!r}")
        for i, a in enumerate(texts):
            for b in texts[i + 1:]:
                grow = GAP_TICK_PX / 2 if a[0] == b[0] == "tick" else 0.0
                check(not overlap(a, b, grow),
                      f"{what} {page}: [{a[0]}] {a[5]!r} and [{b[0]}] {b[5]!r} overlap")
    return pages


def laminar(n_phi, name):
    data = os.path.join(TMP, f"{name}.h5")
    phis = ",".join(f"{-88 + 176 * k / max(n_phi - 1, 1):.1f}" for k in range(n_phi))
    cfg = os.path.join(TMP, f"{name}.yaml")
    with open(cfg, "w") as f:
        f.write(CONFIG.format(data=data))
    r = run("simulate", "--config", cfg, "--phi", phis, "--out", data, "--noise", "0.002",
            "--seed", "5")
    if r.returncode != 0:
        sys.exit(f"simulate {name}: {r.stderr}")
    return cfg


def main():
    # NLSQ at 1, 3 and 23 angles: every angle page, the overview
    for n_phi in (1, 3, 23):
        name = f"lam{n_phi}"
        cfg = laminar(n_phi, name)
        log = os.path.join(TMP, f"{name}.log")
        r = run("nlsq", "--config", cfg, "--out", name, log=log)
        check(r.returncode in (0, 1), f"nlsq {n_phi} angles: {r.stderr[-600:]}")
        plots = os.path.join(TMP, name, "nlsq", "plots")
        pages = check_pages(f"{n_phi} angles", log, plots)
        angle = [p for p in pages if p.startswith("c2_phi_")]
        check(len(angle) == n_phi, f"{n_phi} angles: angle pages {angle}")
        for p in angle:  # the values' line (lines) with D0 first, inside the page
            check(any(t[5].startswith("D#d0#u = ") for t in pages[p][2]),
                  f"{n_phi} angles {p}: no D0 value line")

    # the data alone (`xpcsfit plot --config`): its angle pages and overview
    cfg = laminar(3, "data3")
    log = os.path.join(TMP, "data3.log")
    r = run("plot", "--config", cfg, "--out", "data3", log=log)
    check(r.returncode == 0, f"plot --config: {r.stderr[-600:]}")
    check_pages("data pages", log, os.path.join(TMP, "data3", "data_plots"))

    # a 7-parameter laminar posterior: corner, traces, ranks, forest, overview
    cfg = laminar(3, "post")
    log = os.path.join(TMP, "post.log")
    r = run("fit", "--config", cfg, "--out", "post", log=log)
    check(r.returncode in (0, 1), f"fit: {r.stderr[-600:]}")
    plots = os.path.join(TMP, "post", "cmc", "plots")
    pages = check_pages("posterior", log, plots)
    for page in ("corner.png", "forest.png", "trace_shard000.png", "rank_shard000.png"):
        check(page in pages, f"posterior: {page} drawn")
    corner = pages.get("corner.png", (0, 0, []))[2]
    ticks = [t for t in corner if t[0] == "tick"]
    check(len(ticks) >= 2 * 7, f"corner: tick labels logged ({len(ticks)})")
    check(sum(t[5].startswith("ρ = ") for t in corner) == 21, "corner: 21 ρ labels")

    # the joint fit's report: per-angle rows name their ring; no unit "1" in the table
    rings = os.path.join(TMP, "rings.yaml")
    with open(rings, "w") as f:
        f.write("analysis_mode: static\nanalyzer_parameters:\n  dt: 0.001\n  end_frame: 30\n"
                "  scattering: {wavevector_q: all}\ninitial_parameters:\n"
                "  parameter_names: [D0, alpha, D_offset]\n  values: [3000.0, -1.2, 0.0]\n"
                "optimization:\n  nlsq:\n    anti_degeneracy: {per_angle_mode: individual}\n")
    r = run("simulate", "--config", rings, "--q", "0.003,0.0054", "--phi", "0,45",
            "--out", "rings.h5", "--noise", "0.002", "--seed", "2")
    check(r.returncode == 0, f"simulate rings: {r.stderr}")
    r = run("nlsq", "--joint", "--config", rings, "--data", "rings.h5", "--out", "rings",
            "--no-plots")
    check(r.returncode in (0, 1), f"nlsq --joint: {r.stderr[-600:]}")
    page = open(os.path.join(TMP, "rings", "nlsq_joint", "report.html"),
                encoding="utf-8").read()
    rows = re.findall(r"<tr><th>(contrast_\d+|offset_\d+)</th>(.*?)</tr>", page, re.S)
    check(len(rows) == 8, f"joint report: 4 contrast and 4 offset rows: {len(rows)}")
    for name, row in rows:
        check(re.search(r"ring [12] \(q = 0\.00(3|54) Å⁻¹\), angle φ = ", row),
              f"joint report: {name} does not name its ring: {row}")
    table = page[page.find('<table class="params">'):]
    table = table[:table.find("</table>")]
    check(table and "<td>1</td>" not in table and "<td>dimensionless</td>" in table,
          "report.html: the unit column says \"dimensionless\", never \"1\"")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
