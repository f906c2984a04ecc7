/*
 * test-trace.c — the trace writer (sim/trace.c) on its own: the schema text
 * it creates, byte for byte, and the rows of every table, the same whether
 * they are written directly, through a buffer and its chunks (the path of
 * parallel sweeps) or through those chunks as bytes (the path of sweeps over
 * MPI, which also refuses damaged bytes), with each column's NULL rule;
 * and the files beside it when a signal ends the process.
 */
#include "config.h"

#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/trace.h"
#include "tests/util.h"

static char *tmpdir;

/* The CREATE TABLE statements of the current schema, as sqlite_master keeps
 * them in every trace it writes: a change here is a change of schema. */
static const char *const schema_now[] = {
  "CREATE TABLE runs (  id INTEGER PRIMARY KEY, scenario TEXT NOT NULL, name TEXT NOT NULL,"
  "  seed INTEGER NOT NULL, status TEXT NOT NULL CHECK (status IN ('running','done','failed','infeasible')),"
  "  error TEXT, stop TEXT, sim_time REAL, wall_time REAL, events INTEGER,"
  "  iterations INTEGER, updates INTEGER, samples INTEGER, final_loss REAL, final_accuracy REAL,"
  "  compute REAL, comm REAL, wait REAL, version TEXT NOT NULL, kernel TEXT)",
  "CREATE TABLE params (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  key TEXT NOT NULL, value TEXT NOT NULL)",
  "CREATE TABLE metrics (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  sim_time REAL NOT NULL, step INTEGER NOT NULL, loss REAL, accuracy REAL, consensus REAL,"
  " job TEXT)",
  "CREATE TABLE iterations (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  worker INTEGER NOT NULL, iteration INTEGER NOT NULL, start REAL NOT NULL,"
  "  end REAL NOT NULL, compute REAL NOT NULL, comm REAL NOT NULL,"
  "  wait REAL NOT NULL, staleness INTEGER NOT NULL)",
  "CREATE TABLE spans (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  actor TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN"
  "  ('compute','send','recv','wait','update','idle')), start REAL NOT NULL,"
  "  end REAL NOT NULL, iteration INTEGER, bytes REAL NOT NULL,"
  "  phase TEXT CHECK (phase IN ('forward','backward')), microbatch INTEGER,"
  " first_layer INTEGER, last_layer INTEGER)",
  "CREATE TABLE messages (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  src TEXT NOT NULL, dst TEXT NOT NULL, bytes REAL NOT NULL,"
  "  start REAL NOT NULL, end REAL NOT NULL, tag TEXT, route TEXT)",
  "CREATE TABLE buckets (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  iteration INTEGER NOT NULL, bucket INTEGER NOT NULL, bytes REAL NOT NULL,"
  "  ready REAL NOT NULL, start REAL NOT NULL, end REAL NOT NULL, algorithm TEXT)",
  "CREATE TABLE failures (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  worker INTEGER NOT NULL, start REAL NOT NULL, end REAL NOT NULL,"
  "  iteration INTEGER NOT NULL, lost TEXT NOT NULL CHECK (lost IN"
  "  ('compute','send','recv','idle','keys','ranges')), role TEXT NOT NULL CHECK"
  " (role IN ('worker','server')), detected REAL)",
  "CREATE TABLE stages (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  replica INTEGER NOT NULL, stage INTEGER NOT NULL, worker INTEGER NOT NULL,"
  "  first_layer INTEGER NOT NULL, last_layer INTEGER NOT NULL, params INTEGER NOT NULL,"
  "  flops REAL NOT NULL, peak_stash INTEGER NOT NULL, activation_bytes REAL NOT NULL,"
  "  boundary_bytes REAL NOT NULL, compute REAL NOT NULL, idle REAL NOT NULL,"
  "  bubble REAL)",
  "CREATE TABLE links (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  link INTEGER NOT NULL, name TEXT NOT NULL, bandwidth REAL NOT NULL,"
  " latency REAL NOT NULL)",
  "CREATE TABLE mesh (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  rank INTEGER NOT NULL, host TEXT NOT NULL,  replica INTEGER NOT NULL,"
  " stage INTEGER NOT NULL, expert INTEGER NOT NULL, context INTEGER NOT NULL,"
  " tensor INTEGER NOT NULL)",
  "CREATE TABLE outages (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  kind TEXT NOT NULL CHECK (kind IN ('checkpoint','lost','restart')), start REAL NOT NULL,"
  " end REAL NOT NULL,  useful REAL NOT NULL, failure INTEGER NOT NULL)",
  "CREATE TABLE jobs (run_id INTEGER NOT NULL REFERENCES runs(id),  job INTEGER NOT NULL,"
  " name TEXT NOT NULL, policy TEXT NOT NULL, priority INTEGER NOT NULL,"
  " first_worker INTEGER NOT NULL, workers INTEGER NOT NULL, hosts TEXT NOT NULL,"
  " arrival REAL NOT NULL, end REAL, iterations INTEGER, iteration_time REAL, alone_time REAL,"
  " slowdown REAL, comm_share REAL, final_loss REAL)",
  "CREATE TABLE usage (run_id INTEGER NOT NULL REFERENCES runs(id),  start REAL NOT NULL,"
  " end REAL NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, value REAL NOT NULL)",
  "CREATE INDEX metrics_run ON metrics (run_id)",
  "CREATE INDEX iterations_run ON iterations (run_id)",
  "CREATE INDEX spans_run ON spans (run_id)",
  "CREATE INDEX messages_run ON messages (run_id)",
  "CREATE INDEX buckets_run ON buckets (run_id)",
  "CREATE INDEX failures_run ON failures (run_id)",
  "CREATE INDEX stages_run ON stages (run_id)",
  "CREATE INDEX links_run ON links (run_id)",
  "CREATE INDEX mesh_run ON mesh (run_id)",
  "CREATE INDEX outages_run ON outages (run_id)",
  "CREATE INDEX jobs_run ON jobs (run_id)",
  "CREATE INDEX usage_run ON usage (run_id)",
};

