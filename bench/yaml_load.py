#!/usr/bin/env python3
"""Issue #24 item 8: how long the YAML config loader takes on configs with many anchors
and aliases (configs up to 64 MiB are allowed). Writes each shape below under an unknown
top-level key of a minimal config, runs `xpcsfit validate --config` on it and prints the
wall time, the exit code and the first error line. Asserts nothing (no timed tests); the
loader's caps are tested by the bad_inputs cases (config_alias_bomb, config_nodes_cap).

Shapes:
  anchors N      N distinct anchors, each aliased once (the issue's 50 k / 100 k)
  one_anchor N   one anchor aliased N times
  chain N        a0: &a0 [x], a1: &a1 [*a0], ... (each alias copies a longer chain)
  merges N       N anchored maps each merged once into its own mapping (<<: *dK)
  merge_chain N  d0: &d0 {k0: 0}, d1: &d1 {<<: *d0, k1: 1}, ... (merges of merges)
  plain N        N plain scalars in one list (no aliases: the parser alone)

Usage: yaml_load.py [--sizes 50000,100000] [--shapes anchors,one_anchor,...]
Environment: XF_BINARY, XF_TMP.
"""
import argparse
import os
import subprocess
import sys
import time

HEAD = "analysis_mode: static\n"


def anchors(n):
    return "x_anchors:\n" + "".join("  a%d: &a%d v%d\n  b%d: *a%d\n" % (k, k, k, k, k)
                                    for k in range(n))


def one_anchor(n):
    return "x_one: &one value\nx_uses:\n" + "".join("  - *one\n" for _ in range(n))


def chain(n):
    lines = ["  a0: &a0 [x]\n"] + ["  a%d: &a%d [*a%d]\n" % (k, k, k - 1) for k in range(1, n)]
    return "x_chain:\n" + "".join(lines)


def merges(n):
    return "x_merges:\n" + "".join("  d%d: &d%d {k: %d}\n  m%d: {<<: *d%d, j: %d}\n"
                                   % (k, k, k, k, k, k) for k in range(n))


def merge_chain(n):
    lines = ["  d0: &d0 {k0: 0}\n"] + ["  d%d: &d%d {<<: *d%d, k%d: %d}\n" % (k, k, k - 1, k, k)
                                      for k in range(1, n)]
    return "x_merge_chain:\n" + "".join(lines)


def plain(n):
    return "x_plain: [" + ",".join("1" for _ in range(n)) + "]\n"


SHAPES = {"anchors": anchors, "one_anchor": one_anchor, "chain": chain, "merges": merges,
          "merge_chain": merge_chain, "plain": plain}


def run(xf, path):
    t0 = time.perf_counter()
    proc = subprocess.run([xf, "validate", "--config", path], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    errors = [l for l in proc.stderr.splitlines() if "error:" in l]
    return wall, proc.returncode, errors[0] if errors else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="50000,100000")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    args = ap.parse_args()
    xf = os.environ["XF_BINARY"]
    tmp = os.environ.get("XF_TMP", "/tmp/xpcsfit_bench")
    os.makedirs(tmp, exist_ok=True)
    path = os.path.join(tmp, "yaml_load.yaml")
    print("%-11s %8s %9s %8s %3s  %s" % ("shape", "n", "bytes", "wall_s", "rc", "first error"))
    for shape in args.shapes.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            text = HEAD + SHAPES[shape](n)
            with open(path, "w") as f:
                f.write(text)
            wall, rc, err = run(xf, path)
            print("%-11s %8d %9d %8.3f %3d  %s" % (shape, n, len(text), wall, rc, err[:90]))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
