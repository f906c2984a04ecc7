# accuracy-time.gp — test accuracy against simulated time, one line per run,
# and the runs' common [scenario] target_accuracy as a dashed line.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns], target (percent, 0 = none).
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
set title "Test accuracy against simulated time"
set xlabel "simulated time (s)"
set ylabel "test accuracy (%)"
set grid
set key outside below center horizontal maxcols 3
set yrange [0:100]
set datafile separator "\t"
if (target > 0) set arrow from graph 0, first target to graph 1, first target nohead dt 2 lw 1 lc rgb "#555555"
if (target > 0) set label sprintf("target %.4g%%", target) at graph 0.01, first target offset 0,0.7 tc rgb "#555555"
plot for [i=1:nruns] datafile index (i-1) using 1:2 with lines linetype i dashtype dash(i) lw 2 title titles[i]
