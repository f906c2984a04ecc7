#!/bin/sh
# scale-3d.sh — one 3-D training iteration (tensor T x pipeline P x data N)
# run with `dtsim run` at several GPU counts, one table row each: whether
# the replicas ran mirrored (docs/policies.md, "Mirrored replicas"),
# engine events, wall time, peak memory and simulated time; then the
# largest run against the goal and how wall time grew against the GPUs
# (make bench-3d).  Each run is timed as a whole process (bench/measure).
#
# Usage: scale-3d.sh DTSIM MEASURE SCENARIO P T GOAL_S GOAL_GB COUNT...
#   COUNT: a number of GPUs (a multiple of P x T; data N = COUNT / (P T)),
#   or N:off for the same run with [network] flow_classes = off (every
#   replica run, every message: the reference).
set -eu
. "$(dirname "$0")/bench-lib.sh"
dtsim=$1 measure=$2 scenario=$3 P=$4 T=$5 goal_s=$6 goal_gb=$7
shift 7
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '  %8s %-9s %11s %9s %9s %20s\n' GPUs mirrored events "wall (s)" "RSS (MiB)" \
  "simulated (s)"
first_n= first_wall= last_n= last_wall= last_rss=
for arg in "$@"; do
  n=${arg%:off}
  classes=auto
  test "$n" = "$arg" || classes=off
  run_point "$dtsim" "$measure" "$scenario" "$tmp/run.db" policy.replicas_mirrored \
    "cluster.workers=$n" "policy.layout=$((n / (P * T)))x${P}x${T}" \
    "network.flow_classes=$classes"
  mirrored=${run_param%%:*} sim=$run_sim events=$run_events wall=$run_wall rss=$run_rss
  printf '  %8s %-9s %11s %9.2f %9.1f %20s\n' "$n" "$mirrored" "$events" "$wall" \
    "$(echo "$rss" | awk '{ print $1 / 1024 }')" "$sim"
  if test "$classes" = auto; then
    test -n "$first_n" || { first_n=$n first_wall=$wall; }
    last_n=$n last_wall=$wall last_rss=$rss
  fi
done
if test -n "$last_n"; then
  echo "$last_n $last_wall $last_rss $goal_s $goal_gb $first_n $first_wall" | awk '{
    gb = $3 * 1024 / 1e9
    printf "  goal: %d GPUs within %g s and %g GB: %.2f s and %.3f GB, %s\n",
           $1, $4, $5, $2, gb, ($2 <= $4 && gb <= $5 ? "met" : "NOT met")
    if ($6 != $1 && $7 > 0)
      printf "  growth: %.0fx the GPUs (%d to %d) took %.1fx the wall time, %s\n",
             $1 / $6, $6, $1, $2 / $7, ($2 / $7 <= $1 / $6 ? "no faster than the GPUs" : "FASTER than the GPUs") }'
fi
