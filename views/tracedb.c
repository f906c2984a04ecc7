/*
 * tracedb.c — reading a trace database that may come from someone else, as
 * safely as a text file is read: `dtsim plot` and `dtsim export` open
 * databases through it.  The rules, which every change here must keep:
 *  - The database must be a regular file (checked before SQLite opens it,
 *    with O_NONBLOCK so that a FIFO cannot block) with a SQLite header whose
 *    page count fits the file's size.  It is opened read-only by its absolute
 *    path, made a URI here (immutable unless a journal or WAL beside it says
 *    it is written in place: reader_uri), so reading never writes or creates
 *    a file beside it; defensive, with an untrusted schema,
 *    no views, triggers, extensions or attached files, and values of at most
 *    SIM_TRACEDB_VALUE_MAX bytes; the tables and columns a caller reads must
 *    exist as ordinary tables.  Every query is checked; a failure is one
 *    line, "FILE: what is wrong; the fix", and exit code 2.
 *  - Text from the database passes sim_clean_text() before it is shown
 *    anywhere: valid UTF-8, no control characters, bounded length.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "config/simconfig.h"
#include "sim/trace.h"
#include "views/tracedb.h"

/* Text from an untrusted source made fit to show: valid UTF-8, every control
 * character (C0, DEL, C1) a space, at most `max` characters (a longer text is
 * cut and ends in "..."). */
char *
sim_clean_text (const char *s, gsize max)
{
  g_autofree char *valid = g_utf8_make_valid (s ? s : "", -1);
  GString *o = g_string_new (NULL);
  gsize n = 0;
  for (const char *c = valid; *c; c = g_utf8_next_char (c), n++)
    {
      if (n == max)
        {
          g_string_append (o, "...");
          break;
        }
      gunichar u = g_utf8_get_char (c);
      if (u < 0x20 || (u >= 0x7f && u <= 0x9f))
        g_string_append_c (o, ' ');
      else
        g_string_append_unichar (o, u);
    }
  return g_string_free (o, FALSE);
}


/* What every reader connection has run, for sim_tracedb_counts(): a
 * process-wide tally like sqlite3_status()'s, the one mutable state of this
 * file, atomic since readers may run on several threads. */
static gsize n_statements, n_vm_steps;   /* pointer-sized, as g_atomic_pointer_add wants */

/* SQLITE_TRACE_PROFILE: a statement has finished one run (stepped to its
 * end, reset or finalized); its virtual machine steps since the last run are
 * added and its counter restarts. */
static int
count_run (unsigned type, void *ctx G_GNUC_UNUSED, void *p, void *x G_GNUC_UNUSED)
{
  if (type == SQLITE_TRACE_PROFILE)
    {
      g_atomic_pointer_add (&n_statements, 1);
      g_atomic_pointer_add (&n_vm_steps,
                            sqlite3_stmt_status (p, SQLITE_STMTSTATUS_VM_STEP, 1));
    }
  return 0;
}

void
sim_tracedb_counts (guint64 *statements, guint64 *vm_steps)
{
  if (statements)
    *statements = (guint64) g_atomic_pointer_get (&n_statements);
  if (vm_steps)
    *vm_steps = (guint64) g_atomic_pointer_get (&n_vm_steps);
}

/* Sets *error to the one line for SQLite's failure `code` (extended) with
 * message `msg` on t's database; returns FALSE. */
