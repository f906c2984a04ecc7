# iteration-cdf.gp — distribution of worker iteration times: the empirical
# CDF of (end - start) over every worker iteration, one line per run.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns].
# Data: one block per run, columns iteration time (s), cumulative share.
set terminal term size 1100,600 font ",11"
set output outfile
# many runs: the key outside the data; 8 colours, each again with the next dash
# pattern (40 distinct lines)
dash(i) = 1 + int((i - 1) / 8) % 5
set termoption noenhanced
set title "Distribution of iteration times (CDF over worker iterations)"
set xlabel "simulated time per worker iteration (s)"
set ylabel "share of worker iterations at most x (CDF)"
set yrange [0:1.02]
set grid
set key outside right top
set datafile separator "\t"
plot for [i=1:nruns] datafile index (i-1) using 1:2 with steps linetype i dashtype dash(i) lw 2 title titles[i]
