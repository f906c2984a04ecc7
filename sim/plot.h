/*
 * plot.h — `dtsim plot`: figures from a trace database, drawn by gnuplot.
 */
#ifndef DTSIM_SIM_PLOT_H
#define DTSIM_SIM_PLOT_H

#include <glib.h>

G_BEGIN_DECLS

/* Draws every figure the database supports into `dir` (NULL: the database's
 * folder) in `format` ("png" or "svg").  Prints one line per file written.
 * Returns the exit code (0, 1 failure, 2 bad input) and sets *error. */
int sim_plot (const char *db, const char *dir, const char *format, GError **error);

/* Folder holding the gnuplot templates (results/plots). */
char *sim_plot_template_dir (void);

G_END_DECLS

#endif
