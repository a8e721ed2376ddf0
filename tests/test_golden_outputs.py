#!/usr/bin/python3
"""test_golden_outputs.py — a change that is meant to change no number (issue 35's
refactor) changes no result file: every bundled config and every hard case run by
bench/posterior_cases.py (a default `xpcsfit fit`: NLSQ, then the posterior; and the
NLSQ alone), each result file digested by scripts/result_digest.py (what the file says,
wall times and the checkout's paths left out), and the digests compared with
tests/golden/outputs.json.

The bits are those of the machine that recorded them: the kernels give the same bits on
every instruction set and thread count (test_pass_bits, test_mpi; these digests too, with
XPCSFIT_KERNEL=generic, avx2 or avx512 and OpenBLAS's Haswell or native kernels), but
libm's exp, log and sincos come in per-CPU variants (FMA or not) that may round
differently, and another glibc may too. So the stored digests carry the recording
machine's signature (CPU architecture, FMA present, glibc version); on a machine with
another one the test says so and skips (77). A change that changes numbers on purpose records new digests
(`--update`) in the same commit, and says why in its message.

Label slow (about a minute on 2 cores). Environment: XF_BINARY, XF_SOURCE_DIR, XF_TMP.
Options: --update (write tests/golden/outputs.json from this run)."""
import json
import os
import platform
import shutil
import subprocess
import sys

SRC = os.environ["XF_SOURCE_DIR"]
GOLDEN = os.path.join(SRC, "tests", "golden", "outputs.json")
sys.path.insert(0, os.path.join(SRC, "scripts"))
import result_digest  # noqa: E402


def signature():
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return {"machine": platform.machine(),
            "fma": "fma" in flags,
            "libc": os.confstr("CS_GNU_LIBC_VERSION") or "unknown"}


def run_cases(tmp):
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    env = dict(os.environ, XF_TMP=tmp)
    r = subprocess.run([sys.executable, os.path.join(SRC, "bench", "posterior_cases.py"),
                        "--threads", "2"], env=env, capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    if r.returncode != 0 or " error: " in r.stdout:
        sys.exit(f"bench/posterior_cases.py failed (exit {r.returncode}):\n{r.stderr[-2000:]}")
    root = os.path.join(tmp, "posterior_cases")
    out = {}
    for d in sorted(os.listdir(root)):
        if os.path.isdir(os.path.join(root, d)):
            out.update(result_digest.folder_digests(os.path.join(root, d), d))
    return out


def main():
    update = "--update" in sys.argv[1:]
    sig = signature()
    stored = None
    if os.path.exists(GOLDEN):
        with open(GOLDEN) as f:
            stored = json.load(f)
    if not update:
        if stored is None:
            sys.exit(f"no stored digests ({GOLDEN}): record them with --update")
        if stored["signature"] != sig:
            print(f"digests recorded on {stored['signature']}, this machine is {sig}: "
                  "libm may round differently here; skipped")
            return 77
    got = run_cases(os.path.join(os.environ.get("XF_TMP", "/tmp/xf_golden"), "golden"))
    if update:
        os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
        tmp = GOLDEN + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"signature": sig, "files": got}, f, indent=1, sort_keys=True)
            f.write("\n")
        os.replace(tmp, GOLDEN)
        print(f"{len(got)} digests written to {GOLDEN}")
        return 0
    want = stored["files"]
    bad = [k for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
    for k in bad:
        what = "missing" if k not in got else "new" if k not in want else "differs"
        print(f"FAIL {k}: {what}")
    print(f"{len(want) - len(bad)} of {len(want)} result files as recorded"
          + (f"; {len(bad)} not (scripts/result_digest.py --diff A B says where)"
             if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
