/*
 * trace.c — writing the SQLite trace.
 *
 * The writer keeps one prepared INSERT per table and one open transaction,
 * committed every SIM_TRACE_BATCH rows and at the end of each run.  Row
 * insertions cannot fail loudly in the middle of a simulation, so the first
 * SQLite error is kept and reported when the run ends (which marks it failed).
 * Every column is written from simulated quantities except runs.wall_time, so
 * two runs of the same scenario produce identical rows elsewhere.
 *
 * A trace can also be a buffer (sim_trace_new_buffer): the same row calls then
 * append records to a chunk, in memory, that is handed to a sink when full.
 * Parallel sweeps run each point in its own thread against such a buffer; the
 * one thread that owns the database writes the chunks (sim_trace_write_chunk)
 * through the ordinary calls, so SQLite is only ever used from that thread.
 */
#include "config.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>

#include "sim/trace.h"

enum { ST_METRIC, ST_ITER, ST_SPAN, ST_MSG, ST_PARAM, ST_BUCKET, ST_FAILURE, ST_STAGE, N_ST };

struct SimTrace {
  sqlite3 *db;
  char *path;
  sqlite3_stmt *st[N_ST];
  int rows;              /* rows in the open transaction */
  gboolean in_txn;
  char *first_error;     /* first failed insertion, reported at run end */
  /* buffer mode (db == NULL) */
  SimTraceSink sink;     /* receives each full chunk */
  gpointer sink_data;
  SimTraceChunk *chunk;  /* the chunk being filled, NULL before the first row */
};

/* One buffered row: which table and its columns, by kind.  Strings point into
 * the chunk's string pool. */
typedef struct {
  int table;             /* ST_METRIC ... ST_STAGE */
  gint64 run;
  gint64 i[7];
  double d[5];
  const char *s[3];
} Record;

struct SimTraceChunk {
  GArray *records;       /* Record, in emission order */
  GStringChunk *strings; /* the records' strings, deduplicated */
};

#define CHUNK_RECORDS 4096

static const char *const schema =
  "CREATE TABLE runs ("
  "  id INTEGER PRIMARY KEY, scenario TEXT NOT NULL, name TEXT NOT NULL,"
  "  seed INTEGER NOT NULL, status TEXT NOT NULL CHECK (status IN ('running','done','failed')),"
  "  error TEXT, stop TEXT, sim_time REAL, wall_time REAL, events INTEGER,"
  "  iterations INTEGER, updates INTEGER, final_loss REAL, final_accuracy REAL,"
  "  compute REAL, comm REAL, wait REAL, version TEXT NOT NULL);"
  "CREATE TABLE params (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  key TEXT NOT NULL, value TEXT NOT NULL);"
  "CREATE TABLE metrics (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  sim_time REAL NOT NULL, step INTEGER NOT NULL, loss REAL, accuracy REAL);"
  "CREATE TABLE iterations (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  worker INTEGER NOT NULL, iteration INTEGER NOT NULL, start REAL NOT NULL,"
  "  end REAL NOT NULL, compute REAL NOT NULL, comm REAL NOT NULL,"
  "  wait REAL NOT NULL, staleness INTEGER NOT NULL);"
  "CREATE TABLE spans (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  actor TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN"
  "  ('compute','send','recv','wait','update','idle')), start REAL NOT NULL,"
  "  end REAL NOT NULL, iteration INTEGER, bytes REAL NOT NULL);"
  "CREATE TABLE messages (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  src TEXT NOT NULL, dst TEXT NOT NULL, bytes REAL NOT NULL,"
  "  start REAL NOT NULL, end REAL NOT NULL, tag TEXT);"
  "CREATE TABLE buckets (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  iteration INTEGER NOT NULL, bucket INTEGER NOT NULL, bytes REAL NOT NULL,"
  "  ready REAL NOT NULL, start REAL NOT NULL, end REAL NOT NULL);"
  "CREATE TABLE failures (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  worker INTEGER NOT NULL, start REAL NOT NULL, end REAL NOT NULL,"
  "  iteration INTEGER NOT NULL, lost TEXT NOT NULL CHECK (lost IN"
  "  ('compute','send','recv','idle')));"
  "CREATE TABLE stages (run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  replica INTEGER NOT NULL, stage INTEGER NOT NULL, worker INTEGER NOT NULL,"
  "  first_layer INTEGER NOT NULL, last_layer INTEGER NOT NULL, params INTEGER NOT NULL,"
  "  flops REAL NOT NULL, peak_stash INTEGER NOT NULL, activation_bytes REAL NOT NULL,"
  "  boundary_bytes REAL NOT NULL, compute REAL NOT NULL, idle REAL NOT NULL,"
  "  bubble REAL);"
  "PRAGMA user_version = 3;";

