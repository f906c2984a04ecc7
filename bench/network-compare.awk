# network-compare.awk — prints the "RESULT dtsim ..." and "RESULT simgrid ..."
# lines of bench-network and simgrid-ring side by side (make bench).  Lines
# starting with '#' are passed through.  Variables: sgver, SimGrid's version;
# dlabel, what the dtsim row is called (default "dtsim").  A key given twice
# for one side keeps its last value.
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
  row("dtsim", dlabel != "" ? dlabel : "dtsim")
  if ("simgrid" in seen) {
    row("simgrid", "SimGrid " sgver)
    a = v["dtsim", "sim_s"]; b = v["simgrid", "sim_s"]
    d = a - b; if (d < 0) d = -d
    printf "  simulated times differ by %.1e relative; dtsim %s, %s\n", d / b,
           times(v["simgrid", "wall_s"], v["dtsim", "wall_s"], "faster", "slower"),
           times(v["simgrid", "rss_kib"], v["dtsim", "rss_kib"], "less memory", "more memory")
  }
}
function row(who, label) {
  printf "  %-14s %20.12f %10.3f %14d %14.1f\n", label, v[who, "sim_s"],
         v[who, "wall_s"], v[who, "transfers_per_s"], v[who, "rss_kib"] / 1024
}
# "3.2x faster" when ours < theirs, else "1.5x slower" (by the other ratio)
function times(theirs, ours, better, worse) {
  if (ours <= 0 || theirs <= 0) return "(no figure)"
  return ours <= theirs ? sprintf("%.1fx %s", theirs / ours, better) \
                        : sprintf("%.1fx %s", ours / theirs, worse)
}
