/*
 * failures.c — the `failures` table: one worker failure or parameter-server
 * crash, from the moment it went down to its restart, when a server's
 * ranges were taken over, and what it lost.
 */
#include "config.h"

#include <math.h>

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "worker", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "start", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "end", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "iteration", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "lost", "TEXT NOT NULL CHECK (lost IN"
            "  ('compute','send','recv','idle','keys','ranges'))", SIM_COL_TEXT, FALSE },
  { "role", "TEXT NOT NULL CHECK (role IN ('worker','server'))", SIM_COL_TEXT, FALSE },
  { "detected", "REAL", SIM_COL_REAL, FALSE },
};

const SimTable sim_table_failures = {
  .name = "failures",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_ITERATIONS,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_failure (SimTrace *t, gint64 run, int worker, double start, double end,
                   gint64 iteration, const char *lost)
{
  const SimTableValue v[] = { { .i = run }, { .i = worker }, { .d = start }, { .d = end },
                              { .i = iteration }, { .s = lost }, { .s = "worker" },
                              { .d = NAN } };
  sim_trace_add_row (t, &sim_table_failures, v, G_N_ELEMENTS (v));
}

void
sim_trace_server_failure (SimTrace *t, gint64 run, int server, double start, double detected,
                          double end, gint64 iteration, const char *lost)
{
  const SimTableValue v[] = { { .i = run }, { .i = server }, { .d = start }, { .d = end },
                              { .i = iteration }, { .s = lost }, { .s = "server" },
                              { .d = detected } };
  sim_trace_add_row (t, &sim_table_failures, v, G_N_ELEMENTS (v));
}