static const char *const inserts[N_ST] = {
  [ST_METRIC] = "INSERT INTO metrics VALUES (?,?,?,?,?)",
  [ST_ITER] = "INSERT INTO iterations VALUES (?,?,?,?,?,?,?,?,?)",
  [ST_SPAN] = "INSERT INTO spans VALUES (?,?,?,?,?,?,?)",
  [ST_MSG] = "INSERT INTO messages VALUES (?,?,?,?,?,?,?)",
  [ST_PARAM] = "INSERT INTO params VALUES (?,?,?)",
  [ST_BUCKET] = "INSERT INTO buckets VALUES (?,?,?,?,?,?,?)",
  [ST_FAILURE] = "INSERT INTO failures VALUES (?,?,?,?,?,?)",
  [ST_STAGE] = "INSERT INTO stages VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
};

static gboolean
sql_fail (SimTrace *t, const char *what, GError **error)
{
  g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: SQLite error while %s: %s",
               t->path, what, sqlite3_errmsg (t->db));
  return FALSE;
}

static gboolean
exec (SimTrace *t, const char *sql, GError **error)
{
  char *msg = NULL;
  if (sqlite3_exec (t->db, sql, NULL, NULL, &msg) != SQLITE_OK)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: SQLite error: %s", t->path,
                   msg ? msg : "unknown");
      sqlite3_free (msg);
      return FALSE;
    }
  return TRUE;
}

static gboolean
commit (SimTrace *t, GError **error)
{
  if (!t->in_txn)
    return TRUE;
  t->in_txn = FALSE;
  t->rows = 0;
  return exec (t, "COMMIT", error);
}

static void
step (SimTrace *t, sqlite3_stmt *st)
{
  if (!t->in_txn)
    {
      if (sqlite3_exec (t->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK)
        t->in_txn = TRUE;
    }
  if (sqlite3_step (st) != SQLITE_DONE && !t->first_error)
    t->first_error = g_strdup (sqlite3_errmsg (t->db));
  sqlite3_reset (st);
  if (++t->rows >= SIM_TRACE_BATCH)
    {
      g_autoptr (GError) e = NULL;
      if (!commit (t, &e) && !t->first_error)
        t->first_error = g_strdup (e->message);
    }
}

SimTrace *
sim_trace_open (const char *path, GError **error)
{
  SimTrace *t = g_new0 (SimTrace, 1);
  t->path = g_strdup (path);
  if (g_unlink (path) != 0 && errno != ENOENT)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: cannot replace: %s", path,
                   g_strerror (errno));
      g_free (t->path);
      g_free (t);
      return NULL;
    }
  if (sqlite3_open_v2 (path, &t->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL)
      != SQLITE_OK
      || !exec (t, "PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF;", error)
      || !exec (t, schema, error))
    {
      if (error && !*error)
        sql_fail (t, "creating the database", error);
      sim_trace_abandon (t);
      return NULL;
    }
  for (int i = 0; i < N_ST; i++)
    if (sqlite3_prepare_v2 (t->db, inserts[i], -1, &t->st[i], NULL) != SQLITE_OK)
      {
        sql_fail (t, "preparing statements", error);
        sim_trace_abandon (t);
        return NULL;
      }
  return t;
}

