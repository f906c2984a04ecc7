# time-to-target.gp — simulated time until each run first reached its
# threshold (its [scenario] target_accuracy or target_loss, or the default of
# docs/plots.md), one bar per run; runs that never reached it have no bar and
# say so.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, nruns, titles[1..nruns] (the run labels), maxlabel
# (characters of the longest), thr_text, what ("loss", "accuracy", or "" when
# the runs' targets differ).
# Data (numbers only): one row per run: its number i (label titles[i]),
# seconds (or "nan"), 1 when the run never reached the target (else 0).
# the labels slant down to the right: room for the longest below and beside
rm = maxlabel * 0.8 > 14 ? maxlabel * 0.8 : 14
set terminal term size 320+110*nruns+8*rm,560+3*maxlabel font ",11"
set output outfile
set termoption noenhanced
set title sprintf("Time to reach the target%s (%s)", what eq "" ? "" : " ".what, thr_text)
set xlabel "run"
set ylabel sprintf("simulated time to target%s (s)", what eq "" ? "" : " ".what)
set style data histograms
set style histogram clustered
set style fill solid 0.9 border -1
set boxwidth 0.7
set grid y
set key off
set xtics rotate by -30
set rmargin rm
set bmargin 3 + 0.25 * maxlabel
set yrange [0:*]
set datafile separator "\t"
set datafile missing "nan"
plot datafile using 2:xtic(titles[int($1)]) lc rgb "#2b8cbe", \
     '' using 0:(0):($3 > 0 ? "not reached" : "") with labels offset 0,1 tc rgb "#d7191c" notitle
