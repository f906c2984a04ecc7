/*
 * links.c — the `links` table: the links a run's messages crossed
 * (messages.route names them by link id), written at the run's end.
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "link", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "name", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "bandwidth", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "latency", "REAL NOT NULL", SIM_COL_REAL, FALSE },
};

const SimTable sim_table_links = {
  .name = "links",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_MESSAGES,   /* with the messages that name them */
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_link (SimTrace *t, gint64 run, int link, const char *name, double bandwidth,
                double latency)
{
  const SimTableValue v[] = { { .i = run }, { .i = link }, { .s = name }, { .d = bandwidth },
                              { .d = latency } };
  sim_trace_add_row (t, &sim_table_links, v, G_N_ELEMENTS (v));
}
