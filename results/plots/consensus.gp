# consensus.gp — the workers' consensus distance (mean squared distance of
# their models to the average) against simulated time, one line per gossip
# run, on a logarithmic axis.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns].
set terminal term size 1100,600 font ",11"
set output outfile
# many runs: the key outside the data; 8 colours, each again with the next dash
# pattern (40 distinct lines)
dash(i) = 1 + int((i - 1) / 8) % 5
set termoption noenhanced
set title "Consensus distance against simulated time"
set xlabel "simulated time (s)"
set ylabel "consensus distance (1/W) sum |x_w - avg|^2"
set logscale y
set grid
set key outside right top
set datafile separator "\t"
plot for [i=1:nruns] datafile index (i-1) using 1:2 with lines linetype i dashtype dash(i) lw 2 title titles[i]
