#!/usr/bin/env python3
"""report.html of an NLSQ and of a CMC result folder (docs/outputs.md, adr/0034): written
with the other files, plain HTML, the parameters with the numbers of parameters.json (CMC:
posterior mean, sd, 5-95 % interval; the self-check's k-hat) written to the precision
their uncertainty supports (2 significant digits of the uncertainty, the value rounded to
that place; adr/0062), with a unit column, every column head labelled, no row twice (one
angle: the scalar contrast is the coefficient), the summary pages (overview, corner,
forest) embedded as data URIs of the same bytes and every other plots/*.png linked
relatively (adr/0059), user text escaped, no plots section with --no-plots."""
import base64
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys

from small_configs import static_template
from tally import check, summary
from waits import RUN_GUARD_S

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_report_html")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

# a data folder whose name needs escaping in HTML text and attributes
ODD = 'data <b>&amp; "q"'


def run(*args):
    return subprocess.run([XF, *args], capture_output=True, text=True, errors="replace",
                          timeout=RUN_GUARD_S)


def setup():
    folder = os.path.join(TMP, ODD)
    os.makedirs(folder)
    data = os.path.join(folder, "s.h5")
    cfg = os.path.join(TMP, "c.yaml")
    with open(cfg, "w") as f:
        f.write(static_template(40, 3, 2).format(data=data))
    r = run("simulate", "--config", cfg, "--phi", "0,45,90", "--out", data, "--seed", "2")
    check(r.returncode == 0, f"simulate: {r.stderr}")
    return cfg, data


def cell(page, name, n=2):
    """the first n number cells of parameter row name (value, uncertainty[, interval])"""
    m = re.search(r'<tr><th>' + re.escape(html.escape(name)) + r'</th>' +
                  r'<td class="num">([^<]*(?:&ndash;[^<]*)?)</td>' * n, page)
    return m.groups() if m else None


def number(text):
    return None if text == "&mdash;" else float(text)


def place(u):
    """the decimal place of the last of u's 2 significant digits (util/numfmt.c)"""
    p = math.floor(math.log10(u)) - 1
    return p + 1 if round(u / 10.0 ** p) >= 100 else p


def shown(text, x, u):
    """text is x to the precision u supports: rounded to u's place, or 6 digits without u"""
    if x is None:
        return text == "&mdash;"
    if u is None:
        return text == f"{x:.6g}"
    p = place(u)
    return abs(float(text) - x) <= 0.5 * 10.0 ** p * (1 + 1e-9)


def two_digits(text):
    """an uncertainty shows 2 significant digits ("0.00098", "6300", "4.3e-06", "10")"""
    mantissa = text.split("e")[0].replace("-", "").replace(".", "").lstrip("0")
    return len(mantissa) == 2 or (len(mantissa) > 2 and set(mantissa[2:]) == {"0"}
                                  and "." not in text)


def check_table(page, p):
    """one parameter table: every head labelled, a unit column, no row twice"""
    table = page[page.index("<h2>Parameters</h2>"):]
    table = table[:table.index("</table>")]
    heads = re.findall(r"<th>([^<]*)</th>", table[:table.index("</thead>")])
    check(heads and all(h.strip() for h in heads), f"every column head labelled: {heads}")
    check("unit" in heads and "note" in heads, f"unit and note columns: {heads}")
    rows = re.findall(r"<tr><th>([^<]*)</th>", table[table.index("</thead>"):])
    check(len(rows) == len(set(rows)), f"no parameter row twice: {rows}")
    values = {}
    for row in re.findall(r"<tr><th>[^<]*</th>.*?</tr>", table[table.index("</thead>"):]):
        cells = re.findall(r"<td[^>]*>([^<]*(?:&ndash;[^<]*)?)</td>", row)
        name = re.match(r"<tr><th>([^<]*)</th>", row).group(1)
        values[name] = cells
    units = p["parameter_units"]
    for name, cells in values.items():
        # the SI "1" of parameters.json is "dimensionless" in the table (issue 33 item 15)
        want = units.get(name, "")
        want = "dimensionless" if want == "1" else want
        check(cells[-2] == html.escape(want),
              f"{name}: unit {cells[-2]!r} is parameters.json's {units.get(name)!r}")
    # two rows whose numbers are all equal are the same row under two names
    shown_rows = [tuple(c[:-2]) for n, c in values.items() if not c[-1].startswith("angle")]
    check(len(shown_rows) == len(set(shown_rows)) or len(rows) <= 3,
          f"no two rows with the same numbers: {values}")


