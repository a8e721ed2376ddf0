#!/usr/bin/env python3
"""The CUDA backend as a module of its own (docs/gpu.md "How the module is found",
adr/0055): no program links a CUDA library (ldd); `xpcsfit version` and a fit run in a
mount namespace where every CUDA folder and library is hidden; without a loadable module
(XPCSFIT_CUDA_MODULE naming nothing, a file that is no module, a module of another
interface) `--device gpu` is one error line, exit 2, and `--device auto` fits on the CPU
with the bits of `--device cpu` and the reason in run.log; a stand-in module (the kernels'
CPU reference, tests/gpu_module_ref.c) carries `--device gpu` and `xpcsfit-gpu validate`
through the table; the built module is found next to the programs and in an installed
tree, also after the tree is moved. A file that is no whole module of this machine (a
FIFO, a folder, the first 4 KB of a module, another machine's or a non-shared ELF), named
by XPCSFIT_CUDA_MODULE or lying beside the program, is a reason, never a hang or SIGBUS
(adr/0072): `gpu` one line, exit 2, no folder; `auto` the CPU with the reason in run.log;
a small `auto` fit never looks at the module; xpcsfit-mpi refuses `--device gpu` over
ranks before loading anything. The namespace part needs root and unshare(1); without
them it is skipped with the reason."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers"))
from tally import check, summary  # noqa: E402

XF = os.environ["XF_BINARY"]
BUILD = os.path.dirname(XF)
XF_GPU = os.path.join(BUILD, "xpcsfit-gpu")
XF_MPI = os.path.join(BUILD, "xpcsfit-mpi")
CUDA_MODULE = os.path.join(BUILD, "libxpcsfit-cuda.so")  # there when nvcc was found
REF = os.environ["XF_GPU_REF_MODULE"]
OLD = os.environ["XF_GPU_OLDABI_MODULE"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_gpu_module")
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
GPU_ENV = ("XPCSFIT_DEVICE", "XPCSFIT_DEVICE_THRESHOLD", "XPCSFIT_GPU_FP32",
           "XPCSFIT_CUDA_MODULE")


def run(cmd, rc=0, env=None, prefix=(), timeout=600):
    e = {k: v for k, v in os.environ.items() if k not in GPU_ENV}
    e.update(env or {})
    try:
        p = subprocess.run(list(prefix) + [str(a) for a in cmd], cwd=TMP, capture_output=True,
                           text=True, timeout=timeout, env=e)
    except subprocess.TimeoutExpired:  # a guard: a hang is the failure, not the test's end
        p = subprocess.CompletedProcess(cmd, -9, "", f"hung: still running after {timeout} s")
    check(p.returncode == rc, f"{' '.join(map(str, cmd))} {env or ''}: rc {p.returncode}, "
                              f"want {rc}: {p.stderr.strip()[-400:]}")
    return p


def one_line(p, *words):
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    check(len(lines) == 1 and all(w in lines[0] for w in words),
          f"one line naming {words}: {p.stderr!r}")


def params(out):
    with open(os.path.join(TMP, out, "nlsq", "parameters.json")) as f:
        return json.load(f)["parameters"]


def run_log(out):
    with open(os.path.join(TMP, out, "nlsq", "run.log")) as f:
        return f.read()


def same_bits(out, ref):
    check(json.dumps(params(out), sort_keys=True) == json.dumps(ref, sort_keys=True),
          f"{out}: the parameters of --device cpu, bit for bit")


# (1) no program links CUDA; the module needs the driver only (static runtime) and
# exports its one table
PROGRAMS = [XF, XF_GPU] + ([XF_MPI] if os.path.exists(XF_MPI) else [])
for prog in PROGRAMS:
    out = subprocess.run(["ldd", prog], capture_output=True, text=True).stdout
    # a CUDA library by name (libcuda, libcudart, libcublas, ...) or by its folder; a
    # bare "cuda" substring would also match ICU's libicudata (netCDF -> libxml2 -> ICU)
    cuda = [ln.strip() for ln in out.splitlines()
            if re.match(r"\s*lib(cuda|cudart|cublas\w*|cufft\w*|curand|cusparse|cusolver\w*|nvrtc\w*|nvJitLink|nvidia-[\w-]+)\.so", ln) or "/cuda" in ln.lower()]
    check(out and not cuda, f"ldd {os.path.basename(prog)}: no CUDA library, got {cuda}")
if os.path.exists(CUDA_MODULE):
    out = subprocess.run(["ldd", CUDA_MODULE], capture_output=True, text=True).stdout
    check("libcudart" not in out, f"the module links the CUDA runtime statically: {out}")
    syms = subprocess.run(["nm", "-D", "--defined-only", CUDA_MODULE], capture_output=True,
                          text=True).stdout.split()
    check("xf_gpu_module_ops" in syms and
          not [s for s in syms if s.startswith("xf_") and s != "xf_gpu_module_ops"],
          "the module exports xf_gpu_module_ops and no other xf_ symbol")

with open(os.path.join(TMP, "c.yaml"), "w") as f:
    f.write(CONFIG)
run([XF, "simulate", "--config", "c.yaml", "--phi", "0,90", "--out", "data.h5"])
FIT = [XF, "nlsq", "--config", "c.yaml", "--no-plots", "--no-surfaces", "--threads", "1"]
run(FIT + ["--out", "cpu"])
REF_PARAMS = params("cpu")
probe = subprocess.run([XF_GPU, "validate", "--frames", "100"], capture_output=True, text=True,
                       timeout=600)
HAS_DEVICE = probe.returncode != 3

# (3) no loadable module: --device gpu one line, exit 2, nothing written; auto on the CPU
missing = os.path.join(TMP, "nowhere", "libxpcsfit-cuda.so")
junk = os.path.join(TMP, "junk.so")
with open(junk, "w") as f:
    f.write("not a shared object\n")
for what, path, words in (("missing", missing, ("XPCSFIT_CUDA_MODULE", missing)),
                          ("junk", junk, ("cannot be loaded", junk)),
                          ("oldabi", OLD, ("another xpcsfit build", "interface 0"))):
    env = {"XPCSFIT_CUDA_MODULE": path}
    p = run(FIT + ["--out", f"gpu_{what}", "--device", "gpu"], rc=2, env=env)
    one_line(p, "--device gpu: ", *words)
    check(not os.path.exists(os.path.join(TMP, f"gpu_{what}", "nlsq")),
          f"{what}: refused before any output")
    run(FIT + ["--out", f"env_{what}"], rc=2, env=dict(env, XPCSFIT_DEVICE="gpu"))
    p = run(FIT + ["--out", f"auto_{what}", "--device", "auto"],
            env=dict(env, XPCSFIT_DEVICE_THRESHOLD="1"))
    check("CUDA" not in p.stderr, f"{what}: auto is quiet on stderr: {p.stderr!r}")
    same_bits(f"auto_{what}", REF_PARAMS)
    note = [ln for ln in run_log(f"auto_{what}").splitlines() if "--device auto: " in ln]
    check(len(note) == 1 and all(w in note[0] for w in words),
          f"{what}: run.log says why auto stayed on the CPU: {note}")
    p = run([XF_GPU, "validate"], rc=3, env=env)
    one_line(p, "nothing to validate", *words)

# the stand-in module: the whole --device gpu route through the table
env = {"XPCSFIT_CUDA_MODULE": REF}
p = run(FIT + ["--out", "gpu_ref", "--device", "gpu"], env=env)
got = params("gpu_ref")
for name, v in REF_PARAMS.items():  # the same sums in the kernels' order
    a, b = got[name]["value"], v["value"]
    check(abs(a - b) <= 1e-8 * max(abs(b), 1e-300), f"gpu_ref {name}: {a} against {b}")
check(f"runs on the GPU (gpu; {REF})" in run_log("gpu_ref"), "run.log names the module used")


def nlsq_device(out):
    with open(os.path.join(TMP, out, "nlsq", "parameters.json")) as f:
        return json.load(f).get("device")


check(nlsq_device("gpu_ref") == {"asked": "gpu", "decision": "the accumulation over all the "
                                 f"data runs on the GPU (gpu; {REF})"},
      f"parameters.json records the device: {nlsq_device('gpu_ref')}")
check(nlsq_device("cpu") is None, "--device cpu, the default, adds nothing to parameters.json")
p = run(FIT + ["--out", "auto_ref", "--device", "auto"],
        env=dict(env, XPCSFIT_DEVICE_THRESHOLD="1e30"))
same_bits("auto_ref", REF_PARAMS)
check("below the threshold" in run_log("auto_ref"), "auto below the threshold: run.log says so")
# above the threshold with a device at hand, auto weighs the whole fit (adr/0129): a small
# file's few passes do not pay for the device's context and upload, so the CPU, the
# numbers in run.log
p = run(FIT + ["--out", "auto_job", "--device", "auto"],
        env=dict(env, XPCSFIT_DEVICE_THRESHOLD="1"))
same_bits("auto_job", REF_PARAMS)
note = [ln for ln in run_log("auto_job").splitlines() if "is expected to take" in ln]
check(len(note) == 1 and "on the device" in note[0] and "it runs on the CPU" in note[0],
      f"auto weighs the job: run.log says so with the numbers: {note}")
check("runs on the GPU" not in run_log("auto_job"), "auto_job: not on the stand-in device")
dev = nlsq_device("auto_job") or {}
check(dev.get("asked") == "auto" and "is expected to take" in dev.get("decision", "") and
      note and note[0].endswith(dev["decision"]), f"auto_job: parameters.json's device: {dev}")
p = run([XF_GPU, "validate", "--frames", "100"], env=env)
check("fp64" in p.stdout or "c2" in p.stdout, f"validate through the stand-in: {p.stdout[-300:]}")

# the posterior on the stand-in device (adr/0130): its passes over all the data through the
# module, the data uploaded once per evaluator. From the same NLSQ result, the summaries of
# the importance route and of exact NUTS are the CPU's within 1e-10 relative (the sums
# are added in the kernels' order); also on two stand-in devices (the proportional split);
# the passes of a posterior need >= 4096 pairs per thread to run in turn, hence 100 frames.
# NUTS's bound is 1e-9: each trajectory carries the sums' last-bit differences through its
# leapfrog steps (measured: 4.5e-11 on one device, 1.2e-10 on two, worst of the summaries)
with open(os.path.join(TMP, "p.yaml"), "w") as f:
    f.write(CONFIG.replace("data.h5", "pdata.h5").replace("end_frame: 30", "end_frame: 100"))
run([XF, "simulate", "--config", "p.yaml", "--phi", "0,90", "--out", "pdata.h5"])
POST = [XF, "cmc", "--config", "p.yaml", "--no-plots", "--threads", "1", "--nlsq", "pnlsq"]
NUTS = ["--set", "optimization.cmc.route=nuts",
        "--set", "optimization.cmc.per_shard_mcmc.num_warmup=50",
        "--set", "optimization.cmc.per_shard_mcmc.num_samples=100"]
run([XF, "nlsq", "--config", "p.yaml", "--no-plots", "--no-surfaces", "--threads", "1",
     "--out", "pnlsq"])


def posterior(out):
    with open(os.path.join(TMP, out, "cmc", "parameters.json")) as f:
        return json.load(f)


def summaries(doc):
    """every summary of every parameter and of sigma: name/field -> value"""
    got = {}
    for group in ("parameters", "scaling_parameters"):
        for name, v in doc[group].items():
            for k in ("value", "uncertainty", "mean", "std", "median", "q05", "q95"):
                if isinstance(v.get(k), float):  # a fixed parameter has no spread
                    got[f"{name}/{k}"] = v[k]
    for k, v in doc["posterior_route"].get("sigma", {}).items():
        if isinstance(v, float):
            got[f"sigma/{k}"] = v
    return got


def cmc_log(out):
    with open(os.path.join(TMP, out, "cmc", "run.log")) as f:
        return f.read()


for how, extra, bound in (("importance", [], 1e-10), ("nuts", NUTS, 1e-9)):
    run(POST + ["--out", f"post_cpu_{how}"] + extra)
    ref = summaries(posterior(f"post_cpu_{how}"))
    check(len(ref) >= 20, f"{how}: the summaries compared: {sorted(ref)}")
    for devices in ("1", "2"):
        out = f"post_gpu_{how}_{devices}"
        run(POST + ["--out", out, "--device", "gpu"] + extra,
            env=dict(env, XF_GPU_REF_DEVICES=devices))
        got = summaries(posterior(out))
        worst = max(abs(got[k] - v) / max(abs(v), 1e-300) for k, v in ref.items())
        check(set(got) == set(ref) and worst <= bound,
              f"{how} on {devices} stand-in device(s): the CPU's summaries within "
              f"{bound:g}, worst {worst:.3g}")
        check("cmc: the posterior's passes over all the data run on the GPU (gpu; "
              f"{REF})" in cmc_log(out), f"{out}: run.log says where the passes ran")
        check(posterior(out)["status"] == posterior(f"post_cpu_{how}")["status"],
              f"{out}: the CPU's status")
        dev = posterior(out)["posterior_route"].get("device") or {}
        stage = "importance route" if how == "importance" else "exact NUTS"
        check(dev.get("asked") == "gpu" and any(
            d.startswith(f"{stage}: the posterior's passes over all the data run on the GPU")
            for d in dev.get("decisions", [])), f"{out}: parameters.json's device: {dev}")
    check("device" not in posterior(f"post_cpu_{how}")["posterior_route"],
          f"{how}: --device cpu, the default, adds nothing to parameters.json")
# auto with a device at hand weighs the posterior's whole work: this small file's 2 000
# value passes do not pay for the context and upload: the CPU, bit for bit, and why
run(POST + ["--out", "post_auto", "--device", "auto"],
    env=dict(env, XPCSFIT_DEVICE_THRESHOLD="1"))
check(summaries(posterior("post_auto")) == summaries(posterior("post_cpu_importance")),
      "post_auto: the CPU's bits")
note = [ln for ln in cmc_log("post_auto").splitlines() if "is expected to take" in ln]
check(len(note) == 1 and "importance route" in note[0] and "it runs on the CPU" in note[0],
      f"post_auto: run.log gives the posterior's job and its numbers: {note}")
dev = posterior("post_auto")["posterior_route"].get("device") or {}
check(dev.get("asked") == "auto" and len(dev.get("decisions", [])) == 1 and
      note and note[0].endswith(dev["decisions"][0].split(": ", 1)[1]),
      f"post_auto: parameters.json has run.log's decision: {dev}")
# no module: cmc and fit --device gpu are one line, exit 2, nothing written
for cmd in (POST, [XF, "fit", "--config", "p.yaml", "--no-plots"]):
    out = f"post_none_{cmd[1]}"
    p = run(cmd + ["--out", out, "--device", "gpu"], rc=2,
            env={"XPCSFIT_CUDA_MODULE": missing})
    one_line(p, "--device gpu: ", missing)
    check(not os.path.exists(os.path.join(TMP, out)), f"{out}: refused before any output")

# a device found but failing to set up (the stand-in's XF_GPU_REF_FAIL_CREATE): --device
# gpu ends the posterior with the reason, exit 2, no result written (the importance
# route's evaluator, and exact NUTS's chain); auto says it in run.log and gives the CPU's
# bits
costs_fast = os.path.join(TMP, "costs_fast.txt")  # a device auto would always take
with open(costs_fast, "w") as f:
    f.write("gpu_job_s 1e-6\ngpu_s_per_point 1e-15\ngpu_pass_s 1e-9\n"
            "gpu_upload_s_per_point 1e-15\n")
for how, extra in (("importance", []), ("nuts", NUTS)):
    out = f"post_fail_{how}"
    p = run(POST + ["--out", out, "--device", "gpu"] + extra, rc=2,
            env=dict(env, XF_GPU_REF_FAIL_CREATE="1"))
    check("reference module: setup failed" in p.stderr,
          f"{out}: the module's reason: {p.stderr[-300:]!r}")
    check(not os.path.exists(os.path.join(TMP, out, "cmc", "parameters.json")),
          f"{out}: no result written")
p = run(POST + ["--out", "post_fail_auto", "--device", "auto"],
        env=dict(env, XF_GPU_REF_FAIL_CREATE="1", XPCSFIT_DEVICE_THRESHOLD="1",
                 XPCSFIT_DEVICE_COSTS=costs_fast))
check(summaries(posterior("post_fail_auto")) == summaries(posterior("post_cpu_importance")),
      "post_fail_auto: the CPU's bits")
check("reference module: setup failed; the posterior runs on the CPU" in
      cmc_log("post_fail_auto"), "post_fail_auto: run.log says why the CPU")

# a joint fit over rings runs on the CPU: --device gpu is refused before anything is
# written, for NLSQ and the posterior
for cmd in (FIT, POST):
    out = f"joint_gpu_{cmd[1]}"
    p = run(cmd + ["--out", out, "--joint", "--device", "gpu"], rc=2, env=env)
    one_line(p, "--device gpu: a joint fit over several q rings runs on the CPU only")
    check(not os.path.exists(os.path.join(TMP, out)), f"{out}: refused before any output")

# bench through the stand-in (adr/0130): the passes at each level and whole jobs on both
# sides, the crossover per job kind, and the costs --device auto weighs, written with
# --costs and read back through XPCSFIT_DEVICE_COSTS (run.log names the file); a costs
# file auto cannot read is one line, exit 2, before anything is written
costs = os.path.join(TMP, "costs.txt")
bench_json = os.path.join(TMP, "bench.json")
p = run([XF_GPU, "bench", "--max-frames", "100", "--threads", "1", "--costs", costs,
         "--json", bench_json], env=dict(env, TMPDIR=TMP))
# NLSQ, and the posterior warm-started from its CPU fit, run end to end through their
# services on both sides: the same fit, the same posterior (the route both sides took;
# every summary within 1e-8 relative), the whole jobs as run
with open(bench_json) as f:
    sweep = json.load(f)["sweep"]
for row in sweep:
    check(row.get("cpu_nlsq_run_s", 0) > 0 and row.get("gpu_nlsq_run_s", 0) > 0
          and row.get("nlsq_runs_agree") is True and row.get("nlsq_runs_worst_rel", 1) <= 1e-8
          and row["cpu_job_nlsq_s"] == row["cpu_nlsq_run_s"],
          f"bench runs NLSQ end to end on both sides: {row}")
    job = row.get("posterior_run_job")
    check(row.get("cpu_posterior_run_s", 0) > 0 and row.get("gpu_posterior_run_s", 0) > 0
          and job in ("posterior_importance", "posterior_nuts")
          and row.get("posterior_runs_agree") is True
          and row.get("posterior_runs_worst_rel", 1) <= 1e-8
          and row[f"cpu_job_{job}_s"] == row["cpu_posterior_run_s"],
          f"bench runs the posterior end to end on both sides: {row}")
leftover = [n for n in os.listdir(TMP) if n.startswith("xpcsfit-gpu-bench.")]
check(not leftover, f"bench removes the posterior's shard folders: {leftover}")
# no folder for the posterior's shards (TMPDIR names nothing): the bench says why and
# which size, exit 1, and writes neither its JSON nor its costs
no_tmp = os.path.join(TMP, "no_such_folder")
failed_json, failed_costs = os.path.join(TMP, "failed.json"), os.path.join(TMP, "failed.txt")
p_fail = run([XF_GPU, "bench", "--max-frames", "100", "--threads", "1", "--json", failed_json,
              "--costs", failed_costs], rc=1, env=dict(env, TMPDIR=no_tmp))
check(f"cannot make a folder for the posterior's shards in {no_tmp}" in p_fail.stderr
      and "bench failed at 100 frames" in p_fail.stderr,
      f"the bench's reason: {p_fail.stderr!r}")
check(not os.path.exists(failed_json) and not os.path.exists(failed_costs)
      and not os.path.exists(no_tmp), "a failed bench writes nothing")
p_proj = run([XF_GPU, "bench", "--max-frames", "100", "--threads", "1", "--no-runs"], env=env)
check("NLSQ end to end" not in p_proj.stdout and "the posterior end to end" not in p_proj.stdout
      and "whole jobs" in p_proj.stdout, "bench --no-runs projects the jobs from their passes")
run([XF_GPU, "validate", "--no-runs"], rc=2, env=env)
for words in ("NLSQ end to end", "the posterior end to end", "whole jobs", "crossover of the fit:",
              "crossover of the posterior's importance route:",
              "crossover of the posterior by NUTS:", "gpu_s_per_point"):
    check(words in p.stdout, f"bench prints {words!r}: {p.stdout[-600:]}")
with open(costs) as f:
    names = [ln.split()[0] for ln in f if ln.strip() and not ln.startswith("#")]
check(names == ["cpu_thread_s_per_point", "gpu_s_per_point", "gpu_pass_s", "gpu_job_s",
                "gpu_upload_s_per_point"], f"the costs file: {names}")
run([XF_GPU, "bench", "--max-frames", "100", "--costs", costs], rc=2, env=env)
run(POST + ["--out", "post_costs", "--device", "auto"],
    env=dict(env, XPCSFIT_DEVICE_THRESHOLD="1", XPCSFIT_DEVICE_COSTS=costs))
note = [ln for ln in cmc_log("post_costs").splitlines() if "is expected to take" in ln]
check(len(note) == 1 and f"(costs: XPCSFIT_DEVICE_COSTS={costs})" in note[0],
      f"auto weighs the costs of the file: {note}")
bad_costs = os.path.join(TMP, "bad_costs.txt")
with open(bad_costs, "w") as f:
    f.write("gpu_job_s 0.5\nspeed fast\n")
p = run(POST + ["--out", "post_bad_costs", "--device", "auto"], rc=2,
        env=dict(env, XPCSFIT_DEVICE_COSTS=bad_costs))
one_line(p, f"XPCSFIT_DEVICE_COSTS={bad_costs}: line 2")
check(not os.path.exists(os.path.join(TMP, "post_bad_costs")), "bad costs: nothing written")

# (4) files that are no module (adr/0072), by XPCSFIT_CUDA_MODULE: each call ends (a
# generous guard, never a wait), gpu with one line and exit 2 before any folder, auto and
# XPCSFIT_DEVICE=auto on the CPU with the reason in run.log
with open(REF, "rb") as f:
    REF_BYTES = f.read()


def patched(name, at, value):
    path = os.path.join(TMP, name)
    b = bytearray(REF_BYTES)
    b[at:at + 2] = value.to_bytes(2, sys.byteorder)
    with open(path, "wb") as f:
        f.write(b)
    return path


GUARD = 120
BAD = os.path.join(TMP, "bad")
os.makedirs(BAD)
fifo = os.path.join(BAD, "fifo.so")
os.mkfifo(fifo)
folder = os.path.join(BAD, "folder.so")
os.mkdir(folder)
trunc = os.path.join(BAD, "trunc.so")
with open(trunc, "wb") as f:
    f.write(REF_BYTES[:4096])
host_machine = int.from_bytes(REF_BYTES[18:20], sys.byteorder)
BAD_FILES = (("fifo", fifo, "a FIFO, not a regular file"),
             ("folder", folder, "a folder, not a regular file"),
             ("trunc", trunc, "truncated (4096 bytes"),
             ("machine", patched("bad/machine.so", 18, 183 if host_machine != 183 else 62),
              "another machine"),
             ("exec", patched("bad/exec.so", 16, 2), "not a shared object (ELF type 2"))


def refused_and_fallback(tag, env, words, fit=FIT):
    """gpu: one line, exit 2, no folder; auto (both ways): the CPU's bits, the reason."""
    for how, extra in (("flag", ["--device", "gpu"]), ("env", [])):
        e = dict(env, XPCSFIT_DEVICE="gpu") if how == "env" else env
        out = f"{tag}_gpu_{how}"
        p = run(fit + ["--out", out] + extra, rc=2, env=e, timeout=GUARD)
        one_line(p, "--device gpu: ", "cannot be loaded", *words)
        check(not os.path.exists(os.path.join(TMP, out)), f"{tag}: refused before any folder")
    for how, extra in (("flag", ["--device", "auto"]), ("env", [])):
        e = dict(env, XPCSFIT_DEVICE_THRESHOLD="1")
        if how == "env":
            e["XPCSFIT_DEVICE"] = "auto"
        out = f"{tag}_auto_{how}"
        p = run(fit + ["--out", out] + extra, env=e, timeout=GUARD)
        if p.returncode != 0:
            continue
        check("CUDA" not in p.stderr, f"{tag} auto ({how}): quiet on stderr: {p.stderr!r}")
        same_bits(out, REF_PARAMS)
        note = [ln for ln in run_log(out).splitlines() if "--device auto: " in ln]
        check(len(note) == 1 and all(w in note[0] for w in words),
              f"{tag} auto ({how}): run.log says why: {note}")
    # below the threshold (the default, 1e8): the module is never looked at
    out = f"{tag}_small"
    p = run(fit + ["--out", out, "--device", "auto"], env=env, timeout=GUARD)
    if p.returncode == 0:
        log = run_log(out)
        check("below the threshold" in log and "CUDA module" not in log,
              f"{tag}: a small auto fit does not look at the module: {log[-300:]!r}")


