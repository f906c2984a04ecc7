/*
 * export.h — `dtsim export`: a trace database as a table for analysis (CSV or
 * JSON, one row per run) or as a timeline for Perfetto (Chrome trace event
 * JSON).  docs/analysis.md and docs/trace.md describe the files.
 */
#ifndef DTSIM_SIM_EXPORT_H
#define DTSIM_SIM_EXPORT_H

#include <glib.h>

G_BEGIN_DECLS

/* Writes database `db` in `format` ("csv", "json" or "perfetto") to `out`
 * (NULL or "-": standard output).  A file is written whole or not at all: a
 * hidden file beside it, renamed over it at the end (a symlink there is
 * replaced, never written through).  `run` > 0 exports that run only.  The
 * database may be hostile or broken (tracedb.c): a file that is not a usable
 * trace is one line and exit code 2.  Returns the exit code (0, 1 failure
 * while writing, 2 bad input) and sets *error. */
int sim_export (const char *db, const char *format, const char *out, gint64 run,
                GError **error);

G_END_DECLS

#endif
