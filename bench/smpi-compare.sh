#!/bin/sh
# smpi-compare.sh — times `dtsim run` on bench/scenarios/softmax-ring.ini
# (real math) at several worker counts and, beside it, SimGrid SMPI running
# bench/smpi-softmax.c, the same training as an MPI program, on the same
# star (make bench-smpi).  Both are timed as whole processes (bench/measure).
#
# Usage: smpi-compare.sh DTSIM MEASURE SCENARIO SMPI_PROGRAM WORKERS...
#   SMPI_PROGRAM: the program built with smpicc, or "" to skip the peer.
set -eu
dtsim=$1 measure=$2 scenario=$3 peer=$4
shift 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
iters=$(sed -n 's/^iterations *= *//p' "$scenario")
. "$(dirname "$0")/bench-lib.sh"
printf '  %8s %12s %12s %12s %12s %10s\n' workers "dtsim (s)" "dtsim MiB" "SMPI (s)" "SMPI MiB" speedup
for n in "$@"; do
  out=$("$measure" "$dtsim" run "$scenario" --set "cluster.workers=$n" \
          --set "model.samples=$((256 * n))" -o "$tmp/run.db" --json 2>"$tmp/err") \
    || { cat "$tmp/err" >&2; exit 1; }
  dw=$(measured wall_s "$out") dr=$(measured rss_kib "$out")
  sw=- sr=- speed=-
  if test -n "$peer"; then
    {
      echo "<?xml version='1.0'?>"
      echo '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
      echo '<platform version="4.1">'
      echo "  <cluster id=\"star\" prefix=\"h\" suffix=\"\" radical=\"0-$((n - 1))\" speed=\"100Gf\""
      echo '           bw="1.25GBps" lat="5us" sharing_policy="SPLITDUPLEX"/>'
      echo '</platform>'
    } > "$tmp/platform.xml"
    seq 0 $((n - 1)) | sed 's/^/h/' > "$tmp/hosts"
    pout=$("$measure" smpirun -np "$n" -platform "$tmp/platform.xml" -hostfile "$tmp/hosts" \
             --cfg=smpi/allreduce:lr --cfg=smpi/host-speed:100Gf --log=root.thres:critical \
             "$peer" "$iters" 2>/dev/null) || exit 1
    sw=$(measured wall_s "$pout") sr=$(measured rss_kib "$pout")
    speed=$(echo "$sw $dw" | awk '{ printf "%.1fx", ($2 > 0 ? $1 / $2 : 0) }')
    sr=$(echo "$sr" | awk '{ printf "%.1f", $1 / 1024 }')
  fi
  printf '  %8d %12s %12.1f %12s %12s %10s\n' "$n" "$dw" "$(echo "$dr" | awk '{ print $1 / 1024 }')" \
    "$sw" "$sr" "$speed"
done
