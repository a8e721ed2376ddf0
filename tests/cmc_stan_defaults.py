#!/usr/bin/python3
"""cmc_stan_defaults.py — slow test: `xpcsfit cmc` (num_shards: 1) at the SHIPPED NUTS
defaults against Stan on the static one-shard posterior of validation/stan.

Runs validation/stan/compare_static.py on two data sets (SETS below) with
--xf-adapt-delta default: the config it writes has no target_accept_prob, so whatever
optimization.cmc default the binary ships is what is tested (likewise metric, tree depth,
chains, warmup and draws: the script's 4 x (500 + 1500) are the shipped defaults). Seeds:
XF_STAN_SEEDS (default 1,2,3). --assert: every parameter's mean within 0.1 Stan sd, every
sd within 5 % (8 % on the curved-ridge set; see SETS), and at most XF_STAN_MAX_DIV
(default 0) post-warmup divergences in each run. XF_STAN_SETS (default validation,hard)
picks the data sets. The reference is Stan's dense_e at adapt_delta 0.95 (0 divergences
on both sets). The compiled Stan model is cached in XF_TMP (the first run compiles, ~45 s).

Skipped (exit 77) when Rscript or rstan is missing (scripts/install-stan.sh installs it).
Label slow: ~15 CPU min on 2 cores, nearly all of it Stan. adr/0041-nuts-defaults.md.
"""
import os
import shutil
import subprocess
import sys

src = os.environ.get("XF_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
xf = os.environ.get("XF_BINARY", os.path.join(src, "build", "xpcsfit"))
tmp = os.environ.get("XF_TMP", "/tmp/xf_cmc_stan_defaults")

if shutil.which("Rscript") is None:
    print("SKIP: no Rscript (scripts/install-stan.sh)")
    sys.exit(77)
r = subprocess.run(["Rscript", "-e", "suppressPackageStartupMessages(library(rstan))"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if r.returncode != 0:
    print("SKIP: rstan not installed (scripts/install-stan.sh)")
    sys.exit(77)

# Two data sets (adr/0041): the validation set (D0 4000, well identified; xpcsfit's bulk
# ESS >= 2 700, so means within 0.1 sd and sds within 5 % hold per run), and the hard one
# (D0 1200, alpha -1.2, D_offset 10: a curved alpha-D_offset ridge where target 0.85 gave
# 1-3 % divergences, ESS ~ 100 and sds 7-11 % off). On the hard set xpcsfit's bulk ESS is
# ~ 1 000 per run and Stan's ~ 2 000, so an sd ratio carries ~ 2.7 % Monte Carlo error:
# its sd limit is 8 % there (5 % failed at random at target 0.99: 0.947); divergences 0.
SETS = [("validation", "", os.environ.get("XF_STAN_SD_REL", "0.05")),
        ("hard", "D0=1200,alpha=-1.2,D_offset=10", os.environ.get("XF_STAN_SD_REL_HARD", "0.08"))]
only = os.environ.get("XF_STAN_SETS", "validation,hard").split(",")
rc = 0
for name, truth, sd_rel in SETS:
    if name not in only:
        continue
    work = os.path.join(tmp, name)
    os.makedirs(work, exist_ok=True)
    cmd = ["/usr/bin/python3", os.path.join(src, "validation", "stan", "compare_static.py"),
           "--xpcsfit", "--xf", xf, "--work", work, "--metric", "dense_e",
           "--adapt-delta", "0.95", "--xf-adapt-delta", "default",
           "--xf-seeds", os.environ.get("XF_STAN_SEEDS", "1,2,3"),
           "--cores", os.environ.get("XF_STAN_CORES", "2"),
           "--model-cache", os.path.join(tmp, "static_shard_model.rds"),
           "--assert", "--max-mean-diff", "0.1", "--max-sd-rel", sd_rel,
           "--max-divergences", os.environ.get("XF_STAN_MAX_DIV", "0")]
    if truth:
        cmd += ["--truth", truth]
    print(f"== data set {name}\n$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd).returncode
    print(f"== data set {name}: {'PASS' if r == 0 else 'FAIL (exit %d)' % r}", flush=True)
    rc = rc or r
sys.exit(rc)
