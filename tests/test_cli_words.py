#!/usr/bin/env python3
"""The words xpcsfit writes (issue 33 items 10 and 13, adr/0075): a data path that is
not UTF-8 (byte 0xFF) is written as U+FFFD into every UTF-8 format — parameters.json and
`validate --json` parse with Python's strict json, results.h5's source_file decodes as
UTF-8, posterior.nc opens in netCDF4 and xarray — while a valid multibyte name
("données_é.h5") passes unchanged and `cmc --nlsq` still recognises the file; seeds are
written unsigned (2^64 − 1, never −1); `--set q=[a, b]` is a list; `--joint` over one
ring says so; an interruption names its signal in the error line and in INCOMPLETE.
The refusals (empty or repeated options, --resume with --force, bounds whose width
overflows, an --nlsq result with a value that is no number or outside the bounds) are in
bad_inputs/ (cases_usage.py, cases_config.py)."""
import json
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers"))
from tally import check, summary  # noqa: E402

XF = os.environ["XF_BINARY"]
TMP = os.environ.get("XF_TMP", "/tmp/xf_test_cli_words")
shutil.rmtree(TMP, ignore_errors=True)
os.makedirs(TMP)

SEED_MAX = 2**64 - 1
BAD = b"bad_\xff_name.h5"          # not UTF-8
GOOD = "données_é.h5"              # UTF-8, multibyte: passes unchanged
CONFIG = """analysis_mode: static
experimental_data: {file_path: data.h5}
analyzer_parameters: {dt: 0.1, start_frame: 1, end_frame: 30, scattering: {wavevector_q: 0.01}}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [1000.0, -0.5, 0.0]
  fixed_parameters: {D_offset: 0.0}
optimization:
  cmc:
    seed: %d
""" % SEED_MAX
# small and quick: the importance route's check (its seed) and a few NUTS draws
CMC = CONFIG + "    per_shard_mcmc: {num_warmup: 40, num_samples: 40, num_chains: 2}\n"
SHARDS = CONFIG + ("    sharding: {num_shards: 2}\n"
                   "    per_shard_mcmc: {num_warmup: 40, num_samples: 40, num_chains: 2}\n")