static void
close_db (SimTrace *t)
{
  for (int i = 0; i < N_ST; i++)
    sqlite3_finalize (t->st[i]);
  sqlite3_close (t->db);
  g_free (t->first_error);
  g_free (t->path);
  g_free (t);
}

gboolean
sim_trace_close (SimTrace *t, GError **error)
{
  gboolean ok = commit (t, error);
  close_db (t);
  return ok;
}

void
sim_trace_abandon (SimTrace *t)
{
  if (!t)
    return;
  g_autofree char *path = g_strdup (t->path);
  if (t->in_txn)
    sqlite3_exec (t->db, "ROLLBACK", NULL, NULL, NULL);
  close_db (t);
  g_unlink (path);
  g_autofree char *journal = g_strconcat (path, "-journal", NULL);
  g_unlink (journal);
}

SimTrace *
sim_trace_new_buffer (SimTraceSink sink, gpointer data)
{
  g_return_val_if_fail (sink != NULL, NULL);
  SimTrace *t = g_new0 (SimTrace, 1);
  t->sink = sink;
  t->sink_data = data;
  return t;
}

void
sim_trace_flush (SimTrace *t)
{
  g_return_if_fail (t->sink != NULL);
  if (!t->chunk)
    return;
  SimTraceChunk *c = t->chunk;
  t->chunk = NULL;
  t->sink (c, t->sink_data);
}

void
sim_trace_free_buffer (SimTrace *t)
{
  if (!t)
    return;
  g_return_if_fail (t->db == NULL);
  sim_trace_chunk_free (t->chunk);
  g_free (t);
}

void
sim_trace_chunk_free (SimTraceChunk *c)
{
  if (!c)
    return;
  g_array_unref (c->records);
  g_string_chunk_free (c->strings);
  g_free (c);
}

/* A new record in the buffer's chunk; hands the chunk on once it is full
 * (after the caller has filled the record: see buffer_done). */
static Record *
buffer_add (SimTrace *t, int table, gint64 run)
{
  if (!t->chunk)
    {
      t->chunk = g_new0 (SimTraceChunk, 1);
      t->chunk->records = g_array_sized_new (FALSE, TRUE, sizeof (Record), CHUNK_RECORDS);
      t->chunk->strings = g_string_chunk_new (1024);
    }
  g_array_set_size (t->chunk->records, t->chunk->records->len + 1);
  Record *r = &g_array_index (t->chunk->records, Record, t->chunk->records->len - 1);
  r->table = table;
  r->run = run;
  return r;
}

static const char *
buffer_string (SimTrace *t, const char *s)
{
  return s ? g_string_chunk_insert_const (t->chunk->strings, s) : NULL;
}

static void
buffer_done (SimTrace *t)
{
  if (t->chunk->records->len >= CHUNK_RECORDS)
    sim_trace_flush (t);
}

void
sim_trace_write_chunk (SimTrace *t, SimTraceChunk *c)
{
  g_return_if_fail (t->db != NULL);
  for (guint k = 0; k < c->records->len; k++)
    {
      const Record *r = &g_array_index (c->records, Record, k);
      switch (r->table)
        {
        case ST_METRIC:
          sim_trace_metric (t, r->run, r->d[0], r->i[0], r->d[1], r->d[2]);
          break;
        case ST_ITER:
          sim_trace_iteration (t, r->run, (int) r->i[0], r->i[1], r->d[0], r->d[1], r->d[2],
                               r->d[3], r->d[4], r->i[2]);
          break;
        case ST_SPAN:
          sim_trace_span (t, r->run, r->s[0], r->s[1], r->d[0], r->d[1], r->i[0], r->d[2]);
          break;
        case ST_BUCKET:
          sim_trace_bucket (t, r->run, r->i[0], (int) r->i[1], r->d[0], r->d[1], r->d[2],
                            r->d[3]);
          break;
        case ST_MSG:
          sim_trace_message (t, r->run, r->s[0], r->s[1], r->d[0], r->d[1], r->d[2], r->s[2]);
          break;
        case ST_FAILURE:
          sim_trace_failure (t, r->run, (int) r->i[0], r->d[0], r->d[1], r->i[1], r->s[0]);
          break;
        case ST_STAGE:
          {
            PolStageStats st = {
              .replica = (int) r->i[0], .stage = (int) r->i[1], .worker = (int) r->i[2],
              .first_layer = (int) r->i[3], .last_layer = (int) r->i[4],
              .params = (gsize) r->i[5], .peak_stash = (int) r->i[6],
              .flops = r->d[0], .activation_bytes = r->d[1], .boundary_bytes = r->d[2],
              .compute = r->d[3], .idle = r->d[4],
            };
            sim_trace_stage (t, r->run, &st);
          }
          break;
        default:
          g_assert_not_reached ();
        }
    }
  sim_trace_chunk_free (c);
}