for tag, path, why in BAD_FILES:
    refused_and_fallback(tag, {"XPCSFIT_CUDA_MODULE": path}, (path, why))
    p = run([XF_GPU, "validate"], rc=3, env={"XPCSFIT_CUDA_MODULE": path}, timeout=GUARD)
    one_line(p, "nothing to validate", path, why)
# a link to a whole module is a module (a package manager's link); to a FIFO, a FIFO
os.symlink(REF, os.path.join(BAD, "link.so"))
run(FIT + ["--out", "link_gpu", "--device", "gpu"],
    env={"XPCSFIT_CUDA_MODULE": os.path.join(BAD, "link.so")}, timeout=GUARD)
os.symlink(fifo, os.path.join(BAD, "link_fifo.so"))
p = run(FIT + ["--out", "link_fifo", "--device", "gpu"], rc=2,
        env={"XPCSFIT_CUDA_MODULE": os.path.join(BAD, "link_fifo.so")}, timeout=GUARD)
one_line(p, "a FIFO, not a regular file")
# a bare name is a file of the current folder (./NAME), never the loader's search
shutil.copy(REF, os.path.join(TMP, "bare.so"))
run(FIT + ["--out", "bare_gpu", "--device", "gpu"], env={"XPCSFIT_CUDA_MODULE": "bare.so"},
    timeout=GUARD)