static gboolean
sql_error (const SimTraceDb *t, int code, const char *msg, GError **error)
{
  const char *shown = t->shown;
  const char *what = "not a dtsim trace this version can read";
  g_autofree char *use = g_strdup_printf ("%s a database written by `dtsim run`", t->verb);
  g_autofree char *larger = g_strdup_printf ("close other programs or %s it on a larger machine",
                                             t->verb);
  const char *fix = use;
  switch (code & 0xff)
    {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FORMAT:
    case SQLITE_RANGE:
      what = "damaged or truncated trace database";
      fix = "run its scenario again to write it anew";
      break;
    case SQLITE_READONLY:
      if (code == SQLITE_READONLY_ROLLBACK)
        {
          g_autofree char *arg = g_shell_quote (shown);
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: a killed run left an unfinished transaction in %s-journal, which"
                       " %s (read-only) does not roll back; run its scenario again, or roll"
                       " it back with: sqlite3 %s 'PRAGMA quick_check'", shown, shown, t->verb,
                       arg);
          return FALSE;
        }
      break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      what = "locked by another program";
      fix = "wait until the run writing it has finished";
      break;
    case SQLITE_TOOBIG:
      what = "holds a value too large for a dtsim trace";
      break;
    case SQLITE_NOMEM:
      what = "needs more memory than is available";
      fix = larger;
      break;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      what = "cannot be read";
      fix = "check the file, its permissions and the disk";
      break;
    default:
      break;
    }
  g_autofree char *m = sim_clean_text (msg, 200);
  g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: %s (SQLite: %s); %s", shown, what, m,
               fix);
  return FALSE;
}

/* The last query on p's database failed: its one line. */
static gboolean
db_error (SimTraceDb *t, GError **error)
{
  return sql_error (t, sqlite3_extended_errcode (t->db), sqlite3_errmsg (t->db), error);
}

/* Checks `rc`, the result of a SQLite call on t->db that returns a status
 * (open, config, bind, reset, or a helper passing one on): TRUE for
 * SQLITE_OK, else FALSE with *error set to its one line, from
 * sqlite3_errmsg() like trace.c's sql_fail().  Some calls (sqlite3_db_config,
 * a bind undone by the sqlite3_finalize() after it) return a failure without
 * leaving it on the connection; their line is then built from `rc` and
 * sqlite3_errstr().  Every status-returning call in this file goes through
 * here, sim_tracedb_prepare() or sim_tracedb_step(). */
gboolean
sim_tracedb_check (SimTraceDb *t, int rc, GError **error)
{
  if (rc == SQLITE_OK)
    return TRUE;
  if ((sqlite3_extended_errcode (t->db) & 0xff) != (rc & 0xff))
    return sql_error (t, rc, sqlite3_errstr (rc), error);
  return db_error (t, error);
}

/* The statement `sql`, or NULL with *error set. */
sqlite3_stmt *
sim_tracedb_prepare (SimTraceDb *t, const char *sql, GError **error)
{
  sqlite3_stmt *st = NULL;
  if (!sim_tracedb_check (t, sqlite3_prepare_v2 (t->db, sql, -1, &st, NULL), error))
    {
      sqlite3_finalize (st);   /* st is NULL or unusable; its status repeats the prepare's */
      return NULL;
    }
  return st;
}

/* Steps `st`: SQLITE_ROW, SQLITE_DONE, or -1 with *error set. */
int
sim_tracedb_step (SimTraceDb *t, sqlite3_stmt *st, GError **error)
{
  int rc = sqlite3_step (st);
  if (rc == SQLITE_ROW || rc == SQLITE_DONE)
    return rc;
  sim_tracedb_check (t, rc, error);
  return -1;
}

/* Resets `st` for another run with ?1 bound to `id` (a run id); its other
 * parameters keep their values.  FALSE with *error set on failure. */
gboolean
sim_tracedb_rebind (SimTraceDb *t, sqlite3_stmt *st, gint64 id, GError **error)
{
  return sim_tracedb_check (t, sqlite3_reset (st), error)
         && sim_tracedb_check (t, sqlite3_bind_int64 (st, 1, id), error);
}

/* Binds the text `v` (kept alive by the caller until the statement is reset)
 * to parameter i of `st`.  FALSE with *error set on failure. */
gboolean
sim_tracedb_bind_text (SimTraceDb *t, sqlite3_stmt *st, int i, const char *v, GError **error)
{
  return sim_tracedb_check (t, sqlite3_bind_text (st, i, v, -1, SQLITE_STATIC), error);
}

