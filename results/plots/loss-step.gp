# loss-step.gp — training loss against optimizer steps, one line per run.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns], ymax (the top of the
# loss axis, 0 = automatic).
set terminal term size 1100,600 font ",11"
set output outfile
# many runs: the key outside the data; 8 colours, each again with the next dash
# pattern (40 distinct lines)
dash(i) = 1 + int((i - 1) / 8) % 5
set termoption noenhanced
set title "Training loss against steps"
set xlabel "step (gradients applied)"
set ylabel "training loss (mean cross-entropy)"
set grid
set key outside right top
set datafile separator "\t"
if (ymax > 0) set yrange [0:ymax]
plot for [i=1:nruns] datafile index (i-1) using 1:2 with lines linetype i dashtype dash(i) lw 2 title titles[i]
