/*
 * trace.c — writing the SQLite trace.
 *
 * The writer keeps one prepared INSERT per table and one open transaction,
 * committed every SIM_TRACE_BATCH rows and at the end of each run.  Row
 * insertions cannot fail loudly in the middle of a simulation, so the first
 * SQLite error of each run is kept (by run id) and reported when that run
 * ends, which marks it, and only it, failed.  Errors that hit the database
 * itself (a failed COMMIT, a full disk, a transaction SQLite rolled back) are
 * kept apart: after one the file is incomplete, and sim_trace_ok() says so.
 * Every column is written from simulated quantities except runs.wall_time, so
 * two runs of the same scenario produce identical rows elsewhere.
 *
 * The database is never written in place.  sim_trace_open() creates a hidden
 * temporary file beside the target (".NAME.XXXXXX", same folder, so the final
 * rename is atomic); sim_trace_close() renames it over the target once it is
 * complete, sim_trace_abandon() deletes it.  Until then SIGINT, SIGTERM and
 * SIGHUP delete the temporary file and its journal before the process dies
 * of the signal, so an interrupted run leaves the target as it was.
 * sim_trace_check_target() decides beforehand whether the target may be
 * replaced at all: only a missing path or a dtsim trace may.
 *
 * A trace can also be a buffer (sim_trace_new_buffer): the same row calls then
 * append records to a chunk, in memory, that is handed to a sink when full.
 * Parallel sweeps run each point in its own thread against such a buffer; the
 * one thread that owns the database writes the chunks (sim_trace_write_chunk)
 * through the ordinary calls, so SQLite is only ever used from that thread.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/input.h"
#include "sim/trace.h"

enum { ST_METRIC, ST_ITER, ST_SPAN, ST_MSG, ST_PARAM, ST_BUCKET, ST_FAILURE, ST_STAGE, N_ST };

struct SimTrace {
  sqlite3 *db;
  char *path;            /* the target, as given: named in messages */
  char *tmp_path;        /* the file being written, renamed to path at the end */
  int cleanup_slot;      /* its entry in cleanup[] (signals), -1: none */
  sqlite3_stmt *st[N_ST];
  int rows;              /* rows in the open transaction */
  gboolean in_txn;
  GHashTable *run_errors; /* run id -> its first failed insertion (char *) */
  char *db_error;        /* first error of the database itself: incomplete */
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

/* Keeps the first error that hit the database as a whole. */
static void
db_failed (SimTrace *t, const char *message)
{
  if (!t->db_error)
    t->db_error = g_strdup (message);
}

/* An error of the database itself, as a GError too. */
static gboolean
db_fail (SimTrace *t, const char *what, GError **error)
{
  db_failed (t, sqlite3_errmsg (t->db));
  return sql_fail (t, what, error);
}

static gboolean
exec (SimTrace *t, const char *sql, GError **error)
{
  char *msg = NULL;
  if (sqlite3_exec (t->db, sql, NULL, NULL, &msg) != SQLITE_OK)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: SQLite error: %s", t->path,
                   msg ? msg : "unknown");
      db_failed (t, msg ? msg : "unknown");
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

/* Runs an INSERT of run `run`'s row.  A failure that concerns the row only
 * (a constraint, a value too big) is that run's error; one after which SQLite
 * rolled the transaction back, or that is not about the row (I/O, full disk,
 * memory), takes the rows of every run with it: the database's error. */
static void
step (SimTrace *t, sqlite3_stmt *st, gint64 run)
{
  if (!t->in_txn)
    {
      if (sqlite3_exec (t->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK)
        t->in_txn = TRUE;
      else
        db_failed (t, sqlite3_errmsg (t->db));
    }
  int rc = sqlite3_step (st);
  if (rc != SQLITE_DONE)
    {
      int primary = sqlite3_extended_errcode (t->db) & 0xff;
      gboolean row_only = (primary == SQLITE_CONSTRAINT || primary == SQLITE_MISMATCH
                           || primary == SQLITE_TOOBIG || primary == SQLITE_RANGE)
                          && !(t->in_txn && sqlite3_get_autocommit (t->db));
      if (!row_only)
        db_failed (t, sqlite3_errmsg (t->db));
      else if (!g_hash_table_contains (t->run_errors, GSIZE_TO_POINTER ((gsize) run)))
        g_hash_table_insert (t->run_errors, GSIZE_TO_POINTER ((gsize) run),
                             g_strdup (sqlite3_errmsg (t->db)));
    }
  sqlite3_reset (st);
  if (++t->rows >= SIM_TRACE_BATCH)
    commit (t, NULL);
}

/* --- where the database goes ---------------------------------------------- */

/* The temporary files to delete if a signal ends the process, one entry per
 * open trace.  A signal handler can reach nothing but static storage, so this
 * is the one mutable global of the module: written only by sim_trace_open()
 * and the functions that close a trace, read by on_fatal_signal(). */
#define CLEANUP_SLOTS 4
static struct {
  volatile sig_atomic_t armed;
  char db[PATH_MAX];
  char journal[PATH_MAX + 16];
} cleanup[CLEANUP_SLOTS];
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP };

