# staleness.gp — histogram of iterations.staleness: the share of worker
# iterations whose gradient was computed on parameters that many updates old
# (docs/policies.md), one line per run.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns].
# Data: one block per run, columns staleness, share of iterations (%).
set terminal term size 960,600 font ",11"
set output outfile
set termoption noenhanced
set title "Staleness of applied gradients"
set xlabel "staleness (updates behind)"
set ylabel "share of worker iterations (%)"
set yrange [0:*]
set grid
set key top right
set datafile separator "\t"
plot for [i=1:nruns] datafile index (i-1) using 1:2 with linespoints lw 2 pt 7 title titles[i]
