"""test_report_rings.py — the pages of several q rings (issue 26): DIR/nlsq/report.html
of a per-ring run (a row per ring with the numbers of rings.json to the digits their sd
supports, links to each ring's own page that resolve, failed rings shown failed, the
weighted mean and chi2/dof of constancy recomputed here, params_vs_q.png embedded, none
with --no-plots, the same bytes for --threads 1 and 2, none on an interrupted run);
DIR/cmc/report.html of a per-ring CMC; the "Rings" section of nlsq_joint/report.html
(every ring's angles, chi2, information share, own fit, leave-one-out sd and the FLAGGED
mark of the planted ring alone, the numbers of parameters.json) with nlsq_joint/
params_vs_q.png; the ring list of cmc_joint/report.html; the PNGs' sizes."""
import html.parser
import json
import math
import os
import shutil
import signal
import struct
import subprocess
import time

import h5py
import numpy as np
from scipy import stats

from aps_fixtures import binary, check, run, run_tests, tmp_dir
from waits import GUARD_S, read_until

T = os.path.join(tmp_dir(), "report_rings")
RINGS = [0.003, 0.0054, 0.008, 0.01]
FOLDERS = ["q_0.003", "q_0.0054", "q_0.008", "q_0.01"]
PHI = [0.0, 45.0, 90.0]
N = 40
PHYS = ["D0", "alpha", "D_offset"]
SHARED = os.path.join(T, "shared.h5")
PLANTED = os.path.join(T, "planted.h5")  # ring q 0.008 at 1.5x D0
PER = os.path.join(T, "per")
JOINT = os.path.join(T, "joint")


def cfg(name, q="all", extra=()):
    path = os.path.join(T, name + ".yaml")
    with open(path, "w") as f:
        f.write("\n".join(["analysis_mode: static", "analyzer_parameters:", "  dt: 0.001",
                           "  end_frame: %d" % N, "  scattering: {wavevector_q: %s}" % q,
                           "initial_parameters: {parameter_names: [D0, alpha, D_offset], "
                           "values: [3000, -1.2, 0]}"] + list(extra)) + "\n")
    return path


def simulate(out, *extra):
    rc, _, err = run(["simulate", "--config", cfg("sim"), "--phi",
                      ",".join("%g" % p for p in PHI), "--q",
                      ",".join("%g" % q for q in RINGS), "--out", out, "--force",
                      "--noise", "0.01", "--seed", "3"] + list(extra))
    check(rc == 0, "simulate: %s" % err)


def setup():
    shutil.rmtree(T, ignore_errors=True)
    os.makedirs(T)
    simulate(SHARED)
    other = os.path.join(T, "d0x15.h5")
    simulate(other, "--initial", "D0=4500")
    shutil.copy(SHARED, PLANTED)
    with h5py.File(PLANTED, "r+") as a, h5py.File(other, "r") as b:
        for m in range(2 * len(PHI) + 1, 3 * len(PHI) + 1):  # ring 2's maps, ring-major
            key = "xpcs/twotime/correlation_map/c2_%05d" % m
            a[key][...] = b[key][()]
    t0 = time.time()
    rc, _, err = run(["nlsq", "--config", cfg("fit"), "--data", PLANTED, "--out", PER,
                      "--threads", "1", "--force"])
    print("per-ring nlsq of 4 rings: %.2f s" % (time.time() - t0))
    check(rc == 0, "nlsq per ring: %d %s" % (rc, err))
    rc, _, err = run(["nlsq", "--config", cfg("fit"), "--data", PLANTED, "--out", JOINT,
                      "--joint", "--force"])
    check(rc == 0, "nlsq --joint: %d %s" % (rc, err))


class Page(html.parser.HTMLParser):
    """The tables of a page (rows of cell texts, each row's class and links), its h2
    headings, the images' sources and the links."""

    def __init__(self, path):
        super().__init__()
        self.tables, self.h2, self.imgs, self.links = [], [], [], []
        self._cell = self._row = None
        self._in_h2 = False
        with open(path, encoding="utf-8") as f:
            self.text = f.read()
        self.feed(self.text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"cls": a.get("class", ""), "rows": []})
        elif tag == "tr" and self.tables:
            self._row = {"cls": a.get("class", ""), "cells": [], "links": []}
            self.tables[-1]["rows"].append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "a":
            self.links.append(a.get("href", ""))
            if self._row is not None:
                self._row["links"].append(a.get("href", ""))
        elif tag == "img":
            self.imgs.append(a.get("src", ""))
        elif tag == "h2":
            self._in_h2 = True
            self.h2.append("")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row["cells"].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr":
            self._row = None
        elif tag == "h2":
            self._in_h2 = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._in_h2:
            self.h2[-1] += data

    def table(self, cls):
        found = [t for t in self.tables if t["cls"] == cls]
        check(len(found) == 1, "one table %s: %d" % (cls, len(found)))
        return found[0]["rows"]


