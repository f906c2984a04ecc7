/*
 * tracedigest.h — one SHA-256 per table of a trace database, over the exact
 * values of every row: the fingerprint by which tests/test-shipped.c and
 * tools/trace-digest tell that a change left every trace as it was.
 */
#ifndef DTSIM_SIM_TRACEDIGEST_H
#define DTSIM_SIM_TRACEDIGEST_H

#include <glib.h>

G_BEGIN_DECLS

/* The digest of one table. */
typedef struct {
  char *table;     /* its name as the database spells it */
  gint64 rows;     /* rows it holds */
  char *sha256;    /* 64 lowercase hex digits */
} SimTableDigest;

void sim_table_digest_free (SimTableDigest *d);

/* The digest of every ordinary table of the trace at `path` (read through
 * views/tracedb.c, so a hostile file is refused, never trusted), in the order
 * of their names.  Each digest covers the table's column names, then every
 * row in the order of all its columns (so neither the writer's physical
 * order nor `--jobs` matters), each value with its type and exact content:
 * an integer in decimal, a real by the 64 bits of its double, a text or a
 * blob by its length and bytes.  Left out are the columns that differ
 * between two runs of one scenario on one build: runs.wall_time (host
 * seconds) and runs.version (the dtsim version).  The rows and digest of a
 * table are the same on every host for the same values.  A GPtrArray of
 * SimTableDigest (freeing them), or NULL with a one-line SIM_ERROR_INPUT
 * "FILE: what is wrong; the fix". */
GPtrArray *sim_trace_digest (const char *path, GError **error);

G_END_DECLS

#endif
