#!/usr/bin/env python3
"""`make install` and the bash completion (docs/cli.md): `cmake --install BUILD --prefix TMP`
puts the program, the docs, the example configs and the completion under TMP; the
installed program runs; the completion script passes `bash -n` and, sourced, completes
subcommands, options (read from the subcommand's --help) and --config/--data files."""
import os
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


def main():
    prefix = os.path.join(TMP, "prefix")
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                       capture_output=True, text=True, timeout=300)
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