def shown_matches(text, v, u):
    """text is "v ± u" written to u's 2 significant digits (util/numfmt.h)"""
    if u is None or not (u > 0):
        return abs(float(text) - v) <= 5e-6 * abs(v) + 1e-300
    sv, su = [float(s) for s in text.split(" ± ")]
    place = math.floor(math.log10(su)) - 1
    half = 0.5 * 10.0 ** place * (1 + 1e-9)
    return abs(su - u) <= half and abs(sv - v) <= half


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n", path + " is a PNG")
    return struct.unpack(">II", head[16:24])


def constancy(rings, name):
    """the page's reading aid, recomputed: weighted mean, sd, chi2/dof, p"""
    vs = [(r["parameters"][name]["value"], r["parameters"][name]["uncertainty"])
          for r in rings if r.get("folder") and not r["failed"]]
    w = [1 / (s * s) for _, s in vs]
    m = sum(wi * v for wi, (v, _) in zip(w, vs)) / sum(w)
    chi2 = sum(((v - m) / s) ** 2 for v, s in vs)
    return m, 1 / math.sqrt(sum(w)), chi2 / (len(vs) - 1), stats.chi2.sf(chi2, len(vs) - 1)


def test_per_ring_page():
    top = os.path.join(PER, "nlsq")
    page = Page(os.path.join(top, "report.html"))
    with open(os.path.join(top, "rings.json")) as f:
        rings = json.load(f)["rings"]
    rows = page.table("rings")
    head, body = rows[0]["cells"], rows[1:]
    check(len(body) == len(RINGS), "a row per ring: %d" % len(body))
    check(head[:6] == ["q (1/Å)", "folder", "status", "quality", "χ²r", "residual sd"],
          "head %s" % head)
    check(head[6:] == ["D0 (Å²/s^(1+α))", "alpha", "D_offset (Å²/s)"], "units %s" % head)
    for row, r, name in zip(body, rings, FOLDERS):
        c = row["cells"]
        check(float(c[0]) == round(r["q_per_A"], 8) and c[1] == name, "q, folder %s" % c)
        check(row["links"] == [name + "/report.html"], "link %s" % row["links"])
        check(os.path.isfile(os.path.join(top, row["links"][0])), "link resolves: " + name)
        check(c[2] == r["status"] and c[3] == r["quality"], "status %s" % c)
        check(float(c[4]) == float("%.6g" % r["reduced_chi_squared"]), "chi2r %s" % c[4])
        check(float(c[5]) == float("%.6g" % r["residual_sd"]), "residual sd %s" % c[5])
        for k, p in enumerate(PHYS):
            v = r["parameters"][p]
            check(shown_matches(c[6 + k], v["value"], v["uncertainty"]),
                  "%s %s: %s vs %r" % (name, p, c[6 + k], v))
    aid = page.table("constancy")[1:]
    check([a["cells"][0].split(" ")[0] for a in aid] == PHYS, "a row per free parameter")
    for a, p in zip(aid, PHYS):
        m, s, per_dof, pval = constancy(rings, p)
        c = a["cells"]
        check(shown_matches(c[1], m, s), "%s mean %s vs %g +/- %g" % (p, c[1], m, s))
        check(c[2] == "4" and abs(float(c[3].split(" ")[0]) - per_dof) <= 1e-3 * per_dof
              and c[3].endswith("(3)"), "%s chi2/dof %s vs %g" % (p, c[3], per_dof))
        check(abs(float(c[4]) - pval) <= 0.01 * pval, "%s p %s vs %g" % (p, c[4], pval))
        print("constancy %s: %s, chi2/dof %s, p %s: %s" % (p, c[1], c[3], c[4], c[5]))
    check("varies with q" in aid[0]["cells"][5], "D0 (planted ring) varies with q")
    check("one value" in aid[1]["cells"][5], "alpha one value across q")
    check("Σ w" in page.text.replace("&Sigma;", "Σ"), "the formula is on the page")
    check(len(page.imgs) == 1 and page.imgs[0].startswith("data:image/png;base64,"),
          "params_vs_q.png embedded")
    w, h = png_size(os.path.join(top, "params_vs_q.png"))
    print("per ring: report.html %d bytes, params_vs_q.png %dx%d, %d bytes"
          % (os.path.getsize(os.path.join(top, "report.html")), w, h,
             os.path.getsize(os.path.join(top, "params_vs_q.png"))))
    check(w == 1920 and 400 <= h <= 600, "params_vs_q.png %dx%d" % (w, h))
    for link in page.links:  # rings.csv, rings.json and each ring's page
        check(os.path.isfile(os.path.join(top, link)), "link resolves: " + link)


