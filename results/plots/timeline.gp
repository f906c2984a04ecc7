# timeline.gp — what each worker and server does over simulated time.
# One row per actor (a pipeline's rows name their stage); boxes are compute
# (a pipeline stage's forward and backward apart, each with its micro-batch
# number), communication (send and receive), waiting (barrier, staleness
# bound, or a pipeline's bubble), server updates, and a failed worker's
# downtime.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, runtitle, nactors, nshown, actors[1..nshown] and
# actor_rows[1..nshown] (the actor names on the y axis and their rows), xmax,
# height (pixels), staged (1: the rows are pipeline stages), has[1..7] (1:
# the block of that kind has spans; only those get a key entry).
# Data: blocks compute, forward, backward, communication, waiting, update,
# down (columns: actor row, start, end), then micro-batches (columns: middle,
# actor row, micro-batch).
# a page's width; the key above the rows, not beside them
set terminal term size 1000,height+30 font ",11"
set output outfile
set encoding utf8
set termoption noenhanced
set title sprintf("Timeline of %s", runtitle) noenhanced
set xlabel "simulated time"
set format x "%.1s %cs"
if (staged) { set ylabel "pipeline stage" } else { set ylabel "actor (worker or server)" }
set yrange [-0.7:nactors-0.3] reverse
set ytics ()
do for [i=1:nshown] { set ytics add (actors[i] actor_rows[i]) }
set xrange [0:xmax]
set grid x
set key outside top center horizontal
set datafile separator "\t"
set style fill solid 1.0 border lc rgb "#ffffff"
plot datafile index 0 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35) with boxxyerror lc rgb "#2b8cbe" title (has[1] ? "compute" : ""), \
     datafile index 1 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35) with boxxyerror lc rgb "#3182bd" title (has[2] ? "forward" : ""), \
     datafile index 2 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35) with boxxyerror lc rgb "#9e6ac6" title (has[3] ? "backward" : ""), \
     datafile index 3 using (($2+$3)/2):1:2:3:($1-0.2):($1+0.2) with boxxyerror lc rgb "#fdae61" title (has[4] ? "communication" : ""), \
     datafile index 4 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35) with boxxyerror lc rgb "#d7191c" title (has[5] ? (staged ? "waiting (bubble)" : "waiting") : ""), \
     datafile index 5 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35) with boxxyerror lc rgb "#1a9641" title (has[6] ? "server update" : ""), \
     datafile index 6 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35) with boxxyerror lc rgb "#404040" title (has[7] ? "down (failed)" : ""), \
     datafile index 7 using 1:2:(sprintf("%d", $3)) with labels tc rgb "#ffffff" font ",9" notitle