/* Column i as text; "" for NULL. */
const char *
sim_tracedb_text (sqlite3_stmt *st, int i)
{
  const char *t = (const char *) sqlite3_column_text (st, i);
  return t ? t : "";
}

static guint32
be32 (const guint8 *b)
{
  return (guint32) b[0] << 24 | (guint32) b[1] << 16 | (guint32) b[2] << 8 | b[3];
}

/* Checks that `path` is a regular file holding a whole SQLite database,
 * before SQLite opens it: a folder, FIFO or device, an empty, foreign or
 * truncated file each get their line. */
static gboolean
check_file (const SimTraceDb *t, const char *path, GError **error)
{
  const char *shown = t->shown;
  g_autofree char *fix = g_strdup_printf ("%s the .db file that `dtsim run` wrote", t->verb);
  GStatBuf sb;
  if (g_stat (path, &sb) != 0)
    {
      int e = errno;
      if (e == ENOENT)
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                     "%s: no such trace database; run `dtsim run SCENARIO.ini` first", shown);
      else
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                     "%s: cannot read (%s); check the path and its permissions", shown,
                     g_strerror (e));
      return FALSE;
    }
  if (S_ISDIR (sb.st_mode))
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT, "%s: a folder, not a trace database; %s",
                   shown, fix);
      return FALSE;
    }
  /* O_NONBLOCK: should a FIFO replace the file after the check, open
   * returns at once rather than wait for a writer */
  int fd = S_ISREG (sb.st_mode) ? g_open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0) : -1;
  struct stat fs;
  if (fd >= 0 && (fstat (fd, &fs) != 0 || !S_ISREG (fs.st_mode)))
    {
      close (fd);
      fd = -1;
      sb.st_mode = 0;
    }
  if (fd < 0)
    {
      int e = errno;
      if (!S_ISREG (sb.st_mode))
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                     "%s: not a regular file (a FIFO, socket or device), so not a trace"
                     " database; %s", shown, fix);
      else
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                     "%s: cannot read (%s); check its permissions", shown, g_strerror (e));
      return FALSE;
    }
  guint8 h[100];
  gssize n = read (fd, h, sizeof h);
  close (fd);
  if (fs.st_size == 0)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: empty file, not a trace database; run its scenario again to write it",
                   shown);
      return FALSE;
    }
  if (n != (gssize) sizeof h || memcmp (h, "SQLite format 3", 16) != 0)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: not a SQLite database (no SQLite header), so not a dtsim trace; %s",
                   shown, fix);
      return FALSE;
    }
  /* the header's page count is valid when its "version valid for" number
   * equals the change counter (https://sqlite.org/fileformat.html) */
  guint64 page = (guint64) h[16] << 8 | h[17];
  if (page == 1)
    page = 65536;
  guint64 pages = be32 (h + 28);
  if (page >= 512 && (page & (page - 1)) == 0 && pages > 0 && be32 (h + 24) == be32 (h + 92)
      && (guint64) fs.st_size < pages * page)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: truncated (%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                   " bytes: copied while written, or a transfer cut short?); copy it again or"
                   " run its scenario again", shown, (guint64) fs.st_size, pages * page);
      return FALSE;
    }
  return TRUE;
}

/* Sets the on/off setting `op` (SQLITE_DBCONFIG_...) of t->db to `on`. */
static gboolean
db_flag (SimTraceDb *t, int op, int on, GError **error)
{
  return sim_tracedb_check (t, sqlite3_db_config (t->db, op, on, NULL), error);
}

/* Whether the file `path` exists, and holds at least `min` bytes. */
static gboolean
sidecar_exists (const char *path, goffset min)
{
  struct stat st;
  return lstat (path, &st) == 0 && st.st_size >= min;
}

