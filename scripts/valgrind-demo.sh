#!/usr/bin/env bash
# valgrind-demo.sh — the demo's steps under valgrind memcheck (issue 9): simulate,
# validate, NLSQ of the simulated and the real CHX file, and a CMC fit of the demo's
# posterior with fewer draws (memcheck is ~50x slower; the code paths are the same).
# Any invalid read/write, use of uninitialised memory or definite leak fails the script,
# in the plot worker processes too: each process reports to its own log (%p), and the
# logs are read after each step (a worker's own exit code only turns into a warning).
#   bash scripts/valgrind-demo.sh [build/xpcsfit]
set -euo pipefail
xpcsfit=$(realpath "${1:-build/xpcsfit}")
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/xpcsfit-valgrind.XXXXXX)
trap 'rm -rf "$work"' EXIT
vg=(valgrind --tool=memcheck --error-exitcode=99 --leak-check=full
	--errors-for-leak-kinds=definite --show-leak-kinds=definite --track-origins=no
	--child-silent-after-fork=no --trace-children=no -q
	--suppressions=tests/valgrind.supp --log-file="$work/vg.%p.log")
step() {
	echo "== valgrind: $*"
	rm -f "$work"/vg.*.log
	local rc=0
	"${vg[@]}" "$xpcsfit" "$@" 2>"$work/stderr.txt" || rc=$?
	cat "$work/stderr.txt" >&2
	if grep -l . "$work"/vg.*.log >/dev/null 2>&1; then
		cat "$work"/vg.*.log >&2
		echo "valgrind: errors or definite leaks in: $*" >&2
		exit 1
	fi
	if grep -q "worker failed" "$work/stderr.txt"; then
		echo "valgrind: a plot worker failed in: $*" >&2
		exit 1
	fi
	if [ "$rc" -ne 0 ]; then
		echo "valgrind: exit $rc in: $*" >&2
		exit 1
	fi
}
step simulate --config configs/demo_laminar.yaml --phi -60,-5,0,45,90 \
	--out "$work/laminar_demo.h5" --noise 0.002 --seed 1 --lzf
sed -e "s|demo_output/laminar_demo.h5|$work/laminar_demo.h5|" configs/demo_fit.yaml >"$work/fit.yaml"
step validate --config "$work/fit.yaml"
step nlsq --config "$work/fit.yaml" --out "$work/laminar" --threads 2
step nlsq --config configs/chx_static.yaml --out "$work/chx" --threads 2 --no-plots
sed -e "s|demo_output/laminar_demo.h5|$work/laminar_demo.h5|" \
	-e "s|num_warmup: 300|num_warmup: 150|" -e "s|num_samples: 700|num_samples: 150|" -e "s|num_shards: 4|num_shards: 2|" \
	-e "s|end_frame: 120|end_frame: 40|" -e "s|num_chains: 4|num_chains: 2|" \
	configs/demo_cmc.yaml >"$work/cmc.yaml"
step fit --config "$work/cmc.yaml" --out "$work/posterior" --threads 2
echo "valgrind: no memory errors, no definite leaks"
