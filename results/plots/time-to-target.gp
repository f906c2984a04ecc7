# time-to-target.gp — simulated time until each run first reached its
# threshold (its [scenario] target_accuracy or target_loss, or the default of
# docs/plots.md), one horizontal bar per run, the first run at the top; runs
# that never reached it have no bar and say so.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns] (the run labels), maxlabel
# (characters of the longest), thr_text, what ("loss", "accuracy", or "" when
# the runs' targets differ).
# Data (numbers only): one row per run: its number i (label titles[i]),
# seconds (or "nan"), 1 when the run never reached the target (else 0).
# a page's width whatever the runs: the labels left of the bars (at most 60
# characters of room; `dtsim plot` cuts longer ones), 24 px per bar
lm = maxlabel < 60 ? maxlabel : 60
set terminal term size 1000,140+24*nruns font ",11"
set output outfile
set encoding utf8
set termoption noenhanced
set title sprintf("Time to reach the target%s (%s)", what eq "" ? "" : " ".what, thr_text)
set xlabel sprintf("simulated time to target%s", what eq "" ? "" : " ".what)
set format x "%.1s %cs"
set style fill solid 0.9 border -1
set grid x
set key off
set lmargin lm + 2
set yrange [nruns + 0.6:0.4]
set xrange [0:*]
set ytics scale 0
set datafile separator "\t"
set datafile missing "nan"
h = 0.35
plot datafile using (0):1:ytic(titles[int($1)]) with points ps 0 notitle, \
     '' using ($2 / 2):1:(0):2:($1 - h):($1 + h) with boxxyerror lc rgb "#2b8cbe" notitle, \
     '' using (0):1:($3 > 0 ? "  not reached" : "") with labels left tc rgb "#d7191c" notitle
