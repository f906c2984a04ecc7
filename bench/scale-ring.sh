#!/bin/sh
# scale-ring.sh — times `dtsim run` on a scenario file at several host
# counts and, where it is built, SimGrid's S4U ring on the same platform, and
# prints both side by side (make bench-scale).  Both are timed from outside
# as whole processes (bench/measure): start-up, platform, run and exit.
#
# Usage: scale-ring.sh DTSIM MEASURE SCENARIO COMPARE_AWK PEER SGVER GOAL HOSTS...
#   PEER: the simgrid-ring program, or "" to skip the peer.
#   GOAL: how many times faster than the peer dtsim should be at the last
#   host count (the line after the table says whether it is).
set -eu
dtsim=$1 measure=$2 scenario=$3 compare=$4 peer=$5 sgver=$6 goal=$7
shift 7
last= wall= pwall=
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
params=$(sed -n 's/^params *= *//p' "$scenario")
bytes=$((params * 4))
. "$(dirname "$0")/bench-lib.sh"
for n in "$@"; do
  out=$("$measure" "$dtsim" run "$scenario" --set "cluster.workers=$n" \
          -o "$tmp/run.db" --json 2>"$tmp/err") || { cat "$tmp/err" >&2; exit 1; }
  sim=$(printf '%s\n' "$out" | sed -n 's/^{.*"sim_time": \([^,]*\),.*/\1/p' | head -n 1)
  wall=$(measured wall_s "$out")
  rss=$(measured rss_kib "$out")
  transfers=$((2 * n * (n - 1)))
  lines=$(printf 'RESULT dtsim hosts=%d chunk=%d transfers=%d sim_s=%s wall_s=%s transfers_per_s=%.0f rss_kib=%s\n' \
            "$n" $((bytes / n)) "$transfers" "$sim" "$wall" \
            "$(per_second "$transfers" "$wall")" "$rss")
  if test -n "$peer"; then
    pout=$("$measure" "$peer" "$n" "$bytes" 2>/dev/null) || exit 1
    r=$(printf '%s\n' "$pout" | sed -n 's/^RESULT simgrid //p')
    pwall=$(measured wall_s "$pout")
    lines=$(printf '%s\nRESULT simgrid %s wall_s=%s rss_kib=%s transfers_per_s=%.0f\n' "$lines" "$r" \
              "$pwall" "$(measured rss_kib "$pout")" \
              "$(per_second "$transfers" "$pwall")")
  fi
  printf '%s\n' "$lines" | awk -v sgver="$sgver" -v dlabel="dtsim run" -f "$compare"
  last=$n
done
if test -n "$peer" && test -n "$last"; then
  echo "$last $wall $pwall $goal" | awk '{
    x = $2 > 0 ? $3 / $2 : 0
    printf "  goal: >= %gx SimGrid at %d hosts: %.0fx (dtsim %.2f s, SimGrid %.2f s), %s\n",
           $4, $1, x, $2, $3, (x >= $4 ? "met" : "NOT met") }'
fi
