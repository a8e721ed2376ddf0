#!/usr/bin/env python3
"""The layer check (scripts/check_layers.py, adr/0044): the tree passes; a copy of it with
one planted wrong-way include fails with the one line that names the file, the header and
the rule; a planted config read in io/ fails too; a same-floor include (io and plot are
peers, cmc and nlsq too) fails; NLSQ's result header in io/ and CMC's in plot/ fail; an include down the
floors passes."""
import os
import shutil
import subprocess

from tally import check, summary

SRC = os.environ.get("XF_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_check_layers")
CHECKER = os.path.join(SRC, "scripts", "check_layers.py")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)


def run(root):
    return subprocess.run(["/usr/bin/python3", CHECKER, root], capture_output=True, text=True,
                          timeout=120)


def copy_tree(name):
    root = os.path.join(TMP, name)
    for top in ("src", "include", "mpi"):
        shutil.copytree(os.path.join(SRC, top), os.path.join(root, top))
    return root


def plant(root, rel, line):
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:
        f.write(line + "\n" + text)


def main():
    r = run(SRC)
    check(r.returncode == 0, f"the tree passes: rc {r.returncode}, {r.stderr.strip()}")

    # sideways: io and plot are peers
    root = copy_tree("sideways")
    plant(root, "src/io/json.c", '#include "plot/plot_internal.h"')
    r = run(root)
    check(r.returncode == 1, f"io including plot fails: rc {r.returncode}")
    lines = r.stderr.strip().splitlines()
    check(len(lines) == 1, f"one line per offence: {lines}")
    check(bool(lines) and lines[0].startswith(
        "src/io/json.c includes plot/plot_internal.h: io may not include plot"),
        f"the line names file, header and rule: {lines}")
    check("(floors: " in r.stderr, "the line lists the floors")

    root = copy_tree("upward")
    plant(root, "src/model/model.c", '#include "likelihood/pass_internal.h"')
    r = run(root)
    check(r.returncode == 1 and "model may not include likelihood" in r.stderr,
          f"model including likelihood fails: {r.stderr.strip()}")

    root = copy_tree("config")
    plant(root, "src/plot/plot_data.c", '#include "xpcsfit/config.h"')
    r = run(root)
    check(r.returncode == 1 and "plot may not read the config" in r.stderr,
          f"plot reading the config fails: {r.stderr.strip()}")

    # the methods are peers: the posterior starts from the NLSQ fit's estimate (adr/0106)
    root = copy_tree("methods")
    plant(root, "src/cmc/warm.c", '#include "xpcsfit/nlsq.h"')
    r = run(root)
    check(r.returncode == 1 and "cmc may not include nlsq, its peer" in r.stderr,
          f"cmc including nlsq fails: {r.stderr.strip()}")

    # the result files take the estimate and the appendix, not NLSQ's result (adr/0107)
    root = copy_tree("result")
    plant(root, "src/io/params_json.c", '#include "xpcsfit/nlsq.h"')
    r = run(root)
    check(r.returncode == 1 and "io may not see a method's result" in r.stderr,
          f"io including nlsq.h fails: {r.stderr.strip()}")

    # nor the posterior's (adr/0109): its files read the estimate and cmc_appendix.h
    root = copy_tree("result_cmc")
    plant(root, "src/plot/plot_cmc.c", '#include "xpcsfit/cmc.h"')
    r = run(root)
    check(r.returncode == 1 and "plot may not see a method's result" in r.stderr,
          f"plot including cmc.h fails: {r.stderr.strip()}")

    root = copy_tree("down")
    plant(root, "src/outputs/outputs_common.c", '#include "xpcsfit/model.h"')
    r = run(root)
    check(r.returncode == 0, f"an include down the floors passes: {r.stderr.strip()}")
    return summary()


if __name__ == "__main__":
    raise SystemExit(main())
