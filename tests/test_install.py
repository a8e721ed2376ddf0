#!/usr/bin/env python3
"""`make install` and the bash completion (docs/cli.md): `cmake --install BUILD --prefix TMP`
puts the program, the docs, the example configs and the completion under TMP; the
installed program runs; the completion script passes `bash -n` and, sourced, completes
subcommands, options (read from the subcommand's --help) and --config/--data files.
Issue 25: the design records the docs cite (adr/NNNN) are installed beside the docs and
every citation resolves there; the man pages (help2man, from --help) are installed and
hold every command and its options; the installed job scripts default to PREFIX/bin (a
prefix with a space and a quote), the scripts in the tree still to $HOME/xpcsfit/build.
Issue 26: the figures the docs show (docs/img/) are installed beside them."""
import glob
import os
import re
import shlex
import shutil
import subprocess

from tally import check, summary

XF = os.environ["XF_BINARY"]
SRC = os.environ["XF_SOURCE_DIR"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_install")
BUILD = os.path.dirname(XF)
COMPLETION = os.path.join(SRC, "scripts", "xpcsfit-completion.bash")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)


def complete(words, cwd):
    """COMPREPLY of _xpcsfit for the command line `words` (the last one being typed)."""
    arr = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    script = (f"source '{COMPLETION}'; COMP_WORDS=({arr}); COMP_CWORD={len(words) - 1}; "
              "_xpcsfit; printf '%s\\n' \"${COMPREPLY[@]}\"")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=cwd,
                       timeout=60)
    check(r.returncode == 0, f"completion of {words}: {r.stderr}")
    return [w for w in r.stdout.splitlines() if w]


def adr_citations(prefix):
    """Every adr/NNNN cited by an installed doc page resolves to an installed record."""
    docdir = os.path.join(prefix, "share/doc/xpcsfit")
    cited = set()
    for page in glob.glob(os.path.join(docdir, "*.md")):
        with open(page) as f:
            cited |= set(re.findall(r"adr/(\d{4})", f.read()))
    check(len(cited) >= 20, f"the docs cite the design records: {sorted(cited)}")
    for n in sorted(cited):
        found = glob.glob(os.path.join(docdir, "adr", f"{n}-*.md"))
        check(len(found) == 1, f"adr/{n} cited by the docs is not installed in {docdir}/adr")
    installed = len(glob.glob(os.path.join(docdir, "adr", "*.md")))
    in_tree = len(glob.glob(os.path.join(SRC, "adr", "*.md")))
    check(installed == in_tree, f"every record installed: {installed} of {in_tree}")


def doc_images(prefix):
    """Every image a doc page shows (![...](img/...)) is installed beside it."""
    docdir = os.path.join(prefix, "share/doc/xpcsfit")
    shown = []
    for page in glob.glob(os.path.join(docdir, "*.md")):
        with open(page) as f:
            shown += re.findall(r"!\[[^\]]*\]\(([^)]+)\)", f.read())
    check(len(shown) >= 2, f"the user guide shows the parameter-vs-q figures: {shown}")
    for rel in shown:
        check(os.path.isfile(os.path.join(docdir, rel)), f"{rel} shown by the docs, not installed")


def man_pages(prefix):
    """xpcsfit.1 (and xpcsfit-mpi.1 / xpcsfit-gpu.1 with their programs) made by help2man
    from --help: man renders it, with every command and the options of each."""
    man1 = os.path.join(prefix, "share/man/man1")
    page = os.path.join(man1, "xpcsfit.1")
    check(os.path.isfile(page), f"not installed: {page} (help2man: scripts/install-deps.sh)")
    for prog in ("xpcsfit-mpi", "xpcsfit-gpu"):
        if os.path.exists(os.path.join(BUILD, prog)):
            check(os.path.isfile(os.path.join(man1, prog + ".1")), f"{prog}.1 installed")
    if not os.path.isfile(page):
        return
    with open(page) as f:
        check("help2man" in f.read(), "xpcsfit.1 is made by help2man")
    if shutil.which("man"):
        r = subprocess.run(["man", "-l", page], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, MANWIDTH="100", MANPAGER="cat", PAGER="cat"))
        text = re.sub(r".\x08", "", r.stdout)
        check(r.returncode == 0, f"man -l xpcsfit.1: {r.stderr}")
    else:
        with open(page) as f:
            text = f.read().replace("\\-", "-").replace("\\&", "")
    for cmd in ("simulate", "validate", "nlsq", "cmc", "batch", "plot", "config", "version"):
        check(cmd in text, f"xpcsfit.1 lists the command {cmd}")
    for cmd in ("simulate", "validate", "nlsq", "cmc", "fit", "batch", "plot", "config"):
        check(f"xpcsfit {cmd}" in text, f"xpcsfit.1 has the options of {cmd}")
    for opt in ("--max-runs", "--resume", "--no-plots", "--threads", "--config"):
        check(opt in text, f"xpcsfit.1 shows {opt} (as typed, an ASCII hyphen)")
    check("EXIT STATUS" in text and "143" in text, "xpcsfit.1 says the exit codes")


