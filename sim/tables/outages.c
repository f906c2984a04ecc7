/*
 * outages.c — the `outages` table: the stretches of a failing job's
 * wall-clock timeline that are not useful work (sim/checkpoint.h): each
 * completed checkpoint write, each stretch of work a failure undid, each
 * restart.
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "kind", "TEXT NOT NULL CHECK (kind IN ('checkpoint','lost','restart'))", SIM_COL_TEXT, TRUE },
  { "start", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "end", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "useful", "REAL NOT NULL", SIM_COL_REAL, TRUE },
  { "failure", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
};

const SimTable sim_table_outages = {
  .name = "outages",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_SUMMARY,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_outage (SimTrace *t, gint64 run, const char *kind, double start, double end,
                  double useful, gboolean failure)
{
  const SimTableValue v[] = { { .i = run }, { .s = kind }, { .d = start }, { .d = end },
                              { .d = useful }, { .i = failure ? 1 : 0 } };
  sim_trace_add_row (t, &sim_table_outages, v, G_N_ELEMENTS (v));
}