check("(gpu; ./bare.so)" in run_log("bare_gpu"), "a bare name is loaded as ./NAME")
p = run(FIT + ["--out", "bare_libc", "--device", "gpu"], rc=2,
        env={"XPCSFIT_CUDA_MODULE": "libc.so.6"}, timeout=GUARD)
one_line(p, "no CUDA module at XPCSFIT_CUDA_MODULE=libc.so.6")

# the same files named libxpcsfit-cuda.so beside a copy of the program (the search; a
# build without CUDA looks only at XPCSFIT_CUDA_MODULE and says so)
for tag, path, why in BAD_FILES[:3]:
    beside = os.path.join(TMP, f"beside_{tag}")
    os.makedirs(beside)
    shutil.copy2(XF, beside)
    mod = os.path.join(beside, "libxpcsfit-cuda.so")
    if tag == "fifo":
        os.mkfifo(mod)
    elif tag == "folder":
        os.mkdir(mod)
    else:
        shutil.copy(trunc, mod)
    fit = [os.path.join(beside, "xpcsfit")] + FIT[1:]
    if os.path.exists(CUDA_MODULE):
        refused_and_fallback(f"beside_{tag}", {}, (mod, why), fit=fit)
    else:
        p = run(fit + ["--out", f"beside_{tag}_gpu", "--device", "gpu"], rc=2, timeout=GUARD)
        one_line(p, "--device gpu: ", "without CUDA")

