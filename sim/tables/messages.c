/*
 * messages.c — the `messages` table: one transfer over the network, from
 * the moment it is handed to the network to its last byte's arrival, with
 * the links of its route (the `links` table names them).
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "src", "TEXT NOT NULL", SIM_COL_TEXT, TRUE },
  { "dst", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "bytes", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "start", "REAL NOT NULL", SIM_COL_REAL, TRUE },
  { "end", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "tag", "TEXT", SIM_COL_TEXT, FALSE },
  { "route", "TEXT", SIM_COL_TEXT, FALSE },
};

const SimTable sim_table_messages = {
  .name = "messages",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_MESSAGES,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_message (SimTrace *t, gint64 run, const char *src, const char *dst,
                   double bytes, double start, double end, const char *tag, const char *route)
{
  const SimTableValue v[] = { { .i = run }, { .s = src }, { .s = dst }, { .d = bytes },
                              { .d = start }, { .d = end }, { .s = tag }, { .s = route } };
  sim_trace_add_row (t, &sim_table_messages, v, G_N_ELEMENTS (v));
}
