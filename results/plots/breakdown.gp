# breakdown.gp — where a worker's iteration goes: compute, communication and
# waiting, as stacked bars, one bar per run (means over worker iterations).
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns] (the run labels), maxlabel
# (characters of the longest run label: the slanted labels get room below
# and to the right of the bars).
# Data (numbers only): one row per run: its number i (label titles[i]),
# compute, comm, wait (s per worker iteration).
rm = maxlabel * 0.8 > 14 ? maxlabel * 0.8 : 14
set terminal term size 220+110*nruns+8*rm,560+3*maxlabel font ",11"
set output outfile
set termoption noenhanced
set title "Time per worker iteration: compute, communication, waiting"
set xlabel "run"
set ylabel "simulated time per worker iteration (s)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.9 border -1
set boxwidth 0.7
set grid y
set key outside right top
set xtics rotate by -30
set rmargin rm
set bmargin 3 + 0.25 * maxlabel
set yrange [0:*]
set datafile separator "\t"
plot datafile using 2:xtic(titles[int($1)]) lc rgb "#2b8cbe" title "compute", \
     '' using 3 lc rgb "#fdae61" title "communication", \
     '' using 4 lc rgb "#d7191c" title "waiting"