def script_defaults(prefix):
    """The installed job scripts launch PREFIX/bin's programs without XPCSFIT_BIN_DIR; the
    scripts in the tree keep $HOME/xpcsfit/build; XPCSFIT_BIN_DIR still wins."""
    work = os.path.join(TMP, "jobs")
    os.makedirs(work, exist_ok=True)
    cfg, data, lst = (os.path.join(work, n) for n in ("c.yaml", "d.h5", "files.txt"))
    for p in (cfg, data):
        open(p, "w").close()
    with open(lst, "w") as f:
        f.write(data + "\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "PBS_", "XPCSFIT_"))}
    env.update(XPCSFIT_DRY_RUN="1", XPCSFIT_CONFIG=cfg, XPCSFIT_DATA=data, XPCSFIT_LIST=lst,
               XPCSFIT_MPI_FLAVOR="openmpi", SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_TASK_MIN="0",
               SLURM_ARRAY_TASK_COUNT="2", PBS_ARRAY_INDEX="0", OMP_NUM_THREADS="1")
    nodefile = os.path.join(work, "nodes")
    with open(nodefile, "w") as f:
        f.write("n1\n")
    env["PBS_NODEFILE"] = nodefile
    fake_home = os.path.join(work, "home")
    os.makedirs(os.path.join(fake_home, "xpcsfit", "build"), exist_ok=True)
    for prog in ("xpcsfit", "xpcsfit-mpi"):
        path = os.path.join(fake_home, "xpcsfit", "build", prog)
        open(path, "w").close()
        os.chmod(path, 0o755)
    has_mpi = os.path.exists(os.path.join(prefix, "bin", "xpcsfit-mpi"))
    for rel, prog in (("slurm/xpcsfit-mpi.sbatch", "xpcsfit-mpi"),
                      ("slurm/xpcsfit-batch-array.sbatch", "xpcsfit"),
                      ("pbs/xpcsfit-mpi.pbs", "xpcsfit-mpi"),
                      ("pbs/xpcsfit-batch-array.pbs", "xpcsfit")):
        if prog == "xpcsfit-mpi" and not has_mpi:
            continue
        script = os.path.join(prefix, "share/xpcsfit/cluster", rel)
        r = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60,
                           env=env, cwd=work)
        words = shlex.split(r.stdout.split("\n")[0]) if r.stdout else []
        want = os.path.join(prefix, "bin", prog)
        check(r.returncode == 0 and want in words,
              f"installed {rel} runs {want} by default: {r.stdout} {r.stderr}")
        r = subprocess.run(["bash", os.path.join(SRC, "mpi", rel)], capture_output=True,
                           text=True, timeout=60, env=dict(env, HOME=fake_home), cwd=work)
        want = os.path.join(fake_home, "xpcsfit", "build", prog)
        check(r.returncode == 0 and want in shlex.split(r.stdout),
              f"in-tree {rel} keeps $HOME/xpcsfit/build: {r.stdout} {r.stderr}")
        r = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60,
                           env=dict(env, XPCSFIT_BIN_DIR=os.path.join(fake_home, "xpcsfit",
                                                                      "build")), cwd=work)
        check(r.returncode == 0 and want in shlex.split(r.stdout),
              f"installed {rel}: XPCSFIT_BIN_DIR still wins: {r.stdout} {r.stderr}")
    with open(os.path.join(SRC, "mpi", "slurm", "xpcsfit-mpi.sbatch")) as f:
        tree = f.read()
    with open(os.path.join(prefix, "share/xpcsfit/cluster/slurm/xpcsfit-mpi.sbatch")) as f:
        inst = f.read()
    check(len(tree.splitlines()) == len(inst.splitlines()) and
          sum(a != b for a, b in zip(tree.splitlines(), inst.splitlines())) == 1,
          "the installed script differs from the tree's in the bin_dir line alone")


