# staleness.gp — histogram of iterations.staleness: the share of worker
# iterations whose gradient was computed on parameters that many updates old
# (docs/policies.md), one line per run.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns].
# Data: one block per run, columns staleness, share of iterations (%).
set terminal term size 1100,600 font ",11"
set output outfile
# many runs: the key outside the data; 8 colours, each again with the next dash
# pattern (40 distinct lines)
dash(i) = 1 + int((i - 1) / 8) % 5
set termoption noenhanced
set title "Staleness of applied gradients"
set xlabel "staleness (iterations behind)"
set ylabel "share of worker iterations (%)"
set yrange [0:*]
set grid
set key outside right top
set datafile separator "\t"
plot for [i=1:nruns] datafile index (i-1) using 1:2 with linespoints linetype i dashtype dash(i) lw 2 pt 7 title titles[i]