# xpcsfit-mpi: --device gpu over ranks is refused before the module is loaded (one line,
# exit 2, no folder); auto over ranks fits on the CPU without looking; one rank is one
# process and meets the FIFO like xpcsfit does
MPIRUN = shutil.which("mpirun")
if not (os.path.exists(XF_MPI) and MPIRUN):
    print(f"SKIP (MPI part): xpcsfit-mpi {'built' if os.path.exists(XF_MPI) else 'not built'}, "
          f"mpirun {'found' if MPIRUN else 'missing'}")
else:
    MPI_ENV = {"XPCSFIT_CUDA_MODULE": fifo, "OMPI_ALLOW_RUN_AS_ROOT": "1",
               "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1"}
    MPI_FIT = [MPIRUN, "--oversubscribe", "-np", "2", XF_MPI] + FIT[1:]
    for how, extra, e in (("flag", ["--device", "gpu"], MPI_ENV),
                          ("env", [], dict(MPI_ENV, XPCSFIT_DEVICE="gpu"))):
        out = f"mpi_gpu_{how}"
        p = run(MPI_FIT + ["--out", out] + extra, rc=2, env=e, timeout=GUARD)
        errors = [ln for ln in p.stderr.splitlines() if ln.startswith("xpcsfit: error:")]
        check(len(errors) == 1 and "2 MPI ranks" in errors[0] and "FIFO" not in p.stderr,
              f"mpi {how}: one line before the module is loaded: {p.stderr!r}")
        check(not os.path.exists(os.path.join(TMP, out)), f"mpi {how}: no folder")
    p = run(MPI_FIT + ["--out", "mpi_auto", "--device", "auto"],
            env=dict(MPI_ENV, XPCSFIT_DEVICE_THRESHOLD="1"), timeout=GUARD)
    if p.returncode == 0:
        log = run_log("mpi_auto")
        check("2 MPI ranks runs on the CPU" in log and "FIFO" not in log,
              f"mpi auto: the CPU without looking at the module: {log[-300:]!r}")
    p = run([MPIRUN, "-np", "1", XF_MPI] + FIT[1:] + ["--out", "mpi_one", "--device", "gpu"],
            rc=2, env=MPI_ENV, timeout=GUARD)
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("xpcsfit: error:")]
    check(len(errors) == 1 and "a FIFO, not a regular file" in errors[0],
          f"mpi one rank: the FIFO named: {p.stderr!r}")