def main():
    # a prefix with a space and a quote: the installed scripts quote it
    prefix = os.path.join(TMP, "pre fix's")
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                       capture_output=True, text=True, timeout=1200)
    check(r.returncode == 0, f"cmake --install: {r.stdout} {r.stderr}")
    for rel in ["bin/xpcsfit", "share/bash-completion/completions/xpcsfit",
                "share/doc/xpcsfit/README.md", "share/doc/xpcsfit/cli.md",
                "share/doc/xpcsfit/user-guide.md",
                "share/doc/xpcsfit/examples/static_example.yaml",
                "share/xpcsfit/cluster/submit-lib.sh",
                "share/xpcsfit/cluster/slurm/submit-batch.sh",
                "share/xpcsfit/cluster/slurm/xpcsfit-mpi.sbatch",
                "share/xpcsfit/cluster/pbs/submit-batch.sh",
                "share/xpcsfit/cluster/pbs/xpcsfit-mpi.pbs"]:
        check(os.path.isfile(os.path.join(prefix, rel)), f"not installed: {rel}")
    if os.path.exists(os.path.join(BUILD, "xpcsfit-mpi")):
        check(os.path.isfile(os.path.join(prefix, "bin/xpcsfit-mpi")), "xpcsfit-mpi")
    binary = os.path.join(prefix, "bin/xpcsfit")
    check(os.access(binary, os.X_OK), "the installed xpcsfit is executable")
    r = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and r.stdout.startswith("xpcsfit "), f"installed version: {r}")

    adr_citations(prefix)
    doc_images(prefix)
    man_pages(prefix)
    script_defaults(prefix)

    # The installed submit script finds its sourced helper (dry run: no scheduler needed).
    for sched in ("slurm", "pbs"):
        r = subprocess.run(["bash", os.path.join(prefix, "share/xpcsfit/cluster", sched,
                                                 "submit-batch.sh")],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, XPCSFIT_DRY_RUN="1"))
        check(r.returncode == 0 and "submit-lib" not in r.stderr,
              f"installed {sched}/submit-batch.sh dry run: {r.stdout} {r.stderr}")
    r = subprocess.run(["bash", "-n", COMPLETION], capture_output=True, text=True)
    check(r.returncode == 0, f"bash -n: {r.stderr}")
    work = os.path.join(TMP, "work")
    os.makedirs(os.path.join(work, "results"))
    for name in ("a.yaml", "b.h5", "notes.txt"):
        open(os.path.join(work, name), "w").close()
    check(complete([XF, "nl"], work) == ["nlsq"], "xpcsfit nl<TAB> gives nlsq")
    check(set(complete([XF, ""], work)) >= {"nlsq", "cmc", "plot", "validate", "batch"},
          "xpcsfit <TAB> lists the subcommands")
    check(complete([XF, "plot", "--con"], work) == ["--config"], "plot --con<TAB>")
    check("--no-surfaces" in complete([XF, "-q", "nlsq", "--no-"], work),
          "nlsq options from its --help (after -q)")
    check("--quiet" in complete([XF, "validate", "--q"], work), "validate --q<TAB>")
    got = complete([XF, "nlsq", "--config", ""], work)
    check("a.yaml" in got and "b.h5" not in got and "notes.txt" not in got,
          f"--config completes YAML files: {got}")
    got = complete([XF, "nlsq", "--data", ""], work)
    check("b.h5" in got and "a.yaml" not in got, f"--data completes HDF5 files: {got}")
    check(complete([XF, "config", "--mode", "lam"], work) == ["laminar_flow"], "--mode")
    check(complete([XF, "plot", "res"], work) == ["results"], "plot DIR completes folders")
    got = complete([XF, "config", "--out", ""], work)
    check("a.yaml" in got and "notes.txt" in got, f"config --out completes files: {got}")
    for cmd in ("config", "simulate"):
        check(complete([XF, cmd, "--for"], work) == ["--force"], f"{cmd} --for<TAB>")
    got = complete([XF, "batch", "--overrides", ""], work)
    check("notes.txt" in got, f"batch --overrides completes files: {got}")
    return summary()


if __name__ == "__main__":
    raise SystemExit(main())
