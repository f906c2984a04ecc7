/*
 * table.h — what a table of the trace is made of (docs/trace.md); private
 * to sim/trace.c and the table files beside this header.
 *
 * Each table of the SQLite trace is one file, sim/tables/NAME.c, holding
 * its whole description as one SimTable (its columns in order, the
 * [trace] detail from which a run writes it, whether it has an index on
 * run_id) and the functions that turn what the simulation reports into its
 * rows.  sim/trace.c registers the tables, one line each, and derives from
 * the descriptions everything else: the CREATE TABLE text, each INSERT and
 * its binds, the records a buffer keeps, a chunk's bytes.
 */
#ifndef DTSIM_SIM_TABLES_TABLE_H
#define DTSIM_SIM_TABLES_TABLE_H

#include <glib.h>

#include "sim/trace.h"

G_BEGIN_DECLS

/* How a column's value is held in a SimTableValue and bound to the INSERT. */
typedef enum {
  SIM_COL_INT,           /* .i */
  SIM_COL_INT_OR_NULL,   /* .i; a negative value is written NULL */
  SIM_COL_REAL,          /* .d; NaN is written NULL */
  SIM_COL_TEXT,          /* .s; NULL is written NULL; a buffer copies the text */
} SimColKind;

/* One value of a row, in the member its column's kind names. */
typedef union {
  gint64 i;
  double d;
  const char *s;
} SimTableValue;

typedef struct {
  const char *name;
  const char *decl;      /* SQL type and constraints, as in CREATE TABLE */
  SimColKind kind;
  /* In the schema text, the column opens a new line: two spaces before it
   * instead of one.  Files keep the text of the CREATE TABLE that made them
   * (sqlite_master), so the layout is part of the schema. */
  gboolean line;
} SimTableColumn;

/* The most columns a table written row by row may have (a row's values are
 * held in place, in a buffer's records). */
#define SIM_TRACE_ROW_MAX 16

struct SimTable {
  const char *name;
  const SimTableColumn *columns;   /* (n_columns) in the table's order */
  int n_columns;
  SimDetail detail;      /* the least [trace] detail whose runs write it */
  gboolean index;        /* CREATE INDEX NAME_run ON NAME (run_id): readers
                          * look up one run's rows without a scan */
  gboolean by_rows;      /* written row by row (sim_trace_add_row), run_id
                          * its first column; FALSE for runs alone, whose row
                          * begin_run, end_run and fail_run write */
};

/* The first column of every table written by rows. */
#define SIM_TRACE_RUN_ID { "run_id", "INTEGER NOT NULL REFERENCES runs(id)", SIM_COL_INT, FALSE }

/* Writes a row of table `tb` (by_rows) to t's database, or appends it to
 * t's buffer in buffer mode.  v holds n values, one per column of the table
 * in its order (run_id first), each in the member its column's kind names;
 * texts need only live until the call returns.  A failure is kept as one of
 * run v[0]'s errors (sim_trace_end_run). */
void sim_trace_add_row (SimTrace *t, const SimTable *tb, const SimTableValue *v, gsize n);

G_END_DECLS

#endif /* DTSIM_SIM_TABLES_TABLE_H */
