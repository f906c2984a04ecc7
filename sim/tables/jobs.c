/*
 * jobs.c — the `jobs` table: one row per job of a run of several jobs on
 * one cluster ([job NAME] sections, docs/cluster.md, "Several jobs"): where
 * it ran, when, its iteration time shared and alone, and its slowdown.
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "job", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "name", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "policy", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "priority", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "first_worker", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "workers", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "hosts", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "arrival", "REAL NOT NULL", SIM_COL_REAL, FALSE },
  { "end", "REAL", SIM_COL_REAL, FALSE },
  { "iterations", "INTEGER", SIM_COL_INT, FALSE },
  { "iteration_time", "REAL", SIM_COL_REAL, FALSE },
  { "alone_time", "REAL", SIM_COL_REAL, FALSE },
  { "slowdown", "REAL", SIM_COL_REAL, FALSE },
  { "comm_share", "REAL", SIM_COL_REAL, FALSE },
  { "final_loss", "REAL", SIM_COL_REAL, FALSE },
};

const SimTable sim_table_jobs = {
  .name = "jobs",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_SUMMARY,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_job (SimTrace *t, gint64 run, const SimJobRow *j)
{
  const SimTableValue v[] = {
    { .i = run }, { .i = j->job }, { .s = j->name }, { .s = j->policy }, { .i = j->priority },
    { .i = j->first_worker }, { .i = j->workers }, { .s = j->hosts }, { .d = j->arrival },
    { .d = j->end }, { .i = j->iterations }, { .d = j->iteration_time }, { .d = j->alone_time },
    { .d = j->slowdown }, { .d = j->comm_share }, { .d = j->final_loss },
  };
  sim_trace_add_row (t, &sim_table_jobs, v, G_N_ELEMENTS (v));
}