/* The URI that opens the database `abs` (an absolute path) for reading
 * without writing or creating anything beside it.  A trace that `dtsim run`
 * wrote was renamed into place complete and is never written in place
 * again, so it is opened immutable: no lock, no journal, WAL or shared
 * memory file read or created, even when someone set it to WAL mode.  A
 * journal or a non-empty WAL beside it says some program writes or wrote it
 * in place, and that file holds part of its content: it is then opened
 * read-only the ordinary way (SQLite honours the locks, and says when a
 * journal needs rolling back), with the WAL's shared memory file used
 * read-only, never created.  *wal is set when that shared memory is needed. */
static char *
reader_uri (const char *abs, gboolean *wal)
{
  g_autofree char *journal = g_strconcat (abs, "-journal", NULL);
  g_autofree char *wal_file = g_strconcat (abs, "-wal", NULL);
  /* every character outside the unreserved set and '/' as %XX: a '?' or
   * '#' of the name is no parameter */
  g_autofree char *escaped = g_uri_escape_string (abs, "/", TRUE);
  *wal = sidecar_exists (wal_file, 1);
  if (*wal)
    return g_strdup_printf ("file:%s?mode=ro&readonly_shm=1", escaped);
  if (sidecar_exists (journal, 0))
    return g_strdup_printf ("file:%s?mode=ro", escaped);
  return g_strdup_printf ("file:%s?immutable=1", escaped);
}

/* Opens `path` read-only into t->db, hardened for an untrusted file: FALSE
 * with *error set when it cannot be opened or a hardening setting fails (the
 * caller closes t->db, which may be set even then). */