# the built module is found next to the programs (the build tree)
if os.path.exists(CUDA_MODULE):
    p = run([XF_GPU, "validate", "--frames", "100"], rc=0 if HAS_DEVICE else 3)
    check("no CUDA module" not in p.stderr and "cannot be loaded" not in p.stderr,
          f"the build tree's module is found: {p.stderr!r}")


# (2) a machine without CUDA: every CUDA folder under an empty tmpfs, every CUDA library
# elsewhere under /dev/null, in a private mount namespace
def cuda_hiding():
    dirs, files = set(), set()
    for d in glob.glob("/usr/local/cuda*") + glob.glob("/opt/cuda*"):
        dirs.add(os.path.realpath(d))
    libs = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    paths = [ln.split("=>")[-1].strip() for ln in libs.splitlines() if "=>" in ln]
    for ldir in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if ldir:
            paths += glob.glob(os.path.join(ldir, "libcuda*"))
    for path in paths:
        if not os.path.basename(path).startswith(("libcudart", "libcuda.so")):
            continue
        real = os.path.realpath(path)
        if any(real.startswith(d + "/") for d in dirs):
            continue
        if "cuda" in os.path.dirname(real).lower():
            dirs.add(os.path.dirname(real))
        else:
            files.add(real)
    dirs = sorted(dirs)
    dirs = [d for d in dirs if not any(d.startswith(o + "/") for o in dirs)]
    return dirs, sorted(files), sorted(set(os.path.realpath(p) for p in paths
                                           if "libcudart" in os.path.basename(p)))


