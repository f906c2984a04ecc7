# breakdown.gp — where a worker's iteration goes: compute, communication and
# waiting, as stacked horizontal bars, one bar per run (means over worker
# iterations), the first run at the top.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns] (the run labels), maxlabel
# (characters of the longest run label).
# Data (numbers only): one row per run: its number i (label titles[i]),
# compute, comm, wait (s per worker iteration).
# a page's width whatever the runs: the labels left of the bars (at most 60
# characters of room; `dtsim plot` cuts longer ones), 24 px per bar
lm = maxlabel < 60 ? maxlabel : 60
set terminal term size 1000,140+24*nruns font ",11"
set output outfile
set encoding utf8
set termoption noenhanced
set title "Time per worker iteration: compute, communication, waiting"
set xlabel "simulated time per worker iteration"
# SI prefixes: 5.0 ms, not 0.005
set format x "%.1s %cs"
set style fill solid 0.9 border -1
set grid x
set key outside top center horizontal
set lmargin lm + 2
set yrange [nruns + 0.6:0.4]
set xrange [0:*]
set ytics scale 0
set datafile separator "\t"
h = 0.35
plot datafile using ($2 / 2):1:(0):2:($1 - h):($1 + h):ytic(titles[int($1)]) \
       with boxxyerror lc rgb "#2b8cbe" title "compute", \
     '' using ($2 + $3 / 2):1:2:($2 + $3):($1 - h):($1 + h) \
       with boxxyerror lc rgb "#fdae61" title "communication", \
     '' using ($2 + $3 + $4 / 2):1:($2 + $3):($2 + $3 + $4):($1 - h):($1 + h) \
       with boxxyerror lc rgb "#d7191c" title "waiting"