static gboolean
open_trace (SimTraceDb *t, const char *path, GError **error)
{
  /* absolute, and made a URI here: a name starting with "file:" is never
   * read as one */
  g_autofree char *abs = g_canonicalize_filename (path, NULL);
  gboolean wal = FALSE;
  g_autofree char *uri = reader_uri (abs, &wal);
  /* t->db stays NULL only when SQLite is out of memory; sim_tracedb_check() copes */
  int rc = sqlite3_open_v2 (uri, &t->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_extended_result_codes (t->db, 1);
  if (!sim_tracedb_check (t, rc, error))
    return FALSE;
  /* each setting that this SQLite knows, in turn until one fails */
  gboolean ok = TRUE;
#ifdef SQLITE_DBCONFIG_DEFENSIVE
  ok = ok && db_flag (t, SQLITE_DBCONFIG_DEFENSIVE, 1, error);
#endif
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
  ok = ok && db_flag (t, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, error);
#endif
#ifdef SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION
  ok = ok && db_flag (t, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, error);
#endif
#ifdef SQLITE_DBCONFIG_ENABLE_TRIGGER
  ok = ok && db_flag (t, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, error);
#endif
#ifdef SQLITE_DBCONFIG_ENABLE_VIEW
  ok = ok && db_flag (t, SQLITE_DBCONFIG_ENABLE_VIEW, 0, error);
#endif
  if (!ok)
    return FALSE;
  /* sqlite3_limit() returns the previous limit, not a status: nothing to check */
  sqlite3_limit (t->db, SQLITE_LIMIT_LENGTH, SIM_TRACEDB_VALUE_MAX);
  sqlite3_limit (t->db, SQLITE_LIMIT_ATTACHED, 0);
  if (!sim_tracedb_check (t, sqlite3_trace_v2 (t->db, SQLITE_TRACE_PROFILE, count_run, NULL),
                          error))
    return FALSE;
  rc = sqlite3_busy_timeout (t->db, 2000);
  if (!sim_tracedb_check (t, rc, error))
    return FALSE;
  if (wal)
    {
      /* the WAL is read at the first query: try one, to say what a
       * missing or unusable shared memory file means */
      rc = sqlite3_exec (t->db, "SELECT COUNT(*) FROM sqlite_master", NULL, NULL, NULL);
      if ((rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_READONLY)
        {
          g_autofree char *arg = g_shell_quote (t->shown);
          g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                       "%s: part of it is still in %s-wal, which %s (read-only) can only read"
                       " with the %s-shm file of a program that has it open; fold it in with:"
                       " sqlite3 %s 'PRAGMA wal_checkpoint(TRUNCATE)'", t->shown, t->shown,
                       t->verb, t->shown, arg);
          return FALSE;
        }
      /* any other failure shows again at the schema checks */
    }
  return TRUE;
}

/* What table `name` is: 0 absent, 1 a view or virtual table, 2 a table
 * without column *missing of `columns` (NULL-terminated), 3 a table with
 * them all; -1 with *error set when a query fails. */
static int
table_state (SimTraceDb *t, const char *name, const char *const *columns, const char **missing,
             GError **error)
{
  g_autoptr (sqlite3_stmt) kind
    = sim_tracedb_prepare (t, "SELECT type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' FROM"
                              " sqlite_master WHERE name = ? COLLATE NOCASE AND type IN"
                              " ('table', 'view')", error);
  g_autoptr (sqlite3_stmt) cols
    = kind ? sim_tracedb_prepare (t, "SELECT 1 FROM pragma_table_info(?) WHERE name = ?"
                                     " COLLATE NOCASE", error)
           : NULL;
  if (!cols || !sim_tracedb_bind_text (t, kind, 1, name, error))
    return -1;
  int rc = sim_tracedb_step (t, kind, error);
  if (rc < 0)
    return -1;
  if (rc == SQLITE_DONE)
    return 0;
  if (!sqlite3_column_int (kind, 0))
    return 1;
  for (int c = 0; columns && columns[c]; c++)
    {
      if (!sim_tracedb_check (t, sqlite3_reset (cols), error)
          || !sim_tracedb_bind_text (t, cols, 1, name, error)
          || !sim_tracedb_bind_text (t, cols, 2, columns[c], error))
        return -1;
      rc = sim_tracedb_step (t, cols, error);
      if (rc < 0)
        return -1;
      if (rc == SQLITE_DONE)
        {
          *missing = columns[c];
          return 2;
        }
    }
  return 3;
}

int
sim_tracedb_has (SimTraceDb *t, const char *name, const char *const *columns, GError **error)
{
  const char *missing = NULL;
  int state = table_state (t, name, columns, &missing, error);
  return state < 0 ? -1 : state == 3;
}

/* Checks the schema version and that every table of `required` (n of
 * them) is an ordinary table with its columns. */
static gboolean
check_schema (SimTraceDb *t, const SimTraceTable *required, gsize n, GError **error)
{
  g_autofree char *fix = g_strdup_printf ("%s a database written by `dtsim run`", t->verb);
  g_autoptr (sqlite3_stmt) st = sim_tracedb_prepare (t, "PRAGMA user_version", error);
  int rc;
  if (!st || (rc = sim_tracedb_step (t, st, error)) < 0)
    return FALSE;
  gint64 version = rc == SQLITE_ROW ? sqlite3_column_int64 (st, 0) : 0;
  if (version < 1)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: not a dtsim trace (schema version %" G_GINT64_FORMAT ", expected 1 to"
                   " %d); %s", t->shown, version, SIM_TRACE_SCHEMA_VERSION, fix);
      return FALSE;
    }
  if (version > SIM_TRACE_SCHEMA_VERSION)
    {
      g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                   "%s: trace schema version %" G_GINT64_FORMAT " is newer than this dtsim"
                   " reads (1 to %d); %s it with a newer dtsim", t->shown, version,
                   SIM_TRACE_SCHEMA_VERSION, t->verb);
      return FALSE;
    }
  for (gsize i = 0; i < n; i++)
    {
      const char *name = required[i].table, *missing = NULL;
      int state = table_state (t, name, required[i].columns, &missing, error);
      if (state < 0)
        return FALSE;
      if (state == 0)
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                     "%s: not a dtsim trace (no table '%s'); %s", t->shown, name, fix);
      else if (state == 1)
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                     "%s: not a dtsim trace ('%s' is a view or virtual table, not a table);"
                     " %s", t->shown, name, fix);
      else if (state == 2)
        g_set_error (error, SIM_ERROR, SIM_ERROR_INPUT,
                     "%s: not a dtsim trace (table '%s' has no column '%s'); %s", t->shown,
                     name, missing, fix);
      if (state < 3)
        return FALSE;
    }
  return TRUE;
}