static const char *const row_tables[] = { "params", "metrics", "iterations", "spans",
                                          "messages", "buckets", "failures", "stages",
                                          "links", "mesh", "outages" };

/* More spans than a chunk holds, so that a buffer hands on full chunks. */
#define MANY_SPANS 10000

/* One value as "NULL", "i:N", "r:X" (17 digits) or "t:TEXT": type and value. */
static void
append_value (GString *out, sqlite3_stmt *q, int col)
{
  switch (sqlite3_column_type (q, col))
    {
    case SQLITE_NULL:
      g_string_append (out, "NULL");
      break;
    case SQLITE_INTEGER:
      g_string_append_printf (out, "i:%lld", (long long) sqlite3_column_int64 (q, col));
      break;
    case SQLITE_FLOAT:
      g_string_append_printf (out, "r:%.17g", sqlite3_column_double (q, col));
      break;
    default:
      g_string_append_printf (out, "t:%s", (const char *) sqlite3_column_text (q, col));
    }
}

/* Every row of `table` in the database at `path`, in rowid order, one line
 * each, its values separated by '|' (free it). */
static char *
dump_table (const char *path, const char *table)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  g_autofree char *sql = g_strdup_printf ("SELECT * FROM %s ORDER BY rowid", table);
  g_assert_cmpint (sqlite3_prepare_v2 (db, sql, -1, &q, NULL), ==, SQLITE_OK);
  GString *out = g_string_new (NULL);
  while (sqlite3_step (q) == SQLITE_ROW)
    {
      for (int c = 0; c < sqlite3_column_count (q); c++)
        {
          if (c)
            g_string_append_c (out, '|');
          append_value (out, q, c);
        }
      g_string_append_c (out, '\n');
    }
  sqlite3_finalize (q);
  sqlite3_close (db);
  return g_string_free (out, FALSE);
}

