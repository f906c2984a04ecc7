/*
 * tracedb.h — reading a trace database that may be hostile or broken
 * (tracedb.c lists the rules): `dtsim plot` and `dtsim export` use it.
 */
#ifndef DTSIM_VIEWS_TRACEDB_H
#define DTSIM_VIEWS_TRACEDB_H

#include <glib.h>
#include <sqlite3.h>

G_BEGIN_DECLS

/* bytes of one value read from a database (SQLITE_LIMIT_LENGTH) */
#define SIM_TRACEDB_VALUE_MAX (1 << 20)

/* An open database.  Zero-initialise, then sim_tracedb_open(); close with
 * sim_tracedb_close() whatever the open returned. */
typedef struct {
  sqlite3 *db;
  char *shown;        /* the path as given, clean text, for messages */
  const char *verb;   /* the command reading it ("plot", "export"), for fixes */
  GHashTable *params; /* key -> (run id (gint64 *) -> SimTraceParam *): the keys
                       * sim_tracedb_params_load() has read, NULL before */
} SimTraceDb;

/* One run's value of one key of the params table, read once: the text and
 * what SQLite's CAST makes of it, so that readers keep SQL's conversions. */
typedef struct {
  char *text;         /* as stored (untrusted: clean it before showing it) */
  double real;        /* CAST (value AS REAL) */
  gint64 integer;     /* CAST (value AS INTEGER) */
} SimTraceParam;

/* A table a reader needs, with the columns it reads (NULL-terminated). */
typedef struct {
  const char *table;
  const char *columns[12];
} SimTraceTable;

/* Opens `path` read-only, hardened, after checking that it is a whole SQLite
 * file, and checks its schema version and that every table of `required`
 * (n_required of them) exists as an ordinary table with its columns.  FALSE
 * with a SIM_ERROR_INPUT line "FILE: what is wrong; the fix" otherwise. */
gboolean sim_tracedb_open (SimTraceDb *t, const char *path, const char *verb,
                           const SimTraceTable *required, gsize n_required, GError **error);
void sim_tracedb_close (SimTraceDb *t);

/* Whether table `name` exists as an ordinary table with every column of
 * `columns` (NULL-terminated): for tables a reader uses when present.  -1
 * with *error set when the query fails. */
int sim_tracedb_has (SimTraceDb *t, const char *name, const char *const *columns,
                     GError **error);

/* Checks `rc`, the status a SQLite call on t->db returned: TRUE for
 * SQLITE_OK, else FALSE with *error set to its one line. */
gboolean sim_tracedb_check (SimTraceDb *t, int rc, GError **error);
/* The statement `sql`, or NULL with *error set. */
sqlite3_stmt *sim_tracedb_prepare (SimTraceDb *t, const char *sql, GError **error);
/* Steps `st`: SQLITE_ROW, SQLITE_DONE, or -1 with *error set. */
int sim_tracedb_step (SimTraceDb *t, sqlite3_stmt *st, GError **error);
/* Resets `st` with ?1 bound to `id`; its other parameters keep their values. */
gboolean sim_tracedb_rebind (SimTraceDb *t, sqlite3_stmt *st, gint64 id, GError **error);
/* Binds the text `v` (alive until the statement is reset) to parameter i. */
gboolean sim_tracedb_bind_text (SimTraceDb *t, sqlite3_stmt *st, int i, const char *v,
                                GError **error);
/* Column i as text; "" for NULL.  Untrusted: clean it before showing it. */
const char *sim_tracedb_text (sqlite3_stmt *st, int i);

/* The swept keys of the database: params whose value differs between runs
 * (or that some runs lack), in the order they first appear, but those of
 * `omit` (NULL-terminated, or NULL).  NULL with *error set on failure. */
GPtrArray *sim_tracedb_swept_keys (SimTraceDb *t, const char *const *omit, GError **error);

/* The keys a sweep varied, in order: read from the runs' names, which are
 * "[scenario] name" and then the point's "section.key=value" words (a joint
 * key "a.b/c.d=x/y" gives both keys), keeping those the params table holds.
 * Runs of no sweep give none.  NULL with *error set on failure. */
GPtrArray *sim_tracedb_sweep_keys (SimTraceDb *t, GError **error);

/* Reads the values of `keys` (n of them, those not read before) for every
 * run in one scan of the params table, so that a reader's cost grows with
 * the database, never with runs x keys (an index is not needed, and a
 * database written before indexes existed reads as fast).  Where a run has
 * a key twice, the first row (by rowid) counts, as a query with LIMIT 1
 * would give.  FALSE with *error set when the query fails. */
gboolean sim_tracedb_params_load (SimTraceDb *t, const char *const *keys, gsize n,
                                  GError **error);
/* Run `run`'s value of `key`, read by sim_tracedb_params_load(); NULL when
 * the run has none (or the key was not loaded). */
const SimTraceParam *sim_tracedb_param (SimTraceDb *t, gint64 run, const char *key);

/* The statements that readers (every connection opened by
 * sim_tracedb_open) have run in this process and the virtual machine steps
 * they took, counted as sqlite3_status() counts memory: for tests and
 * benchmarks that check a reader's cost grows linearly with the database.
 * Either pointer may be NULL. */
void sim_tracedb_counts (guint64 *statements, guint64 *vm_steps);

/* A pipeline worker's place: its stage and replica (table stages). */
typedef struct {
  gint64 stage, replica;
} SimTraceStage;

/* The pipeline workers of run `run`: actor name ("worker<N>") ->
 * SimTraceStage *, empty when the database has no stages table or the run
 * no pipeline.  NULL with *error set when a query fails. */
GHashTable *sim_tracedb_stages (SimTraceDb *t, gint64 run, GError **error);

/* Text from an untrusted source made fit to show: valid UTF-8, every control
 * character (C0, DEL, C1) a space, at most `max` characters (a longer text
 * is cut and ends in "..."). */
char *sim_clean_text (const char *s, gsize max);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (sqlite3_stmt, sqlite3_finalize)

G_END_DECLS

#endif
