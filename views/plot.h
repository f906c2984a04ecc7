/*
 * plot.h — `dtsim plot`: figures from a trace database, drawn by gnuplot.
 */
#ifndef DTSIM_VIEWS_PLOT_H
#define DTSIM_VIEWS_PLOT_H

#include <glib.h>
#include <sqlite3.h>

G_BEGIN_DECLS

/* Timelines one `dtsim plot` draws at most, one gnuplot each: those of the
 * first runs with spans (a database sets no bound on its runs). */
#define SIM_PLOT_MAX_TIMELINES 64

/* Draws every figure the database supports into `dir` (NULL: the database's
 * folder) in `format` ("png" or "svg").  Prints one line per file written.
 * The database may be hostile or broken (plot.c lists the rules): a file
 * that is not a usable trace is exit code 2 with one line in *error; runs
 * still 'running' or 'failed' are drawn, marked, and named on stderr.
 * Returns the exit code (0, 1 failure, 2 bad input) and sets *error. */
int sim_plot (const char *db, const char *dir, const char *format, GError **error);

/* Where sim_plot_to() reports instead of stdout: each figure drawn (its
 * name, e.g. "loss-time" or "timeline-run3", its file, and a SHA-256 of
 * what it shows: template, variables and data at six significant digits),
 * each figure not drawn and why, and each note (the Amdahl fits).
 * `timeline`, when set, is asked about each run with spans, in id order,
 * and only the runs it answers TRUE for get a timeline (then a database
 * with none is not reported as skipped: the reader says what it left out). */
typedef struct {
  void (*figure) (gpointer ctx, const char *figure, const char *path, const char *digest);
  void (*skipped) (gpointer ctx, const char *figure, const char *why);
  void (*note) (gpointer ctx, const char *line);
  gpointer ctx;
  gboolean (*timeline) (gpointer ctx, gint64 run);
} SimPlotSink;

/* sim_plot() reporting to `sink` (NULL: stdout, as sim_plot). */
int sim_plot_to (const char *db, const char *dir, const char *format, const SimPlotSink *sink,
                 GError **error);

/* Least-squares fit of Amdahl's law s(n) = 1 / (f + (1 - f) / n) to k
 * points (n[i] workers relative to the reference, s[i] speedups): the serial
 * fraction f in [0, 1] minimising sum (s[i] - s(n[i]))^2 (start from the
 * linear fit of 1/s - 1/n = f (1 - 1/n), then Gauss-Newton).  *sse_out (may be
 * NULL) receives the residual sum of squares. */
void sim_amdahl_fit (const double *n, const double *s, int k, double *f_out,
                     double *sse_out);

/* The first simulated time (s) at which run `run`'s loss in `metrics` is at
 * most `threshold` (ties by step); NAN if it never is. */
double sim_plot_time_to_target (sqlite3 *db, gint64 run, double threshold);

/* The default loss threshold when a run has no [scenario] target_loss: the
 * largest of the runs' lowest losses (the lowest loss every run reaches);
 * NAN without metrics. */
double sim_plot_default_target (sqlite3 *db);

/* `s` as a gnuplot string literal that cannot run anything, whatever bytes
 * it holds: in single quotes (inside which gnuplot expands neither
 * backquotes nor @macros), ' doubled, every control character (below 0x20,
 * and 0x7f) a space.  Every string dtsim hands gnuplot is made by it. */
char *sim_plot_gp_quote (const char *s);

/* Folder holding the gnuplot templates (results/plots). */
char *sim_plot_template_dir (void);

G_END_DECLS

#endif
