# iteration-time.gp — simulated time per iteration against the number of
# workers, one line per combination of the other swept keys.
# Variables set by `dtsim plot`: term, outfile, datafile, nlines, titles[1..nlines].
set terminal term size 1000,640 font ",11"
set output outfile
set title "Time per iteration against workers"
set xlabel "workers"
set ylabel "simulated time per iteration (s)"
set logscale x 2
set logscale y 10
set format y "%.0e"
set grid
set key outside right top
set datafile separator "\t"
plot for [i=1:nlines] datafile index (i-1) using 1:2 with linespoints lw 2 pt 7 lc (i-1)%8+1 dt (i-1)/8+1 title titles[i]
