/*
 * trace.c — writing the SQLite trace.
 *
 * Each table is described in a file of its own (sim/tables/NAME.c), which
 * also turns what a run reports into its rows; the registry below lists
 * them.  The writer keeps one prepared INSERT per table and one open
 * transaction, committed every SIM_TRACE_BATCH rows and at the end of each
 * run.  Row insertions cannot fail loudly in the middle of a simulation,
 * so the first SQLite error of each run is kept (by run id) and reported
 * when that run ends, which marks it, and only it, failed.  Errors that hit the database
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
 * replaced at all: only a missing path or a dtsim trace may.  One process at
 * a time writes a target: sim_trace_open_run() takes a flock() on
 * ".NAME.lock" beside it (lock_target) and refuses the run while another
 * holds it; with the lock held it deletes the temporaries that killed runs
 * left for that target (remove_stale_temporaries), each writer holding a
 * flock() on its own temporary so that a live one is never taken.
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
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/backend.h"
#include "config/input.h"
#include "sim/tables/table.h"
#include "sim/trace.h"
#include "sim/wire.h"

/* --- the tables ------------------------------------------------------------ */

/* The registry of the tables: one line per table, each described in its
 * own file (sim/tables/NAME.c, sim/tables/table.h), in the order of the
 * schema text.  Everything else follows from the descriptions: the CREATE
 * TABLE and CREATE INDEX text (schema_sql), each table's INSERT and the
 * binds of its values (insert_row), the records a buffer keeps
 * (buffer_row) and a chunk's bytes, whose table byte is a table's place
 * here.  A new table goes at the end: the files already written record the
 * text, and chunks the places, of the tables before it. */
static const SimTable *const tables[] = {
  &sim_table_runs,
  &sim_table_params,
  &sim_table_metrics,
  &sim_table_iterations,
  &sim_table_spans,
  &sim_table_messages,
  &sim_table_buckets,
  &sim_table_failures,
  &sim_table_stages,
  &sim_table_links,
  &sim_table_mesh,
  &sim_table_outages,
  &sim_table_jobs,
  &sim_table_usage,
};
#define N_TABLES ((int) G_N_ELEMENTS (tables))

/* tb's place in tables[]: its statement in SimTrace.st, its byte in a
 * chunk.  A scan of a dozen pointers, against an INSERT per row. */
static int
table_index (const SimTable *tb)
{
  for (int i = 0; i < N_TABLES; i++)
    if (tables[i] == tb)
      return i;
  g_error ("trace table %s is not registered in sim/trace.c", tb->name);
}

int
sim_trace_empty_pages (void)
{
  int pages = 1;   /* sqlite_master */
  for (int i = 0; i < N_TABLES; i++)
    pages += tables[i]->index ? 2 : 1;
  return pages;
}

gboolean
sim_trace_wants (const SimTable *tb, SimDetail detail)
{
  return detail >= tb->detail;
}

struct SimTrace {
  sqlite3 *db;
  char *path;            /* the target, as given: named in messages */
  char *tmp_path;        /* the file being written, renamed to path at the end */
  int tmp_fd;            /* open on tmp_path, flock()ed: the file is in use */
  char *lock_path;       /* ".NAME.lock" beside path, flock()ed while open */
  int lock_fd;           /* holds that lock; -1: none */
  int cleanup_slot;      /* its entry in cleanup[] (signals), -1: none */
  sqlite3_stmt *st[G_N_ELEMENTS (tables)]; /* each table's INSERT (none for
                                             * runs), by place in tables[] */
  int rows;              /* rows in the open transaction */
  gboolean in_txn;
  GHashTable *run_errors; /* run id -> its first failed insertion (char *) */
  char *db_error;        /* first error of the database itself: incomplete */
  /* buffer mode (db == NULL) */
  SimTraceSink sink;     /* receives each full chunk */
  gpointer sink_data;
  SimTraceChunk *chunk;  /* the chunk being filled, NULL before the first row */
};

