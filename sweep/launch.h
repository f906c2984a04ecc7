/*
 * launch.h — `dtsim run`: every point of a scenario file, to one database
 * and one report.
 */
#ifndef DTSIM_SWEEP_LAUNCH_H
#define DTSIM_SWEEP_LAUNCH_H

#include <glib.h>

#include "sim/run.h"

G_BEGIN_DECLS

/* `dtsim run`: loads, validates, runs every point (opt->jobs at once, each in
 * its own thread; this thread alone writes the database), writes the database
 * and prints the report in point order.  Returns the process exit code (0, 1
 * runtime, 2 input); on failure *error holds the one-line message. */
int sim_run_scenario (const char *path, const char *const *sets,
                      const SimRunOptions *opt, GError **error);

G_END_DECLS

#endif /* DTSIM_SWEEP_LAUNCH_H */