static void
bind_real_or_null (sqlite3_stmt *st, int i, double v)
{
  if (isnan (v))
    sqlite3_bind_null (st, i);
  else
    sqlite3_bind_double (st, i, v);
}

gint64
sim_trace_begin_run (SimTrace *t, const SimConfig *c, const char *scenario_path,
                     GError **error)
{
  sqlite3_stmt *st = NULL;
  if (!commit (t, error))
    return -1;
  if (sqlite3_prepare_v2 (t->db,
                          "INSERT INTO runs (scenario, name, seed, status, version)"
                          " VALUES (?, ?, ?, 'running', ?)", -1, &st, NULL) != SQLITE_OK)
    return sql_fail (t, "adding a run", error), -1;
  sqlite3_bind_text (st, 1, scenario_path, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (st, 2, c->name, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64 (st, 3, c->seed);
  sqlite3_bind_text (st, 4, PACKAGE_VERSION, -1, SQLITE_STATIC);
  int rc = sqlite3_step (st);
  sqlite3_finalize (st);
  if (rc != SQLITE_DONE)
    return sql_fail (t, "adding a run", error), -1;
  gint64 run = sqlite3_last_insert_rowid (t->db);
  sqlite3_stmt *p = t->st[ST_PARAM];
  for (guint i = 0; i < c->param_keys->len; i++)
    {
      sqlite3_bind_int64 (p, 1, run);
      sqlite3_bind_text (p, 2, g_ptr_array_index (c->param_keys, i), -1, SQLITE_STATIC);
      sqlite3_bind_text (p, 3, g_ptr_array_index (c->param_values, i), -1, SQLITE_STATIC);
      step (t, p);
    }
  if (!commit (t, error))
    return -1;
  return run;
}

gboolean
sim_trace_end_run (SimTrace *t, gint64 run, const SimRunSummary *s, GError **error)
{
  if (!commit (t, error))
    return FALSE;
  if (t->first_error)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: SQLite error while writing rows: %s",
                   t->path, t->first_error);
      sim_trace_fail_run (t, run, t->first_error);
      return FALSE;
    }
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2 (t->db,
                          "UPDATE runs SET status = 'done', stop = ?, sim_time = ?,"
                          " wall_time = ?, events = ?, iterations = ?, updates = ?,"
                          " final_loss = ?, final_accuracy = ?, compute = ?, comm = ?,"
                          " wait = ? WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
    return sql_fail (t, "finishing a run", error);
  sqlite3_bind_text (st, 1, s->stop, -1, SQLITE_STATIC);
  sqlite3_bind_double (st, 2, s->sim_time);
  sqlite3_bind_double (st, 3, s->wall_time);
  sqlite3_bind_int64 (st, 4, (sqlite3_int64) s->events);
  sqlite3_bind_int64 (st, 5, s->iterations);
  sqlite3_bind_int64 (st, 6, s->updates);
  bind_real_or_null (st, 7, s->final_loss);
  bind_real_or_null (st, 8, s->final_accuracy);
  sqlite3_bind_double (st, 9, s->compute);
  sqlite3_bind_double (st, 10, s->comm);
  sqlite3_bind_double (st, 11, s->wait);
  sqlite3_bind_int64 (st, 12, run);
  int rc = sqlite3_step (st);
  sqlite3_finalize (st);
  if (rc != SQLITE_DONE)
    return sql_fail (t, "finishing a run", error);
  return TRUE;
}

void
sim_trace_fail_run (SimTrace *t, gint64 run, const char *message)
{
  sqlite3_stmt *st = NULL;
  commit (t, NULL);
  if (sqlite3_prepare_v2 (t->db, "UPDATE runs SET status = 'failed', error = ? WHERE id = ?",
                          -1, &st, NULL) != SQLITE_OK)
    return;
  sqlite3_bind_text (st, 1, message, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64 (st, 2, run);
  sqlite3_step (st);
  sqlite3_finalize (st);
}

void
sim_trace_metric (SimTrace *t, gint64 run, double sim_time, gint64 step_no,
                  double loss, double accuracy)
{
  if (!t->db)
    {
      Record *r = buffer_add (t, ST_METRIC, run);
      r->d[0] = sim_time, r->i[0] = step_no, r->d[1] = loss, r->d[2] = accuracy;
      buffer_done (t);
      return;
    }
  sqlite3_stmt *st = t->st[ST_METRIC];
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_double (st, 2, sim_time);
  sqlite3_bind_int64 (st, 3, step_no);
  bind_real_or_null (st, 4, loss);
  bind_real_or_null (st, 5, accuracy);
  step (t, st);
}

void
sim_trace_iteration (SimTrace *t, gint64 run, int worker, gint64 iteration,
                     double start, double end, double compute, double comm,
                     double wait, gint64 staleness)
{
  if (!t->db)
    {
      Record *r = buffer_add (t, ST_ITER, run);
      r->i[0] = worker, r->i[1] = iteration, r->i[2] = staleness;
      r->d[0] = start, r->d[1] = end, r->d[2] = compute, r->d[3] = comm, r->d[4] = wait;
      buffer_done (t);
      return;
    }
  sqlite3_stmt *st = t->st[ST_ITER];
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_int (st, 2, worker);
  sqlite3_bind_int64 (st, 3, iteration);
  sqlite3_bind_double (st, 4, start);
  sqlite3_bind_double (st, 5, end);
  sqlite3_bind_double (st, 6, compute);
  sqlite3_bind_double (st, 7, comm);
  sqlite3_bind_double (st, 8, wait);
  sqlite3_bind_int64 (st, 9, staleness);
  step (t, st);
}

void
sim_trace_span (SimTrace *t, gint64 run, const char *actor, const char *kind,
                double start, double end, gint64 iteration, double bytes)
{
  if (!t->db)
    {
      Record *r = buffer_add (t, ST_SPAN, run);
      r->s[0] = buffer_string (t, actor), r->s[1] = buffer_string (t, kind);
      r->d[0] = start, r->d[1] = end, r->i[0] = iteration, r->d[2] = bytes;
      buffer_done (t);
      return;
    }
  sqlite3_stmt *st = t->st[ST_SPAN];
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_text (st, 2, actor, -1, SQLITE_STATIC);
  sqlite3_bind_text (st, 3, kind, -1, SQLITE_STATIC);
  sqlite3_bind_double (st, 4, start);
  sqlite3_bind_double (st, 5, end);
  if (iteration < 0)
    sqlite3_bind_null (st, 6);
  else
    sqlite3_bind_int64 (st, 6, iteration);
  sqlite3_bind_double (st, 7, bytes);
  step (t, st);
}

void
sim_trace_bucket (SimTrace *t, gint64 run, gint64 iteration, int bucket, double bytes,
                  double ready, double start, double end)
{
  if (!t->db)
    {
      Record *r = buffer_add (t, ST_BUCKET, run);
      r->i[0] = iteration, r->i[1] = bucket;
      r->d[0] = bytes, r->d[1] = ready, r->d[2] = start, r->d[3] = end;
      buffer_done (t);
      return;
    }
  sqlite3_stmt *st = t->st[ST_BUCKET];
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_int64 (st, 2, iteration);
  sqlite3_bind_int (st, 3, bucket);
  sqlite3_bind_double (st, 4, bytes);
  sqlite3_bind_double (st, 5, ready);
  sqlite3_bind_double (st, 6, start);
  sqlite3_bind_double (st, 7, end);
  step (t, st);
}

void
sim_trace_stage (SimTrace *t, gint64 run, const PolStageStats *st)
{
  if (!t->db)
    {
      Record *r = buffer_add (t, ST_STAGE, run);
      r->i[0] = st->replica, r->i[1] = st->stage, r->i[2] = st->worker;
      r->i[3] = st->first_layer, r->i[4] = st->last_layer, r->i[5] = (gint64) st->params;
      r->i[6] = st->peak_stash;
      r->d[0] = st->flops, r->d[1] = st->activation_bytes, r->d[2] = st->boundary_bytes;
      r->d[3] = st->compute, r->d[4] = st->idle;
      buffer_done (t);
      return;
    }
  sqlite3_stmt *q = t->st[ST_STAGE];
  sqlite3_bind_int64 (q, 1, run);
  sqlite3_bind_int (q, 2, st->replica);
  sqlite3_bind_int (q, 3, st->stage);
  sqlite3_bind_int (q, 4, st->worker);
  sqlite3_bind_int (q, 5, st->first_layer);
  sqlite3_bind_int (q, 6, st->last_layer);
  sqlite3_bind_int64 (q, 7, (gint64) st->params);
  sqlite3_bind_double (q, 8, st->flops);
  sqlite3_bind_int (q, 9, st->peak_stash);
  sqlite3_bind_double (q, 10, st->activation_bytes);
  sqlite3_bind_double (q, 11, st->boundary_bytes);
  sqlite3_bind_double (q, 12, st->compute);
  sqlite3_bind_double (q, 13, st->idle);
  double total = st->compute + st->idle;
  if (total > 0)
    sqlite3_bind_double (q, 14, st->idle / total);
  else
    sqlite3_bind_null (q, 14);
  step (t, q);
}

void
sim_trace_message (SimTrace *t, gint64 run, const char *src, const char *dst,
                   double bytes, double start, double end, const char *tag)
{
  if (!t->db)
    {
      Record *r = buffer_add (t, ST_MSG, run);
      r->s[0] = buffer_string (t, src), r->s[1] = buffer_string (t, dst);
      r->s[2] = buffer_string (t, tag);
      r->d[0] = bytes, r->d[1] = start, r->d[2] = end;
      buffer_done (t);
      return;
    }
  sqlite3_stmt *st = t->st[ST_MSG];
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_text (st, 2, src, -1, SQLITE_STATIC);
  sqlite3_bind_text (st, 3, dst, -1, SQLITE_STATIC);
  sqlite3_bind_double (st, 4, bytes);
  sqlite3_bind_double (st, 5, start);
  sqlite3_bind_double (st, 6, end);
  sqlite3_bind_text (st, 7, tag, -1, SQLITE_STATIC);
  step (t, st);
}

void
sim_trace_failure (SimTrace *t, gint64 run, int worker, double start, double end,
                   gint64 iteration, const char *lost)
{
  if (!t->db)
    {
      Record *r = buffer_add (t, ST_FAILURE, run);
      r->i[0] = worker, r->i[1] = iteration, r->d[0] = start, r->d[1] = end;
      r->s[0] = buffer_string (t, lost);
      buffer_done (t);
      return;
    }
  sqlite3_stmt *st = t->st[ST_FAILURE];
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_int (st, 2, worker);
  sqlite3_bind_double (st, 3, start);
  sqlite3_bind_double (st, 4, end);
  sqlite3_bind_int64 (st, 5, iteration);
  sqlite3_bind_text (st, 6, lost, -1, SQLITE_STATIC);
  step (t, st);
}
