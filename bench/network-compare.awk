# network-compare.awk — prints the "RESULT dtsim ..." and "RESULT simgrid ..."
# lines of bench-network and simgrid-ring side by side (make bench).  Lines
# starting with '#' are passed through.  Variable sgver: SimGrid's version.
/^#/ { print "  " $0; next }
/^RESULT / {
  who = $2
  for (i = 3; i <= NF; i++) {
    split ($i, kv, "=")
    v[who, kv[1]] = kv[2]
  }
  seen[who] = 1
}
END {
  if (!("dtsim" in seen)) { print "network-compare: no dtsim result"; exit 1 }
  printf "  %d hosts, %d transfers of %d bytes\n", v["dtsim", "hosts"],
         v["dtsim", "transfers"], v["dtsim", "chunk"]
  printf "  %-14s %20s %10s %14s %14s\n", "", "simulated (s)", "wall (s)",
         "transfers/s", "peak RSS (MiB)"
  row("dtsim", "dtsim")
  if ("simgrid" in seen) {
    row("simgrid", "SimGrid " sgver)
    a = v["dtsim", "sim_s"]; b = v["simgrid", "sim_s"]
    d = a - b; if (d < 0) d = -d
    printf "  simulated times differ by %.1e relative; dtsim %.1fx faster, " \
           "%.1fx less memory\n", d / b,
           v["simgrid", "wall_s"] / v["dtsim", "wall_s"],
           v["simgrid", "rss_kib"] / v["dtsim", "rss_kib"]
  }
}
function row(who, label) {
  printf "  %-14s %20.12f %10.3f %14d %14.1f\n", label, v[who, "sim_s"],
         v[who, "wall_s"], v[who, "transfers_per_s"], v[who, "rss_kib"] / 1024
}