def test_same_bytes_over_threads():
    out = os.path.join(T, "per_t2")
    rc, _, err = run(["nlsq", "--config", cfg("fit"), "--data", PLANTED, "--out", out,
                      "--threads", "2", "--force"])
    check(rc == 0, "nlsq --threads 2: " + err)
    for f in ("report.html", "params_vs_q.png"):
        with open(os.path.join(PER, "nlsq", f), "rb") as a, \
                open(os.path.join(out, "nlsq", f), "rb") as b:
            check(a.read() == b.read(), f + ": the same bytes for --threads 1 and 2")


def test_failed_ring_no_plots():
    """A ring with NaN maps: its row says error (failed), no link; --no-plots: no image."""
    bad = os.path.join(T, "bad.h5")
    shutil.copy(SHARED, bad)
    with h5py.File(bad, "r+") as f:
        g = f["/xpcs/twotime/correlation_map"]
        for k in sorted(g.keys())[len(PHI):2 * len(PHI)]:  # ring 1 (q 0.0054)
            a = g[k][()]
            a[:] = np.nan
            g[k][...] = a
    out = os.path.join(T, "bad_out")
    rc, _, err = run(["nlsq", "--config", cfg("fit"), "--data", bad, "--out", out,
                      "--threads", "1", "--force", "--no-plots"])
    check(rc == 1, "exit 1: %d %s" % (rc, err))
    top = os.path.join(out, "nlsq")
    page = Page(os.path.join(top, "report.html"))
    body = page.table("rings")[1:]
    check(len(body) == 4, "every ring has a row, the failed one too")
    failed = body[1]
    check(failed["cls"] == "failed" and failed["links"] == [] and
          failed["cells"][2] == "error (failed)" and failed["cells"][6] == "—",
          "the failed ring: %s" % failed)
    check(all(r["cls"] == "" and len(r["links"]) == 1 for r in body[::2]), "others fine")
    check("3 of 4 converged" in page.text, "3 of 4 converged")
    check(page.imgs == [] and "--no-plots" in page.text, "no image with --no-plots")
    check(not os.path.exists(os.path.join(top, "params_vs_q.png")), "no PNG")


