#!/usr/bin/env bash
# gpu-check.sh — issue 36's checks on a machine with a GPU, in one run of at most ~10 min
# (docs/gpu.md "Checks on a GPU"): xpcsfit-gpu validate; bench with its job crossovers, the
# costs file and NLSQ and the posterior run end to end on both sides; the 11.5 M-point
# posterior (23 angles x 1000 frames) by the importance route with --device gpu (wall,
# context and upload included) and --device cpu on every core, from one NLSQ result,
# their summaries compared. Usage: scripts/gpu-check.sh [BUILD]
# with OUT=DIR for the results (default /tmp/xpcsfit-gpu-check); the numbers go to
# OUT/summary.txt.
set -u
BUILD=$(cd "${1:-build}" && pwd)
OUT=${OUT:-/tmp/xpcsfit-gpu-check}
mkdir -p "$OUT"
XF=$BUILD/xpcsfit
XG=$BUILD/xpcsfit-gpu
CORES=$(nproc)
say() { echo "== $*" | tee -a "$OUT/summary.txt"; }
timed() { # timed NAME CMD...: wall seconds and rc into the summary, output to OUT/NAME.txt
	local name=$1 t0 rc
	shift
	t0=$(date +%s.%N)
	timeout 420 "$@" >"$OUT/$name.txt" 2>&1
	rc=$?
	say "$name: rc $rc, $(echo "$(date +%s.%N) - $t0" | bc) s wall"
	return $rc
}
: >"$OUT/summary.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >>"$OUT/summary.txt" 2>&1
timed validate "$XG" validate --frames 400 --json "$OUT/validate.json" --force || exit 1
timed bench "$XG" bench --max-frames 1600 --threads "$CORES" --json "$OUT/bench.json" \
	--costs "$OUT/costs.txt" --force
grep -E "^crossover|^costs|_s_per_point|^gpu_" "$OUT/bench.txt" >>"$OUT/summary.txt"
# the jobs run end to end on both sides: NLSQ's table, then the posterior's
sed -n '/end to end/,/^whole jobs/p' "$OUT/bench.txt" >>"$OUT/summary.txt"
cd "$OUT" || exit 1
cat >big.yaml <<'YAML'
analysis_mode: static
experimental_data:
  file_path: big.h5
analyzer_parameters:
  dt: 0.1
  end_frame: 1001
  scattering: {wavevector_q: 0.0054}
initial_parameters:
  parameter_names: [D0, alpha, D_offset]
  values: [8000, -0.1, 0]
  fixed_parameters: {D_offset: 0}
YAML
ANGLES=$(seq -s, -110 10 110)
[ -f big.h5 ] || timed simulate "$XF" simulate --config big.yaml --phi "$ANGLES" --out big.h5
timed nlsq "$XF" nlsq --config big.yaml --threads "$CORES" --no-plots --no-surfaces \
	--out n --force
timed posterior_gpu "$XF" cmc --config big.yaml --nlsq n --threads "$CORES" --no-plots \
	--device gpu --out gpu --force
timed posterior_cpu "$XF" cmc --config big.yaml --nlsq n --threads "$CORES" --no-plots \
	--device cpu --out cpu --force
/usr/bin/python3 - <<'PY' | tee -a "$OUT/summary.txt"
import json
def load(d):
    with open(f"{d}/cmc/parameters.json") as f:
        return json.load(f)
a, b = load("cpu"), load("gpu")
worst = 0.0
for g in ("parameters", "scaling_parameters"):
    for n, v in a[g].items():
        for k in ("value", "uncertainty", "median", "q05", "q95"):
            x, y = v.get(k), b[g][n].get(k)
            if isinstance(x, float):
                worst = max(worst, abs(x - y) / max(abs(x), 1e-300))
print(f"posterior summaries, gpu against cpu: worst relative difference {worst:.3g}")
print("route:", b["posterior_route"]["route"], "| device:", b["posterior_route"].get("device"))
print("timing_s gpu:", b.get("timing_s"), "| cpu:", a.get("timing_s"))
PY