/* One buffered row: its table and its values, as insert_row takes them.
 * Strings point into the chunk's string pool. */
typedef struct {
  const SimTable *table;             /* a table written by rows */
  SimTableValue v[SIM_TRACE_ROW_MAX]; /* its columns; the rest unused */
} Record;

struct SimTraceChunk {
  GArray *records;       /* Record, in emission order */
  GStringChunk *strings; /* the records' strings, deduplicated */
};

#define CHUNK_RECORDS 4096

/* The CREATE TABLE statement of every table, then the CREATE INDEX of those
 * that have one, then the schema version, as one SQL text to execute (free
 * it). */
static char *
schema_sql (void)
{
  /* one transaction: one journal file created and removed, not one per
   * table */
  GString *s = g_string_new ("BEGIN;");
  for (int i = 0; i < N_TABLES; i++)
    {
      g_string_append_printf (s, "CREATE TABLE %s (", tables[i]->name);
      for (int k = 0; k < tables[i]->n_columns; k++)
        {
          const SimTableColumn *c = &tables[i]->columns[k];
          g_string_append_printf (s, "%s%s%s %s", k ? "," : "", c->line ? "  " : k ? " " : "",
                                  c->name, c->decl);
        }
      g_string_append (s, ");");
    }
  /* Rows arrive run by run, so each index grows at its end. */
  for (int i = 0; i < N_TABLES; i++)
    if (tables[i]->index)
      g_string_append_printf (s, "CREATE INDEX %s_run ON %s (run_id);", tables[i]->name,
                              tables[i]->name);
  g_string_append_printf (s, "PRAGMA user_version = %d;COMMIT;", SIM_TRACE_SCHEMA_VERSION);
  return g_string_free (s, FALSE);
}

/* "INSERT INTO NAME VALUES (?,...)" with one parameter per column (free it). */
static char *
insert_sql (const SimTable *tb)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "INSERT INTO %s VALUES (", tb->name);
  for (int k = 0; k < tb->n_columns; k++)
    g_string_append (s, k ? ",?" : "?");
  g_string_append_c (s, ')');
  return g_string_free (s, FALSE);
}

static char *explain_failure (const SimTrace *t, const char *why);

static gboolean
sql_fail (SimTrace *t, const char *what, GError **error)
{
  g_autofree char *why = explain_failure (t, sqlite3_errmsg (t->db));
  if (g_str_has_prefix (why, "SQLite error: "))
    g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: SQLite error while %s: %s",
                 t->path, what, sqlite3_errmsg (t->db));
  else
    g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: %s", t->path, why);
  return FALSE;
}

/* Keeps the first error that hit the database as a whole, explained
 * (explain_failure). */
static void
db_failed (SimTrace *t, const char *message)
{
  if (!t->db_error)
    t->db_error = explain_failure (t, message);
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
      g_autofree char *why = explain_failure (t, msg ? msg : "unknown");
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: %s", t->path, why);
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
  char lock[PATH_MAX];   /* the target's lock file, "" when none */
} cleanup[CLEANUP_SLOTS];
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP };

/* How many threads are creating or letting go of a trace's files (quiet()),
 * and whether a handler has begun the cleanup.  Such a thread blocks the
 * signals, but a signal sent to the process goes to any thread that does
 * not: that thread's handler waits for the count to fall to zero, so it sees
 * every file registered or none of them created, and a thread that would
 * start creating files once the cleanup has begun waits for the process to
 * die instead. */
static volatile int quiet_threads;
static volatile int dying;

