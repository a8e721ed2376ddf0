#!/bin/bash
# The demo's build (make demo): a start line, a progress line at every 10 % of CMake's
# count (a from-scratch build takes minutes on 2 cores and said nothing before), one line
# at the end; the whole output goes to BUILD/build.log, and on a failure its last 30 lines
# are printed. Usage: scripts/build-quiet.sh BUILD JOBS
set -uo pipefail
build=${1:?usage: build-quiet.sh BUILD JOBS}
jobs=${2:-2}
log=$build/build.log
mkdir -p "$build"
echo "building $build/xpcsfit ($jobs jobs; the first time about a minute on 2 idle cores," \
	"several on busy ones; seconds after that; log: $log)"

# CMake's Makefile generator prints "[ 42%] ...", Ninja "[12/345] ...": one line each time
# the count passes another tenth, never more.
progress() {
	awk '
	match($0, /^\[ *[0-9]+%\]/) { pct = substr($0, 2, RLENGTH - 3) + 0 }
	match($0, /^\[[0-9]+\/[0-9]+\]/) {
		split(substr($0, 2, RLENGTH - 2), n, "/")
		pct = n[2] > 0 ? int(100 * n[1] / n[2]) : 0
	}
	pct >= next_pct + 10 {
		next_pct = pct - pct % 10
		printf "  build %d %%\n", next_pct
		fflush()
	}'
}

start=$SECONDS
if cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1 &&
	cmake --build "$build" -j "$jobs" --target xpcsfit 2>&1 | tee -a "$log" | progress; then
	echo "built $build/xpcsfit in $((SECONDS - start)) s (log: $log)"
else
	tail -n 30 "$log"
	echo "build failed, the whole log: $log"
	exit 1
fi
