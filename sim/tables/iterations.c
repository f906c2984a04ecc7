/*
 * iterations.c — the `iterations` table: one finished iteration of one
 * worker, its seconds split into compute, communication and waiting.
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "worker", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "iteration", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "start", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "end", "REAL NOT NULL", SIM_COL_REAL, TRUE },
  { "compute", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "comm", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "wait", "REAL NOT NULL", SIM_COL_REAL, TRUE },
  { "staleness", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
};

const SimTable sim_table_iterations = {
  .name = "iterations",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_ITERATIONS,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_iteration (SimTrace *t, gint64 run, int worker, gint64 iteration,
                     double start, double end, double compute, double comm,
                     double wait, gint64 staleness)
{
  const SimTableValue v[] = { { .i = run }, { .i = worker }, { .i = iteration },
                              { .d = start }, { .d = end }, { .d = compute }, { .d = comm },
                              { .d = wait }, { .i = staleness } };
  sim_trace_add_row (t, &sim_table_iterations, v, G_N_ELEMENTS (v));
}
