# loss-time.gp — training loss against simulated time, one line per run.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns], ymax (the top of the
# loss axis, 0 = automatic).
set terminal term size 1000,560+18*int((nruns+2)/3) font ",11"
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
set title "Training loss against simulated time"
set xlabel "simulated time (s)"
set ylabel "training loss (mean cross-entropy)"
set grid
set key outside below center horizontal maxcols 3
set datafile separator "\t"
if (ymax > 0) set yrange [0:ymax]
plot for [i=1:nruns] datafile index (i-1) using 1:2 with lines linetype i dashtype dash(i) lw 2 title titles[i]
