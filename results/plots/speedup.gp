# speedup.gp — measured speedup against workers with the fitted Amdahl curve,
# one colour per group of runs (runs equal in every swept key but workers).
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, ngroups,
# titles[1..ngroups], f[1..ngroups] (fitted serial fractions), n0[1..ngroups]
# (workers of each group's reference run), xmax (largest worker count).
# Data: one block per group, columns workers, speedup.
set terminal term size 1000,640 font ",11"
set output outfile
set termoption noenhanced
set title "Speedup against workers (points: measured; lines: Amdahl fit)"
set xlabel "workers"
set ylabel "speedup (throughput over that of the fewest workers)"
set logscale x 2
set logscale y 2
set grid
set key outside right top
set datafile separator "\t"
set samples 200
amdahl(n, f, m) = 1.0 / (f + (1.0 - f) * m / n)
set xrange [*:xmax]
plot for [i=1:ngroups] datafile index (i-1) using 1:2 with points linetype i pt 7 ps 1.3 title titles[i], \
     for [i=1:ngroups] [n0[i]:xmax] amdahl(x, f[i], n0[i]) with lines linetype i lw 2 \
       title sprintf("Amdahl fit, f = %.4g", f[i]), \
     [1:xmax] x with lines dashtype 2 lc rgb "#888888" title "ideal (linear)"