HIDE = os.path.join(TMP, "hide.sh")
with open(HIDE, "w") as f:
    f.write('#!/bin/sh\n# hide the CUDA folders and libraries, then run "$@"\nIFS=:\n'
            'for d in $XF_HIDE_DIRS; do mount -t tmpfs -o size=1m none "$d" || exit 99; done\n'
            'for f in $XF_HIDE_FILES; do mount --bind /dev/null "$f" || exit 99; done\n'
            'unset IFS\nexec "$@"\n')
os.chmod(HIDE, 0o755)
dirs, files, cudarts = cuda_hiding()
unshare = shutil.which("unshare")
can = unshare and os.geteuid() == 0 and subprocess.run(
    [unshare, "-m", "true"], capture_output=True).returncode == 0
if not can:
    print("SKIP (namespace part): needs root and `unshare -m` "
          f"(euid {os.geteuid()}, unshare {'found' if unshare else 'missing'})")
else:
    hid = {"XF_HIDE_DIRS": ":".join(dirs), "XF_HIDE_FILES": ":".join(files)}
    NS = [unshare, "-m", HIDE]
    print(f"hidden: folders {dirs}, files {files}")
    gone = run(["/usr/bin/python3", "-c",
                "import sys\nfor p in sys.argv[1:]:\n"
                "    try:\n        assert open(p, 'rb').read(4) != b'\\x7fELF', p\n"
                "    except OSError:\n        pass\n"] + cudarts, env=hid, prefix=NS)
    check(gone.returncode == 0, "the CUDA runtime is unreadable in the namespace")
    p = run([XF, "version"], env=hid, prefix=NS)
    check(p.stdout.startswith("xpcsfit "), f"xpcsfit version without CUDA: {p.stdout!r}")
    if os.path.exists(XF_MPI):  # starts (under ASan, OpenMPI's leaks at exit may fail it)
        e = dict(os.environ, **hid)
        p = subprocess.run([unshare, "-m", HIDE, XF_MPI, "--help"], cwd=TMP, env=e,
                           capture_output=True, text=True, timeout=300)
        check(p.returncode == 0 or (p.returncode != 127 and "LeakSanitizer" in p.stderr),
              f"xpcsfit-mpi --help without CUDA: rc {p.returncode} {p.stderr[-300:]!r}")
    run(FIT + ["--out", "ns_cpu"], env=hid, prefix=NS)
    same_bits("ns_cpu", REF_PARAMS)
    run(FIT + ["--out", "ns_auto", "--device", "auto"],
        env=dict(hid, XPCSFIT_DEVICE_THRESHOLD="1"), prefix=NS)
    same_bits("ns_auto", REF_PARAMS)
    one_line(run(FIT + ["--out", "ns_gpu", "--device", "gpu"], rc=2, env=hid, prefix=NS),
             "--device gpu: ")
    one_line(run([XF_GPU, "validate"], rc=3, env=hid, prefix=NS), "nothing to validate")