/* The swept keys of the database: params whose value differs between runs,
 * in the order they first appear, but those of `omit` (a NULL-terminated
 * list, or NULL).  NULL with *error set when the query fails. */
GPtrArray *
sim_tracedb_swept_keys (SimTraceDb *t, const char *const *omit, GError **error)
{
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (t, "SELECT key FROM params GROUP BY key HAVING COUNT(DISTINCT value) > 1"
                 " OR COUNT(*) < (SELECT COUNT(*) FROM runs) ORDER BY MIN(rowid)", error);
  if (!st)
    return NULL;
  GPtrArray *keys = g_ptr_array_new_with_free_func (g_free);
  int rc;
  while ((rc = sim_tracedb_step (t, st, error)) == SQLITE_ROW)
    {
      const char *k = sim_tracedb_text (st, 0);
      gboolean keep = TRUE;
      for (const char *const *o = omit; o && *o; o++)
        keep = keep && strcmp (k, *o) != 0;
      if (keep)
        g_ptr_array_add (keys, g_strdup (k));
    }
  if (rc < 0)
    g_clear_pointer (&keys, g_ptr_array_unref);
  return keys;
}


static void
param_free (SimTraceParam *p)
{
  g_free (p->text);
  g_free (p);
}

gboolean
sim_tracedb_params_load (SimTraceDb *t, const char *const *keys, gsize n, GError **error)
{
  if (!t->params)
    t->params = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                       (GDestroyNotify) g_hash_table_unref);
  /* the keys not read yet: key -> its new table */
  g_autoptr (GHashTable) wanted = g_hash_table_new (g_str_hash, g_str_equal);
  for (gsize i = 0; i < n; i++)
    if (keys[i] && !g_hash_table_contains (t->params, keys[i]))
      {
        GHashTable *runs = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
                                                  (GDestroyNotify) param_free);
        g_hash_table_insert (t->params, g_strdup (keys[i]), runs);
        g_hash_table_insert (wanted, (gpointer) keys[i], runs);
      }
  if (g_hash_table_size (wanted) == 0)
    return TRUE;
  /* one scan in rowid order (no sort on an ordinary table): the first row
   * of a run and key is the one kept */
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (t, "SELECT run_id, key, value, CAST (value AS REAL), CAST (value AS"
                              " INTEGER) FROM params ORDER BY rowid", error);
  if (!st)
    return FALSE;
  int rc;
  while ((rc = sim_tracedb_step (t, st, error)) == SQLITE_ROW)
    {
      GHashTable *runs = g_hash_table_lookup (wanted, sim_tracedb_text (st, 1));
      gint64 run = sqlite3_column_int64 (st, 0);
      if (!runs || g_hash_table_contains (runs, &run))
        continue;
      SimTraceParam *p = g_new (SimTraceParam, 1);
      p->text = sqlite3_column_type (st, 2) == SQLITE_NULL ? NULL
                                                           : g_strdup (sim_tracedb_text (st, 2));
      p->real = sqlite3_column_double (st, 3);
      p->integer = sqlite3_column_int64 (st, 4);
      g_hash_table_insert (runs, g_memdup2 (&run, sizeof run), p);
    }
  return rc >= 0;
}

const SimTraceParam *
sim_tracedb_param (SimTraceDb *t, gint64 run, const char *key)
{
  GHashTable *runs = t->params ? g_hash_table_lookup (t->params, key) : NULL;
  return runs ? g_hash_table_lookup (runs, &run) : NULL;
}

