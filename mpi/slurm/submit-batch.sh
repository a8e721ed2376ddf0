#!/bin/bash
# Submits the batch array (xpcsfit-batch-array.sbatch) and, after it, its summary step: the
# same script once more with XPCSFIT_BATCH_FINAL=1 (`xpcsfit batch --resume` over the whole
# list), held until every array task has ended, whatever its exit code (afterany), so the
# summary also covers failed and killed tasks.
# Usage: mpi/slurm/submit-batch.sh [sbatch options for the array, e.g. --array=0-31%8]
# XPCSFIT_DRY_RUN=1 prints the two sbatch lines instead.
set -euo pipefail
# shellcheck disable=SC2034 # read by die() in submit-lib.sh
me=submit-batch.sh
script=${XPCSFIT_BATCH_SCRIPT:-$(dirname "$(readlink -f "$0")")/xpcsfit-batch-array.sbatch}

# die, quote_line
# shellcheck source=/dev/null
. "$(dirname "$(readlink -f "$0")")/../submit-lib.sh"

# The number of tasks of an --array spec: 0-15, 0-30:2, 1,3,5-9, 0-31%8.
array_count() {
	local spec=${1%%%*} part first last step n=0
	local -a parts
	IFS=, read -ra parts <<<"$spec"
	for part in "${parts[@]}"; do
		step=1
		case $part in *:*) step=${part#*:} part=${part%%:*} ;; esac
		first=${part%%-*} last=${part#*-}
		case $first$last$step in
		'' | *[!0-9]*) die "cannot read the array '$1': give --array as ranges (0-15, 0-30:2, 1,3,5-9)" ;;
		esac
		if [ "$step" -lt 1 ] || [ "$last" -lt "$first" ]; then
			die "cannot read the array '$1'"
		fi
		n=$((n + (last - first) / step + 1))
	done
	[ "$n" -ge 1 ] || die "cannot read the array '$1'"
	printf '%s' "$n"
}

# The array the tasks run as: the last --array/-a option given here, else the script's own
# #SBATCH --array line.
array_spec() {
	local spec='' next=0 arg
	for arg in "$@"; do
		if [ "$next" = 1 ]; then
			spec=$arg next=0
			continue
		fi
		case $arg in
		--array=*) spec=${arg#--array=} ;;
		--array | -a) next=1 ;;
		-a?*) spec=${arg#-a} ;;
		esac
	done
	[ -n "$spec" ] || spec=$(sed -n 's/^#SBATCH[[:space:]]\{1,\}\(--array=\|-a[[:space:]]*\)\([^[:space:]]*\).*/\2/p' "$script" | tail -n 1)
	[ -n "$spec" ] || die "no --array given here nor in $script"
	printf '%s' "$spec"
}

[ -f "$script" ] || die "array script not found: $script (set XPCSFIT_BATCH_SCRIPT)"
tasks=$(array_count "$(array_spec "$@")")
array=(sbatch --parsable "$@" "$script")
# --array=0 replaces the script's #SBATCH --array: the summary is one task, not another
# array. It is told the array's task count: it runs at most one task's share of the files.
final_opts=(--parsable --array=0 --job-name=xpcsfit-batch-summary
	"--export=ALL,XPCSFIT_BATCH_FINAL=1,XPCSFIT_TASKS=$tasks")
if [ "${XPCSFIT_DRY_RUN:-0}" = 1 ]; then
	quote_line "${array[@]}"
	quote_line sbatch "${final_opts[@]}" "--dependency=afterany:<array job id>" "$script"
	exit 0
fi
command -v sbatch >/dev/null || die "sbatch not found: run this on a SLURM login node"
array_id=$("${array[@]}")
array_id=${array_id%%;*} # --parsable prints "id" or "id;cluster"
final_id=$(sbatch "${final_opts[@]}" "--dependency=afterany:$array_id" "$script")
final_id=${final_id%%;*}
echo "array job $array_id; summary job $final_id runs when every task has ended"
echo "follow: squeue -j $array_id,$final_id   afterwards: sacct -j $array_id,$final_id"
