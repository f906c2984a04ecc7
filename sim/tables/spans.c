/*
 * spans.c — the `spans` table: one interval of an actor's activity, with
 * what a pipeline stage's forward or backward also tells.
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "actor", "TEXT NOT NULL", SIM_COL_TEXT, TRUE },
  { "kind", "TEXT NOT NULL CHECK (kind IN"
            "  ('compute','send','recv','wait','update','idle'))", SIM_COL_TEXT, FALSE },
  { "start", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "end", "REAL NOT NULL", SIM_COL_REAL, TRUE },
  { "iteration", "INTEGER", SIM_COL_INT_OR_NULL, FALSE },
  { "bytes", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "phase", "TEXT CHECK (phase IN ('forward','backward'))", SIM_COL_TEXT, TRUE },
  { "microbatch", "INTEGER", SIM_COL_INT_OR_NULL, FALSE },
  { "first_layer", "INTEGER", SIM_COL_INT_OR_NULL, FALSE },
  { "last_layer", "INTEGER", SIM_COL_INT_OR_NULL, FALSE },
};

const SimTable sim_table_spans = {
  .name = "spans",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_SPANS,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_span (SimTrace *t, gint64 run, const char *actor, const char *kind,
                double start, double end, gint64 iteration, double bytes,
                const PolSpanDetail *detail)
{
  const SimTableValue v[] = { { .i = run }, { .s = actor }, { .s = kind }, { .d = start },
                              { .d = end }, { .i = iteration }, { .d = bytes },
                              { .s = detail ? detail->phase : NULL },
                              { .i = detail ? detail->microbatch : -1 },
                              { .i = detail ? detail->first_layer : -1 },
                              { .i = detail ? detail->last_layer : -1 } };
  sim_trace_add_row (t, &sim_table_spans, v, G_N_ELEMENTS (v));
}
