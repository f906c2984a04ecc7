# iteration-time.gp — simulated time per iteration against the number of
# workers, one line per combination of the other swept keys.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nlines, titles[1..nlines].
set terminal term size 1000,640 font ",11"
set output outfile
# many runs: the key outside the data; 8 colours, each again with the next dash
# pattern (40 distinct lines)
dash(i) = 1 + int((i - 1) / 8) % 5
set termoption noenhanced
set title "Time per iteration against workers"
set xlabel "workers"
set ylabel "simulated time per iteration (s)"
set logscale x 2
set logscale y 10
set format y "%.0e"
set grid
set key outside right top
set datafile separator "\t"
# lines 9 to 16 repeat the colours of 1 to 8, dashed
do for [t=9:16] { set linetype t linecolor (t-8) dashtype 2 }
plot for [i=1:nlines] datafile index (i-1) using 1:2 with linespoints linetype i dashtype dash(i) lw 2 pt 7 title titles[i]
