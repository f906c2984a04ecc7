# bench-lib.sh — what the benchmark scripts share (sourced, not run).

# measured KEY OUTPUT: the value of KEY (wall_s, rss_kib, status) on the
# "MEASURE ..." line bench/measure added to OUTPUT.
measured () {
  printf '%s\n' "$2" | sed -n 's/^MEASURE //p' | tr ' ' '\n' | sed -n "s/^$1=//p" | tail -n 1
}

# per_second COUNT SECONDS: COUNT / SECONDS, 0 when SECONDS is 0.
per_second () {
  echo "$1 $2" | awk '{ print ($2 > 0 ? $1 / $2 : 0) }'
}