/* A run of one-point scenario `name` begun in `t`; asserts success. */
static gint64
begin (SimTrace *t, const char *name)
{
  g_autofree char *text = g_strdup_printf ("[scenario]\nname = %s\n", name);
  g_autoptr (GPtrArray) configs = test_load_scenario_text (text, NULL);
  g_autoptr (GError) error = NULL;
  gint64 run = sim_trace_begin_run (t, g_ptr_array_index (configs, 0), "t.ini", &error);
  g_assert_no_error (error);
  g_assert_cmpint (run, >, 0);
  return run;
}

static void
end (SimTrace *t, gint64 run)
{
  SimRunSummary s = { .sim_time = 2, .final_loss = NAN, .final_accuracy = NAN,
                      .stop = "iterations" };
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_trace_end_run (t, run, &s, &error));
  g_assert_no_error (error);
}

/* One row or more of every table but params (begin_run writes those), with
 * the values that are written NULL: NaN reals, a negative span iteration, a
 * stage without time, a message without tag. */
static void
emit_rows (SimTrace *t, gint64 run)
{
  sim_trace_metric (t, run, 0.5, 3, NAN, 0.25, NAN);
  sim_trace_metric (t, run, 1.0, 4, 2.5, NAN, 0.125);
  sim_trace_iteration (t, run, 1, 7, 0.125, 1.5, 0.75, 0.5, 0.25, 2);
  sim_trace_span (t, run, "worker0", "compute", 0.0, 1.0 / 3, 7, 0, NULL);
  sim_trace_span (t, run, "server0", "update", 1.0, 2.0, -1, 4096, NULL);
  PolSpanDetail d = { "backward", 3, 10, 19 };
  sim_trace_span (t, run, "worker3", "compute", 2.0, 2.5, 7, 0, &d);
  sim_trace_message (t, run, "host0", "host1", 1e6, 0.25, 0.5, "grad", "0 3");
  sim_trace_message (t, run, "host1", "host0", 8, 0.5, 0.75, NULL, NULL);
  sim_trace_link (t, run, 3, "host1.down", 1.25e9, 5e-6);
  sim_trace_bucket (t, run, 7, 2, 25e6, 0.1, 0.2, 0.3, "ring");
  sim_trace_failure (t, run, 5, 0.5, 0.7, 7, "send");
  PolStageStats st = { .replica = 1, .stage = 2, .worker = 3, .first_layer = 10,
                       .last_layer = 19, .params = G_GUINT64_CONSTANT (5000000000),
                       .flops = 1e12, .peak_stash = 4, .activation_bytes = 1e9,
                       .boundary_bytes = 1e6, .compute = 3, .idle = 1 };
  sim_trace_stage (t, run, &st);
  st.compute = st.idle = 0;
  sim_trace_stage (t, run, &st);
  PolMeshRank m = { .rank = 5, .host = "worker5",
                    .coord = { [TRAIN_AXIS_DATA] = 1, [TRAIN_AXIS_PIPELINE] = 2,
                               [TRAIN_AXIS_EXPERT] = 3, [TRAIN_AXIS_CONTEXT] = 4,
                               [TRAIN_AXIS_TENSOR] = 6 } };
  sim_trace_mesh (t, run, &m);
  sim_trace_outage (t, run, "lost", 11.0, 15.0, 10.0, TRUE);
  for (int i = 0; i < MANY_SPANS; i++)
    sim_trace_span (t, run, i % 2 ? "worker1" : "worker2", "send", i, i + 0.5, i, i, NULL);
}

static char *
fresh_path (const char *name)
{
  char *path = g_build_filename (tmpdir, name, NULL);
  g_unlink (path);
  return path;
}

static SimTrace *
open_trace (const char *path)
{
  g_autoptr (GError) error = NULL;
  SimTrace *t = sim_trace_open (path, &error);
  g_assert_no_error (error);
  return t;
}

static void
close_trace (SimTrace *t)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (sim_trace_close (t, &error));
  g_assert_no_error (error);
}

