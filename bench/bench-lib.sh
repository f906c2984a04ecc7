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

# run_point DTSIM MEASURE SCENARIO DB PARAM SET...: one whole `dtsim run
# SCENARIO --set SET ... -o DB --json` under MEASURE; sets run_sim (the
# simulated time), run_events, run_wall (s), run_rss (KiB) and run_param
# (the value of the params row PARAM, "-" without sqlite3).  Exits on a
# failed run, its error on stderr.
run_point () {
  _dtsim=$1 _measure=$2 _scenario=$3 _db=$4 _param=$5
  shift 5
  _sets=
  for _s in "$@"; do _sets="$_sets --set $_s"; done
  rm -f "$_db"
  # shellcheck disable=SC2086
  _out=$("$_measure" "$_dtsim" run "$_scenario" $_sets -o "$_db" --json 2>"$_db.err") \
    || { cat "$_db.err" >&2; exit 1; }
  _json=$(printf '%s\n' "$_out" | sed -n '/^{/p')
  run_sim=$(printf '%s\n' "$_json" | sed -n 's/.*"sim_time": \([^,}]*\).*/\1/p')
  run_events=$(printf '%s\n' "$_json" | sed -n 's/.*"total_events": \([^,}]*\).*/\1/p')
  run_param=-
  if command -v sqlite3 >/dev/null 2>&1; then
    run_param=$(sqlite3 "$_db" "SELECT value FROM params WHERE key = '$_param'" 2>/dev/null \
                || echo -)
  fi
  run_wall=$(measured wall_s "$_out")
  run_rss=$(measured rss_kib "$_out")
}
