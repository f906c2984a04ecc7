/*
 * params.c — the `params` table: every resolved scenario key of a run, one
 * row each (written as the run begins), and the values a policy settled
 * when it started (PolRecorder.param).
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "key", "TEXT NOT NULL", SIM_COL_TEXT, TRUE },
  { "value", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
};

const SimTable sim_table_params = {
  .name = "params",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_SUMMARY,
  /* readers take it in one scan (views/tracedb.c), and an index on it would
   * double a sweep's file */
  .index = FALSE,
  .by_rows = TRUE,
};

void
sim_trace_param (SimTrace *t, gint64 run, const char *key, const char *value)
{
  const SimTableValue v[] = { { .i = run }, { .s = key }, { .s = value } };
  sim_trace_add_row (t, &sim_table_params, v, G_N_ELEMENTS (v));
}