def run(*args, env=None, timeout=300):
    args = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    p = subprocess.run([XF.encode()] + args, cwd=TMP, capture_output=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def write(name, text):
    with open(os.path.join(TMP, name), "w") as f:
        f.write(text)


def strict_json(raw, what):
    """raw bytes parse as UTF-8 JSON (json.loads refuses bytes that are not UTF-8)."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        check(False, "%s is not UTF-8 JSON: %s" % (what, e))
        return None


def setup():
    write("cfg.yaml", CONFIG)
    write("cmc.yaml", CMC)
    write("shards.yaml", SHARDS)
    rc, _, err = run("simulate", "--config", "cfg.yaml", "--phi", "0,90", "--out", "data.h5",
                     "--noise", "0.01")
    assert rc == 0, err
    shutil.copy(os.path.join(TMP, "data.h5"), os.path.join(TMP.encode(), BAD))
    shutil.copy(os.path.join(TMP, "data.h5"), os.path.join(TMP, GOOD))


def test_paths(name, label):
    """nlsq, validate --json and cmc on a data file called name (bytes)."""
    out = ("out_" + label).encode()
    abs_name = os.path.join(TMP.encode(), name)
    want = abs_name.decode("utf-8", "replace")  # what every UTF-8 file must hold
    rc, raw, err = run("validate", "--config", "cfg.yaml", "--data", name, "--json")
    check(rc == 0, "%s validate --json: rc %d %s" % (label, rc, err))
    v = strict_json(raw, "%s validate --json" % label)
    check(v is not None and want.split("/")[-1] in json.dumps(v, ensure_ascii=False),
          "%s validate --json names the file as %r" % (label, want))
    rc, _, err = run("nlsq", "--config", "cfg.yaml", "--data", name, "--out", out,
                     "--threads", "1")
    check(rc == 0, "%s nlsq: rc %d %s" % (label, rc, err))
    nlsq = os.path.join(TMP.encode(), out, b"nlsq")
    with open(os.path.join(nlsq, b"parameters.json"), "rb") as f:
        p = strict_json(f.read(), "%s nlsq parameters.json" % label)
    check(p is not None and p["data"]["file"] == want,
          "%s parameters.json data.file %r, want %r" % (label, p and p["data"]["file"], want))
    with open(os.path.join(nlsq, b"report.html"), "rb") as f:
        page = f.read()
    try:
        check(want in page.decode("utf-8"), "%s report.html names %r" % (label, want))
    except UnicodeDecodeError as e:
        check(False, "%s report.html is not UTF-8: %s" % (label, e))
    import h5py
    with h5py.File(os.path.join(nlsq, b"results.h5"), "r") as f:
        src = f["data"].attrs["source_file"]
        try:
            text = src.decode("utf-8") if isinstance(src, bytes) else str(src)
            check(text == want, "%s results.h5 source_file %r, want %r" % (label, text, want))
        except UnicodeDecodeError as e:
            check(False, "%s results.h5 source_file is not UTF-8: %s" % (label, e))
    # cmc from that result: the recorded path still names this file (U+FFFD for 0xFF)
    rc, _, err = run("cmc", "--config", "cmc.yaml", "--data", name, "--nlsq", out, "--out", out,
                     "--no-plots", "--threads", "2")
    check(rc in (0, 1) and "another data file" not in err,
          "%s cmc --nlsq: rc %d %s" % (label, rc, err))
    cmc = os.path.join(TMP.encode(), out, b"cmc")
    with open(os.path.join(cmc, b"parameters.json"), "rb") as f:
        c = strict_json(f.read(), "%s cmc parameters.json" % label)
    if c is None:
        return
    check(c["data"]["file"] == want, "%s cmc data.file %r" % (label, c["data"]["file"]))
    # seeds 0 … 2^64 − 1 are written as such (adr/0075), not as a signed −1
    check(c["sampler"]["seed"] == SEED_MAX, "sampler.seed %r" % c["sampler"]["seed"])
    ic = (c.get("posterior_route") or {}).get("importance_check")
    # round k's points come from seed + (k − 1)·2⁶⁴/φ, modulo 2⁶⁴ (adr/0078): unsigned too
    want_seed = (SEED_MAX + ((ic or {}).get("rounds", 1) - 1) * 0x9E3779B97F4A7C15) % 2**64
    check(ic is not None and ic["seed"] == want_seed,
          "posterior_route.importance_check.seed %r, want %d" % (ic and ic["seed"], want_seed))
    with h5py.File(os.path.join(cmc, b"results.h5"), "r") as f:
        s = f["cmc/importance_check/seed"]
        check(s.dtype.kind == "u" and int(s[()]) == want_seed,
              "results.h5 importance_check/seed %r %s" % (s[()], s.dtype))
        src = f["data"].attrs["source_file"]
        check(src.decode("utf-8") == want, "%s cmc results.h5 source_file %r" % (label, src))
    with open(os.path.join(cmc, b"run.log"), "rb") as f:
        log = f.read().decode("utf-8", "replace")
    check(str(SEED_MAX) in log and "seed -1" not in log, "run.log seeds")
    import netCDF4
    nc_path = os.path.join(cmc, b"posterior.nc").decode("utf-8", "surrogateescape")
    with netCDF4.Dataset(nc_path) as ds:
        groups = list(ds.groups)
        check("posterior" in groups, "%s posterior.nc groups %r" % (label, groups))
        texts = [str(getattr(g, a)) for g in ds.groups.values() for a in g.ncattrs()]
        texts += [str(getattr(ds, a)) for a in ds.ncattrs()]
        check(all(isinstance(t, str) for t in texts), "%s posterior.nc attributes" % label)
    import xarray
    with xarray.open_dataset(nc_path, group="posterior") as x:
        check(len(x.data_vars) > 0, "%s xarray posterior: %r" % (label, x))


def test_batch():
    """batch over both names: its summary (CSV, JSON) and records are UTF-8, each file
    "ok" (the record's U+FFFD path still names its input), and --resume skips both."""
    rc, _, err = run("batch", "--config", "cfg.yaml", "--out", "batch", "--no-plots",
                     "--threads", "1", BAD, GOOD)
    check(rc == 0, "batch: rc %d %s" % (rc, err))
    with open(os.path.join(TMP, "batch", "batch_summary.json"), "rb") as f:
        s = strict_json(f.read(), "batch_summary.json")
    status = [(x["file"], x["status"]) for x in (s or {}).get("files", [])]
    check(status == [(BAD.decode("utf-8", "replace"), "ok"), (GOOD, "ok")],
          "batch summary: %r" % status)
    with open(os.path.join(TMP, "batch", "batch_summary.csv"), "rb") as f:
        try:
            f.read().decode("utf-8")
        except UnicodeDecodeError as e:
            check(False, "batch_summary.csv is not UTF-8: %s" % e)
    rc, _, err = run("batch", "--config", "cfg.yaml", "--out", "batch", "--no-plots",
                     "--threads", "1", "--resume", BAD, GOOD)
    check(rc == 0 and err.count("complete already") == 2,
          "batch --resume skips both: rc %d %s" % (rc, err))


def test_set_list():
    """--set q=[a, b] is a list (docs/config.md: wavevector_q takes one), read as the file's."""
    rc, _, err = run("simulate", "--config", "cfg.yaml", "--phi", "0,90", "--q", "0.003,0.008",
                     "--out", "rings.h5")
    check(rc == 0, "simulate rings: %s" % err)
    rc, out, err = run("validate", "--config", "cfg.yaml", "--data", "rings.h5", "--set",
                       "q=[0.003, 0.008]")
    check(rc == 0, "--set q=[0.003, 0.008]: rc %d %s" % (rc, err))
    check(b"0.003" in out and b"0.008" in out, "both rings selected: %r" % out[-400:])


def test_joint_one_ring():
    rc, _, err = run("nlsq", "--config", "cfg.yaml", "--joint", "--out", "joint1",
                     "--no-plots", "--threads", "1")
    check(rc == 0, "nlsq --joint on one ring: rc %d %s" % (rc, err))
    check("--joint over one ring" in err and "own fit" in err,
          "--joint with one ring says so: %s" % err)


def test_signal_named():
    """SIGTERM while a CMC chain runs: the line and INCOMPLETE say SIGTERM and the phase."""
    rc, _, err = run("nlsq", "--config", "cfg.yaml", "--out", "sig", "--no-plots",
                     "--threads", "1")
    check(rc == 0, "nlsq for the signal test: %s" % err)
    env = dict(os.environ, XPCSFIT_TEST_PAUSE="cmc_chain_0_0:120")
    p = subprocess.Popen([XF, "cmc", "--config", "shards.yaml", "--nlsq", "sig", "--out",
                          "sig", "--no-plots", "--threads", "1"], cwd=TMP, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in p.stderr:  # a state, not a time: the pause's own line
        lines.append(line)
        if "test pause in cmc_chain_0_0" in line:
            p.send_signal(signal.SIGTERM)
            break
    lines += p.stderr.read().splitlines()
    p.wait(timeout=120)
    errors = [l for l in lines if l.startswith("xpcsfit: error:")]
    check(p.returncode == 143, "SIGTERM: exit %d" % p.returncode)
    check(len(errors) == 1 and "interrupted by SIGTERM during sample" in errors[0],
          "the line names the signal: %r" % errors)
    marker = os.path.join(TMP, "sig", "cmc", "INCOMPLETE")
    text = open(marker).read() if os.path.exists(marker) else ""
    check("interrupted by SIGTERM" in text, "INCOMPLETE names the signal: %r" % text)


def main():
    setup()
    test_paths(BAD, "0xff")
    test_paths(GOOD.encode(), "utf8")
    test_batch()
    test_set_list()
    test_joint_one_ring()
    test_signal_named()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
