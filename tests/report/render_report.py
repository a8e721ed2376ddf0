#!/usr/bin/env python3
"""Slow test (label slow, adr/0034): report.html of a small NLSQ fit, and the rings' page
DIR/nlsq/report.html of a per-ring fit of three simulated q rings (issue 26), rendered by
headless Chromium; neither screenshot may be blank. Exit 77 (skipped) without chromium
(`scripts/install-deps.sh --report` installs it)."""
import os
import shutil
import struct
import subprocess
import sys
import zlib

from small_configs import static_template
from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_render_report")


def png_pixels(path):
    """(width, height, rows of bytes, bytes per pixel) of an 8-bit non-interlaced PNG"""
    data = open(path, "rb").read()
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    if depth != 8 or interlace or color not in (0, 2, 6):
        raise ValueError(f"unexpected PNG format: depth {depth}, colour type {color}")
    bpp = {0: 1, 2: 3, 6: 4}[color]
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def render(browser, page, shot):
    """page rendered to shot by headless Chromium: not blank"""
    r = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox",
                        f"--screenshot={shot}", "--window-size=1200,2000", "file://" + page],
                       capture_output=True, text=True, timeout=1200)
    if not check(r.returncode == 0 and os.path.isfile(shot), f"chromium: {r.stderr[-600:]}"):
        return
    w, h, rows, bpp = png_pixels(shot)
    colours, ink = set(), 0
    for row in rows[::4]:
        for x in range(0, w * bpp, 4 * bpp):
            px = row[x:x + min(bpp, 3)]
            colours.add(px)
            ink += px != b"\xff" * len(px)
    print(f"{os.path.basename(page)} of {os.path.dirname(page)}: screenshot {w}x{h}, "
          f"{len(colours)} colours, {ink} sampled non-white pixels")
    check(len(colours) > 16, f"screenshot has only {len(colours)} colours")
    check(ink > 1000, f"screenshot nearly blank: {ink} non-white sampled pixels")


def main():
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("chromium not installed (scripts/install-deps.sh --report): skipped")
        return 77
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    data, cfg = os.path.join(TMP, "s.h5"), os.path.join(TMP, "c.yaml")
    with open(cfg, "w") as f:
        f.write(static_template(40, 3, 2).format(data=data))
    r = subprocess.run([XF, "simulate", "--config", cfg, "--phi", "0,45,90", "--out", data],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"simulate: {r.stderr}")
    out = os.path.join(TMP, "out")
    r = subprocess.run([XF, "nlsq", "--config", cfg, "--out", out], capture_output=True,
                       text=True)
    check(r.returncode == 0, f"nlsq: {r.stderr[-600:]}")
    render(browser, os.path.join(out, "nlsq", "report.html"), os.path.join(TMP, "out.png"))
    rings, rcfg = os.path.join(TMP, "rings.h5"), os.path.join(TMP, "rings.yaml")
    with open(rcfg, "w") as f:
        f.write(static_template(40, 3, 2, q="all").format(data=rings))
    r = subprocess.run([XF, "simulate", "--config", rcfg, "--phi", "0,45,90", "--q",
                        "0.003,0.0054,0.008", "--out", rings], capture_output=True, text=True)
    check(r.returncode == 0, f"simulate rings: {r.stderr}")
    r = subprocess.run([XF, "nlsq", "--config", rcfg, "--out", os.path.join(TMP, "rings")],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"nlsq rings: {r.stderr[-600:]}")
    render(browser, os.path.join(TMP, "rings", "nlsq", "report.html"),
           os.path.join(TMP, "rings.png"))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