/* The sink of a buffer: writes each chunk to the trace `data` at once. */
static void
write_to (SimTraceChunk *chunk, gpointer data)
{
  sim_trace_write_chunk (data, chunk);
}

/* What a buffer's sink does with a chunk on its way to the trace. */
typedef struct {
  SimTrace *t;
  gint64 run;
  guint chunks;          /* chunks that went through */
} Carry;

/* The sink of a buffer whose chunks cross a process boundary (sweep/mpi.c):
 * each is turned to bytes and read back before it is written. */
static void
write_through_bytes (SimTraceChunk *chunk, gpointer data)
{
  Carry *c = data;
  g_autoptr (GBytes) bytes = sim_trace_chunk_serialize (chunk);
  sim_trace_chunk_free (chunk);
  gsize len;
  const guint8 *p = g_bytes_get_data (bytes, &len);
  g_autoptr (GError) error = NULL;
  SimTraceChunk *back = sim_trace_chunk_deserialize (p, len, c->run, &error);
  g_assert_no_error (error);
  g_assert_nonnull (back);
  sim_trace_write_chunk (c->t, back);
  c->chunks++;
}

enum { DIRECT, BUFFERED, AS_BYTES };

/* Writes one run of emit_rows's rows to a new trace `name` in tmpdir:
 * directly, through a buffer whose chunks are written as they fill, or
 * through a buffer whose chunks go through bytes; returns its path. */
static char *
write_trace (const char *name, int how)
{
  char *path = fresh_path (name);
  SimTrace *t = open_trace (path);
  gint64 run = begin (t, "rows");
  if (how == AS_BYTES)
    {
      Carry c = { .t = t, .run = run };
      SimTrace *b = sim_trace_new_buffer (write_through_bytes, &c);
      emit_rows (b, run);
      sim_trace_flush (b);
      sim_trace_free_buffer (b);
      /* MANY_SPANS rows fill more than one chunk */
      g_assert_cmpuint (c.chunks, >=, 2);
    }
  else if (how == BUFFERED)
    {
      SimTrace *b = sim_trace_new_buffer (write_to, t);
      emit_rows (b, run);
      sim_trace_flush (b);
      sim_trace_free_buffer (b);
    }
  else
    emit_rows (t, run);
  end (t, run);
  close_trace (t);
  return path;
}

/* The tables are created with the text of the current schema, in its order, and the
 * file carries SIM_TRACE_SCHEMA_VERSION. */
static void
test_schema_text (void)
{
  g_autofree char *path = fresh_path ("schema.db");
  close_trace (open_trace (path));
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  g_assert_cmpint (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "SELECT sql FROM sqlite_master ORDER BY rowid", -1,
                                       &q, NULL), ==, SQLITE_OK);
  gsize n = 0;
  while (sqlite3_step (q) == SQLITE_ROW)
    {
      g_assert_cmpuint (n, <, G_N_ELEMENTS (schema_now));
      g_assert_cmpstr ((const char *) sqlite3_column_text (q, 0), ==, schema_now[n]);
      n++;
    }
  g_assert_cmpuint (n, ==, G_N_ELEMENTS (schema_now));
  sqlite3_finalize (q);
  sqlite3_close (db);
  g_assert_cmpint (test_query_number (path, "PRAGMA user_version"), ==,
                   SIM_TRACE_SCHEMA_VERSION);
}

/* The rows emit_rows writes, table by table, as dump_table shows them; the
 * MANY_SPANS spans that follow the first two are left out. */
