# timeline.gp — what each worker and server does over simulated time.
# One row per actor; boxes are compute, communication (send and receive),
# waiting (barrier or staleness bound) and server updates.
# Variables set by `dtsim plot` (strings are values only: never eval them):
# term, outfile, datafile, runtitle, nactors, nshown, actors[1..nshown] and
# actor_rows[1..nshown] (the actor names on the y axis and their rows), xmax,
# height (pixels).
set terminal term size 1100,height font ",11"
set output outfile
set termoption noenhanced
set title sprintf("Timeline of %s", runtitle)
set xlabel "simulated time (s)"
set ylabel "actor (worker or server)"
set yrange [-0.7:nactors-0.3] reverse
set ytics ()
do for [i=1:nshown] { set ytics add (actors[i] actor_rows[i]) }
set xrange [0:xmax]
set grid x
set key outside right top
set datafile separator "\t"
set style fill solid 1.0 noborder
# columns: actor index, start, end
plot datafile index 0 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35) with boxxyerror lc rgb "#2b8cbe" title "compute", \
     datafile index 1 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35) with boxxyerror lc rgb "#fdae61" title "communication", \
     datafile index 2 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35) with boxxyerror lc rgb "#d7191c" title "waiting", \
     datafile index 3 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35) with boxxyerror lc rgb "#1a9641" title "server update"
