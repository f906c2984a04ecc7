#!/bin/sh
# scale-100k.sh — runs one scenario file with `dtsim run` and prints what
# simulating it cost: wall time, events per second and peak memory per
# worker (make bench-100k).  Timed as a whole process (bench/measure).
#
# Usage: scale-100k.sh DTSIM MEASURE SCENARIO [--set KEY=VALUE ...]
set -eu
dtsim=$1 measure=$2 scenario=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$("$measure" "$dtsim" run "$scenario" "$@" -o "$tmp/run.db" --json 2>"$tmp/err") \
  || { cat "$tmp/err" >&2; exit 1; }
m=$(printf '%s\n' "$out" | sed -n 's/^MEASURE //p')
json=$(printf '%s\n' "$out" | sed -n '/^{/p')
value () { printf '%s\n' "$json" | sed -n "s/^{[^}]*\"$1\": \([^,}]*\).*/\1/p" | head -n 1; }
field () { printf '%s\n' "$m" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
workers=$(sed -n 's/^workers *= *//p' "$scenario")
for kv in "$@"; do
  case $kv in cluster.workers=*) workers=${kv#cluster.workers=} ;; esac
done
printf '  %s %s: %s workers, simulated %s s, %s events\n' "$scenario" "$*" "$workers" \
  "$(value sim_time)" "$(value events)"
printf '  wall %s s, %.0f events/s, peak RSS %.0f MiB = %.1f KiB per worker\n' \
  "$(field wall_s)" "$(echo "$(value events) $(field wall_s)" | awk '{ print ($2 > 0 ? $1 / $2 : 0) }')" \
  "$(echo "$(field rss_kib)" | awk '{ print $1 / 1024 }')" \
  "$(echo "$(field rss_kib) $workers" | awk '{ print $1 / $2 }')"
