# speedup.gp — measured speedup against workers, one colour per group of
# runs (runs equal in every swept key but workers), with the ideal line and,
# under strong scaling (a fixed global batch), the fitted Amdahl curve.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, ngroups,
# titles[1..ngroups], f[1..ngroups] (fitted serial fractions), n0[1..ngroups]
# (workers of each group's reference run), xmax (largest worker count),
# fit (1: strong scaling, draw the Amdahl fits; 0: weak scaling, none).
# Data: one block per group, columns workers, speedup.
set terminal term size 1000,600+18*int(((fit ? 2 * ngroups : ngroups)+3)/3) font ",11"
set output outfile
set encoding utf8
# 12 colours (each again with the next dash pattern: 60 distinct lines); the
# key below the plot, up to 3 entries a row, the figure taller as it grows
set linetype 1 lc rgb "#1f77b4"
set linetype 2 lc rgb "#d62728"
set linetype 3 lc rgb "#2ca02c"
set linetype 4 lc rgb "#ff7f0e"
set linetype 5 lc rgb "#9467bd"
set linetype 6 lc rgb "#8c564b"
set linetype 7 lc rgb "#e377c2"
set linetype 8 lc rgb "#17becf"
set linetype 9 lc rgb "#7f7f7f"
set linetype 10 lc rgb "#bcbd22"
set linetype 11 lc rgb "#000000"
set linetype 12 lc rgb "#393b79"
set linetype cycle 12
dash(i) = 1 + int((i - 1) / 12) % 5
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
set key outside below center horizontal maxcols 3
set datafile separator "\t"
set samples 200
amdahl(n, f, m) = 1.0 / (f + (1.0 - f) * m / n)
set xrange [*:xmax]
if (fit) {
  plot for [i=1:ngroups] datafile index (i-1) using 1:2 with points linetype i pt 7 ps 1.3 title titles[i], \
       for [i=1:ngroups] [n0[i]:xmax] amdahl(x, f[i], n0[i]) with lines linetype i dashtype dash(i) lw 2 \
         title sprintf("Amdahl fit, f = %.4g", f[i]), \
       for [i=1:ngroups] [n0[i]:xmax] x / n0[i] with lines dashtype 2 lc rgb "#888888" \
         title (i == 1 ? "ideal: N / N0" : "")
} else {
  plot for [i=1:ngroups] datafile index (i-1) using 1:2 with linespoints linetype i dashtype dash(i) pt 7 ps 1.3 lw 2 title titles[i], \
       for [i=1:ngroups] [n0[i]:xmax] x / n0[i] with lines dashtype 2 lc rgb "#888888" \
         title (i == 1 ? "ideal: N / N0" : "")
}
