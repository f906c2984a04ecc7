/*
 * mesh.c — the `mesh` table: one row per rank of the device mesh a run's
 * policy lays its workers on (train/mesh.h), with the host it runs on and
 * its coordinate along every axis (data: its replica; pipeline: its
 * stage, as the stages table names them).  Written when the run starts, at every
 * [trace] detail, by the policies that have a mesh (pol_report_mesh).
 */
#include "config.h"

#include "sim/tables/table.h"

static const SimTableColumn columns[] = {
  SIM_TRACE_RUN_ID,
  { "rank", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "host", "TEXT NOT NULL", SIM_COL_TEXT, FALSE },
  { "replica", "INTEGER NOT NULL", SIM_COL_INT, TRUE },
  { "stage", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "expert", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "context", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
  { "tensor", "INTEGER NOT NULL", SIM_COL_INT, FALSE },
};

const SimTable sim_table_mesh = {
  .name = "mesh",
  .columns = columns,
  .n_columns = G_N_ELEMENTS (columns),
  .detail = SIM_DETAIL_SUMMARY,
  .index = TRUE,
  .by_rows = TRUE,
};

void
sim_trace_mesh (SimTrace *t, gint64 run, const PolMeshRank *m)
{
  const SimTableValue v[] = {
    { .i = run }, { .i = m->rank }, { .s = m->host },
    { .i = m->coord[TRAIN_AXIS_DATA] }, { .i = m->coord[TRAIN_AXIS_PIPELINE] },
    { .i = m->coord[TRAIN_AXIS_EXPERT] }, { .i = m->coord[TRAIN_AXIS_CONTEXT] },
    { .i = m->coord[TRAIN_AXIS_TENSOR] },
  };
  sim_trace_add_row (t, &sim_table_mesh, v, G_N_ELEMENTS (v));
}
