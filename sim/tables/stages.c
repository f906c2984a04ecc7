/*
 * stages.c — the `stages` table: one pipeline stage worker's summary over
 * the run (its layers, memory, compute and bubble).
 */
#include "config.h"

#include <math.h>

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "replica", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "stage", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "worker", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "first_layer", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "last_layer", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "params", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "flops", "REAL NOT NULL", SIM_COL_REAL, TRUE },
  { "peak_stash", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "activation_bytes", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "boundary_bytes", "REAL NOT NULL", SIM_COL_REAL, TRUE },
  { "compute", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "idle", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "bubble", "REAL", SIM_COL_REAL, TRUE },
};

const SimTable sim_table_stages = {
  .name = "stages",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_SUMMARY,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_stage (SimTrace *t, gint64 run, const PolStageStats *st)
{
  double total = st->compute + st->idle;
  const SimTableValue v[] = {
    { .i = run }, { .i = st->replica }, { .i = st->stage }, { .i = st->worker },
    { .i = st->first_layer }, { .i = st->last_layer }, { .i = (gint64) st->params },
    { .d = st->flops }, { .i = st->peak_stash }, { .d = st->activation_bytes },
    { .d = st->boundary_bytes }, { .d = st->compute }, { .d = st->idle },
    { .d = total > 0 ? st->idle / total : NAN }, /* bubble: NULL without time */
  };
  sim_trace_add_row (t, &sim_table_stages, v, G_N_ELEMENTS (v));
}
