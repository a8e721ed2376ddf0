#!/usr/bin/env python3
"""The GPU options as a machine without a CUDA device sees them (docs/gpu.md): `xpcsfit-gpu
validate|bench` says so in one line and exits 3; `nlsq --device gpu` is refused before the
data are read (exit 2); `--device auto` and XPCSFIT_DEVICE=auto quietly fit on the CPU,
with the bits of `--device cpu`; bad values of the option and the environment exit 2; a
configure with XPCSFIT_CUDA=OFF needs no CUDA. On a machine with a device the refusals
are not checked (the GPU tests, label gpu, run there)."""
import json
import os
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers"))
from tally import check, summary  # noqa: E402

XF = os.environ["XF_BINARY"]
XF_GPU = os.path.join(os.path.dirname(XF), "xpcsfit-gpu")
SRC = os.environ["XF_SOURCE_DIR"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_gpu_cli")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

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


def run(cmd, rc=0, env=None):
    e = dict(os.environ)
    for k in ("XPCSFIT_DEVICE", "XPCSFIT_DEVICE_THRESHOLD", "XPCSFIT_GPU_FP32"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run([str(a) for a in cmd], cwd=TMP, capture_output=True, text=True,
                       timeout=300, env=e)
    check(p.returncode == rc, f"{' '.join(map(str, cmd))}: rc {p.returncode}, want {rc}: "
                              f"{p.stderr.strip()[-400:]}")
    return p


def params(out):
    with open(os.path.join(TMP, out, "nlsq", "parameters.json")) as f:
        return json.load(f)


def one_line(p, word):
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    check(len(lines) == 1 and word in lines[0], f"one line naming {word!r}: {p.stderr!r}")


# xpcsfit-gpu: usage is exit 2 and one line; without a device, exit 3 and one line
one_line(run([XF_GPU], rc=2), "no command given")
one_line(run([XF_GPU, "validate", "--frames", "0"], rc=2), "xpcsfit-gpu --help")
# --json FILE: the rule of every file named as an output (issue 24), checked before the
# device: a FIFO, a device node (made here, 1,3 like /dev/null) or a symbolic link is
# refused and left as it is; an existing file only with --force
os.mkfifo(os.path.join(TMP, "fifo.json"))
nodes = {"fifo.json": "a FIFO"}
try:
    os.mknod(os.path.join(TMP, "dev.json"), 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    nodes["dev.json"] = "a device"
except PermissionError:
    pass
os.symlink("fifo.json", os.path.join(TMP, "link.json"))
nodes["link.json"] = "a symbolic link"
with open(os.path.join(TMP, "mine.json"), "w") as f:
    f.write("{}\n")
nodes["mine.json"] = "already exists"
for name, what in nodes.items():
    one_line(run([XF_GPU, "bench", "--json", name], rc=2), what)
check(stat.S_ISFIFO(os.lstat(os.path.join(TMP, "fifo.json")).st_mode), "FIFO kept")
check(stat.S_ISLNK(os.lstat(os.path.join(TMP, "link.json")).st_mode), "link kept")
check("dev.json" not in nodes or stat.S_ISCHR(os.lstat(os.path.join(TMP, "dev.json")).st_mode),
      "device node kept")
check(open(os.path.join(TMP, "mine.json")).read() == "{}\n", "existing JSON kept")
p = subprocess.run([XF_GPU, "bench", "--json", "mine.json", "--force", "--max-frames", "100"],
                   cwd=TMP, capture_output=True, text=True, timeout=600)
check(p.returncode in (0, 3) and "already exists" not in p.stderr,
      f"--json with --force is accepted: {p.returncode} {p.stderr}")
check("crossover" in run([XF_GPU, "--help"]).stdout, "xpcsfit-gpu --help")
# --costs is bench's: a usage error for validate, before any device is looked for
one_line(run([XF_GPU, "validate", "--costs", "c.txt"], rc=2), "--costs is an option of bench")
probe = subprocess.run([XF_GPU, "validate"], capture_output=True, text=True, timeout=600)
has_device = probe.returncode != 3
if not has_device:
    for what in ("validate", "bench"):
        p = run([XF_GPU, what, "--json", "out.json"], rc=3)
        one_line(p, f"nothing to {what}")  # and why: no device, no module (test_gpu_module)
        check(not os.path.exists(os.path.join(TMP, "out.json")), "no JSON without a device")

# nlsq --device
with open(os.path.join(TMP, "c.yaml"), "w") as f:
    f.write(CONFIG)
run([XF, "simulate", "--config", "c.yaml", "--phi", "0,90", "--out", "data.h5"])
FIT = [XF, "nlsq", "--config", "c.yaml", "--no-plots", "--no-surfaces", "--threads", "1"]
run(FIT + ["--out", "cpu"])
run(FIT + ["--out", "cpu2", "--device", "cpu"])
if not has_device:
    p = run(FIT + ["--out", "gpu", "--device", "gpu"], rc=2)
    one_line(p, "--device gpu")
    check(not os.path.exists(os.path.join(TMP, "gpu", "nlsq")), "refused before any output")
    run(FIT + ["--out", "envgpu"], rc=2, env={"XPCSFIT_DEVICE": "gpu"})
    # --device beats the environment
    run(FIT + ["--out", "envcpu", "--device", "cpu"], env={"XPCSFIT_DEVICE": "gpu"})
p = run(FIT + ["--out", "auto", "--device", "auto"], env={"XPCSFIT_DEVICE_THRESHOLD": "1"})
check("GPU" not in p.stderr or has_device, f"auto without a device is quiet: {p.stderr!r}")
run(FIT + ["--out", "envauto"], env={"XPCSFIT_DEVICE": "auto"})
ref = params("cpu")["parameters"]
check("D0" in ref and "value" in ref["D0"], "parameters.json has D0")
for out in ("cpu2", "auto", "envauto"):
    got = params(out)["parameters"]
    if has_device and out == "auto":  # on the GPU: the same sums in another order
        for name, v in ref.items():
            a, b = got[name]["value"], v["value"]
            check(abs(a - b) <= 1e-8 * max(abs(b), 1e-300),
                  f"{out} {name}: {a} against the CPU's {b}")
        continue
    check(json.dumps(got, sort_keys=True) == json.dumps(ref, sort_keys=True),
          f"{out}: the same parameters as --device cpu (bit for bit)")
run(FIT + ["--out", "bad", "--device", "tpu"], rc=2)
run(FIT + ["--out", "bad"], rc=2, env={"XPCSFIT_DEVICE": "fast"})
run(FIT + ["--out", "bad"], rc=2, env={"XPCSFIT_DEVICE_THRESHOLD": "-5"})

# a configure that never looks for CUDA
b = os.path.join(TMP, "build-nocuda")
p = subprocess.run(["cmake", "-S", SRC, "-B", b, "-DXPCSFIT_CUDA=OFF"], capture_output=True,
                   text=True, timeout=600)
check(p.returncode == 0, f"configure with XPCSFIT_CUDA=OFF: {p.stderr[-400:]}")
check("xpcsfit CUDA backend: OFF" in p.stdout, "OFF configures the stub backend")
check("CUDA compiler identification" not in p.stdout, "OFF does not look for nvcc")
shutil.rmtree(b, ignore_errors=True)

sys.exit(summary())
