# accuracy-time.gp — test accuracy against simulated time, one line per run,
# and the runs' common [scenario] target_accuracy as a dashed line.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns], target (percent, 0 = none).
set terminal term size 1100,600 font ",11"
set output outfile
# many runs: the key outside the data; 8 colours, each again with the next dash
# pattern (40 distinct lines)
dash(i) = 1 + int((i - 1) / 8) % 5
set termoption noenhanced
set title "Test accuracy against simulated time"
set xlabel "simulated time (s)"
set ylabel "test accuracy (%)"
set grid
set key outside right top
set yrange [0:100]
set datafile separator "\t"
if (target > 0) set arrow from graph 0, first target to graph 1, first target nohead dt 2 lw 1 lc rgb "#555555"
if (target > 0) set label sprintf("target %.4g%%", target) at graph 0.01, first target offset 0,0.7 tc rgb "#555555"
plot for [i=1:nruns] datafile index (i-1) using 1:2 with lines linetype i dashtype dash(i) lw 2 title titles[i]
