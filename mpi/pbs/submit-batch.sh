#!/bin/bash
# Submits the batch array (xpcsfit-batch-array.pbs) and, after it, its summary step: the
# same script once more with XPCSFIT_BATCH_FINAL=1 (`xpcsfit batch --resume` over the whole
# list), held until every subjob has ended, whatever its exit code (afterany), so the
# summary also covers failed and killed subjobs.
# Usage: mpi/pbs/submit-batch.sh [qsub options for the array, e.g. -q workq]
# Both jobs get -V, so XPCSFIT_* knobs set in this shell reach them.
# XPCSFIT_DRY_RUN=1 prints the two qsub lines instead.
set -euo pipefail
# shellcheck disable=SC2034 # read by die() in submit-lib.sh
me=submit-batch.sh
script=${XPCSFIT_BATCH_SCRIPT:-$(dirname "$(readlink -f "$0")")/xpcsfit-batch-array.pbs}

# die, quote_line
# shellcheck source=/dev/null
. "$(dirname "$(readlink -f "$0")")/../submit-lib.sh"

[ -f "$script" ] || die "array script not found: $script (set XPCSFIT_BATCH_SCRIPT)"
script=$(readlink -f "$script")
# qsub cannot take -J away from a script, so the summary runs the script as a command
# (qsub -- bash SCRIPT), which reads no #PBS lines: its resources are the script's own
# #PBS lines given on the command line, less -J (not an array) and -N (its own name).
final_opts=(-V -v XPCSFIT_BATCH_FINAL=1 -N xpcsfit-summary)
while read -r line; do
	read -ra words <<<"$line"
	case ${words[0]:-} in -J | -N | '') continue ;; esac
	final_opts+=("${words[@]}")
done < <(sed -n 's/^#PBS[[:space:]]\{1,\}//p' "$script")

array=(qsub -V "$@" "$script")
if [ "${XPCSFIT_DRY_RUN:-0}" = 1 ]; then
	quote_line "${array[@]}"
	quote_line qsub "${final_opts[@]}" -W "depend=afterany:<array job id>" -- /bin/bash "$script"
	exit 0
fi
command -v qsub >/dev/null || die "qsub not found: run this on a PBS login node"
array_id=$("${array[@]}")
final_id=$(qsub "${final_opts[@]}" -W "depend=afterany:$array_id" -- /bin/bash "$script")
echo "array job $array_id; summary job $final_id runs when every subjob has ended"
echo "follow: qstat -t $array_id $final_id"