def check_page(d, page, plots):
    check(page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>"),
          "report.html is a whole HTML document")
    for tag in ("html", "head", "body", "table", "style"):
        check(page.count(f"<{tag}") == page.count(f"</{tag}>") > 0, f"<{tag}> balanced")
    check("<script" not in page.lower(), "no script")
    p = json.load(open(os.path.join(d, "parameters.json")))
    check(p["outputs"].get("report") == "report.html", "parameters.json outputs.report")
    cmc = p.get("method") == "cmc"
    for name, e in p["parameters"].items():
        c = cell(page, name, 3 if cmc else 2)
        if not check(c is not None, f"parameter row {name}"):
            continue
        # NLSQ: value ± uncertainty; CMC: posterior mean ± sd (the same names, adr/0062)
        # and the 5-95 % interval, each to the place of the uncertainty's 2nd digit
        value = e["value"]
        unc = None if e.get("fixed") else e["uncertainty"]
        check(shown(c[0], value, unc), f"{name} value {c[0]} is not {value} +/- {unc}")
        check(unc is None and c[1] == "&mdash;" or
              unc is not None and shown(c[1], unc, unc) and two_digits(c[1]),
              f"{name} uncertainty {c[1]} is not {unc} to 2 digits")
        if cmc and "q05" in e:
            lo, hi = c[2].split(" &ndash; ")
            check(shown(lo, e["q05"], unc) and shown(hi, e["q95"], unc),
                  f"{name} interval {c[2]} != {e['q05']}..{e['q95']}")
        if cmc and not e.get("fixed"):
            check(e["value"] == e["mean"] and e["uncertainty"] == e["std"],
                  f"{name}: mean/std are aliases of value/uncertainty")
    check_table(page, p)
    if cmc:
        ck = p["consensus_check"]
        check(ck is not None and f"Pareto k {ck['khat']:.3g}" in page,
              "the consensus self-check's k-hat is in the CMC report")
        sh = p["shards"]
        check(f"<th>shards kept</th><td>{sh['kept']} of {sh['planned']}</td>" in page,
              "shards kept, of planned")
        check(f"<td>{p['combination']['method']}</td>" in page, "combination rule")
    check(p["status"] in page and p["quality"]["overall"] in page, "status and quality")
    for reason in p["quality"]["reasons"]:
        check(html.escape(reason) in page, f"quality reason {reason!r}")
    # the data path, escaped in text; never raw
    check(html.escape(p["data"]["file"]) in page, "data file escaped")
    check(ODD not in page and "<b>" not in page, "raw user text never in the page")
    for word in ("HDF5", p["xpcsfit_version"], "Timing", "per-angle mode", "frames",
                 "points", "angles"):
        check(word in page, f"report mentions {word}")
    uris = re.findall(r'<img alt="([^"]*)" src="data:image/png;base64,([A-Za-z0-9+/=]*)"',
                      page)
    embedded = {html.unescape(n): base64.b64decode(b, validate=True) for n, b in uris}
    if plots:
        check("<h2>Plots</h2>" in page, "plots section")
        pngs = sorted(f for f in os.listdir(os.path.join(d, "plots")) if f.endswith(".png"))
        summary_pages = {"overview.png", "corner.png", "forest.png"}
        check(len(pngs) >= 4 and sorted(embedded) == sorted(summary_pages & set(pngs)),
              f"the summary pages embedded: {sorted(embedded)} of {pngs}")
        for f in pngs:
            if f in summary_pages:
                with open(os.path.join(d, "plots", f), "rb") as fh:
                    check(embedded.get(f) == fh.read(), f"{f}: data URI bytes equal the file")
            else:  # linked: opened beside the folder's plots/
                check(f'<a href="plots/{html.escape(f)}"><img alt="{html.escape(f)}" '
                      f'src="plots/{html.escape(f)}" loading="lazy"></a>' in page,
                      f"{f}: linked relatively")
    else:
        check("<h2>Plots</h2>" not in page and not uris, "no plots section with --no-plots")


def main():
    cfg, data = setup()
    for plots in (1, 0):
        out = os.path.join(TMP, f"out{plots}")
        extra = [] if plots else ["--no-plots"]
        r = run("nlsq", "--config", cfg, "--data", data, "--out", out, *extra)
        check(r.returncode == 0, f"nlsq exit {r.returncode}: {r.stderr[-600:]}")
        d = os.path.join(out, "nlsq")
        path = os.path.join(d, "report.html")
        if not check(os.path.isfile(path), "report.html written"):
            continue
        check(not os.path.exists(os.path.join(d, "INCOMPLETE")), "folder complete")
        check(not [f for f in os.listdir(d) if ".tmp." in f], "no temporary file left")
        with open(path, encoding="utf-8") as f:
            check_page(d, f.read(), plots)
    # one angle: the scalar contrast/offset rows are the fitted coefficients, shown once
    # (before: contrast and contrast_000 with the same numbers)
    one = os.path.join(TMP, "one.h5")
    r = run("simulate", "--config", cfg, "--phi", "0", "--out", one, "--seed", "3")
    check(r.returncode == 0, f"simulate one angle: {r.stderr}")
    out = os.path.join(TMP, "one")
    r = run("nlsq", "--config", cfg, "--data", one, "--out", out, "--no-plots")
    check(r.returncode == 0, f"nlsq one angle exit {r.returncode}: {r.stderr[-600:]}")
    d = os.path.join(out, "nlsq")
    with open(os.path.join(d, "report.html"), encoding="utf-8") as f:
        page = f.read()
    check_page(d, page, 0)
    check("contrast_000" not in page, "one angle: no contrast_000 row beside contrast")
    # the CMC result of the same data, warm-started from the first NLSQ folder (2 shards:
    # the consensus self-check runs)
    out = os.path.join(TMP, "out1")
    r = run("cmc", "--config", cfg, "--data", data, "--nlsq", os.path.join(out, "nlsq"),
            "--out", out)
    check(r.returncode == 0, f"cmc exit {r.returncode}: {r.stderr[-600:]}")
    d = os.path.join(out, "cmc")
    path = os.path.join(d, "report.html")
    if check(os.path.isfile(path), "cmc report.html written"):
        with open(path, encoding="utf-8") as f:
            page = f.read()
        check_page(d, page, 1)
        for name in ("corner.png", "forest.png", "trace_shard000.png"):
            check(f'alt="{name}"' in page, f"CMC plot {name} embedded")
    return summary()


if __name__ == "__main__":
    sys.exit(main())
