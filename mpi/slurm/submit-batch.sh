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

[ -f "$script" ] || die "array script not found: $script (set XPCSFIT_BATCH_SCRIPT)"
array=(sbatch --parsable "$@" "$script")
# --array=0 replaces the script's #SBATCH --array: the summary is one task, not another array.
final_opts=(--parsable --array=0 --job-name=xpcsfit-batch-summary
	"--export=ALL,XPCSFIT_BATCH_FINAL=1")
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