static void
on_fatal_signal (int sig)
{
  int saved = errno;
  __atomic_store_n (&dying, 1, __ATOMIC_SEQ_CST);
  /* a few microseconds as a rule; bounded, so a stuck thread cannot keep the
   * process from dying of the signal */
  struct timespec tick = { 0, 100000 };
  for (int i = 0; i < 20000 && __atomic_load_n (&quiet_threads, __ATOMIC_SEQ_CST) > 0; i++)
    nanosleep (&tick, NULL);
  for (int i = 0; i < CLEANUP_SLOTS; i++)
    if (__atomic_load_n (&cleanup[i].armed, __ATOMIC_SEQ_CST))
      {
        unlink (cleanup[i].db);
        unlink (cleanup[i].journal);
        /* still held: removing it before the lock dies with the process is
         * what the owner of a lock may do (lock_target) */
        if (cleanup[i].lock[0])
          unlink (cleanup[i].lock);
      }
  /* SA_RESETHAND restored the default action; the signal is blocked until
   * the handler returns, then kills the process as it would have */
  raise (sig);
  errno = saved;
}

/* Enters (`enter`) or leaves a stretch in which this thread creates or
 * removes a trace's files and changes their registration: the signals are
 * blocked here, and a handler running in another thread waits for it. */
static void
quiet (gboolean enter, sigset_t *old)
{
  if (enter)
    {
      sigset_t block;
      sigemptyset (&block);
      for (gsize i = 0; i < G_N_ELEMENTS (cleanup_signals); i++)
        sigaddset (&block, cleanup_signals[i]);
      pthread_sigmask (SIG_BLOCK, &block, old);
      __atomic_add_fetch (&quiet_threads, 1, __ATOMIC_SEQ_CST);
      if (__atomic_load_n (&dying, __ATOMIC_SEQ_CST))
        {
          __atomic_sub_fetch (&quiet_threads, 1, __ATOMIC_SEQ_CST);
          for (;;)
            pause ();
        }
    }
  else
    {
      __atomic_sub_fetch (&quiet_threads, 1, __ATOMIC_SEQ_CST);
      pthread_sigmask (SIG_SETMASK, old, NULL);
    }
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

/* Registers `tmp` (and its journal) and the lock file `lock` for deletion on
 * a fatal signal; returns the slot, or -1 when a path is too long or every
 * slot is taken (the files are then only deleted by sim_trace_abandon, and
 * by the next run for the same target). */
static int
cleanup_arm (const char *tmp, const char *lock)
{
  install_handlers ();
  if (strlen (tmp) >= PATH_MAX || strlen (lock) >= PATH_MAX)
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
      g_strlcpy (cleanup[slot].lock, lock, sizeof cleanup[slot].lock);
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

/* --- one run per target, and the leftovers of killed ones ------------------ */

/* Bytes of the lock file's text that are read: "pid N, scenario FILE". */
#define LOCK_TEXT_MAX 200

/* Who holds the lock file open on `fd`, as its holder wrote it, cleaned for
 * a message; "" when it says nothing yet.  The holder writes its line just
 * after taking the lock, so an empty file is read again for a short while. */
static char *
lock_holder (int fd)
{
  char text[LOCK_TEXT_MAX + 1];
  for (int tries = 0; tries < 40; tries++)
    {
      ssize_t n = pread (fd, text, LOCK_TEXT_MAX, 0);
      if (n > 0)
        {
          text[n] = '\0';
          text[strcspn (text, "\n")] = '\0';
          if (text[0])
            {
              g_autofree char *valid = g_utf8_make_valid (text, -1);
              return sim_input_printable (valid);
            }
        }
      g_usleep (5000);
    }
  return g_strdup ("");
}

/* Takes the lock that makes this process the one writing `path`: an
 * exclusive flock() on the file `lock` beside it, created when absent, into
 * which the holder writes "pid N, scenario FILE".  The kernel drops the lock
 * when its process dies, however it dies, so it is never stale; the holder
 * removes the file before it lets go, and a process that locked a file
 * removed meanwhile tries again, so only one process ever holds the lock of
 * the name `lock` at a time.  Returns the descriptor, or -1 with a
 * SIM_ERROR_INPUT error naming the holder when another run writes `path`,
 * SIM_ERROR_RUNTIME when the lock cannot be taken. */
static int
lock_target (const char *path, const char *lock, const char *scenario, GError **error)
{
  g_autofree char *shown = sim_input_printable (path);
  for (int tries = 0; tries < 100; tries++)
    {
      int fd = open (lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
      struct stat held, named;
      if (fd < 0 || fstat (fd, &held) != 0 || !S_ISREG (held.st_mode))
        {
          int err = fd < 0 ? errno : EINVAL;
          if (fd >= 0)
            close (fd);
          g_autofree char *lk = sim_input_printable (lock);
          g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                       "%s: cannot create its lock file %s: %s; choose a folder you can write"
                       " to, or remove %s if it is not a regular file", shown, lk,
                       err == EINVAL ? "not a regular file" : g_strerror (err), lk);
          return -1;
        }
      if (flock (fd, LOCK_EX | LOCK_NB) != 0)
        {
          int err = errno;
          if (err == EWOULDBLOCK)
            {
              g_autofree char *who = lock_holder (fd);
              close (fd);
              g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                           "%s: in use by dtsim run (%s); wait for it to finish or choose"
                           " another output path (-o)", shown,
                           who[0] ? who : "a process that has just started");
              return -1;
            }
          close (fd);
          g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                       "%s: cannot lock it against another run writing it at once (%s);"
                       " write the trace to a local folder", shown, g_strerror (err));
          return -1;
        }
      /* the holder before us may have removed the file we locked */
      if (lstat (lock, &named) == 0 && named.st_dev == held.st_dev
          && named.st_ino == held.st_ino)
        {
          g_autofree char *line = g_strdup_printf ("pid %ld, scenario %s\n", (long) getpid (),
                                                   scenario ? scenario : "(unknown)");
          /* the line only names the holder in the others' messages: a failed
           * write costs nothing else */
          if (ftruncate (fd, 0) == 0 && pwrite (fd, line, strlen (line), 0) < 0)
            g_debug ("%s: cannot write its lock file", shown);
          return fd;
        }
      close (fd);
    }
  g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
               "%s: its lock file keeps being replaced; is another program removing files"
               " in its folder?", shown);
  return -1;
}

