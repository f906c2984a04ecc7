/*
 * runs.c — the `runs` table: one row per run of the invocation, added with
 * status 'running' when the run begins and completed when it ends
 * (sim/trace.c: sim_trace_begin_run, end_run, fail_run, infeasible_run,
 * whose statements name these columns).
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  { "id", "INTEGER PRIMARY KEY", SIM_COL_INT, TRUE },
  { "scenario", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "name", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "seed", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "status", "TEXT NOT NULL CHECK (status IN ('running','done','failed','infeasible'))",
    SIM_COL_TEXT, FALSE },
  { "error", "TEXT", SIM_COL_TEXT, TRUE },
  { "stop", "TEXT", SIM_COL_TEXT, FALSE },
  { "sim_time", "REAL", SIM_COL_REAL, FALSE },
  { "wall_time", "REAL", SIM_COL_REAL, FALSE },
  { "events", "INTEGER", SIM_COL_INT, FALSE },
  { "iterations", "INTEGER", SIM_COL_INT, TRUE },
  { "updates", "INTEGER", SIM_COL_INT, FALSE },
  { "samples", "INTEGER", SIM_COL_INT, FALSE },
  { "final_loss", "REAL", SIM_COL_REAL, FALSE },
  { "final_accuracy", "REAL", SIM_COL_REAL, FALSE },
  { "compute", "REAL", SIM_COL_REAL, TRUE },
  { "comm", "REAL", SIM_COL_REAL, FALSE },
  { "wait", "REAL", SIM_COL_REAL, FALSE },
  { "version", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "kernel", "TEXT", SIM_COL_TEXT, FALSE },
};

const SimTable sim_table_runs = {
  .name = "runs",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_SUMMARY,
  .index = FALSE,        /* its id is the key every other table refers to */
  .by_rows = FALSE,
};