static const struct {
  const char *table;
  const char *rows;
  int more;              /* rows after those */
} expected_rows[] = {
  { "metrics", "i:1|r:0.5|i:3|NULL|r:0.25|NULL|NULL\n"
               "i:1|r:1|i:4|r:2.5|NULL|r:0.125|NULL\n", 0 },
  { "iterations", "i:1|i:1|i:7|r:0.125|r:1.5|r:0.75|r:0.5|r:0.25|i:2\n", 0 },
  { "spans", "i:1|t:worker0|t:compute|r:0|r:0.33333333333333331|i:7|r:0|NULL|NULL|NULL|NULL\n"
             "i:1|t:server0|t:update|r:1|r:2|NULL|r:4096|NULL|NULL|NULL|NULL\n"
             "i:1|t:worker3|t:compute|r:2|r:2.5|i:7|r:0|t:backward|i:3|i:10|i:19\n",
    MANY_SPANS },
  { "messages", "i:1|t:host0|t:host1|r:1000000|r:0.25|r:0.5|t:grad|t:0 3\n"
                "i:1|t:host1|t:host0|r:8|r:0.5|r:0.75|NULL|NULL\n", 0 },
  { "links", "i:1|i:3|t:host1.down|r:1250000000|r:5.0000000000000004e-06\n", 0 },
  { "buckets", "i:1|i:7|i:2|r:25000000|r:0.10000000000000001|"
               "r:0.20000000000000001|r:0.29999999999999999|t:ring\n", 0 },
  { "failures", "i:1|i:5|r:0.5|r:0.69999999999999996|i:7|t:send|t:worker|NULL\n", 0 },
  /* bubble = idle / (compute + idle), NULL when both are 0 */
  { "stages", "i:1|i:1|i:2|i:3|i:10|i:19|i:5000000000|r:1000000000000|i:4|"
              "r:1000000000|r:1000000|r:3|r:1|r:0.25\n"
              "i:1|i:1|i:2|i:3|i:10|i:19|i:5000000000|r:1000000000000|i:4|"
              "r:1000000000|r:1000000|r:0|r:0|NULL\n", 0 },
  /* the coordinates in the order of the axes: data, pipeline, expert,
   * context, tensor */
  { "mesh", "i:1|i:5|t:worker5|i:1|i:2|i:3|i:4|i:6\n", 0 },
};

/* Each column's type and NULL rule, on the rows of emit_rows written directly. */
static void
test_row_values (void)
{
  g_autofree char *path = write_trace ("values.db", DIRECT);
  for (gsize i = 0; i < G_N_ELEMENTS (expected_rows); i++)
    {
      const char *want = expected_rows[i].rows;
      g_autofree char *got = dump_table (path, expected_rows[i].table);
      g_autofree char *head = g_strndup (got, strlen (want));
      g_assert_cmpstr (head, ==, want);
      g_autofree char *q = g_strdup_printf ("SELECT COUNT(*) FROM %s", expected_rows[i].table);
      int lines = 0;
      for (const char *c = want; *c; c++)
        lines += *c == '\n';
      g_assert_cmpint (test_query_number (path, q), ==, lines + expected_rows[i].more);
    }
}

/* Rows emitted into a buffer and written from its chunks are the rows
 * written directly, in the same order, in every table. */
static void
test_buffer_same_rows (void)
{
  g_autofree char *direct = write_trace ("direct.db", DIRECT);
  g_autofree char *buffered = write_trace ("buffered.db", BUFFERED);
  g_autofree char *bytes = write_trace ("bytes.db", AS_BYTES);
  for (gsize i = 0; i < G_N_ELEMENTS (row_tables); i++)
    {
      g_autofree char *want = dump_table (direct, row_tables[i]);
      g_autofree char *got = dump_table (buffered, row_tables[i]);
      g_autofree char *got_bytes = dump_table (bytes, row_tables[i]);
      g_assert_cmpstr (got, ==, want);
      g_assert_cmpstr (got_bytes, ==, want);
      g_assert_cmpuint (strlen (want), >, 0);
    }
}

/* Damaged bytes of a chunk are refused, never read past: every cut short
 * inside a record, a table byte out of range, a row of another run. */
