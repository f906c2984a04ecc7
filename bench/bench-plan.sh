#!/bin/sh
# bench-plan.sh — times `dtsim plan` on Megatron-LM's 76.1B GPT on 1,024
# A100s (scenarios/validation/megatron-gpt-76.1b-a100.ini), beside one
# `dtsim run` of the published layout from the same build: the search
# (every layout parsed, checked and estimated) and one simulation, as whole
# processes timed by bench/measure (make bench-plan).  Prints figures only.
#
# Usage: bench-plan.sh DTSIM MEASURE SCENARIO
set -eu
dtsim=$1 measure=$2 scenario=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/bench-lib.sh"
out=$("$measure" "$dtsim" plan "$scenario" --top 1 --json --quiet 2>"$tmp/err") \
  || { cat "$tmp/err" >&2; exit 1; }
n=$(printf '%s\n' "$out" | sed -n 's/^{.*"candidates": \([0-9]*\),.*/\1/p' | head -n 1)
best=$(printf '%s\n' "$out" | sed -n 's/^{.*"ranked": \[{[^]]*"iteration_time": \([^,]*\),.*/\1/p' | head -n 1)
wall=$(measured wall_s "$out")
rss=$(measured rss_kib "$out")
printf 'RESULT plan layouts=%s best_iteration_s=%s wall_s=%s layouts_per_s=%.0f rss_kib=%s (search and one simulation)\n' \
  "$n" "$best" "$wall" "$(per_second "$n" "$wall")" "$rss"
rout=$("$measure" "$dtsim" run "$scenario" -o "$tmp/run.db" --json --quiet 2>"$tmp/err") \
  || { cat "$tmp/err" >&2; exit 1; }
sim=$(printf '%s\n' "$rout" | sed -n 's/^{.*"sim_time": \([^,]*\),.*/\1/p' | head -n 1)
printf 'RESULT run published_layout sim_s=%s wall_s=%s rss_kib=%s (one simulation, for scale)\n' \
  "$sim" "$(measured wall_s "$rout")" "$(measured rss_kib "$rout")"
