/*
 * metrics.c — the `metrics` table: one evaluation of the global model.
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "sim_time", "REAL NOT NULL", SIM_COL_REAL, TRUE },
  { "step", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "loss", "REAL", SIM_COL_REAL, FALSE },
  { "accuracy", "REAL", SIM_COL_REAL, FALSE },
  { "consensus", "REAL", SIM_COL_REAL, FALSE },
  { "job", "TEXT", SIM_COL_TEXT, FALSE },   /* [job NAME] of a run of several, or NULL */
};

const SimTable sim_table_metrics = {
  .name = "metrics",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_SUMMARY,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_metric (SimTrace *t, gint64 run, double sim_time, gint64 step,
                  double loss, double accuracy, double consensus)
{
  sim_trace_metric_job (t, run, NULL, sim_time, step, loss, accuracy, consensus);
}

void
sim_trace_metric_job (SimTrace *t, gint64 run, const char *job, double sim_time, gint64 step,
                      double loss, double accuracy, double consensus)
{
  const SimTableValue v[] = { { .i = run }, { .d = sim_time }, { .i = step }, { .d = loss },
                              { .d = accuracy }, { .d = consensus }, { .s = job } };
  sim_trace_add_row (t, &sim_table_metrics, v, G_N_ELEMENTS (v));
}