/* Whether `name` is one of the temporary files of target `base`:
 * ".BASE.XXXXXX" (mkstemp's six letters and digits), or its journal. */
static gboolean
is_temporary_of (const char *name, const char *base, gboolean *journal)
{
  gsize nb = strlen (base);
  if (name[0] != '.' || strncmp (name + 1, base, nb) != 0 || name[nb + 1] != '.')
    return FALSE;
  const char *x = name + nb + 2;
  for (int i = 0; i < 6; i++)
    if (!g_ascii_isalnum (x[i]))
      return FALSE;
  *journal = strcmp (x + 6, "-journal") == 0;
  return *journal || x[6] == '\0';
}

/* Removes the temporary files (and journals) that runs killed before they
 * could delete them left beside target `path` (kill -9, a crash, a power
 * cut).  Called with the target's lock held, so no other dtsim writes one;
 * still, a temporary is removed only when no process holds its flock()
 * (every writer holds one on its own) and it is empty or an SQLite file.
 * A journal goes with its database, or alone when that is gone. */
static void
remove_stale_temporaries (const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  GDir *d = g_dir_open (dir, 0, NULL);
  if (!d)
    return;
  g_autoptr (GPtrArray) journals = g_ptr_array_new_with_free_func (g_free);
  const char *name;
  while ((name = g_dir_read_name (d)))
    {
      gboolean journal = FALSE;
      if (!is_temporary_of (name, base, &journal))
        continue;
      g_autofree char *file = g_build_filename (dir, name, NULL);
      if (journal)
        {
          g_ptr_array_add (journals, g_steal_pointer (&file));
          continue;
        }
      int fd = open (file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
      struct stat st;
      char head[16];
      if (fd < 0)
        continue;
      if (fstat (fd, &st) == 0 && S_ISREG (st.st_mode)
          && (st.st_size == 0 || (read (fd, head, sizeof head) == (ssize_t) sizeof head
                                  && memcmp (head, "SQLite format 3", 16) == 0))
          && flock (fd, LOCK_EX | LOCK_NB) == 0)
        {
          g_autofree char *j = g_strconcat (file, "-journal", NULL);
          g_unlink (file);
          g_unlink (j);
        }
      close (fd);
    }
  g_dir_close (d);
  for (guint i = 0; i < journals->len; i++)
    {
      const char *j = g_ptr_array_index (journals, i);
      g_autofree char *db = g_strndup (j, strlen (j) - strlen ("-journal"));
      struct stat st;
      if (lstat (db, &st) != 0 && errno == ENOENT && lstat (j, &st) == 0
          && S_ISREG (st.st_mode))
        g_unlink (j);
    }
}

/* Why writing the trace failed, with the fix, given SQLite's or the system's
 * message `why`: the folder or the temporary file removed during the run is
 * said as such (SQLite would only say "attempt to write a readonly
 * database" or "disk I/O error"). */
static char *
explain_failure (const SimTrace *t, const char *why)
{
  struct stat st;
  g_autofree char *dir = g_path_get_dirname (t->tmp_path);
  if (stat (dir, &st) != 0 && errno == ENOENT)
    {
      g_autofree char *shown = sim_input_printable (dir);
      /* SQLite's own words ("attempt to write a readonly database", "disk
       * I/O error") would only mislead */
      return g_strdup_printf ("its folder '%s' was removed during the run; create the"
                              " folder again and rerun, or choose another -o", shown);
    }
  if (lstat (t->tmp_path, &st) != 0 && errno == ENOENT)
    {
      g_autofree char *shown = sim_input_printable (t->tmp_path);
      return g_strdup_printf ("the new trace %s was deleted during the run (%s); run again",
                              shown, why);
    }
  return g_strdup_printf ("SQLite error: %s", why);
}

SimTrace *
sim_trace_open (const char *path, GError **error)
{
  return sim_trace_open_run (path, NULL, error);
}

SimTrace *
sim_trace_open_run (const char *path, const char *scenario, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *name = g_strdup_printf (".%s.XXXXXX", base);
  g_autofree char *tmp = g_build_filename (dir, name, NULL);
  g_autofree char *lock_name = g_strdup_printf (".%s.lock", base);
  g_autofree char *lock = g_build_filename (dir, lock_name, NULL);
  /* no signal between the files' creation and their registration, and the
   * handler in place before the first file */
  install_handlers ();
  sigset_t old;
  quiet (TRUE, &old);
  int lock_fd = lock_target (path, lock, scenario, error);
  if (lock_fd < 0)
    {
      quiet (FALSE, &old);
      return NULL;
    }
  remove_stale_temporaries (path);
  /* 0644 as SQLite creates its files, less the umask */
  int fd = g_mkstemp_full (tmp, O_RDWR | O_CLOEXEC, 0644);
  int err = errno;
  /* in use: the next run for this target leaves it alone */
  if (fd >= 0)
    flock (fd, LOCK_EX | LOCK_NB);
  int slot = fd >= 0 ? cleanup_arm (tmp, lock) : -1;
  if (fd < 0)
    {
      g_unlink (lock);
      close (lock_fd);
    }
  quiet (FALSE, &old);
  if (fd < 0)
    {
      g_autofree char *shown = sim_input_printable (path);
      g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
                   "%s: cannot create the new trace beside it: %s; choose a folder you can"
                   " write to", shown, g_strerror (err));
      return NULL;
    }
  SimTrace *t = g_new0 (SimTrace, 1);
  t->path = g_strdup (path);
  t->tmp_path = g_steal_pointer (&tmp);
  t->tmp_fd = fd;
  t->lock_path = g_steal_pointer (&lock);
  t->lock_fd = lock_fd;
  t->cleanup_slot = slot;
  t->run_errors = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  g_autofree char *schema = schema_sql ();
  if (sqlite3_open_v2 (t->tmp_path, &t->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK
      || !exec (t, "PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF;", error)
      || !exec (t, schema, error))
    {
      if (error && !*error)
        sql_fail (t, "creating the database", error);
      sim_trace_abandon (t);
      return NULL;
    }
  for (int i = 0; i < N_TABLES; i++)
    {
      if (!tables[i]->by_rows)
        continue;
      g_autofree char *sql = insert_sql (tables[i]);
      if (sqlite3_prepare_v2 (t->db, sql, -1, &t->st[i], NULL) != SQLITE_OK)
        {
          sql_fail (t, "preparing statements", error);
          sim_trace_abandon (t);
          return NULL;
        }
    }
  return t;
}

gboolean
sim_trace_ok (const SimTrace *t, GError **error)
{
  if (!t->db_error)
    return TRUE;
  g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: %s", t->path, t->db_error);
  return FALSE;
}

/* Closes the database; the files stay. */
static void
close_db (SimTrace *t)
{
  for (int i = 0; i < N_TABLES; i++)
    sqlite3_finalize (t->st[i]);
  sqlite3_close (t->db);
  t->db = NULL;
}

/* Forgets the trace.  Its lock file is removed before the lock is let go
 * (lock_target says why). */
static void
free_trace (SimTrace *t)
{
  /* no signal between the registration's end and the lock file's removal */
  sigset_t old;
  quiet (TRUE, &old);
  cleanup_disarm (t->cleanup_slot);
  if (t->tmp_path)
    close (t->tmp_fd);
  if (t->lock_path)
    {
      g_unlink (t->lock_path);
      close (t->lock_fd);
      g_free (t->lock_path);
    }
  quiet (FALSE, &old);
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
      /* kept under a name without the leading dot, which the next run for
       * this target would take for a killed run's leftover */
      g_autofree char *dir = g_path_get_dirname (t->tmp_path);
      g_autofree char *name = g_path_get_basename (t->tmp_path);
      g_autofree char *kept = g_build_filename (dir, name + 1, NULL);
      if (link (t->tmp_path, kept) == 0)
        g_unlink (t->tmp_path);
      else
        g_free (g_steal_pointer (&kept));
      g_autofree char *tmp = sim_input_printable (kept ? kept : t->tmp_path);
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
      g_autofree char *cause = explain_failure (t, g_strerror (err));
      if (g_str_has_prefix (cause, "SQLite error: "))
        g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: cannot replace it with the new"
                     " trace: %s", shown, g_strerror (err));
      else
        g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME, "%s: cannot replace it with the new"
                     " trace: %s", shown, cause);
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

