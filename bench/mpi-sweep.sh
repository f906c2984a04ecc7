#!/bin/sh
# mpi-sweep.sh — a sweep over MPI ranks against the same points split by
# hand (make bench-mpi).  Times, as whole commands, `dtsim run` of the
# scenario with one rank, then `mpirun -n N dtsim run` (one database), and
# the peer: N `dtsim run` processes started together, each with its share of
# the sweep's values in point order (round robin, N databases), which is
# what one does without MPI; and `dtsim run --jobs N`, N threads of one
# process, the way on one machine.  Prints points per second, the speedup over one
# rank, and the share of the N ranks' time spent running points (the sum of
# the points' wall times over N x the elapsed time: what a schedule loses to
# waiting on its last points and to rank 0's writing).
#
# Both in the order the file writes its values (ascending cost) and in the
# reverse order (costliest first), since a dynamic schedule can only be as
# good as the order it is handed the points in.
#
# Usage: mpi-sweep.sh DTSIM MEASURE MPIRUN SCENARIO RANKS...
set -eu
. "$(dirname "$0")/bench-lib.sh"
dtsim=$1 measure=$2 mpirun=$3 scenario=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1

# the swept key and its values, from the scenario's [sweep] (one key)
line=$(sed -n '/^\[sweep\]/,/^\[/{/=/p}' "$scenario" | head -n 1)
key=$(printf '%s' "$line" | sed 's/ *=.*//')
values=$(printf '%s' "$line" | sed 's/^[^=]*= *//; s/ //g')
points=$(printf '%s' "$values" | tr ',' '\n' | awk 'END { print NR }')
reversed=$(printf '%s' "$values" | tr ',' '\n' | awk '{ v[NR] = $0 } END { for (i = NR; i > 0; i--) printf "%s%s", v[i], (i > 1 ? "," : "") }')

# busy DB...: the points' wall times summed, over the databases
busy () {
  for db in "$@"; do sqlite3 "$db" "SELECT SUM(wall_time) FROM runs"; done \
    | awk '{ s += $1 } END { printf "%.3f", s }'
}

for order in written reversed; do
values_now=$values; [ $order = written ] || values_now=$reversed
one=
printf '  %s: %d points (%s = %s), %s core(s); --jobs 1 in every rank\n' "$scenario" \
  "$points" "$key" "$values_now" "$(nproc)"
printf '  %-36s %6s %9s %8s %8s %9s\n' "" ranks "wall (s)" points/s speedup "busy (%)"
one=
for n in "$@"; do
  # dtsim: one database
  if [ "$n" -eq 1 ]; then
    out=$("$measure" "$dtsim" run "$scenario" -o "$tmp/one.db" --jobs 1 --quiet \
            --set "sweep.$key=$values_now" 2>&1)
  else
    out=$("$measure" "$mpirun" --oversubscribe -n "$n" "$dtsim" run "$scenario" \
            -o "$tmp/mpi$n.db" --jobs 1 --quiet --set "sweep.$key=$values_now" 2>&1)
  fi
  wall=$(measured wall_s "$out")
  [ "$(measured status "$out")" = 0 ] || { printf '%s\n' "$out" >&2; exit 1; }
  db=$tmp/one.db; [ "$n" -eq 1 ] || db=$tmp/mpi$n.db
  [ -n "$one" ] || one=$wall
  printf '  %-36s %6d %9.2f %8.2f %8.2f %9.1f\n' "mpirun -n N dtsim run (1 database)" "$n" \
    "$wall" "$(per_second "$points" "$wall")" "$(echo "$one $wall" | awk '{ print $1 / $2 }')" \
    "$(echo "$(busy "$db") $n $wall" | awk '{ print 100 * $1 / ($2 * $3) }')"
  [ "$n" -gt 1 ] || continue
  # one process, N threads: the way on one machine
  out=$("$measure" "$dtsim" run "$scenario" -o "$tmp/jobs.db" --jobs "$n" --quiet \
          --set "sweep.$key=$values_now" 2>&1)
  wall=$(measured wall_s "$out")
  printf '  %-36s %6d %9.2f %8.2f %8.2f %9.1f\n' "dtsim run --jobs N (one process)" "$n" \
    "$wall" "$(per_second "$points" "$wall")" "$(echo "$one $wall" | awk '{ print $1 / $2 }')" \
    "$(echo "$(busy "$tmp/jobs.db") $n $wall" | awk '{ print 100 * $1 / ($2 * $3) }')"
  # the peer: N processes, values dealt round robin, started together
  cat > "$tmp/split.sh" <<SPLIT
i=0
while [ \$i -lt $n ]; do
  share=\$(printf '%s' "$values_now" | tr ',' '\n' | awk -v n=$n -v i=\$i 'NR % n == i % n' | paste -sd, -)
  "$dtsim" run "$scenario" -o "$tmp/split$n-\$i.db" --jobs 1 --quiet --set "sweep.$key=\$share" &
  i=\$((i + 1))
done
wait
SPLIT
  out=$("$measure" sh "$tmp/split.sh" 2>&1)
  wall=$(measured wall_s "$out")
  printf '  %-36s %6d %9.2f %8.2f %8.2f %9.1f\n' "N x dtsim run, split by hand (peer)" "$n" \
    "$wall" "$(per_second "$points" "$wall")" "$(echo "$one $wall" | awk '{ print $1 / $2 }')" \
    "$(echo "$(busy "$tmp"/split"$n"-*.db) $n $wall" | awk '{ print 100 * $1 / ($2 * $3) }')"
done
done
