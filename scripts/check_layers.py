#!/usr/bin/python3
"""check_layers.py — every `#include "..."` of src/, include/xpcsfit/ and mpi/ goes down
the floors of adr/0044, never up or sideways; the build runs it before any library is
compiled, so a wrong-way include fails the build with one line per offence:

    src/io/x.c includes plot/y.h: io may not include plot (floors: ...)

Usage: check_layers.py [ROOT]   (ROOT: the source tree, default: this script's parent's)
Exit 0 when every include goes down (or stays on its floor), 1 otherwise.
"""
import os
import re
import sys

# Floors, top to bottom. Directories on one line are peers: each may include the floors
# below, neither includes the other. Record a change in adr/0044.
FLOORS = [
    ["mpi"],
    ["cli", "gpu/tool"],
    ["config"],
    ["services"],  # what a command runs, from the request and options (adr/0111)
    ["outputs"],
    ["io", "plot"],
    ["surface"],
    ["cmc", "nlsq"],  # the methods: peers since the posterior starts from an estimate
    ["likelihood"],
    ["gpu"],
    ["data"],
    ["vdev"],
    ["device"],
    ["estimate"],
    ["model"],
    ["simd"],
    ["util"],
]

# The public headers (include/xpcsfit/NAME.h) on the floor of the module that owns them.
PUBLIC = {
    "results_config.h": "cli",
    "outputs.h": "outputs",
    "plot.h": "plot",
    "results.h": "io",
    "cmc.h": "cmc",
    "nlsq.h": "nlsq",
    "likelihood.h": "likelihood",
    "dataset.h": "data",
    "config.h": "config",
    "vdev.h": "vdev",
    "estimate.h": "estimate",
    "quality.h": "estimate",
    "appendix.h": "estimate",
    "cmc_appendix.h": "estimate",
    "model.h": "model",
    "params.h": "model",
    "options.h": "model",  # the methods' typed options (adr/0043)
    "request.h": "model",  # the problem request: types only (adr/0043)
    "selection.h": "model",  # what data/ selects: types only (adr/0043)
    "dist.h": "util",
    "error.h": "util",
    "rng.h": "util",
}

# Nothing below cli/ reads the raw config (architecture.md): every floor under cli/ but
# config/ itself. data/ and likelihood/ joined with the problem request, nlsq/ and cmc/
# when their option structs moved to options.h (adr/0043).
CONFIG_HEADER = "xpcsfit/config.h"
CONFIG_FREE = ["services", "outputs", "io", "plot", "surface", "cmc", "nlsq", "likelihood", "gpu", "data",
               "vdev", "device", "estimate", "model", "simd", "util"]

# The result files take a method's estimate and appendix (estimate.h, appendix.h,
# cmc_appendix.h), never the method's own result type (issue 35, adr/0107, adr/0109): the
# methods' headers and internals are refused on these floors.
METHOD_RESULT_HEADERS = ["xpcsfit/nlsq.h", "xpcsfit/cmc.h"]
METHOD_INTERNALS = ["nlsq/", "cmc/"]
RESULT_FREE = ["outputs", "io", "plot"]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def rank_of():
    rank = {}
    for r, names in enumerate(FLOORS):
        for n in names:
            rank[n] = r
    return rank


def floor_of_path(rel):
    """floor of a file, by its path relative to the root (None: not checked)"""
    parts = rel.split("/")
    if parts[0] == "mpi":
        return "mpi"
    if parts[0] == "include" and len(parts) == 3 and parts[1] == "xpcsfit":
        return PUBLIC.get(parts[2])
    if parts[0] == "src" and len(parts) >= 3:
        if parts[1] == "gpu" and parts[2] == "tool":
            return "gpu/tool"
        return parts[1]
    return None


def floor_of_include(inc, here):
    """floor of an included file as written in #include "inc" (None: outside the tree)"""
    parts = inc.split("/")
    if parts[0] == "xpcsfit" and len(parts) == 2:
        return PUBLIC.get(parts[1], "?")
    if len(parts) == 1:  # beside the including file
        return here
    if parts[0] == "gpu" and len(parts) > 2 and parts[1] == "tool":
        return "gpu/tool"
    return parts[0]


def files(root):
    for top in ("src", "include/xpcsfit", "mpi"):
        for d, _, fs in os.walk(os.path.join(root, top)):
            for f in sorted(fs):
                if f.endswith((".c", ".h", ".cu")):
                    yield os.path.relpath(os.path.join(d, f), root)


def check(root):
    rank = rank_of()
    order = " > ".join(", ".join(n) for n in FLOORS)
    problems = []
    for rel in sorted(files(root)):
        here = floor_of_path(rel)
        if here is None:
            continue
        if here not in rank:
            problems.append(f"{rel}: directory {here} is on no floor (floors: {order})")
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for line in lines:
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            there = floor_of_include(inc, here)
            if there == "?":
                problems.append(f"{rel} includes {inc}: a public header on no floor "
                                f"(add it to PUBLIC in scripts/check_layers.py)")
                continue
            if there not in rank or there == here:
                continue  # outside the tree (tests/support) or its own floor
            if rank[there] < rank[here]:
                problems.append(f"{rel} includes {inc}: {here} may not include {there} "
                                f"(floors: {order})")
            elif rank[there] == rank[here]:
                problems.append(f"{rel} includes {inc}: {here} may not include {there}, "
                                f"its peer (floors: {order})")
            if here in RESULT_FREE and (inc in METHOD_RESULT_HEADERS or
                                        inc.startswith(tuple(METHOD_INTERNALS))):
                problems.append(f"{rel} includes {inc}: {here} may not see a method's result "
                                f"(it takes the estimate and the appendix; adr/0107)")
            if inc == CONFIG_HEADER and here in CONFIG_FREE:
                problems.append(f"{rel} includes {inc}: {here} may not read the config "
                                f"(only cli/ and above build from it; adr/0044)")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