/* A copy of `s` that lives as long as the buffer's chunk; NULL stays NULL. */
static const char *
buffer_string (SimTrace *t, const char *s)
{
  return s ? g_string_chunk_insert_const (t->chunk->strings, s) : NULL;
}

/* Appends a row of table `tb` to the buffer's chunk, its text copied into
 * the chunk, and hands the chunk on once it is full. */
static void
buffer_row (SimTrace *t, const SimTable *tb, const SimTableValue *v)
{
  if (!t->chunk)
    {
      t->chunk = g_new0 (SimTraceChunk, 1);
      t->chunk->records = g_array_sized_new (FALSE, TRUE, sizeof (Record), CHUNK_RECORDS);
      t->chunk->strings = g_string_chunk_new (1024);
    }
  Record r = { .table = tb };
  for (int k = 0; k < tb->n_columns; k++)
    if (tb->columns[k].kind == SIM_COL_TEXT)
      r.v[k].s = buffer_string (t, v[k].s);
    else
      r.v[k] = v[k];
  g_array_append_val (t->chunk->records, r);
  if (t->chunk->records->len >= CHUNK_RECORDS)
    sim_trace_flush (t);
}

static void
bind_real_or_null (sqlite3_stmt *st, int i, double v)
{
  if (isnan (v))
    sqlite3_bind_null (st, i);
  else
    sqlite3_bind_double (st, i, v);
}

