#!/usr/bin/env bash
# measure.sh BINARY CONFIG OUTDIR [extra args]: a timed `xpcsfit fit` (CPU = user + sys
# from /usr/bin/time) and its posterior's summary (summarize.py). adr/0079.
set -u
bin=$1 cfg=$2 out=$3
shift 3
/usr/bin/time -f "%U %S %e" -o "$out.time" "$bin" fit --config "$cfg" --out "$out" --force -q "$@"
echo "rc $?"
read -r u s e <"$out.time"
echo "cpu_s $(echo "$u + $s" | bc) wall_s $e"
/usr/bin/python3 "$(dirname "$0")/summarize.py" "$out/cmc/parameters.json"
