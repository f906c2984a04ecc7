/*
 * usage.c — the `usage` table: the cluster over time in a run of several
 * jobs (docs/trace.md, "usage"; docs/cluster.md, "Several jobs").  The run
 * is cut into windows of one width; each window has a row per job (its
 * mean busy GPUs) and a row per link some transfer crossed (its mean
 * utilisation).  sim/usage.c accumulates them.
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "start", "REAL NOT NULL", SIM_COL_REAL, TRUE },
  { "end", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "kind", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "name", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "value", "REAL NOT NULL", SIM_COL_REAL, FALSE },
};

const SimTable sim_table_usage = {
  .name = "usage",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_ITERATIONS,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_usage (SimTrace *t, gint64 run, double start, double end, const char *kind,
                 const char *name, double value)
{
  const SimTableValue v[] = { { .i = run }, { .d = start }, { .d = end }, { .s = kind },
                              { .s = name }, { .d = value } };
  sim_trace_add_row (t, &sim_table_usage, v, G_N_ELEMENTS (v));
}
