#!/bin/sh
# scale-classes.sh — runs one scenario file with `dtsim run` at several
# GPU counts and prints one table row each: the path its collectives took
# (flow classes or per message), engine events, wall time, peak memory and
# simulated time, then the largest run against the goal (make
# bench-classes).  Each run is timed as a whole process (bench/measure).
#
# Usage: scale-classes.sh DTSIM MEASURE SCENARIO GOAL_S GOAL_GB COUNT...
#   COUNT: a number of GPUs ([cluster] workers), or N:off for the same run
#   with [network] flow_classes = off (the per-message reference).
set -eu
. "$(dirname "$0")/bench-lib.sh"
dtsim=$1 measure=$2 scenario=$3 goal_s=$4 goal_gb=$5
shift 5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '  %8s %-22s %12s %9s %9s %20s\n' GPUs path events "wall (s)" "RSS (MiB)" \
  "simulated (s)"
last_n= last_wall= last_rss=
for arg in "$@"; do
  n=${arg%:off}
  classes=auto
  test "$n" = "$arg" || classes=off
  run_point "$dtsim" "$measure" "$scenario" "$tmp/run.db" network.flow_classes_path \
    "cluster.workers=$n" "network.flow_classes=$classes"
  path=$run_param sim=$run_sim events=$run_events wall=$run_wall rss=$run_rss
  printf '  %8s %-22s %12s %9.2f %9.1f %20s\n' "$n" "$path" "$events" "$wall" \
    "$(echo "$rss" | awk '{ print $1 / 1024 }')" "$sim"
  if test "$classes" = auto; then
    last_n=$n last_wall=$wall last_rss=$rss
  fi
done
if test -n "$last_n"; then
  echo "$last_n $last_wall $last_rss $goal_s $goal_gb" | awk '{
    gb = $3 * 1024 / 1e9
    printf "  goal: %d GPUs within %g s and %g GB: %.2f s and %.3f GB, %s\n",
           $1, $4, $5, $2, gb, ($2 <= $4 && gb <= $5 ? "met" : "NOT met") }'
fi
