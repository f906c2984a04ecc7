/*
 * tracedb.h — reading a trace database that may be hostile or broken
 * (tracedb.c lists the rules): `dtsim plot` and `dtsim export` use it.
 */
#ifndef DTSIM_SIM_TRACEDB_H
#define DTSIM_SIM_TRACEDB_H

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
} SimTraceDb;

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