# an installed tree finds its module in lib/xpcsfit, also moved elsewhere
if os.path.exists(CUDA_MODULE):
    prefix = os.path.join(TMP, "prefix")
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], capture_output=True,
                       text=True, timeout=300)
    check(r.returncode == 0, f"cmake --install: {r.stderr[-400:]}")
    mods = glob.glob(os.path.join(prefix, "lib*", "xpcsfit", "libxpcsfit-cuda.so"))
    check(len(mods) == 1, f"the module installed in lib/xpcsfit: {mods}")
    moved = os.path.join(TMP, "moved")
    os.rename(prefix, moved)
    for tree in (moved,):
        fit = [os.path.join(tree, "bin", "xpcsfit")] + FIT[1:]
        p = run(fit + ["--out", "inst_gpu", "--device", "gpu"], rc=0 if HAS_DEVICE else 2)
        check("no CUDA module" not in p.stderr and "cannot be loaded" not in p.stderr,
              f"the installed module is found from a moved tree: {p.stderr!r}")
    for m in glob.glob(os.path.join(moved, "lib*", "xpcsfit", "libxpcsfit-cuda.so")):
        os.remove(m)
    p = run([os.path.join(moved, "bin", "xpcsfit-gpu"), "validate"], rc=3)
    one_line(p, "no CUDA module", os.path.join(moved, "lib"))

sys.exit(summary())