GPtrArray *
sim_tracedb_sweep_keys (SimTraceDb *t, GError **error)
{
  static const char *const scenario_name[] = { "scenario.name" };
  if (!sim_tracedb_params_load (t, scenario_name, 1, error))
    return NULL;
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (t, "SELECT id, name FROM runs ORDER BY id", error);
  /* the keys params holds, read once */
  g_autoptr (sqlite3_stmt) known
    = st ? sim_tracedb_prepare (t, "SELECT DISTINCT key FROM params", error) : NULL;
  if (!known)
    return NULL;
  g_autoptr (GHashTable) held = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  int rc;
  while ((rc = sim_tracedb_step (t, known, error)) == SQLITE_ROW)
    g_hash_table_add (held, g_strdup (sim_tracedb_text (known, 0)));
  if (rc < 0)
    return NULL;
  g_autoptr (GPtrArray) keys = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  while ((rc = sim_tracedb_step (t, st, error)) == SQLITE_ROW)
    {
      const SimTraceParam *sp = sim_tracedb_param (t, sqlite3_column_int64 (st, 0),
                                                   "scenario.name");
      const char *name = sim_tracedb_text (st, 1), *scen = sp && sp->text ? sp->text : "";
      gsize n = strlen (scen);
      if (n == 0 || strncmp (name, scen, n) != 0 || name[n] != ' ')
        continue;
      g_auto (GStrv) words = g_strsplit (name + n + 1, " ", -1);
      for (int i = 0; words[i]; i++)
        {
          char *eq = strchr (words[i], '=');
          if (!eq)
            continue;
          *eq = '\0';
          g_auto (GStrv) parts = g_strsplit (words[i], "/", -1);
          for (int j = 0; parts[j]; j++)
            {
              if (!strchr (parts[j], '.') || g_hash_table_contains (seen, parts[j]))
                continue;
              g_hash_table_add (seen, g_strdup (parts[j]));
              if (g_hash_table_contains (held, parts[j]))
                g_ptr_array_add (keys, g_strdup (parts[j]));
            }
        }
    }
  if (rc < 0)
    return NULL;
  return g_steal_pointer (&keys);
}

GHashTable *
sim_tracedb_stages (SimTraceDb *t, gint64 run, GError **error)
{
  static const char *const cols[] = { "run_id", "replica", "stage", "worker", NULL };
  int has = sim_tracedb_has (t, "stages", cols, error);
  if (has < 0)
    return NULL;
  g_autoptr (GHashTable) stages = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  if (!has)
    return g_steal_pointer (&stages);
  g_autoptr (sqlite3_stmt) st
    = sim_tracedb_prepare (t, "SELECT worker, stage, replica FROM stages WHERE run_id = ?",
                           error);
  if (!st || !sim_tracedb_rebind (t, st, run, error))
    return NULL;
  int rc;
  while ((rc = sim_tracedb_step (t, st, error)) == SQLITE_ROW)
    {
      SimTraceStage *s = g_new (SimTraceStage, 1);
      s->stage = sqlite3_column_int64 (st, 1);
      s->replica = sqlite3_column_int64 (st, 2);
      g_hash_table_insert (stages,
                           g_strdup_printf ("worker%" G_GINT64_FORMAT,
                                            (gint64) sqlite3_column_int64 (st, 0)), s);
    }
  return rc < 0 ? NULL : g_steal_pointer (&stages);
}

gboolean
sim_tracedb_open (SimTraceDb *t, const char *path, const char *verb,
                  const SimTraceTable *required, gsize n_required, GError **error)
{
  g_return_val_if_fail (t && path && verb, FALSE);
  t->verb = verb;
  if (!t->shown)
    t->shown = sim_clean_text (path, 4096);
  return check_file (t, path, error) && open_trace (t, path, error)
         && check_schema (t, required, n_required, error);
}

void
sim_tracedb_close (SimTraceDb *t)
{
  /* Fails only with a statement left unfinalized: a bug in the caller, not
   * a fault of the database, so a warning rather than a GError. */
  int rc = sqlite3_close (t->db);
  g_warn_if_fail (rc == SQLITE_OK);
  t->db = NULL;
  g_clear_pointer (&t->shown, g_free);
  g_clear_pointer (&t->params, g_hash_table_unref);
}