static void
test_chunk_damaged (void)
{
  g_autoptr (GBytes) bytes = test_chunk_bytes (emit_rows, 4);
  gsize len;
  const guint8 *p = g_bytes_get_data (bytes, &len);
  /* whole: read back; another run's id: refused */
  SimTraceChunk *whole = sim_trace_chunk_deserialize (p, len, 4, NULL);
  g_assert_nonnull (whole);
  sim_trace_chunk_free (whole);
  g_autoptr (GError) other = NULL;
  g_assert_null (sim_trace_chunk_deserialize (p, len, 5, &other));
  g_assert_error (other, SIM_ERROR, SIM_ERROR_RUNTIME);
  /* every prefix (each its own allocation, so that a read past it is
   * caught under AddressSanitizer) is refused or ends at a record */
  guint whole_ends = 0;
  for (gsize n = 0; n < MIN (len, 4000); n++)
    {
      g_autofree guint8 *cut = g_memdup2 (p, n);
      g_autoptr (GError) error = NULL;
      SimTraceChunk *c = sim_trace_chunk_deserialize (cut, n, 4, &error);
      if (c)
        whole_ends++;
      else
        g_assert_error (error, SIM_ERROR, SIM_ERROR_RUNTIME);
      sim_trace_chunk_free (c);
    }
  /* a few record ends among thousands of cuts, not every cut accepted */
  g_assert_cmpuint (whole_ends, >, 1);
  g_assert_cmpuint (whole_ends, <, 200);
  /* a table byte that names no row table */
  g_autofree guint8 *bad = g_memdup2 (p, len);
  bad[0] = 0xee;
  g_assert_null (sim_trace_chunk_deserialize (bad, len, 4, NULL));
  bad[0] = 0; /* the runs table is not sent as rows */
  g_assert_null (sim_trace_chunk_deserialize (bad, len, 4, NULL));
}

/* A thread that takes whatever signal the process is sent. */
static gpointer
idle_thread (gpointer data G_GNUC_UNUSED)
{
  for (;;)
    pause ();
  return NULL;
}

/* SIGTERM sent to the process at any moment of opening and closing a
 * trace leaves no file beside the target, whichever thread the signal is
 * delivered to: the opening thread blocks it while it creates and
 * registers its files, and another thread's handler must wait for that to
 * finish.  A child process opens and abandons traces in a loop, beside a
 * thread that takes signals; it is stopped at a random moment, a few
 * hundred times (the window is a few microseconds in a loop of a
 * millisecond or so). */
static void
test_signal_other_thread (void)
{
  g_autofree char *dir = g_build_filename (tmpdir, "signalled", NULL);
  g_autofree char *db = g_build_filename (dir, "t.db", NULL);
  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  GRand *rand = g_rand_new_with_seed (7);
  for (int round = 0; round < 300; round++)
    {
      pid_t pid = fork ();
      g_assert_cmpint (pid, >=, 0);
      if (pid == 0)
        {
          g_thread_unref (g_thread_new ("idle", idle_thread, NULL));
          for (;;)
            {
              SimTrace *t = sim_trace_open (db, NULL);
              if (!t)
                _exit (3);
              sim_trace_abandon (t);
            }
        }
      struct timespec pause_for = { 0, g_rand_int_range (rand, 1000, 3000000) };
      nanosleep (&pause_for, NULL);
      g_assert_cmpint (kill (pid, SIGTERM), ==, 0);
      int status;
      g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
      g_assert_true (WIFSIGNALED (status) && WTERMSIG (status) == SIGTERM);
      g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
      const char *left = g_dir_read_name (d);
      if (left)
        g_error ("round %d: %s left beside the target", round, left);
    }
  g_rand_free (rand);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  tmpdir = g_dir_make_tmp ("dtsim-trace-XXXXXX", NULL);
  g_test_add_func ("/trace/schema/text", test_schema_text);
  g_test_add_func ("/trace/rows/values", test_row_values);
  g_test_add_func ("/trace/rows/buffer-same", test_buffer_same_rows);
  g_test_add_func ("/trace/chunk/damaged", test_chunk_damaged);
  g_test_add_func ("/trace/signal/other-thread", test_signal_other_thread);
  int rc = g_test_run ();
  sim_remove_tree (tmpdir);
  g_free (tmpdir);
  return rc;
}