static void
on_fatal_signal (int sig)
{
  int saved = errno;
  for (int i = 0; i < CLEANUP_SLOTS; i++)
    if (__atomic_load_n (&cleanup[i].armed, __ATOMIC_ACQUIRE))
      {
        unlink (cleanup[i].db);
        unlink (cleanup[i].journal);
      }
  /* SA_RESETHAND restored the default action; the signal is blocked until
   * the handler returns, then kills the process as it would have */
  raise (sig);
  errno = saved;
}

/* Installs the handler, once, for the signals the process does not ignore
 * (a background job started by a shell ignores SIGINT: it keeps doing so). */
static void
install_handlers (void)
{
  static gsize done = 0;
  if (!g_once_init_enter (&done))
    return;
  for (gsize i = 0; i < G_N_ELEMENTS (cleanup_signals); i++)
    {
      struct sigaction old, sa;
      if (sigaction (cleanup_signals[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN
          || (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL))
        continue; /* ignored, or someone else's handler: leave it */
      memset (&sa, 0, sizeof sa);
      sa.sa_handler = on_fatal_signal;
      sigemptyset (&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND;
      sigaction (cleanup_signals[i], &sa, NULL);
    }
  g_once_init_leave (&done, 1);
}

/* Registers `tmp` (and its journal) for deletion on a fatal signal; returns
 * the slot, or -1 when the path is too long or every slot is taken (the file
 * is then only deleted by sim_trace_abandon). */
static int
cleanup_arm (const char *tmp)
{
  install_handlers ();
  if (strlen (tmp) >= PATH_MAX)
    return -1;
  G_LOCK_DEFINE_STATIC (slots);
  G_LOCK (slots);
  int slot = -1;
  for (int i = 0; i < CLEANUP_SLOTS && slot < 0; i++)
    if (!cleanup[i].armed)
      slot = i;
  if (slot >= 0)
    {
      g_strlcpy (cleanup[slot].db, tmp, sizeof cleanup[slot].db);
      g_snprintf (cleanup[slot].journal, sizeof cleanup[slot].journal, "%s-journal", tmp);
      __atomic_store_n (&cleanup[slot].armed, 1, __ATOMIC_RELEASE);
    }
  G_UNLOCK (slots);
  return slot;
}

static void
cleanup_disarm (int slot)
{
  if (slot >= 0)
    __atomic_store_n (&cleanup[slot].armed, 0, __ATOMIC_RELEASE);
}

/* Why the file at `path` is not a dtsim trace that may be replaced, with the
 * fix; NULL when it is one or when nothing is there.  Never blocks: the file
 * is examined with lstat() first and only a regular file is opened, with
 * O_NONBLOCK and O_NOFOLLOW. */
static char *
target_problem (const char *path)
{
  if (!path[0])
    return g_strdup ("is empty; give the path of the database to write");
  struct stat st;
  if (lstat (path, &st) != 0)
    {
      if (errno == ENOENT)
        return NULL;
      return g_strdup_printf ("cannot be examined: %s; choose another path",
                              g_strerror (errno));
    }
  if (S_ISLNK (st.st_mode))
    return g_strdup ("is a symbolic link, which dtsim does not write through; give the path of"
                     " the file it points to, or remove the link");
  if (S_ISDIR (st.st_mode))
    {
      g_autofree char *inside = g_build_filename (path, "NAME.db", NULL);
      g_autofree char *shown = sim_input_printable (inside);
      return g_strdup_printf ("is a directory; give a file path inside it, e.g. %s", shown);
    }
  if (!S_ISREG (st.st_mode))
    {
      const char *kind = S_ISCHR (st.st_mode) ? "a character device"
                         : S_ISBLK (st.st_mode) ? "a block device"
                         : S_ISFIFO (st.st_mode) ? "a FIFO"
                         : S_ISSOCK (st.st_mode) ? "a socket" : "not a regular file";
      return g_strdup_printf ("is %s, not a dtsim trace; dtsim always writes a database:"
                              " give the path of a new .db file", kind);
    }
  const char *fix = "dtsim replaces only its own trace databases: choose another path,"
                    " or remove the file first";
  if (st.st_size == 0)
    return g_strdup_printf ("exists and is empty, not a dtsim trace; %s", fix);
  int fd = open (path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return g_strdup_printf ("exists and cannot be read (%s), so it cannot be checked to be a"
                            " dtsim trace; %s", g_strerror (errno), fix);
  char header[16];
  ssize_t n = -1;
  if (fstat (fd, &st) == 0 && S_ISREG (st.st_mode))
    n = read (fd, header, sizeof header);
  close (fd);
  if (n != (ssize_t) sizeof header || memcmp (header, "SQLite format 3", 16) != 0)
    return g_strdup_printf ("exists and is not a dtsim trace (not an SQLite database); %s",
                            fix);
  /* immutable: no locks, no journal or WAL read or created beside it */
  g_autofree char *escaped = g_uri_escape_string (path, "/", TRUE);
  g_autofree char *uri = g_strdup_printf ("file:%s?immutable=1", escaped);
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  gint64 version = -1, runs = 0;
  int rc = sqlite3_open_v2 (uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
  if (rc == SQLITE_OK && sqlite3_prepare_v2 (db, "PRAGMA user_version", -1, &q, NULL) == SQLITE_OK
      && sqlite3_step (q) == SQLITE_ROW)
    version = sqlite3_column_int64 (q, 0);
  sqlite3_finalize (q);
  q = NULL;
  if (version >= 0
      && sqlite3_prepare_v2 (db, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'"
                             " AND name = 'runs'", -1, &q, NULL) == SQLITE_OK
      && sqlite3_step (q) == SQLITE_ROW)
    runs = sqlite3_column_int64 (q, 0);
  else
    version = -1;
  sqlite3_finalize (q);
  sqlite3_close (db);
  if (version < 0)
    return g_strdup_printf ("exists and is an SQLite file dtsim cannot read, not a dtsim"
                            " trace; %s", fix);
  if (version < 1 || version > SIM_TRACE_SCHEMA_VERSION || runs != 1)
    return g_strdup_printf ("exists and is an SQLite database but not a dtsim trace"
                            " (user_version %" G_GINT64_FORMAT ", %s runs table); %s",
                            version, runs ? "a" : "no", fix);
  return NULL;
}

gboolean
sim_trace_check_target (const char *path, const char *what, GError **error)
{
  g_autofree char *why = target_problem (path);
  if (!why)
    return TRUE;
  g_autofree char *shown = sim_input_printable (path);
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s '%s': %s", what, shown, why);
  return FALSE;
}

SimTrace *
sim_trace_open (const char *path, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *name = g_strdup_printf (".%s.XXXXXX", base);
  g_autofree char *tmp = g_build_filename (dir, name, NULL);
  /* no signal between the file's creation and its registration */
  sigset_t block, old;
  sigemptyset (&block);
  for (gsize i = 0; i < G_N_ELEMENTS (cleanup_signals); i++)
    sigaddset (&block, cleanup_signals[i]);
  pthread_sigmask (SIG_BLOCK, &block, &old);
  /* 0644 as SQLite creates its files, less the umask */
  int fd = g_mkstemp_full (tmp, O_RDWR | O_CLOEXEC, 0644);
  int err = errno;
  int slot = fd >= 0 ? cleanup_arm (tmp) : -1;
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  if (fd < 0)
    {
      g_autofree char *shown = sim_input_printable (path);
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "%s: cannot create the new trace beside it: %s; choose a folder you can"
                   " write to", shown, g_strerror (err));
      return NULL;
    }
  close (fd);
  SimTrace *t = g_new0 (SimTrace, 1);
  t->path = g_strdup (path);
  t->tmp_path = g_steal_pointer (&tmp);
  t->cleanup_slot = slot;
  t->run_errors = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  if (sqlite3_open_v2 (t->tmp_path, &t->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK
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

gboolean
sim_trace_ok (const SimTrace *t, GError **error)
{
  if (!t->db_error)
    return TRUE;
  g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: SQLite error: %s", t->path,
               t->db_error);
  return FALSE;
}

/* Closes the database; the files stay. */
static void
close_db (SimTrace *t)
{
  for (int i = 0; i < N_ST; i++)
    sqlite3_finalize (t->st[i]);
  sqlite3_close (t->db);
  t->db = NULL;
}

static void
free_trace (SimTrace *t)
{
  cleanup_disarm (t->cleanup_slot);
  if (t->run_errors)
    g_hash_table_unref (t->run_errors);
  g_free (t->db_error);
  g_free (t->path);
  g_free (t->tmp_path);
  g_free (t);
}

static void
remove_temporary (SimTrace *t)
{
  g_autofree char *journal = g_strconcat (t->tmp_path, "-journal", NULL);
  g_unlink (t->tmp_path);
  g_unlink (journal);
}

gboolean
sim_trace_close (SimTrace *t, GError **error)
{
  gboolean ok = commit (t, error) && sim_trace_ok (t, error);
  close_db (t);
  if (!ok)
    {
      remove_temporary (t);
      free_trace (t);
      return FALSE;
    }
  /* on the disk before it takes the target's name */
  int fd = open (t->tmp_path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0)
    {
      fsync (fd);
      close (fd);
    }
  /* the target may have changed since it was checked: replace only a trace */
  g_autofree char *why = target_problem (t->path);
  g_autofree char *shown = sim_input_printable (t->path);
  if (why)
    {
      g_autofree char *tmp = sim_input_printable (t->tmp_path);
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "%s: changed during the run and now %s; the new trace is kept in %s",
                   shown, why, tmp);
      free_trace (t); /* no longer deleted on a signal */
      return FALSE;
    }
  /* the old file's journal or WAL would be taken for the new one's */
  const char *sidecars[] = { "-journal", "-wal", "-shm" };
  for (gsize i = 0; i < G_N_ELEMENTS (sidecars); i++)
    {
      g_autofree char *f = g_strconcat (t->path, sidecars[i], NULL);
      g_unlink (f);
    }
  if (g_rename (t->tmp_path, t->path) != 0)
    {
      int err = errno;
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: cannot replace it with the new"
                   " trace: %s", shown, g_strerror (err));
      remove_temporary (t);
      free_trace (t);
      return FALSE;
    }
  free_trace (t);
  return TRUE;
}

void
sim_trace_abandon (SimTrace *t)
{
  if (!t)
    return;
  if (t->in_txn)
    sqlite3_exec (t->db, "ROLLBACK", NULL, NULL, NULL);
  close_db (t);
  remove_temporary (t);
  free_trace (t);
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
    {
      db_fail (t, "adding a run", error);
      return -1;
    }
  sqlite3_bind_text (st, 1, scenario_path, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (st, 2, c->name, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64 (st, 3, c->seed);
  sqlite3_bind_text (st, 4, PACKAGE_VERSION, -1, SQLITE_STATIC);
  if (sqlite3_step (st) != SQLITE_DONE)
    {
      db_fail (t, "adding a run", error);
      sqlite3_finalize (st);
      return -1;
    }
  sqlite3_finalize (st);
  gint64 run = sqlite3_last_insert_rowid (t->db);
  sqlite3_stmt *p = t->st[ST_PARAM];
  for (guint i = 0; i < c->param_keys->len; i++)
    {
      sqlite3_bind_int64 (p, 1, run);
      sqlite3_bind_text (p, 2, g_ptr_array_index (c->param_keys, i), -1, SQLITE_STATIC);
      sqlite3_bind_text (p, 3, g_ptr_array_index (c->param_values, i), -1, SQLITE_STATIC);
      step (t, p, run);
    }
  if (!commit (t, error))
    return -1;
  return run;
}

gboolean
sim_trace_end_run (SimTrace *t, gint64 run, const SimRunSummary *s, GError **error)
{
  if (!commit (t, error) || !sim_trace_ok (t, error))
    return FALSE;
  const char *row_error = g_hash_table_lookup (t->run_errors, GSIZE_TO_POINTER ((gsize) run));
  if (row_error)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: SQLite error while writing rows: %s",
                   t->path, row_error);
      return FALSE;
    }
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2 (t->db,
                          "UPDATE runs SET status = 'done', stop = ?, sim_time = ?,"
                          " wall_time = ?, events = ?, iterations = ?, updates = ?,"
                          " final_loss = ?, final_accuracy = ?, compute = ?, comm = ?,"
                          " wait = ? WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
    return db_fail (t, "finishing a run", error);
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
  if (sqlite3_step (st) != SQLITE_DONE)
    {
      db_fail (t, "finishing a run", error);
      sqlite3_finalize (st);
      return FALSE;
    }
  sqlite3_finalize (st);
  g_hash_table_remove (t->run_errors, GSIZE_TO_POINTER ((gsize) run));
  return TRUE;
}

void
sim_trace_fail_run (SimTrace *t, gint64 run, const char *message)
{
  sqlite3_stmt *st = NULL;
  commit (t, NULL);
  g_hash_table_remove (t->run_errors, GSIZE_TO_POINTER ((gsize) run));
  if (sqlite3_prepare_v2 (t->db, "UPDATE runs SET status = 'failed', error = ? WHERE id = ?",
                          -1, &st, NULL) != SQLITE_OK)
    {
      db_failed (t, sqlite3_errmsg (t->db));
      return;
    }
  sqlite3_bind_text (st, 1, message, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64 (st, 2, run);
  if (sqlite3_step (st) != SQLITE_DONE)
    db_failed (t, sqlite3_errmsg (t->db));
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
  step (t, st, run);
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
  step (t, st, run);
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
  step (t, st, run);
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
  step (t, st, run);
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
  step (t, q, run);
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
  step (t, st, run);
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
  step (t, st, run);
}