def test_no_page_without_result():
    """An interrupted per-ring run leaves no page; a q matching no ring writes no folder."""
    out = os.path.join(T, "interrupted")
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, XPCSFIT_TEST_PAUSE="summary:3600")
    p = subprocess.Popen([binary(), "nlsq", "--config", cfg("fit"), "--data", SHARED,
                          "--out", out, "--threads", "1", "-q"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    top = os.path.join(out, "nlsq")
    # the pause's line: the first ring's folder is complete and the run holds in its summary
    held, said = read_until(p.stderr, "test pause in summary")
    check(held and os.path.exists(os.path.join(top, "q_0.003", "run.log")),
          "the first ring finished, the run held in its summary: %s" % said[-300:])
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=GUARD_S)
    check(p.returncode == 130, "exit 130: %d" % p.returncode)
    check(not os.path.exists(os.path.join(top, "report.html")), "no page when interrupted")
    out = os.path.join(T, "nomatch")
    rc, _, err = run(["nlsq", "--config", cfg("nomatch", "[0.05, 0.06]"), "--data", SHARED,
                      "--out", out])
    check(rc != 0, "q matching no ring refused: %s" % err)
    check(not os.path.exists(os.path.join(out, "nlsq", "report.html")), "no page")


def test_joint_page():
    top = os.path.join(JOINT, "nlsq_joint")
    with open(os.path.join(top, "parameters.json")) as f:
        rings = json.load(f)["rings"]
    page = Page(os.path.join(top, "report.html"))
    check("Rings" in page.h2, "a Rings section: %s" % page.h2)
    rows = page.table("rings")
    body = rows[2:]  # two rows of heads
    check(len(body) == 4, "a row per ring: %d" % len(body))
    check(rows[1]["cells"] == PHYS + PHYS, "heads %s" % rows[1]["cells"])
    for row, r in zip(body, rings["rings"]):
        c = row["cells"]
        check(float(c[0]) == round(r["q"], 8), "q %s" % c[0])
        check(c[1] == "3: " + " ".join("%.2f°" % p for p in PHI), "angles %s" % c[1])
        check(float(c[2]) == float("%.6g" % r["chi_squared"]), "chi2 %s" % c[2])
        for k, p in enumerate(PHYS):
            check(c[3 + k] == "%.2f" % r["information_share"][p], "share %s" % c[3 + k])
            v = r["own_fit"][p]
            check(shown_matches(c[6 + k], v["value"], v["uncertainty"]),
                  "own fit %s %s vs %r" % (p, c[6 + k], v))
        loo = r["leave_one_out"]
        check(c[9] == "%.1f (%s)" % (loo["max_sd_from_others"], loo["parameter"]), c[9])
        flagged = r["q"] == 0.008
        check(loo["flagged"] == flagged, "parameters.json flags q 0.008 alone")
        check((c[10] == "FLAGGED") == flagged and (row["cls"] == "flagged") == flagged,
              "FLAGGED mark of q %g: %s" % (r["q"], c[10]))
    check(page.text.count("FLAGGED") == 1, "one FLAGGED mark")
    png = os.path.join(top, "params_vs_q.png")
    w, h = png_size(png)
    print("joint: report.html %d bytes, params_vs_q.png %dx%d, %d bytes"
          % (os.path.getsize(os.path.join(top, "report.html")), w, h, os.path.getsize(png)))
    check(w == 1920 and 400 <= h <= 600, "params_vs_q.png %dx%d" % (w, h))
    check(any(s.startswith("data:image/png;base64,") for s in page.imgs), "embedded")
    out = os.path.join(T, "joint_noplots")
    rc, _, err = run(["nlsq", "--config", cfg("fit"), "--data", PLANTED, "--out", out,
                      "--joint", "--force", "--no-plots"])
    check(rc == 0, "--joint --no-plots: " + err)
    check(not os.path.exists(os.path.join(out, "nlsq_joint", "params_vs_q.png")), "no PNG")
    page = Page(os.path.join(out, "nlsq_joint", "report.html"))
    check("Rings" in page.h2 and page.imgs == [], "Rings section, no image")


def test_cmc_pages():
    """cmc per ring: DIR/cmc/report.html with posterior means and links (the two high-q
    rings: their posteriors take the fast importance route); cmc --joint: the ring list
    (q, angles, first slot) of cmc_joint/report.html."""
    out = os.path.join(T, "cmc_per")
    rc, _, err = run(["cmc", "--config", cfg("cmc_per", "[0.008, 0.01]",
                                             ["optimization:", "  cmc:", "    seed: 7"]),
                      "--data", PLANTED, "--out", out, "--nlsq", PER, "--no-plots",
                      "--force"])
    check(rc == 0, "cmc per ring: %d %s" % (rc, err))
    top = os.path.join(out, "cmc")
    page = Page(os.path.join(top, "report.html"))
    with open(os.path.join(top, "rings.json")) as f:
        rings = json.load(f)["rings"]
    rows = page.table("rings")
    check(len(rows) == 3, "a row per ring")
    check(rows[0]["cells"][4:] == ["D0 (Å²/s^(1+α))", "alpha", "D_offset (Å²/s)"],
          "no chi2 columns for CMC: %s" % rows[0]["cells"])
    for row, r in zip(rows[1:], rings):
        check(os.path.isfile(os.path.join(top, row["links"][0])), "link " + row["links"][0])
        for k, p in enumerate(PHYS):
            v = r["parameters"][p]
            check(shown_matches(row["cells"][4 + k], v["value"], v["uncertainty"]),
                  "cmc %s %s" % (p, row["cells"][4 + k]))
    out = os.path.join(T, "cmc_joint")
    rc, _, err = run(["cmc", "--config", cfg("cmc"), "--data", PLANTED, "--out", out,
                      "--joint", "--nlsq", JOINT, "--no-plots", "--force"])
    check(rc == 0, "cmc --joint: %d %s" % (rc, err))
    page = Page(os.path.join(out, "cmc_joint", "report.html"))
    rows = page.table("rings")
    check([r["cells"][2] for r in rows[1:]] == ["0", "3", "6", "9"], "first slots")
    check([float(r["cells"][0]) for r in rows[1:]] == RINGS, "q")
    check(all(r["cells"][1].startswith("3: ") for r in rows[1:]), "angles")


if __name__ == "__main__":
    setup()
    raise SystemExit(run_tests([test_per_ring_page, test_same_bytes_over_threads,
                                test_failed_ring_no_plots, test_no_page_without_result,
                                test_joint_page, test_cmc_pages]))
