/*
 * failures.c — the `failures` table: one worker failure, from the moment
 * the worker went down to its restart, and what it lost.
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "worker", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "start", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "end", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "iteration", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "lost", "TEXT NOT NULL CHECK (lost IN"
            "  ('compute','send','recv','idle'))", SIM_COL_TEXT, FALSE },
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
                              { .i = iteration }, { .s = lost } };
  sim_trace_add_row (t, &sim_table_failures, v, G_N_ELEMENTS (v));
}