/* Binds `v` as the value of a column of kind `kind` to parameter i (from 1). */
static void
bind_value (sqlite3_stmt *st, int i, SimColKind kind, SimTableValue v)
{
  switch (kind)
    {
    case SIM_COL_INT:
      sqlite3_bind_int64 (st, i, v.i);
      break;
    case SIM_COL_INT_OR_NULL:
      if (v.i < 0)
        sqlite3_bind_null (st, i);
      else
        sqlite3_bind_int64 (st, i, v.i);
      break;
    case SIM_COL_REAL:
      bind_real_or_null (st, i, v.d);
      break;
    case SIM_COL_TEXT:
      /* the text outlives the statement's step: no copy */
      sqlite3_bind_text (st, i, v.s, -1, SQLITE_STATIC);
      break;
    default:
      g_assert_not_reached ();
    }
}

/* Inserts a row of table `tb` (by_rows) into the database, its run id v[0];
 * a failure is kept as step() says. */
static void
insert_row (SimTrace *t, const SimTable *tb, const SimTableValue *v)
{
  sqlite3_stmt *st = t->st[table_index (tb)];
  for (int k = 0; k < tb->n_columns; k++)
    bind_value (st, k + 1, tb->columns[k].kind, v[k]);
  step (t, st, v[0].i);
}

