# speedup.gp — measured speedup against workers, one colour per group of
# runs (runs equal in every swept key but workers), with the ideal line and,
# under strong scaling (a fixed global batch), the fitted Amdahl curve.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, ngroups,
# titles[1..ngroups], f[1..ngroups] (fitted serial fractions), n0[1..ngroups]
# (workers of each group's reference run), xmax (largest worker count),
# fit (1: strong scaling, draw the Amdahl fits; 0: weak scaling, none).
# Data: one block per group, columns workers, speedup.
set terminal term size 1100,640 font ",11"
set output outfile
set termoption noenhanced
if (fit) {
  set title "Speedup against workers, fixed global batch (points: measured; lines: Amdahl fit)"
} else {
  set title "Speedup against workers, fixed batch per worker (points: measured)"
}
set xlabel "workers"
set ylabel "speedup over the fewest workers N0"
set logscale x 2
set logscale y 2
set grid
set key outside right top
set datafile separator "\t"
set samples 200
amdahl(n, f, m) = 1.0 / (f + (1.0 - f) * m / n)
set xrange [*:xmax]
if (fit) {
  plot for [i=1:ngroups] datafile index (i-1) using 1:2 with points linetype i pt 7 ps 1.3 title titles[i], \
       for [i=1:ngroups] [n0[i]:xmax] amdahl(x, f[i], n0[i]) with lines linetype i lw 2 \
         title sprintf("Amdahl fit, f = %.4g", f[i]), \
       for [i=1:ngroups] [n0[i]:xmax] x / n0[i] with lines dashtype 2 lc rgb "#888888" \
         title (i == 1 ? "ideal: N / N0" : "")
} else {
  plot for [i=1:ngroups] datafile index (i-1) using 1:2 with linespoints linetype i pt 7 ps 1.3 lw 2 title titles[i], \
       for [i=1:ngroups] [n0[i]:xmax] x / n0[i] with lines dashtype 2 lc rgb "#888888" \
         title (i == 1 ? "ideal: N / N0" : "")
}
