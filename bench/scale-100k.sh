#!/bin/sh
# scale-100k.sh — runs one scenario file with `dtsim run` and prints what
# simulating it cost: wall time, events per second and peak memory per
# worker (make bench-100k).  Timed as a whole process (bench/measure).
#
# Usage: scale-100k.sh DTSIM MEASURE SCENARIO [--set KEY=VALUE ...]
set -eu
. "$(dirname "$0")/bench-lib.sh"
dtsim=$1 measure=$2 scenario=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$("$measure" "$dtsim" run "$scenario" "$@" -o "$tmp/run.db" --json 2>"$tmp/err") \
  || { cat "$tmp/err" >&2; exit 1; }
json=$(printf '%s\n' "$out" | sed -n '/^{/p')
value () { printf '%s\n' "$json" | sed -n "s/^{[^}]*\"$1\": \([^,}]*\).*/\1/p" | head -n 1; }
workers=$(sed -n 's/^workers *= *//p' "$scenario")
for kv in "$@"; do
  case $kv in cluster.workers=*) workers=${kv#cluster.workers=} ;; esac
done
printf '  %s %s: %s workers, simulated %s s, %s events\n' "$scenario" "$*" "$workers" \
  "$(value sim_time)" "$(value events)"
printf '  wall %s s, %.0f events/s, peak RSS %.0f MiB = %.1f KiB per worker\n' \
  "$(measured wall_s "$out")" "$(per_second "$(value events)" "$(measured wall_s "$out")")" \
  "$(echo "$(measured rss_kib "$out")" | awk '{ print $1 / 1024 }')" \
  "$(echo "$(measured rss_kib "$out") $workers" | awk '{ print $1 / $2 }')"