void
sim_trace_add_row (SimTrace *t, const SimTable *tb, const SimTableValue *v, gsize n)
{
  g_assert (tb->by_rows && n == (gsize) tb->n_columns && n <= SIM_TRACE_ROW_MAX);
  if (t->db)
    insert_row (t, tb, v);
  else
    buffer_row (t, tb, v);
}

void
sim_trace_write_chunk (SimTrace *t, SimTraceChunk *c)
{
  g_return_if_fail (t->db != NULL);
  for (guint k = 0; k < c->records->len; k++)
    {
      const Record *r = &g_array_index (c->records, Record, k);
      insert_row (t, r->table, r->v);
    }
  sim_trace_chunk_free (c);
}

/* --- chunks between processes (sweep/mpi.c) ------------------------------------
 *
 * A chunk as bytes (sim/wire.h): per record, its table (one byte), then each
 * column of that table in order, an integer or a real as such, a text as a
 * text.  Nothing else: the reader knows the tables, and checks every length
 * against what is left. */

GBytes *
sim_trace_chunk_serialize (const SimTraceChunk *c)
{
  GByteArray *b = g_byte_array_sized_new (c->records->len * 64);
  for (guint k = 0; k < c->records->len; k++)
    {
      const Record *r = &g_array_index (c->records, Record, k);
      const SimTable *tb = r->table;
      guint8 table = (guint8) table_index (tb);
      g_byte_array_append (b, &table, 1);
      for (int j = 0; j < tb->n_columns; j++)
        if (tb->columns[j].kind == SIM_COL_TEXT)
          sim_wire_put_str (b, r->v[j].s);
        else if (tb->columns[j].kind == SIM_COL_REAL)
          sim_wire_put_f64 (b, r->v[j].d);
        else
          sim_wire_put_u64 (b, (guint64) r->v[j].i);
    }
  return g_byte_array_free_to_bytes (b);
}

