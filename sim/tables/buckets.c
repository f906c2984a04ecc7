/*
 * buckets.c — the `buckets` table: one gradient bucket's all-reduce, from
 * the moment every worker had produced it to the end of its collective.
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "iteration", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "bucket", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "bytes", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "ready", "REAL NOT NULL", SIM_COL_REAL, TRUE },
  { "start", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "end", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "algorithm", "TEXT", SIM_COL_TEXT, FALSE },
};

const SimTable sim_table_buckets = {
  .name = "buckets",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_ITERATIONS,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_bucket (SimTrace *t, gint64 run, gint64 iteration, int bucket, double bytes,
                  double ready, double start, double end, const char *algorithm)
{
  const SimTableValue v[] = { { .i = run }, { .i = iteration }, { .i = bucket },
                              { .d = bytes }, { .d = ready }, { .d = start }, { .d = end },
                              { .s = algorithm } };
  sim_trace_add_row (t, &sim_table_buckets, v, G_N_ELEMENTS (v));
}
