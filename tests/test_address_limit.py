#!/usr/bin/env python3
"""A limited address space (`ulimit -v`, what SGE's h_vmem sets; docs/cluster.md "Memory
limits", adr/0072): a tiny static fit ends. OpenBLAS 0.3.21 retried a failed 128 MiB
buffer forever, so `ulimit -v 300000` never ended; now the program runs itself again with
OPENBLAS_NUM_THREADS=1 before OpenBLAS starts (no pool of its own, whose threads each
take a buffer) and takes the one buffer a fit needs at its start. At 300000 KiB the fit
succeeds (exit 0), also with OPENBLAS_NUM_THREADS=2 in the environment; at lower limits
it either succeeds or says "out of memory" in one line, exit 1, with no result written.
Each run has a guard of minutes (a tiny fit takes about a second): only a hang reaches it.
Skipped under AddressSanitizer, whose shadow memory needs an unlimited address space."""
import os
import resource
import shutil
import subprocess
import sys

from tally import check, summary

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_address_limit")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)
GUARD_S = 300

ldd = subprocess.run(["ldd", XF], capture_output=True, text=True).stdout
if "libasan" in ldd or "libtsan" in ldd:
    print("SKIP: a sanitizer build needs an unlimited address space")
    sys.exit(0)

CONFIG = """analysis_mode: static
experimental_data:
  file_path: data.h5
analyzer_parameters:
  dt: 0.1
  end_frame: 30
  scattering: {wavevector_q: 0.0054}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {D_offset: 0}
"""
with open(os.path.join(TMP, "c.yaml"), "w") as f:
    f.write(CONFIG)
p = subprocess.run([XF, "simulate", "--config", "c.yaml", "--phi", "0,90", "--out", "data.h5"],
                   cwd=TMP, capture_output=True, text=True, timeout=GUARD_S)
check(p.returncode == 0, f"simulate: {p.stderr}")


def limited(kib):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_AS, (kib * 1024, kib * 1024))
    return set_limit


def fit(kib, out, env=None):
    e = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    e.update(env or {})
    try:
        return subprocess.run([XF, "nlsq", "--config", "c.yaml", "--no-plots", "--no-surfaces",
                               "--out", out], cwd=TMP, capture_output=True, text=True,
                              timeout=GUARD_S, env=e, preexec_fn=limited(kib))
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess([], -9, "", f"hung: still running after {GUARD_S} s")


def finished(p, out, what):
    check(p.returncode == 0, f"{what}: exit {p.returncode}, want 0: {p.stderr[-400:]!r}")
    check(os.path.exists(os.path.join(TMP, out, "nlsq", "results.h5")) and
          not os.path.exists(os.path.join(TMP, out, "nlsq", "INCOMPLETE")),
          f"{what}: a whole result")


# the case: SGE h_vmem / ulimit -v 300000
p = fit(300000, "v300000")
finished(p, "v300000", "ulimit -v 300000")
# an OPENBLAS_NUM_THREADS of the user's is overridden under a limit (the fits use one)
p = fit(300000, "v300000_t2", {"OPENBLAS_NUM_THREADS": "2"})
finished(p, "v300000_t2", "ulimit -v 300000, OPENBLAS_NUM_THREADS=2")
# lower limits: the fit, or one line "out of memory", exit 1, and nothing written
for kib in (260000, 220000, 180000, 150000):
    out = f"v{kib}"
    p = fit(kib, out)
    if p.returncode == 0:
        finished(p, out, f"ulimit -v {kib}")
        continue
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("xpcsfit: error:")]
    check(p.returncode == 1 and len(errors) == 1 and "out of memory" in errors[0] and
          "ulimit -v" in errors[0], f"ulimit -v {kib}: exit {p.returncode}, want 0 or 1 with "
          f"one 'out of memory' line: {p.stderr[-400:]!r}")
    check(not os.path.exists(os.path.join(TMP, out, "nlsq", "results.h5")),
          f"ulimit -v {kib}: out of memory, no result")
    print(f"ulimit -v {kib}: {errors[0] if errors else p.returncode}")

sys.exit(summary())