SimTraceChunk *
sim_trace_chunk_deserialize (const guint8 *data, gsize len, gint64 run, GError **error)
{
  SimTraceChunk *c = g_new0 (SimTraceChunk, 1);
  c->records = g_array_new (FALSE, TRUE, sizeof (Record));
  c->strings = g_string_chunk_new (1024);
  SimWireReader rd = { .p = data, .len = len };
  while (rd.at < len)
    {
      int table = data[rd.at++];
      if (table >= N_TABLES || !tables[table]->by_rows)
        goto bad;
      const SimTable *tb = tables[table];
      Record r = { .table = tb };
      for (int j = 0; j < tb->n_columns; j++)
        if (tb->columns[j].kind == SIM_COL_TEXT)
          {
            gsize n;
            const char *s = sim_wire_get_text (&rd, &n);
            r.v[j].s = s ? g_string_chunk_insert_len (c->strings, s, (gssize) n) : NULL;
          }
        else if (tb->columns[j].kind == SIM_COL_REAL)
          r.v[j].d = sim_wire_get_f64 (&rd);
        else
          r.v[j].i = (gint64) sim_wire_get_u64 (&rd);
      if (rd.bad || r.v[0].i != run)
        goto bad;
      g_array_append_val (c->records, r);
    }
  return c;
bad:
  g_set_error (error, SIM_ERROR, SIM_ERROR_RUNTIME,
               "a chunk of rows arrived damaged (byte %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT ")",
               rd.at, len);
  sim_trace_chunk_free (c);
  return NULL;
}

gint64
sim_trace_begin_run (SimTrace *t, const SimConfig *c, const char *scenario_path,
                     GError **error)
{
  sqlite3_stmt *st = NULL;
  if (!commit (t, error))
    return -1;
  if (sqlite3_prepare_v2 (t->db,
                          "INSERT INTO runs (scenario, name, seed, status, version, kernel)"
                          " VALUES (?, ?, ?, 'running', ?, ?)", -1, &st, NULL) != SQLITE_OK)
    {
      db_fail (t, "adding a run", error);
      return -1;
    }
  sqlite3_bind_text (st, 1, scenario_path, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (st, 2, c->name, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64 (st, 3, c->seed);
  sqlite3_bind_text (st, 4, PACKAGE_VERSION, -1, SQLITE_STATIC);
  /* what did the math: a difference between two machines' traces is
   * explained from the databases alone (docs/kernels.md) */
  g_autofree char *kernel = kern_backend_kernel_name (c->math ? c->backend : NULL,
                                                     c->reproducible_math);
  sqlite3_bind_text (st, 5, kernel, -1, SQLITE_TRANSIENT);
  if (sqlite3_step (st) != SQLITE_DONE)
    {
      db_fail (t, "adding a run", error);
      sqlite3_finalize (st);
      return -1;
    }
  sqlite3_finalize (st);
  gint64 run = sqlite3_last_insert_rowid (t->db);
  for (guint i = 0; i < c->param_keys->len; i++)
    {
      /* as sim_trace_param() writes them (sim/tables/params.c), which the
       * writer does not call: a table's file calls the writer, not back */
      const SimTableValue v[] = { { .i = run }, { .s = g_ptr_array_index (c->param_keys, i) },
                                  { .s = g_ptr_array_index (c->param_values, i) } };
      sim_trace_add_row (t, &sim_table_params, v, G_N_ELEMENTS (v));
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
                          " wait = ?, samples = ? WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
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
  if (s->samples >= 0)
    sqlite3_bind_int64 (st, 12, s->samples);
  else
    sqlite3_bind_null (st, 12);
  sqlite3_bind_int64 (st, 13, run);
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

/* Ends run `run` with `status` (failed or infeasible) and `message`. */
static void
end_run_as (SimTrace *t, gint64 run, const char *status, const char *message)
{
  sqlite3_stmt *st = NULL;
  commit (t, NULL);
  g_hash_table_remove (t->run_errors, GSIZE_TO_POINTER ((gsize) run));
  g_autofree char *sql = g_strdup_printf ("UPDATE runs SET status = '%s', error = ? WHERE id = ?",
                                          status);
  if (sqlite3_prepare_v2 (t->db, sql, -1, &st, NULL) != SQLITE_OK)
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
sim_trace_fail_run (SimTrace *t, gint64 run, const char *message)
{
  end_run_as (t, run, "failed", message);
}

void
sim_trace_infeasible_run (SimTrace *t, gint64 run, const char *reason)
{
  end_run_as (t, run, "infeasible", reason);
}
